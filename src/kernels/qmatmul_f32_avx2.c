/* AVX2/FMA kernels, compiled per function for the target (the build needs no -mavx2) and only
 * called after run-time detection. Same summation order as the scalar kernels (qmatmul.h): the
 * 16 lanes of a row are two 8-float registers (lanes 0-7 from bytes 0-7 of a block, 8-15 from
 * bytes 8-15). The GEMV runs four output rows at once (eight FMA chains, x loaded once). */
#include "kernels/qkernel_internal.h"
#include "kernels/rows4.h"

#ifdef PDQ_QK_HAVE_AVX2
#include <immintrin.h>

#define QK_AVX2 __attribute__((target("avx2,fma")))

QK_AVX2 static inline float hsum16(__m256 a, __m256 b) {
    float t[16];
    _mm256_storeu_ps(t, a);
    _mm256_storeu_ps(t + 8, b);
    return qk_hsum16(t);
}

QK_AVX2 static inline __m256 cvt8(const int32_t *v) { return _mm256_cvtepi32_ps(_mm256_loadu_si256((const __m256i *)v)); }
QK_AVX2 static inline __m256i bytes8(const uint8_t *p) { return _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)p)); }

QK_AVX2 void qk_gemv_u4_avx2(const pdq_qmatrix *w, const float *xt, int r0, int r1, float *y) {
    int gs = qk_group_stride(w), ng = w->ngroups;
    size_t pf = QK_PREFETCH_ROWS * w->row_bytes;
    const __m256i m15 = _mm256_set1_epi32(0xF);
    for (int r = r0; r < r1; r += 4) {
        qk_rows4 p;
        int nr = qk_rows4_init(w, r, r1, pf, &p);
        __m256 acc[4][2];
        for (int k = 0; k < 4; k++) acc[k][0] = acc[k][1] = _mm256_setzero_ps();
        for (int g = 0; g < ng; g++) {
            int c0 = g * w->group, c1 = c0 + qk_group_len(w, g);
            const float *xg = xt + (size_t)g * gs;
            __m256 d0a = _mm256_setzero_ps(), d0b = d0a, d1a = d0a, d1b = d0a, d2a = d0a, d2b = d0a, d3a = d0a, d3b = d0a;
            int c = c0;
            if ((c0 & 1) == 0) {
                size_t off = (size_t)c0 >> 1;
                for (; c + 32 <= c1; c += 32, off += 16) {
                    const float *xb = xg + (c - c0);
                    __m256 x0 = _mm256_loadu_ps(xb), x1 = _mm256_loadu_ps(xb + 8);
                    __m256 x2 = _mm256_loadu_ps(xb + 16), x3 = _mm256_loadu_ps(xb + 24);
#define QK_U4_ROW(k)                                                                         \
    do {                                                                                     \
        _mm_prefetch((const char *)(qk_rows4_at(&p, k, off) + p.pf), _MM_HINT_T0);                      \
        const uint8_t *ck = qk_rows4_at(&p, k, off);                                       \
        __m256i va = bytes8(ck), vb = bytes8(ck + 8);                \
        d##k##a = _mm256_fmadd_ps(x0, _mm256_cvtepi32_ps(_mm256_and_si256(va, m15)), d##k##a); \
        d##k##b = _mm256_fmadd_ps(x1, _mm256_cvtepi32_ps(_mm256_and_si256(vb, m15)), d##k##b); \
        d##k##a = _mm256_fmadd_ps(x2, _mm256_cvtepi32_ps(_mm256_srli_epi32(va, 4)), d##k##a);  \
        d##k##b = _mm256_fmadd_ps(x3, _mm256_cvtepi32_ps(_mm256_srli_epi32(vb, 4)), d##k##b);  \
    } while (0)
                    QK_U4_ROW(0);
                    QK_U4_ROW(1);
                    QK_U4_ROW(2);
                    QK_U4_ROW(3);
#undef QK_U4_ROW
                }
            }
            for (; c < c1; c += 32) {
                const float *xb = xg + (c - c0);
                __m256 x0 = _mm256_loadu_ps(xb), x1 = _mm256_loadu_ps(xb + 8);
                __m256 x2 = _mm256_loadu_ps(xb + 16), x3 = _mm256_loadu_ps(xb + 24);
                int32_t v[32];
#define QK_U4_SLOW(k)                                               \
    do {                                                            \
        qk_decode_block(w, p.row[k], c, c1, v);                     \
        d##k##a = _mm256_fmadd_ps(x0, cvt8(v), d##k##a);            \
        d##k##b = _mm256_fmadd_ps(x1, cvt8(v + 8), d##k##b);        \
        d##k##a = _mm256_fmadd_ps(x2, cvt8(v + 16), d##k##a);       \
        d##k##b = _mm256_fmadd_ps(x3, cvt8(v + 24), d##k##b);       \
    } while (0)
                QK_U4_SLOW(0);
                QK_U4_SLOW(1);
                QK_U4_SLOW(2);
                QK_U4_SLOW(3);
#undef QK_U4_SLOW
            }
#define QK_ACC(k)                                                      \
    do {                                                               \
        __m256 sv = _mm256_set1_ps(p.scale[k][g]);                     \
        acc[k][0] = _mm256_fmadd_ps(sv, d##k##a, acc[k][0]);           \
        acc[k][1] = _mm256_fmadd_ps(sv, d##k##b, acc[k][1]);           \
    } while (0)
            QK_ACC(0);
            QK_ACC(1);
            QK_ACC(2);
            QK_ACC(3);
        }
        for (int k = 0; k < nr; k++) y[r + k] = hsum16(acc[k][0], acc[k][1]) - qk_zero_term_s(w, r + k, p.scale[k], xt);
    }
}

QK_AVX2 void qk_gemv_u8_avx2(const pdq_qmatrix *w, const float *xt, int r0, int r1, float *y) {
    int gs = qk_group_stride(w), ng = w->ngroups;
    size_t pf = QK_PREFETCH_ROWS * w->row_bytes;
    for (int r = r0; r < r1; r += 4) {
        qk_rows4 p;
        int nr = qk_rows4_init(w, r, r1, pf, &p);
        __m256 acc[4][2];
        for (int k = 0; k < 4; k++) acc[k][0] = acc[k][1] = _mm256_setzero_ps();
        for (int g = 0; g < ng; g++) {
            int c0 = g * w->group, c1 = c0 + qk_group_len(w, g);
            const float *xg = xt + (size_t)g * gs;
            __m256 d0a = _mm256_setzero_ps(), d0b = d0a, d1a = d0a, d1b = d0a, d2a = d0a, d2b = d0a, d3a = d0a, d3b = d0a;
            int c = c0;
            for (; c + 16 <= c1; c += 16) {
                const float *xb = xg + (c - c0);
                __m256 x0 = _mm256_loadu_ps(xb), x1 = _mm256_loadu_ps(xb + 8);
#define QK_U8_ROW(k)                                                                          \
    do {                                                                                      \
        const uint8_t *ck = qk_rows4_at(&p, k, (size_t)c);                                    \
        _mm_prefetch((const char *)(ck + p.pf), _MM_HINT_T0);                         \
        d##k##a = _mm256_fmadd_ps(x0, _mm256_cvtepi32_ps(bytes8(ck)), d##k##a);     \
        d##k##b = _mm256_fmadd_ps(x1, _mm256_cvtepi32_ps(bytes8(ck + 8)), d##k##b); \
    } while (0)
                QK_U8_ROW(0);
                QK_U8_ROW(1);
                QK_U8_ROW(2);
                QK_U8_ROW(3);
#undef QK_U8_ROW
            }
            if (c < c1) {
                const float *xb = xg + (c - c0);
                __m256 x0 = _mm256_loadu_ps(xb), x1 = _mm256_loadu_ps(xb + 8);
                int32_t v[16];
#define QK_U8_SLOW(k)                                         \
    do {                                                      \
        qk_decode_block(w, p.row[k], c, c1, v);               \
        d##k##a = _mm256_fmadd_ps(x0, cvt8(v), d##k##a);      \
        d##k##b = _mm256_fmadd_ps(x1, cvt8(v + 8), d##k##b);  \
    } while (0)
                QK_U8_SLOW(0);
                QK_U8_SLOW(1);
                QK_U8_SLOW(2);
                QK_U8_SLOW(3);
#undef QK_U8_SLOW
            }
            QK_ACC(0);
            QK_ACC(1);
            QK_ACC(2);
            QK_ACC(3);
#undef QK_ACC
        }
        for (int k = 0; k < nr; k++) y[r + k] = hsum16(acc[k][0], acc[k][1]) - qk_zero_term_s(w, r + k, p.scale[k], xt);
    }
}

/* QK_TILE2_X (3) prepared rows of x against QK_TILE2_W (2) decoded weight rows: 12 FMA chains
 * (both lane halves of six pairs). Missing rows repeat the last one and are not stored. */
QK_AVX2 void qk_tile_avx2(const pdq_qmatrix *w, const float *const *xr, int ni, const float *wf, int r, int nr, float *y,
                          size_t ystride) {
    int b = qk_block(w), gs = qk_group_stride(w), ng = w->ngroups, len = qk_xt_stride(w);
    const float *w0 = wf, *w1 = wf + (size_t)(nr > 1) * len;
    int r1 = r + (nr > 1);
    const float *x0 = xr[0], *x1 = xr[ni > 1 ? 1 : 0], *x2 = xr[ni > 2 ? 2 : ni - 1];
    __m256 acc[3][2][2];
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 2; k++) acc[i][k][0] = acc[i][k][1] = _mm256_setzero_ps();
    for (int g = 0; g < ng; g++) {
        int nv = (qk_group_len(w, g) + b - 1) / b * b / 8;
        size_t o = (size_t)g * gs;
        __m256 a00 = _mm256_setzero_ps(), b00 = a00, a01 = a00, b01 = a00, a10 = a00, b10 = a00, a11 = a00, b11 = a00,
               a20 = a00, b20 = a00, a21 = a00, b21 = a00;
        for (int q = 0; q < nv; q += 2, o += 16) {
            __m256 xa = _mm256_loadu_ps(x0 + o), xb = _mm256_loadu_ps(x1 + o), xc = _mm256_loadu_ps(x2 + o);
            __m256 wv = _mm256_loadu_ps(w0 + o);
            a00 = _mm256_fmadd_ps(xa, wv, a00); a10 = _mm256_fmadd_ps(xb, wv, a10); a20 = _mm256_fmadd_ps(xc, wv, a20);
            wv = _mm256_loadu_ps(w1 + o);
            a01 = _mm256_fmadd_ps(xa, wv, a01); a11 = _mm256_fmadd_ps(xb, wv, a11); a21 = _mm256_fmadd_ps(xc, wv, a21);
            xa = _mm256_loadu_ps(x0 + o + 8); xb = _mm256_loadu_ps(x1 + o + 8); xc = _mm256_loadu_ps(x2 + o + 8);
            wv = _mm256_loadu_ps(w0 + o + 8);
            b00 = _mm256_fmadd_ps(xa, wv, b00); b10 = _mm256_fmadd_ps(xb, wv, b10); b20 = _mm256_fmadd_ps(xc, wv, b20);
            wv = _mm256_loadu_ps(w1 + o + 8);
            b01 = _mm256_fmadd_ps(xa, wv, b01); b11 = _mm256_fmadd_ps(xb, wv, b11); b21 = _mm256_fmadd_ps(xc, wv, b21);
        }
        __m256 sv0 = _mm256_set1_ps(qk_scale(w, r, g)), sv1 = _mm256_set1_ps(qk_scale(w, r1, g));
#define QK_TA(i)                                                          \
    acc[i][0][0] = _mm256_fmadd_ps(sv0, a##i##0, acc[i][0][0]);           \
    acc[i][0][1] = _mm256_fmadd_ps(sv0, b##i##0, acc[i][0][1]);           \
    acc[i][1][0] = _mm256_fmadd_ps(sv1, a##i##1, acc[i][1][0]);           \
    acc[i][1][1] = _mm256_fmadd_ps(sv1, b##i##1, acc[i][1][1]);
        QK_TA(0) QK_TA(1) QK_TA(2)
#undef QK_TA
    }
    const float *xs[3] = {x0, x1, x2};
    for (int i = 0; i < ni; i++)
        for (int k = 0; k < nr; k++)
            y[(size_t)i * ystride + k] = hsum16(acc[i][k][0], acc[i][k][1]) - qk_zero_term(w, r + k, xs[i]);
}

/* Decoded panel row, vectorized: the values qk_decode_row gives (exact small integers). */
QK_AVX2 void qk_decode_row_avx2(const pdq_qmatrix *w, int r, float *wf) {
    int gs = qk_group_stride(w), ng = w->ngroups;
    const uint8_t *row = pdq_qmatrix_row(w, r);
    const __m256i m15 = _mm256_set1_epi32(0xF);
    int32_t v[32];
    for (int g = 0; g < ng; g++) {
        int c0 = g * w->group, c1 = c0 + qk_group_len(w, g);
        float *o = wf + (size_t)g * gs;
        int c = c0;
        if (w->type == PDQ_QT_U4) {
            if ((c0 & 1) == 0)
                for (; c + 32 <= c1; c += 32, o += 32) {
                    const uint8_t *cb = pdq_qmatrix_at(w, row, (size_t)c >> 1);
                    __m256i qa = bytes8(cb), qb = bytes8(cb + 8);
                    _mm256_storeu_ps(o, _mm256_cvtepi32_ps(_mm256_and_si256(qa, m15)));
                    _mm256_storeu_ps(o + 8, _mm256_cvtepi32_ps(_mm256_and_si256(qb, m15)));
                    _mm256_storeu_ps(o + 16, _mm256_cvtepi32_ps(_mm256_srli_epi32(qa, 4)));
                    _mm256_storeu_ps(o + 24, _mm256_cvtepi32_ps(_mm256_srli_epi32(qb, 4)));
                }
            for (; c < c1; c += 32, o += 32) {
                qk_decode_block(w, row, c, c1, v);
                for (int j = 0; j < 32; j++) o[j] = (float)v[j];
            }
        } else {
            for (; c + 16 <= c1; c += 16, o += 16) {
                const uint8_t *cb = pdq_qmatrix_at(w, row, (size_t)c);
                _mm256_storeu_ps(o, _mm256_cvtepi32_ps(bytes8(cb)));
                _mm256_storeu_ps(o + 8, _mm256_cvtepi32_ps(bytes8(cb + 8)));
            }
            for (; c < c1; c += 16, o += 16) {
                qk_decode_block(w, row, c, c1, v);
                for (int j = 0; j < 16; j++) o[j] = (float)v[j];
            }
        }
    }
}
#endif
