/* The f32 matmul's AVX-512 path: one 512-bit register holds an output's 16 lanes, so each lane
 * does exactly the FMA sequence of f32mm.h. Register tiles of RX rows of x by RW rows of W (6 x 4
 * for the GEMM: 24 accumulators, 10 loads per 24 FMAs; 1 x 8 for the GEMV, which streams W). The
 * block runs x tile by x tile over W's rows, so the W rows of a task stay in L2. Compiled per
 * function for the target, called only after run-time detection. */
#include "kernels/f32mm_internal.h"

#ifdef PDQ_F32MM_HAVE_X86
#include <immintrin.h>

#define F32_AVX512 __attribute__((target("avx512f,avx512dq,avx2,fma")))
#define INLINE static inline __attribute__((always_inline))

/* f32mm.h's halving tree of one accumulator. */
F32_AVX512 INLINE float hsum(__m512 v) {
    __m256 s8 = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
    __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
    __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
    return _mm_cvtss_f32(_mm_add_ss(s2, _mm_movehdup_ps(s2)));
}

/* y[i, j] for i < RX, j < RW; RX and RW are constants at every call, so the loops unroll and the
 * accumulators live in registers. */
F32_AVX512 INLINE void tile(int RX, int RW, const float *x, const float *w, int in, float *y, size_t ldy) {
    __m512 acc[6][8];
#pragma GCC unroll 8
    for (int i = 0; i < RX; i++)
#pragma GCC unroll 8
        for (int j = 0; j < RW; j++) acc[i][j] = _mm512_setzero_ps();
    int k = 0;
    for (; k + 16 <= in; k += 16) {
        __m512 wv[8];
#pragma GCC unroll 8
        for (int j = 0; j < RW; j++) wv[j] = _mm512_loadu_ps(w + (size_t)j * in + k);
#pragma GCC unroll 8
        for (int i = 0; i < RX; i++) {
            __m512 xv = _mm512_loadu_ps(x + (size_t)i * in + k);
#pragma GCC unroll 8
            for (int j = 0; j < RW; j++) acc[i][j] = _mm512_fmadd_ps(xv, wv[j], acc[i][j]);
        }
    }
    if (k < in) { /* the short last block: zeros in both operands, as the scalar path */
        __mmask16 m = (__mmask16)((1u << (in - k)) - 1);
        __m512 wv[8];
#pragma GCC unroll 8
        for (int j = 0; j < RW; j++) wv[j] = _mm512_maskz_loadu_ps(m, w + (size_t)j * in + k);
#pragma GCC unroll 8
        for (int i = 0; i < RX; i++) {
            __m512 xv = _mm512_maskz_loadu_ps(m, x + (size_t)i * in + k);
#pragma GCC unroll 8
            for (int j = 0; j < RW; j++) acc[i][j] = _mm512_fmadd_ps(xv, wv[j], acc[i][j]);
        }
    }
#pragma GCC unroll 8
    for (int i = 0; i < RX; i++)
#pragma GCC unroll 8
        for (int j = 0; j < RW; j++) y[(size_t)i * ldy + j] = hsum(acc[i][j]);
}

/* The tiles the block uses, one function each (the switch below picks by the remaining sizes). */
#define TILE(RX, RW)                                                                               \
    F32_AVX512 static void tile_##RX##_##RW(const float *x, const float *w, int in, float *y, size_t ldy) { \
        tile(RX, RW, x, w, in, y, ldy);                                                             \
    }
TILE(1, 8) TILE(1, 4) TILE(1, 1)
TILE(6, 4) TILE(5, 4) TILE(4, 4) TILE(3, 4) TILE(2, 4)
TILE(6, 1) TILE(5, 1) TILE(4, 1) TILE(3, 1) TILE(2, 1)

typedef void (*tile_fn)(const float *x, const float *w, int in, float *y, size_t ldy);

F32_AVX512 void f32mm_block_avx512(const float *x, int nx, const float *w, int nw, int in, float *y, size_t ldy) {
    if (nx == 1) {
        int j = 0;
        for (; j + 8 <= nw; j += 8) tile_1_8(x, w + (size_t)j * in, in, y + j, ldy);
        for (; j + 4 <= nw; j += 4) tile_1_4(x, w + (size_t)j * in, in, y + j, ldy);
        for (; j < nw; j++) tile_1_1(x, w + (size_t)j * in, in, y + j, ldy);
        return;
    }
    static const tile_fn by4[7] = {NULL, tile_1_4, tile_2_4, tile_3_4, tile_4_4, tile_5_4, tile_6_4};
    static const tile_fn by1[7] = {NULL, tile_1_1, tile_2_1, tile_3_1, tile_4_1, tile_5_1, tile_6_1};
    for (int i = 0; i < nx; i += 6) {
        int rx = nx - i < 6 ? nx - i : 6;
        const float *xi = x + (size_t)i * in;
        float *yi = y + (size_t)i * ldy;
        int j = 0;
        for (; j + 4 <= nw; j += 4) by4[rx](xi, w + (size_t)j * in, in, yi + j, ldy);
        for (; j < nw; j++) by1[rx](xi, w + (size_t)j * in, in, yi + j, ldy);
    }
}
#endif
