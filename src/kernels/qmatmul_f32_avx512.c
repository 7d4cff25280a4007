/* AVX-512 kernels: the AVX2 kernels' arithmetic with two output rows per 512-bit register
 * (lanes 0-7 one row's 8 lanes, 8-15 the next row's; x broadcast to both halves), so every lane
 * does exactly the FMA sequence of qmatmul.h and the results equal the AVX2 and scalar paths bit
 * for bit, at half the instructions per weight. Compiled per function for the target, called only
 * after run-time detection. */
#include "kernels/qkernel_internal.h"

#ifdef PDQ_QK_HAVE_AVX2
#include <immintrin.h>

#define QK_AVX512 __attribute__((target("avx512f,avx512dq,avx512vl,avx512bw,avx2,fma")))

/* y of two rows from a pair register: the low and high 8 lanes reduced in the fixed order. */
QK_AVX512 static inline void hsum_pair(__m512 v, float *a, float *b) {
    float t[16];
    _mm512_storeu_ps(t, v);
    *a = qk_hsum8(t);
    *b = qk_hsum8(t + 8);
}

QK_AVX512 static inline __m512 pair_scale(float a, float b) {
    return _mm512_insertf32x8(_mm512_set1_ps(a), _mm256_set1_ps(b), 1);
}

QK_AVX512 static inline __m512i pair_codes(const uint8_t *a, const uint8_t *b) {
    __m128i v = _mm_unpacklo_epi64(_mm_loadl_epi64((const __m128i *)a), _mm_loadl_epi64((const __m128i *)b));
    return _mm512_cvtepu8_epi32(v);
}

QK_AVX512 static inline __m512i pair_i32(const int32_t *a, const int32_t *b) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)a)),
                              _mm256_loadu_si256((const __m256i *)b), 1);
}

QK_AVX512 static inline __m512 bcast8(const float *x) { return _mm512_broadcast_f32x8(_mm256_loadu_ps(x)); }

typedef struct {
    const uint8_t *row[4];
    const float *scale[4];
} rows4x;

static void rows4x_init(const pdq_qmatrix *w, int r, int nr, rows4x *p) {
    for (int k = 0; k < 4; k++) {
        int rk = r + (k < nr ? k : nr - 1);
        p->row[k] = w->codes + (size_t)rk * w->row_bytes;
        p->scale[k] = w->scales + (size_t)rk * w->ngroups;
    }
}

QK_AVX512 void qk_gemv_u4_avx512(const pdq_qmatrix *w, const float *xt, int r0, int r1, float *y) {
    int gs = qk_group_stride(w), ng = w->ngroups;
    const __m512i m15 = _mm512_set1_epi32(0xF);
    for (int r = r0; r < r1; r += 4) {
        int nr = r1 - r < 4 ? r1 - r : 4;
        rows4x p;
        rows4x_init(w, r, nr, &p);
        __m512 a01 = _mm512_setzero_ps(), a23 = a01;
        for (int g = 0; g < ng; g++) {
            int c0 = g * w->group, c1 = c0 + qk_group_len(w, g);
            const float *xg = xt + (size_t)g * gs;
            __m512 d01 = _mm512_setzero_ps(), d23 = d01;
            int c = c0;
            if ((c0 & 1) == 0) {
                size_t off = (size_t)c0 >> 1;
                for (; c + 16 <= c1; c += 16, off += 8) {
                    __m512 xa = bcast8(xg + (c - c0)), xb = bcast8(xg + (c - c0) + 8);
                    __m512i v01 = pair_codes(p.row[0] + off, p.row[1] + off);
                    __m512i v23 = pair_codes(p.row[2] + off, p.row[3] + off);
                    d01 = _mm512_fmadd_ps(xa, _mm512_cvtepi32_ps(_mm512_and_si512(v01, m15)), d01);
                    d23 = _mm512_fmadd_ps(xa, _mm512_cvtepi32_ps(_mm512_and_si512(v23, m15)), d23);
                    d01 = _mm512_fmadd_ps(xb, _mm512_cvtepi32_ps(_mm512_srli_epi32(v01, 4)), d01);
                    d23 = _mm512_fmadd_ps(xb, _mm512_cvtepi32_ps(_mm512_srli_epi32(v23, 4)), d23);
                }
            }
            for (; c < c1; c += 16) {
                __m512 xa = bcast8(xg + (c - c0)), xb = bcast8(xg + (c - c0) + 8);
                int32_t v[4][16];
                for (int k = 0; k < 4; k++) qk_decode_block(w, p.row[k], c, c1, v[k]);
                d01 = _mm512_fmadd_ps(xa, _mm512_cvtepi32_ps(pair_i32(v[0], v[1])), d01);
                d23 = _mm512_fmadd_ps(xa, _mm512_cvtepi32_ps(pair_i32(v[2], v[3])), d23);
                d01 = _mm512_fmadd_ps(xb, _mm512_cvtepi32_ps(pair_i32(v[0] + 8, v[1] + 8)), d01);
                d23 = _mm512_fmadd_ps(xb, _mm512_cvtepi32_ps(pair_i32(v[2] + 8, v[3] + 8)), d23);
            }
            a01 = _mm512_fmadd_ps(pair_scale(p.scale[0][g], p.scale[1][g]), d01, a01);
            a23 = _mm512_fmadd_ps(pair_scale(p.scale[2][g], p.scale[3][g]), d23, a23);
        }
        float out[4];
        hsum_pair(a01, &out[0], &out[1]);
        hsum_pair(a23, &out[2], &out[3]);
        for (int k = 0; k < nr; k++) y[r + k] = out[k] - qk_zero_term(w, r + k, xt);
    }
}

QK_AVX512 void qk_gemv_u8_avx512(const pdq_qmatrix *w, const float *xt, int r0, int r1, float *y) {
    int gs = qk_group_stride(w), ng = w->ngroups;
    for (int r = r0; r < r1; r += 4) {
        int nr = r1 - r < 4 ? r1 - r : 4;
        rows4x p;
        rows4x_init(w, r, nr, &p);
        __m512 a01 = _mm512_setzero_ps(), a23 = a01;
        for (int g = 0; g < ng; g++) {
            int c0 = g * w->group, c1 = c0 + qk_group_len(w, g);
            const float *xg = xt + (size_t)g * gs;
            __m512 d01 = _mm512_setzero_ps(), d23 = d01;
            int c = c0;
            for (; c + 8 <= c1; c += 8) {
                __m512 xa = bcast8(xg + (c - c0));
                d01 = _mm512_fmadd_ps(xa, _mm512_cvtepi32_ps(pair_codes(p.row[0] + c, p.row[1] + c)), d01);
                d23 = _mm512_fmadd_ps(xa, _mm512_cvtepi32_ps(pair_codes(p.row[2] + c, p.row[3] + c)), d23);
            }
            if (c < c1) {
                __m512 xa = bcast8(xg + (c - c0));
                int32_t v[4][8];
                for (int k = 0; k < 4; k++) qk_decode_block(w, p.row[k], c, c1, v[k]);
                d01 = _mm512_fmadd_ps(xa, _mm512_cvtepi32_ps(pair_i32(v[0], v[1])), d01);
                d23 = _mm512_fmadd_ps(xa, _mm512_cvtepi32_ps(pair_i32(v[2], v[3])), d23);
            }
            a01 = _mm512_fmadd_ps(pair_scale(p.scale[0][g], p.scale[1][g]), d01, a01);
            a23 = _mm512_fmadd_ps(pair_scale(p.scale[2][g], p.scale[3][g]), d23, a23);
        }
        float out[4];
        hsum_pair(a01, &out[0], &out[1]);
        hsum_pair(a23, &out[2], &out[3]);
        for (int k = 0; k < nr; k++) y[r + k] = out[k] - qk_zero_term(w, r + k, xt);
    }
}

/* Six prepared rows of x against a decoded panel of four weight rows (two pairs): 12 chains of
 * 16 lanes. Missing rows repeat the last one and are not stored. */
QK_AVX512 void qk_tile_avx512(const pdq_qmatrix *w, const float *const xr[6], int ni, const float *wf, int r, int nr,
                              float *y, size_t ystride) {
    int b = qk_block(w), gs = qk_group_stride(w), ng = w->ngroups, len = qk_xt_stride(w);
    const float *wr[4];
    const float *sc[4];
    for (int k = 0; k < 4; k++) {
        int kk = k < nr ? k : nr - 1;
        wr[k] = wf + (size_t)kk * len;
        sc[k] = w->scales + (size_t)(r + kk) * ng;
    }
    const float *x[6];
    for (int i = 0; i < 6; i++) x[i] = xr[i < ni ? i : ni - 1];
    __m512 acc[6][2];
    for (int i = 0; i < 6; i++) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
    for (int g = 0; g < ng; g++) {
        int nv = (qk_group_len(w, g) + b - 1) / b * b / 8;
        size_t o = (size_t)g * gs;
        __m512 d00 = _mm512_setzero_ps(), d01 = d00, d10 = d00, d11 = d00, d20 = d00, d21 = d00, d30 = d00, d31 = d00,
               d40 = d00, d41 = d00, d50 = d00, d51 = d00;
        for (int v = 0; v < nv; v++, o += 8) {
            __m512 w01 = _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_loadu_ps(wr[0] + o)), _mm256_loadu_ps(wr[1] + o), 1);
            __m512 w23 = _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_loadu_ps(wr[2] + o)), _mm256_loadu_ps(wr[3] + o), 1);
            __m512 xv;
#define QK_T(i)                                   \
    xv = bcast8(x[i] + o);                        \
    d##i##0 = _mm512_fmadd_ps(xv, w01, d##i##0);  \
    d##i##1 = _mm512_fmadd_ps(xv, w23, d##i##1);
            QK_T(0) QK_T(1) QK_T(2) QK_T(3) QK_T(4) QK_T(5)
#undef QK_T
        }
        __m512 s01 = pair_scale(sc[0][g], sc[1][g]), s23 = pair_scale(sc[2][g], sc[3][g]);
#define QK_A(i)                                              \
    acc[i][0] = _mm512_fmadd_ps(s01, d##i##0, acc[i][0]);    \
    acc[i][1] = _mm512_fmadd_ps(s23, d##i##1, acc[i][1]);
        QK_A(0) QK_A(1) QK_A(2) QK_A(3) QK_A(4) QK_A(5)
#undef QK_A
    }
    for (int i = 0; i < ni; i++) {
        float out[4];
        hsum_pair(acc[i][0], &out[0], &out[1]);
        hsum_pair(acc[i][1], &out[2], &out[3]);
        for (int k = 0; k < nr; k++) y[(size_t)i * ystride + k] = out[k] - qk_zero_term(w, r + k, x[i]);
    }
}
#endif
