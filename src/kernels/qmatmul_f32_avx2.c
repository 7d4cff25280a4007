/* AVX2/FMA kernels, compiled per function for the target (the build needs no -mavx2) and only
 * called after run-time detection. Same summation order as the scalar kernels (qmatmul.h). The
 * GEMV runs four output rows at once: four independent FMA chains, one load of x for all. */
#include "kernels/qkernel_internal.h"

#ifdef PDQ_QK_HAVE_AVX2
#include <immintrin.h>

#define QK_AVX2 __attribute__((target("avx2,fma")))

QK_AVX2 static inline float hsum(__m256 v) {
    float a[8];
    _mm256_storeu_ps(a, v);
    return qk_hsum8(a);
}

/* Up to four rows r..r+nr-1; missing rows repeat the last one (computed, not stored). */
typedef struct {
    const uint8_t *row[4];
    const float *scale[4];
    const uint8_t *zero[4];
} rows4;

static void rows4_init(const pdq_qmatrix *w, int r, int nr, rows4 *p) {
    for (int k = 0; k < 4; k++) {
        int rk = r + (k < nr ? k : nr - 1);
        p->row[k] = w->codes + (size_t)rk * w->row_bytes;
        p->scale[k] = w->scales + (size_t)rk * w->ngroups;
        p->zero[k] = w->zeros + (size_t)rk * w->ngroups;
    }
}

/* The slots of a partial or unaligned block, through the generic decoder. */
QK_AVX2 static inline void slow_block(const pdq_qmatrix *w, const uint8_t *row, int c, int c1, int z, __m256i *lo,
                                      __m256i *hi) {
    int32_t v[16] = {0};
    qk_decode_block(w, row, c, c1, z, v);
    *lo = _mm256_loadu_si256((const __m256i *)v);
    *hi = _mm256_loadu_si256((const __m256i *)(v + 8));
}

QK_AVX2 void qk_gemv_u4_avx2(const pdq_qmatrix *w, const float *xt, int r0, int r1, float *y) {
    int gs = qk_group_stride(w), ng = w->ngroups;
    const __m256i m15 = _mm256_set1_epi32(0xF);
    for (int r = r0; r < r1; r += 4) {
        int nr = r1 - r < 4 ? r1 - r : 4;
        rows4 p;
        rows4_init(w, r, nr, &p);
        __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
        for (int g = 0; g < ng; g++) {
            int c0 = g * w->group, c1 = c0 + qk_group_len(w, g);
            const float *xg = xt + (size_t)g * gs;
            __m256 d0 = _mm256_setzero_ps(), d1 = d0, d2 = d0, d3 = d0;
            __m256i z0 = _mm256_set1_epi32(p.zero[0][g]), z1 = _mm256_set1_epi32(p.zero[1][g]);
            __m256i z2 = _mm256_set1_epi32(p.zero[2][g]), z3 = _mm256_set1_epi32(p.zero[3][g]);
            int c = c0;
            if ((c0 & 1) == 0) {
                size_t off = (size_t)c0 >> 1;
                for (; c + 16 <= c1; c += 16, off += 8) {
                    __m256 xa = _mm256_loadu_ps(xg + (c - c0)), xb = _mm256_loadu_ps(xg + (c - c0) + 8);
#define QK_U4_ROW(k)                                                                                   \
    do {                                                                                               \
        __m256i v = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(p.row[k] + off)));          \
        __m256i lo = _mm256_sub_epi32(_mm256_and_si256(v, m15), z##k);                                 \
        __m256i hi = _mm256_sub_epi32(_mm256_srli_epi32(v, 4), z##k);                                  \
        d##k = _mm256_fmadd_ps(xa, _mm256_cvtepi32_ps(lo), d##k);                                      \
        d##k = _mm256_fmadd_ps(xb, _mm256_cvtepi32_ps(hi), d##k);                                      \
    } while (0)
                    QK_U4_ROW(0);
                    QK_U4_ROW(1);
                    QK_U4_ROW(2);
                    QK_U4_ROW(3);
#undef QK_U4_ROW
                }
            }
            for (; c < c1; c += 16) {
                __m256 xa = _mm256_loadu_ps(xg + (c - c0)), xb = _mm256_loadu_ps(xg + (c - c0) + 8);
                __m256i lo, hi;
#define QK_U4_SLOW(k)                                                                                  \
    do {                                                                                               \
        slow_block(w, p.row[k], c, c1, p.zero[k][g], &lo, &hi);                                        \
        d##k = _mm256_fmadd_ps(xa, _mm256_cvtepi32_ps(lo), d##k);                                      \
        d##k = _mm256_fmadd_ps(xb, _mm256_cvtepi32_ps(hi), d##k);                                      \
    } while (0)
                QK_U4_SLOW(0);
                QK_U4_SLOW(1);
                QK_U4_SLOW(2);
                QK_U4_SLOW(3);
#undef QK_U4_SLOW
            }
            acc[0] = _mm256_fmadd_ps(_mm256_set1_ps(p.scale[0][g]), d0, acc[0]);
            acc[1] = _mm256_fmadd_ps(_mm256_set1_ps(p.scale[1][g]), d1, acc[1]);
            acc[2] = _mm256_fmadd_ps(_mm256_set1_ps(p.scale[2][g]), d2, acc[2]);
            acc[3] = _mm256_fmadd_ps(_mm256_set1_ps(p.scale[3][g]), d3, acc[3]);
        }
        for (int k = 0; k < nr; k++) y[r + k] = hsum(acc[k]);
    }
}

QK_AVX2 void qk_gemv_u8_avx2(const pdq_qmatrix *w, const float *xt, int r0, int r1, float *y) {
    int gs = qk_group_stride(w), ng = w->ngroups;
    for (int r = r0; r < r1; r += 4) {
        int nr = r1 - r < 4 ? r1 - r : 4;
        rows4 p;
        rows4_init(w, r, nr, &p);
        __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
        for (int g = 0; g < ng; g++) {
            int c0 = g * w->group, c1 = c0 + qk_group_len(w, g);
            const float *xg = xt + (size_t)g * gs;
            __m256 d0 = _mm256_setzero_ps(), d1 = d0, d2 = d0, d3 = d0;
            __m256i z0 = _mm256_set1_epi32(p.zero[0][g]), z1 = _mm256_set1_epi32(p.zero[1][g]);
            __m256i z2 = _mm256_set1_epi32(p.zero[2][g]), z3 = _mm256_set1_epi32(p.zero[3][g]);
            int c = c0;
            for (; c + 8 <= c1; c += 8) {
                __m256 xa = _mm256_loadu_ps(xg + (c - c0));
#define QK_U8_ROW(k)                                                                                   \
    do {                                                                                               \
        __m256i v = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(p.row[k] + c)));            \
        d##k = _mm256_fmadd_ps(xa, _mm256_cvtepi32_ps(_mm256_sub_epi32(v, z##k)), d##k);               \
    } while (0)
                QK_U8_ROW(0);
                QK_U8_ROW(1);
                QK_U8_ROW(2);
                QK_U8_ROW(3);
#undef QK_U8_ROW
            }
            if (c < c1) {
                __m256 xa = _mm256_loadu_ps(xg + (c - c0));
                int32_t v[8];
#define QK_U8_SLOW(k)                                                                                  \
    do {                                                                                               \
        qk_decode_block(w, p.row[k], c, c1, p.zero[k][g], v);                                          \
        d##k = _mm256_fmadd_ps(xa, _mm256_cvtepi32_ps(_mm256_loadu_si256((const __m256i *)v)), d##k);  \
    } while (0)
                QK_U8_SLOW(0);
                QK_U8_SLOW(1);
                QK_U8_SLOW(2);
                QK_U8_SLOW(3);
#undef QK_U8_SLOW
            }
            acc[0] = _mm256_fmadd_ps(_mm256_set1_ps(p.scale[0][g]), d0, acc[0]);
            acc[1] = _mm256_fmadd_ps(_mm256_set1_ps(p.scale[1][g]), d1, acc[1]);
            acc[2] = _mm256_fmadd_ps(_mm256_set1_ps(p.scale[2][g]), d2, acc[2]);
            acc[3] = _mm256_fmadd_ps(_mm256_set1_ps(p.scale[3][g]), d3, acc[3]);
        }
        for (int k = 0; k < nr; k++) y[r + k] = hsum(acc[k]);
    }
}

/* One prepared row against a decoded panel of up to four rows: loads of x shared, four chains. */
QK_AVX2 void qk_panel_avx2(const pdq_qmatrix *w, const float *xt, const float *wf, int r, int nr, float *y) {
    int b = qk_block(w), gs = qk_group_stride(w), ng = w->ngroups, len = qk_xt_len(w);
    const float *w0 = wf, *w1 = wf + (size_t)(nr > 1) * len, *w2 = wf + (size_t)(nr > 2 ? 2 : nr - 1) * len;
    const float *w3 = wf + (size_t)(nr > 3 ? 3 : nr - 1) * len;
    const float *s0 = w->scales + (size_t)r * ng, *s1 = s0 + (size_t)(nr > 1) * ng;
    const float *s2 = s0 + (size_t)(nr > 2 ? 2 : nr - 1) * ng, *s3 = s0 + (size_t)(nr > 3 ? 3 : nr - 1) * ng;
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (int g = 0; g < ng; g++) {
        int nv = (qk_group_len(w, g) + b - 1) / b * b / 8;
        size_t o = (size_t)g * gs;
        __m256 d0 = _mm256_setzero_ps(), d1 = d0, d2 = d0, d3 = d0;
        for (int i = 0; i < nv; i++, o += 8) {
            __m256 xv = _mm256_loadu_ps(xt + o);
            d0 = _mm256_fmadd_ps(xv, _mm256_loadu_ps(w0 + o), d0);
            d1 = _mm256_fmadd_ps(xv, _mm256_loadu_ps(w1 + o), d1);
            d2 = _mm256_fmadd_ps(xv, _mm256_loadu_ps(w2 + o), d2);
            d3 = _mm256_fmadd_ps(xv, _mm256_loadu_ps(w3 + o), d3);
        }
        a0 = _mm256_fmadd_ps(_mm256_set1_ps(s0[g]), d0, a0);
        a1 = _mm256_fmadd_ps(_mm256_set1_ps(s1[g]), d1, a1);
        a2 = _mm256_fmadd_ps(_mm256_set1_ps(s2[g]), d2, a2);
        a3 = _mm256_fmadd_ps(_mm256_set1_ps(s3[g]), d3, a3);
    }
    float out[4] = {hsum(a0), hsum(a1), hsum(a2), hsum(a3)};
    for (int k = 0; k < nr; k++) y[k] = out[k];
}
#endif
