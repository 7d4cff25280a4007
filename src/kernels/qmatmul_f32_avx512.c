/* AVX-512 kernels: one 512-bit register holds a row's 16 lanes (a block's 16 bytes widened in
 * one instruction), so each lane does exactly the FMA sequence of qmatmul.h and the results
 * equal the AVX2 and scalar paths bit for bit, with half the AVX2 instructions per weight.
 * Compiled per function for the target, called only after run-time detection. */
#include "kernels/qkernel_internal.h"
#include "kernels/rows4.h"

#ifdef PDQ_QK_HAVE_AVX2
#include <immintrin.h>

#define QK_AVX512 __attribute__((target("avx512f,avx512dq,avx512vl,avx512bw,avx2,fma")))

QK_AVX512 static inline float hsum16z(__m512 v) {
    float t[16];
    _mm512_storeu_ps(t, v);
    return qk_hsum16(t);
}

QK_AVX512 static inline __m512i bytes16(const uint8_t *p) {
    return _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)p));
}

QK_AVX512 static inline __m512 cvt16(const int32_t *v) {
    return _mm512_cvtepi32_ps(_mm512_loadu_si512((const void *)v));
}

QK_AVX512 void qk_gemv_u4_avx512(const pdq_qmatrix *w, const float *xt, int r0, int r1, float *y) {
    int gs = qk_group_stride(w), ng = w->ngroups;
    size_t pf = QK_PREFETCH_ROWS * w->row_bytes;
    const __m512i m15 = _mm512_set1_epi32(0xF);
    for (int r = r0; r < r1; r += 4) {
        qk_rows4 p;
        int nr = qk_rows4_init(w, r, r1, pf, &p);
        __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        for (int g = 0; g < ng; g++) {
            int c0 = g * w->group, c1 = c0 + qk_group_len(w, g);
            const float *xg = xt + (size_t)g * gs;
            __m512 d0 = _mm512_setzero_ps(), d1 = d0, d2 = d0, d3 = d0;
            int c = c0;
            if ((c0 & 1) == 0) {
                size_t off = (size_t)c0 >> 1;
                for (; c + 32 <= c1; c += 32, off += 16) {
                    __m512 xl = _mm512_loadu_ps(xg + (c - c0)), xh = _mm512_loadu_ps(xg + (c - c0) + 16);
#define QK_U4_ROW(k)                                                                   \
    do {                                                                               \
        _mm_prefetch((const char *)(qk_rows4_at(&p, k, off) + p.pf), _MM_HINT_T0);                \
        __m512i v = bytes16(qk_rows4_at(&p, k, off));                                           \
        d##k = _mm512_fmadd_ps(xl, _mm512_cvtepi32_ps(_mm512_and_si512(v, m15)), d##k); \
        d##k = _mm512_fmadd_ps(xh, _mm512_cvtepi32_ps(_mm512_srli_epi32(v, 4)), d##k);  \
    } while (0)
                    QK_U4_ROW(0);
                    QK_U4_ROW(1);
                    QK_U4_ROW(2);
                    QK_U4_ROW(3);
#undef QK_U4_ROW
                }
            }
            for (; c < c1; c += 32) {
                __m512 xl = _mm512_loadu_ps(xg + (c - c0)), xh = _mm512_loadu_ps(xg + (c - c0) + 16);
                int32_t v[32];
#define QK_U4_SLOW(k)                                   \
    do {                                                \
        qk_decode_block(w, p.row[k], c, c1, v);         \
        d##k = _mm512_fmadd_ps(xl, cvt16(v), d##k);     \
        d##k = _mm512_fmadd_ps(xh, cvt16(v + 16), d##k); \
    } while (0)
                QK_U4_SLOW(0);
                QK_U4_SLOW(1);
                QK_U4_SLOW(2);
                QK_U4_SLOW(3);
#undef QK_U4_SLOW
            }
            a0 = _mm512_fmadd_ps(_mm512_set1_ps(p.scale[0][g]), d0, a0);
            a1 = _mm512_fmadd_ps(_mm512_set1_ps(p.scale[1][g]), d1, a1);
            a2 = _mm512_fmadd_ps(_mm512_set1_ps(p.scale[2][g]), d2, a2);
            a3 = _mm512_fmadd_ps(_mm512_set1_ps(p.scale[3][g]), d3, a3);
        }
        float out[4] = {hsum16z(a0), hsum16z(a1), hsum16z(a2), hsum16z(a3)};
        for (int k = 0; k < nr; k++) y[r + k] = out[k] - qk_zero_term_s(w, r + k, p.scale[k], xt);
    }
}

QK_AVX512 void qk_gemv_u8_avx512(const pdq_qmatrix *w, const float *xt, int r0, int r1, float *y) {
    int gs = qk_group_stride(w), ng = w->ngroups;
    size_t pf = QK_PREFETCH_ROWS * w->row_bytes;
    for (int r = r0; r < r1; r += 4) {
        qk_rows4 p;
        int nr = qk_rows4_init(w, r, r1, pf, &p);
        __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        for (int g = 0; g < ng; g++) {
            int c0 = g * w->group, c1 = c0 + qk_group_len(w, g);
            const float *xg = xt + (size_t)g * gs;
            __m512 d0 = _mm512_setzero_ps(), d1 = d0, d2 = d0, d3 = d0;
            int c = c0;
            for (; c + 16 <= c1; c += 16) {
                __m512 xv = _mm512_loadu_ps(xg + (c - c0));
                for (int k = 0; k < 4; k++) _mm_prefetch((const char *)(qk_rows4_at(&p, k, (size_t)c) + p.pf), _MM_HINT_T0);
                d0 = _mm512_fmadd_ps(xv, _mm512_cvtepi32_ps(bytes16(qk_rows4_at(&p, 0, (size_t)c))), d0);
                d1 = _mm512_fmadd_ps(xv, _mm512_cvtepi32_ps(bytes16(qk_rows4_at(&p, 1, (size_t)c))), d1);
                d2 = _mm512_fmadd_ps(xv, _mm512_cvtepi32_ps(bytes16(qk_rows4_at(&p, 2, (size_t)c))), d2);
                d3 = _mm512_fmadd_ps(xv, _mm512_cvtepi32_ps(bytes16(qk_rows4_at(&p, 3, (size_t)c))), d3);
            }
            if (c < c1) {
                __m512 xv = _mm512_loadu_ps(xg + (c - c0));
                int32_t v[16];
                qk_decode_block(w, p.row[0], c, c1, v);
                d0 = _mm512_fmadd_ps(xv, cvt16(v), d0);
                qk_decode_block(w, p.row[1], c, c1, v);
                d1 = _mm512_fmadd_ps(xv, cvt16(v), d1);
                qk_decode_block(w, p.row[2], c, c1, v);
                d2 = _mm512_fmadd_ps(xv, cvt16(v), d2);
                qk_decode_block(w, p.row[3], c, c1, v);
                d3 = _mm512_fmadd_ps(xv, cvt16(v), d3);
            }
            a0 = _mm512_fmadd_ps(_mm512_set1_ps(p.scale[0][g]), d0, a0);
            a1 = _mm512_fmadd_ps(_mm512_set1_ps(p.scale[1][g]), d1, a1);
            a2 = _mm512_fmadd_ps(_mm512_set1_ps(p.scale[2][g]), d2, a2);
            a3 = _mm512_fmadd_ps(_mm512_set1_ps(p.scale[3][g]), d3, a3);
        }
        float out[4] = {hsum16z(a0), hsum16z(a1), hsum16z(a2), hsum16z(a3)};
        for (int k = 0; k < nr; k++) y[r + k] = out[k] - qk_zero_term_s(w, r + k, p.scale[k], xt);
    }
}

/* QK_TILE5_X (4) prepared rows of x against QK_TILE5_W (4) decoded weight rows: 16 chains of
 * 16 lanes. Missing rows repeat the last one and are not stored. */
QK_AVX512 void qk_tile_avx512(const pdq_qmatrix *w, const float *const *xr, int ni, const float *wf, int r, int nr,
                              float *y, size_t ystride) {
    int b = qk_block(w), gs = qk_group_stride(w), ng = w->ngroups, len = qk_xt_stride(w);
    const float *wr[4], *x[4];
    int rk[4];
    for (int k = 0; k < 4; k++) {
        int kk = k < nr ? k : nr - 1, ii = k < ni ? k : ni - 1;
        wr[k] = wf + (size_t)kk * len;
        rk[k] = r + kk;
        x[k] = xr[ii];
    }
    __m512 acc[4][4];
    for (int i = 0; i < 4; i++)
        for (int k = 0; k < 4; k++) acc[i][k] = _mm512_setzero_ps();
    for (int g = 0; g < ng; g++) {
        int nv = (qk_group_len(w, g) + b - 1) / b * b / 8;
        size_t o = (size_t)g * gs;
        __m512 d00 = _mm512_setzero_ps(), d01 = d00, d02 = d00, d03 = d00, d10 = d00, d11 = d00, d12 = d00, d13 = d00,
               d20 = d00, d21 = d00, d22 = d00, d23 = d00, d30 = d00, d31 = d00, d32 = d00, d33 = d00;
        for (int q = 0; q < nv; q += 2, o += 16) {
            __m512 x0 = _mm512_loadu_ps(x[0] + o), x1 = _mm512_loadu_ps(x[1] + o);
            __m512 x2 = _mm512_loadu_ps(x[2] + o), x3 = _mm512_loadu_ps(x[3] + o), wv;
#define QK_T(k)                                     \
    wv = _mm512_loadu_ps(wr[k] + o);                \
    d0##k = _mm512_fmadd_ps(x0, wv, d0##k);         \
    d1##k = _mm512_fmadd_ps(x1, wv, d1##k);         \
    d2##k = _mm512_fmadd_ps(x2, wv, d2##k);         \
    d3##k = _mm512_fmadd_ps(x3, wv, d3##k);
            QK_T(0) QK_T(1) QK_T(2) QK_T(3)
#undef QK_T
        }
#define QK_A(k)                                                    \
    do {                                                           \
        __m512 sv = _mm512_set1_ps(qk_scale(w, rk[k], g));         \
        acc[0][k] = _mm512_fmadd_ps(sv, d0##k, acc[0][k]);         \
        acc[1][k] = _mm512_fmadd_ps(sv, d1##k, acc[1][k]);         \
        acc[2][k] = _mm512_fmadd_ps(sv, d2##k, acc[2][k]);         \
        acc[3][k] = _mm512_fmadd_ps(sv, d3##k, acc[3][k]);         \
    } while (0)
        QK_A(0);
        QK_A(1);
        QK_A(2);
        QK_A(3);
#undef QK_A
    }
    for (int i = 0; i < ni; i++)
        for (int k = 0; k < nr; k++) y[(size_t)i * ystride + k] = hsum16z(acc[i][k]) - qk_zero_term(w, r + k, x[i]);
}
#endif
