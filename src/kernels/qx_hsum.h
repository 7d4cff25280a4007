/* Exact horizontal sums of int32 lanes, widened to int64 first (the lanes of an integer kernel's
 * block may each be near 2^31), and the tiles' scalar tail. x86 only; included by the integer
 * executor's SIMD kernel files. */
#ifndef PDQ_KERNELS_QX_HSUM_H
#define PDQ_KERNELS_QX_HSUM_H

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#include <stddef.h>
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

/* A tile's columns [k, K) past its vector steps: res[mr * nr_w + r] += x[m][k] * w[r][k] for mr
 * activation rows and nr_w weight rows (each product exact in int32, summed in int64). */
static inline void qx_tile_tail(int64_t *res, int mr, int nr_w, const int16_t *x, size_t ldx, const uint8_t *w,
                                size_t ldw, int k, int K) {
    for (; k < K; k++)
        for (int m = 0; m < mr; m++)
            for (int r = 0; r < nr_w; r++) res[m * nr_w + r] += (int32_t)x[m * ldx + k] * (int32_t)w[r * ldw + k];
}
#endif

#endif
