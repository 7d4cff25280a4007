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
} rows4;

static void rows4_init(const pdq_qmatrix *w, int r, int nr, rows4 *p) {
    for (int k = 0; k < 4; k++) {
        int rk = r + (k < nr ? k : nr - 1);
        p->row[k] = w->codes + (size_t)rk * w->row_bytes;
        p->scale[k] = w->scales + (size_t)rk * w->ngroups;
    }
}

/* The slots of a partial or unaligned block, through the generic decoder. */
QK_AVX2 static inline void slow_block(const pdq_qmatrix *w, const uint8_t *row, int c, int c1, __m256i *lo,
                                      __m256i *hi) {
    int32_t v[16] = {0};
    qk_decode_block(w, row, c, c1, v);
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
            int c = c0;
            if ((c0 & 1) == 0) {
                size_t off = (size_t)c0 >> 1;
                for (; c + 16 <= c1; c += 16, off += 8) {
                    __m256 xa = _mm256_loadu_ps(xg + (c - c0)), xb = _mm256_loadu_ps(xg + (c - c0) + 8);
#define QK_U4_ROW(k)                                                                                   \
    do {                                                                                               \
        __m256i v = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(p.row[k] + off)));          \
        __m256i lo = _mm256_and_si256(v, m15), hi = _mm256_srli_epi32(v, 4);                           \
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
        slow_block(w, p.row[k], c, c1, &lo, &hi);                                        \
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
        for (int k = 0; k < nr; k++) y[r + k] = hsum(acc[k]) - qk_zero_term(w, r + k, xt);
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
            int c = c0;
            for (; c + 8 <= c1; c += 8) {
                __m256 xa = _mm256_loadu_ps(xg + (c - c0));
#define QK_U8_ROW(k)                                                                                   \
    do {                                                                                               \
        __m256i v = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(p.row[k] + c)));            \
        d##k = _mm256_fmadd_ps(xa, _mm256_cvtepi32_ps(v), d##k);                                       \
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
        qk_decode_block(w, p.row[k], c, c1, v);                                          \
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
        for (int k = 0; k < nr; k++) y[r + k] = hsum(acc[k]) - qk_zero_term(w, r + k, xt);
    }
}

/* Three prepared rows of x against a decoded panel of up to four weight rows: 12 FMA chains
 * (3 loads of x and 4 of W per 12 FMAs, so the FMA units, not the loads, set the pace). Missing
 * rows repeat the last one and are not stored. y[i * ystride + k] for i < ni, k < nr. */
QK_AVX2 void qk_tile_avx2(const pdq_qmatrix *w, const float *const xr[3], int ni, const float *wf, int r, int nr,
                          float *y, size_t ystride) {
    int b = qk_block(w), gs = qk_group_stride(w), ng = w->ngroups, len = qk_xt_stride(w);
    const float *x0 = xr[0], *x1 = xr[ni > 1 ? 1 : 0], *x2 = xr[ni > 2 ? 2 : ni - 1];
    const float *wr[4];
    const float *sc[4];
    for (int k = 0; k < 4; k++) {
        int kk = k < nr ? k : nr - 1;
        wr[k] = wf + (size_t)kk * len;
        sc[k] = w->scales + (size_t)(r + kk) * ng;
    }
    __m256 acc[3][4];
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 4; k++) acc[i][k] = _mm256_setzero_ps();
    for (int g = 0; g < ng; g++) {
        int nv = (qk_group_len(w, g) + b - 1) / b * b / 8;
        size_t o = (size_t)g * gs;
        __m256 d00 = _mm256_setzero_ps(), d01 = d00, d02 = d00, d03 = d00, d10 = d00, d11 = d00, d12 = d00, d13 = d00,
               d20 = d00, d21 = d00, d22 = d00, d23 = d00;
        for (int v = 0; v < nv; v++, o += 8) {
            __m256 xa = _mm256_loadu_ps(x0 + o), xb = _mm256_loadu_ps(x1 + o), xc = _mm256_loadu_ps(x2 + o), wv;
#define QK_TILE_COL(k)                              \
    wv = _mm256_loadu_ps(wr[k] + o);                \
    d0##k = _mm256_fmadd_ps(xa, wv, d0##k);         \
    d1##k = _mm256_fmadd_ps(xb, wv, d1##k);         \
    d2##k = _mm256_fmadd_ps(xc, wv, d2##k);
            QK_TILE_COL(0)
            QK_TILE_COL(1)
            QK_TILE_COL(2)
            QK_TILE_COL(3)
#undef QK_TILE_COL
        }
#define QK_TILE_ACC(k)                                                    \
    do {                                                                  \
        __m256 sv = _mm256_set1_ps(sc[k][g]);                             \
        acc[0][k] = _mm256_fmadd_ps(sv, d0##k, acc[0][k]);                \
        acc[1][k] = _mm256_fmadd_ps(sv, d1##k, acc[1][k]);                \
        acc[2][k] = _mm256_fmadd_ps(sv, d2##k, acc[2][k]);                \
    } while (0)
        QK_TILE_ACC(0);
        QK_TILE_ACC(1);
        QK_TILE_ACC(2);
        QK_TILE_ACC(3);
#undef QK_TILE_ACC
    }
    for (int i = 0; i < ni; i++)
        for (int k = 0; k < nr; k++) y[(size_t)i * ystride + k] = hsum(acc[i][k]) - qk_zero_term(w, r + k, xr[i]);
}

/* Decoded panel row, vectorized: the values qk_decode_row gives (exact small integers). */
QK_AVX2 void qk_decode_row_avx2(const pdq_qmatrix *w, int r, float *wf) {
    int gs = qk_group_stride(w), ng = w->ngroups;
    const uint8_t *row = w->codes + (size_t)r * w->row_bytes;
    const __m256i m15 = _mm256_set1_epi32(0xF);
    int32_t v[16];
    for (int g = 0; g < ng; g++) {
        int c0 = g * w->group, c1 = c0 + qk_group_len(w, g);
        float *o = wf + (size_t)g * gs;
        int c = c0;
        if (w->type == PDQ_QT_U4) {
            if ((c0 & 1) == 0)
                for (; c + 16 <= c1; c += 16, o += 16) {
                    __m256i q = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(row + ((size_t)c >> 1))));
                    _mm256_storeu_ps(o, _mm256_cvtepi32_ps(_mm256_and_si256(q, m15)));
                    _mm256_storeu_ps(o + 8, _mm256_cvtepi32_ps(_mm256_srli_epi32(q, 4)));
                }
            for (; c < c1; c += 16, o += 16) {
                qk_decode_block(w, row, c, c1, v);
                for (int j = 0; j < 16; j++) o[j] = (float)v[j];
            }
        } else {
            for (; c + 8 <= c1; c += 8, o += 8) {
                __m256i q = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(row + c)));
                _mm256_storeu_ps(o, _mm256_cvtepi32_ps(q));
            }
            for (; c < c1; c += 8, o += 8) {
                qk_decode_block(w, row, c, c1, v);
                for (int j = 0; j < 8; j++) o[j] = (float)v[j];
            }
        }
    }
}
#endif
