/* An accumulating dot product with its accumulator tied in place (inline asm), for the integer
 * kernels of src/kernels/ and the integer executor. With the intrinsic GCC 12 does not keep
 * accumulators in registers across a loop: it copies each one per iteration, or keeps an array of
 * them on the stack with a load and a store around every product (measured: a third of the GEMM's
 * time; the executor's prefill tiles at half speed). x86 only. Internal. */
#ifndef PDQ_KERNELS_SIMD_ACC_H
#define PDQ_KERNELS_SIMD_ACC_H

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

/* acc + the 16-bit dot products of a and b, as _mm512_dpwssd_epi32 */
__attribute__((target("avx512f,avx512vnni"))) static inline __m512i pdq_dpwssd512(__m512i acc, __m512i a, __m512i b) {
    __asm__("vpdpwssd %2, %1, %0" : "+v"(acc) : "v"(a), "v"(b));
    return acc;
}
#endif

#endif
