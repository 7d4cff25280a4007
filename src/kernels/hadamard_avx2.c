/* AVX2 randomized Hadamard kernels (no FMA: a fused multiply-add would round differently from
 * the scalar reference). Rows: 8 floats per register, the stages h = 1, 2, 4 inside a register
 * (permute, then add and subtract, blended), the wider ones two at a time (radix 4), so a row of
 * 2048 takes five passes over L1 instead of eleven. Columns: 8 columns per register, rows in
 * blocks that stay in L1 (the low stages), then the strided sets of rows the high stages pair. */
#include "kernels/hadamard.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#define AVX2 __attribute__((target("avx2")))

/* Stages 1, 2, 4 on one register: lane j pairs with lane j ^ h; the lower lane takes a + b, the
 * upper one a - b (a the lower lane's value). */
AVX2 static inline __m256 stages_1_2_4(__m256 v) {
    __m256 s = _mm256_permute_ps(v, 0xB1);
    v = _mm256_blend_ps(_mm256_add_ps(v, s), _mm256_sub_ps(s, v), 0xAA);
    s = _mm256_permute_ps(v, 0x4E);
    v = _mm256_blend_ps(_mm256_add_ps(v, s), _mm256_sub_ps(s, v), 0xCC);
    s = _mm256_permute2f128_ps(v, v, 0x01);
    return _mm256_blend_ps(_mm256_add_ps(v, s), _mm256_sub_ps(s, v), 0xF0);
}

AVX2 static void row_avx2(float *v, int n, const float *pre, float post) {
    __m256 p = _mm256_set1_ps(post);
    for (int i = 0; i < n; i += 8)
        _mm256_storeu_ps(v + i, stages_1_2_4(_mm256_mul_ps(_mm256_loadu_ps(v + i), _mm256_loadu_ps(pre + i))));
    int h = 8;
    for (; 4 * h <= n; h *= 4) { /* stages h and 2h in one pass */
        int last = 4 * h == n;
        for (int i = 0; i < n; i += 4 * h)
            for (int j = i; j < i + h; j += 8) {
                __m256 a0 = _mm256_loadu_ps(v + j), a1 = _mm256_loadu_ps(v + j + h);
                __m256 a2 = _mm256_loadu_ps(v + j + 2 * h), a3 = _mm256_loadu_ps(v + j + 3 * h);
                __m256 b0 = _mm256_add_ps(a0, a1), b1 = _mm256_sub_ps(a0, a1);
                __m256 b2 = _mm256_add_ps(a2, a3), b3 = _mm256_sub_ps(a2, a3);
                __m256 c0 = _mm256_add_ps(b0, b2), c2 = _mm256_sub_ps(b0, b2);
                __m256 c1 = _mm256_add_ps(b1, b3), c3 = _mm256_sub_ps(b1, b3);
                if (last) {
                    c0 = _mm256_mul_ps(c0, p), c1 = _mm256_mul_ps(c1, p);
                    c2 = _mm256_mul_ps(c2, p), c3 = _mm256_mul_ps(c3, p);
                }
                _mm256_storeu_ps(v + j, c0);
                _mm256_storeu_ps(v + j + h, c1);
                _mm256_storeu_ps(v + j + 2 * h, c2);
                _mm256_storeu_ps(v + j + 3 * h, c3);
            }
        if (last) return;
    }
    if (h < n) { /* one stage left (h = n / 2) */
        for (int j = 0; j < h; j += 8) {
            __m256 a = _mm256_loadu_ps(v + j), b = _mm256_loadu_ps(v + j + h);
            _mm256_storeu_ps(v + j, _mm256_mul_ps(_mm256_add_ps(a, b), p));
            _mm256_storeu_ps(v + j + h, _mm256_mul_ps(_mm256_sub_ps(a, b), p));
        }
        return;
    }
    for (int i = 0; i < n; i += 8) _mm256_storeu_ps(v + i, _mm256_mul_ps(_mm256_loadu_ps(v + i), p)); /* n == 8 */
}

void pdq_had_rows_avx2(float *x, int rows, size_t ld, int n, const float *pre, float post) {
    for (int r = 0; r < rows; r++) row_avx2(x + (size_t)r * ld, n, pre, post);
}

/* Stages h = step, 2 step, ... < m * step on the rows base + k * step (k < m) of a strip. */
AVX2 static void col_stages(float *s, int m, size_t stride, int w) {
    for (int h = 1; h < m; h *= 2)
        for (int i = 0; i < m; i += 2 * h)
            for (int j = i; j < i + h; j++) {
                float *a = s + (size_t)j * stride, *b = s + (size_t)(j + h) * stride;
                for (int c = 0; c < w; c += 8) {
                    __m256 p = _mm256_loadu_ps(a + c), q = _mm256_loadu_ps(b + c);
                    _mm256_storeu_ps(a + c, _mm256_add_ps(p, q));
                    _mm256_storeu_ps(b + c, _mm256_sub_ps(p, q));
                }
            }
}

#define COL_BLOCK 32

AVX2 void pdq_had_cols_avx2(float *s, int n, int w, size_t lds, const float *pre) {
    for (int i = 0; i < n; i++) {
        float *row = s + (size_t)i * lds;
        __m256 f = _mm256_set1_ps(pre[i]);
        for (int c = 0; c < w; c += 8) _mm256_storeu_ps(row + c, _mm256_mul_ps(_mm256_loadu_ps(row + c), f));
    }
    int b = n < COL_BLOCK ? n : COL_BLOCK;
    for (int i = 0; i < n; i += b) col_stages(s + (size_t)i * lds, b, lds, w);  /* stages < b */
    for (int j = 0; j < b && b < n; j++) col_stages(s + (size_t)j * lds, n / b, (size_t)b * lds, w); /* stages >= b */
}

#endif

pdq_had_kernels pdq_had_kernels_at(pdq_level level) {
#if defined(__x86_64__) || defined(__i386__)
    if (pdq_level_pick(level, 1u << PDQ_LEVEL_AVX2) == PDQ_LEVEL_AVX2)
        return (pdq_had_kernels){pdq_had_rows_avx2, pdq_had_cols_avx2};
#else
    (void)level;
#endif
    return (pdq_had_kernels){NULL, NULL};
}
