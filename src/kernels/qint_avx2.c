/* AVX2 kernels of the integer path, with and without AVX-VNNI (qint_avx2_body.h, compiled once
 * per variant); the same structure as the AVX-512 kernels (qint_avx512.c) at half the width.
 * Compiled per function for the target, called only after run-time detection. */
#include <string.h>

#include "kernels/qint_internal.h"
#include "kernels/rows4.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

/* Four rows' epilogue state, one row per lane (see qint_avx512.c). */
typedef struct {
    __m128 y, t;
    __m128i z;
    int g, left;  /* current group, its blocks still to come */
} epi4;

#define QI_VNNI 0
#define QI_TARGET __attribute__((target("avx2,fma")))
#define QI_NAME(x) x##_avx2
#include "kernels/qint_avx2_body.h"
#undef QI_VNNI
#undef QI_TARGET
#undef QI_NAME

/* acc + the 16-bit dot products of a and b, as _mm256_dpwssd_avx_epi32 (VEX-coded, AVX-VNNI):
 * tied asm operand for the reason given at dpwssd in qint_avx512.c (GCC copies the intrinsic's
 * accumulators twice per iteration). */
__attribute__((target("avx2,fma,avxvnni"))) static inline __m256i dpwssd_vex(__m256i acc, __m256i a, __m256i b) {
    __asm__("%{vex%} vpdpwssd %2, %1, %0" : "+x"(acc) : "x"(a), "x"(b));
    return acc;
}

#define QI_VNNI 1
#define QI_TARGET __attribute__((target("avx2,fma,avxvnni")))
#define QI_NAME(x) x##_avx2_vnni
#include "kernels/qint_avx2_body.h"
#undef QI_VNNI
#undef QI_TARGET
#undef QI_NAME
#endif
