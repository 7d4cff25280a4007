/* The f32 matmul's AVX2 path: an output's 16 lanes in two 256-bit registers (lanes 0-7 and
 * 8-15), each lane doing f32mm.h's FMA sequence, so the bits are the scalar path's. Register
 * tiles of RX rows of x by RW rows of W (3 x 2 for the GEMM, 1 x 4 for the GEMV) within the 16
 * registers. Compiled per function for the target, called only after run-time detection. */
#include "kernels/f32mm_internal.h"

#ifdef PDQ_F32MM_HAVE_X86
#include <immintrin.h>

#define F32_AVX2 __attribute__((target("avx2,fma")))
#define INLINE static inline __attribute__((always_inline))

/* f32mm.h's halving tree of one accumulator held as lanes 0-7 (lo) and 8-15 (hi). */
F32_AVX2 INLINE float hsum(__m256 lo, __m256 hi) {
    __m256 s8 = _mm256_add_ps(lo, hi);
    __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
    __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
    return _mm_cvtss_f32(_mm_add_ss(s2, _mm_movehdup_ps(s2)));
}

/* The mask of the first n (0..8) lanes. */
F32_AVX2 INLINE __m256i lanes(int n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

F32_AVX2 INLINE void tile(int RX, int RW, const float *x, const float *w, int in, float *y, size_t ldy) {
    __m256 lo[3][4], hi[3][4];
#pragma GCC unroll 4
    for (int i = 0; i < RX; i++)
#pragma GCC unroll 4
        for (int j = 0; j < RW; j++) lo[i][j] = hi[i][j] = _mm256_setzero_ps();
    int k = 0;
    for (; k + 16 <= in; k += 16) {
        __m256 wv[4];
#pragma GCC unroll 4
        for (int j = 0; j < RW; j++) wv[j] = _mm256_loadu_ps(w + (size_t)j * in + k);
#pragma GCC unroll 4
        for (int i = 0; i < RX; i++) {
            __m256 xv = _mm256_loadu_ps(x + (size_t)i * in + k);
#pragma GCC unroll 4
            for (int j = 0; j < RW; j++) lo[i][j] = _mm256_fmadd_ps(xv, wv[j], lo[i][j]);
        }
#pragma GCC unroll 4
        for (int j = 0; j < RW; j++) wv[j] = _mm256_loadu_ps(w + (size_t)j * in + k + 8);
#pragma GCC unroll 4
        for (int i = 0; i < RX; i++) {
            __m256 xv = _mm256_loadu_ps(x + (size_t)i * in + k + 8);
#pragma GCC unroll 4
            for (int j = 0; j < RW; j++) hi[i][j] = _mm256_fmadd_ps(xv, wv[j], hi[i][j]);
        }
    }
    if (k < in) { /* the short last block: zeros in both operands, as the scalar path */
        int left = in - k;
        __m256i m0 = lanes(left < 8 ? left : 8), m1 = lanes(left > 8 ? left - 8 : 0);
#pragma GCC unroll 4
        for (int i = 0; i < RX; i++) {
            __m256 x0 = _mm256_maskload_ps(x + (size_t)i * in + k, m0);
            __m256 x1 = _mm256_maskload_ps(x + (size_t)i * in + k + 8, m1);
#pragma GCC unroll 4
            for (int j = 0; j < RW; j++) {
                lo[i][j] = _mm256_fmadd_ps(x0, _mm256_maskload_ps(w + (size_t)j * in + k, m0), lo[i][j]);
                hi[i][j] = _mm256_fmadd_ps(x1, _mm256_maskload_ps(w + (size_t)j * in + k + 8, m1), hi[i][j]);
            }
        }
    }
#pragma GCC unroll 4
    for (int i = 0; i < RX; i++)
#pragma GCC unroll 4
        for (int j = 0; j < RW; j++) y[(size_t)i * ldy + j] = hsum(lo[i][j], hi[i][j]);
}

#define TILE(RX, RW)                                                                               \
    F32_AVX2 static void tile_##RX##_##RW(const float *x, const float *w, int in, float *y, size_t ldy) { \
        tile(RX, RW, x, w, in, y, ldy);                                                           \
    }
TILE(1, 4) TILE(1, 1) TILE(3, 2) TILE(2, 2) TILE(3, 1) TILE(2, 1)

typedef void (*tile_fn)(const float *x, const float *w, int in, float *y, size_t ldy);

F32_AVX2 void f32mm_block_avx2(const float *x, int nx, const float *w, int nw, int in, float *y, size_t ldy) {
    if (nx == 1) {
        int j = 0;
        for (; j + 4 <= nw; j += 4) tile_1_4(x, w + (size_t)j * in, in, y + j, ldy);
        for (; j < nw; j++) tile_1_1(x, w + (size_t)j * in, in, y + j, ldy);
        return;
    }
    static const tile_fn by2[4] = {NULL, NULL, tile_2_2, tile_3_2};
    static const tile_fn by1[4] = {NULL, tile_1_1, tile_2_1, tile_3_1};
    for (int i = 0; i < nx; i += 3) {
        int rx = nx - i < 3 ? nx - i : 3;
        const float *xi = x + (size_t)i * in;
        float *yi = y + (size_t)i * ldy;
        int j = 0;
        if (rx == 1) {
            f32mm_block_avx2(xi, 1, w, nw, in, yi, ldy);
            continue;
        }
        for (; j + 2 <= nw; j += 2) by2[rx](xi, w + (size_t)j * in, in, yi + j, ldy);
        for (; j < nw; j++) by1[rx](xi, w + (size_t)j * in, in, yi + j, ldy);
    }
}
#endif
