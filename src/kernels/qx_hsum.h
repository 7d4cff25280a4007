/* Exact horizontal sums of int32 lanes, widened to int64 first (the lanes of an integer kernel's
 * block may each be near 2^31). x86 only; included by the integer executor's SIMD kernel files. */
#ifndef PDQ_KERNELS_QX_HSUM_H
#define PDQ_KERNELS_QX_HSUM_H

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#include <stdint.h>

__attribute__((target("avx2"))) static inline int64_t qx_hsum_avx2(__m256i s) {
    __m256i t = _mm256_add_epi64(_mm256_cvtepi32_epi64(_mm256_castsi256_si128(s)),
                                 _mm256_cvtepi32_epi64(_mm256_extracti128_si256(s, 1)));
    __m128i u = _mm_add_epi64(_mm256_castsi256_si128(t), _mm256_extracti128_si256(t, 1));
    return _mm_cvtsi128_si64(u) + _mm_extract_epi64(u, 1);
}

__attribute__((target("avx512f"))) static inline int64_t qx_hsum_avx512(__m512i s) {
    __m512i t = _mm512_add_epi64(_mm512_cvtepi32_epi64(_mm512_castsi512_si256(s)),
                                 _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(s, 1)));
    return _mm512_reduce_add_epi64(t);
}
#endif

#endif
