/* The integer executor's AVX-512 VNNI sums (FULLY_CONNECTED's tiles): the scalar reference's
 * exact integers (qx_fc_i16_scalar.c). vpdpwssd adds 2 products per int32 lane per 32 elements:
 * 2048 elements are 128 products per lane, then they flush to int64 totals. */
#include <string.h>

#include "kernels/qx_kernels.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#include "kernels/qx_hsum.h"
#include "kernels/simd_acc.h"

#define AVX2_BLOCK 2048
#define VNNI __attribute__((target("avx512f,avx512bw,avx512dq,avx512vnni")))


VNNI static __m512i w32(const uint8_t *w) { return _mm512_cvtepu8_epi16(_mm256_loadu_si256((const __m256i *)w)); }

VNNI void pdq_qx_dot4_u8_vnni(const int16_t *x, const uint8_t *w, size_t ldw, int K, int64_t *out) {
    int64_t res[4] = {0};
    int K32 = K / 32 * 32, k = 0;
    while (k < K32) {
        int e = K32 - k > AVX2_BLOCK ? k + AVX2_BLOCK : K32;
        __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
        for (; k < e; k += 32) {
            __m512i xv = _mm512_loadu_si512((const void *)(x + k));
            a0 = _mm512_dpwssd_epi32(a0, xv, w32(w + k));
            a1 = _mm512_dpwssd_epi32(a1, xv, w32(w + ldw + k));
            a2 = _mm512_dpwssd_epi32(a2, xv, w32(w + 2 * ldw + k));
            a3 = _mm512_dpwssd_epi32(a3, xv, w32(w + 3 * ldw + k));
        }
        res[0] += qx_hsum_avx512(a0);
        res[1] += qx_hsum_avx512(a1);
        res[2] += qx_hsum_avx512(a2);
        res[3] += qx_hsum_avx512(a3);
    }
    qx_tile_tail(res, 1, 4, x, 0, w, ldw, k, K);
    memcpy(out, res, sizeof res);
}

VNNI void pdq_qx_tile4x2_u8_vnni(const int16_t *x, size_t ldx, const uint8_t *w, size_t ldw, int K, int64_t *out) {
    int64_t res[8] = {0};
    int K32 = K / 32 * 32, k = 0;
    const int16_t *x0 = x, *x1 = x + ldx, *x2 = x + 2 * ldx, *x3 = x + 3 * ldx;
    while (k < K32) {
        int e = K32 - k > AVX2_BLOCK ? k + AVX2_BLOCK : K32;
        __m512i a00 = _mm512_setzero_si512(), a01 = a00, a10 = a00, a11 = a00, a20 = a00, a21 = a00, a30 = a00, a31 = a00;
        for (; k < e; k += 32) {
            __m512i w0 = w32(w + k), w1 = w32(w + ldw + k), xv;
#define QX_ROW(m)                                           \
    xv = _mm512_loadu_si512((const void *)(x##m + k));      \
    a##m##0 = pdq_dpwssd512(a##m##0, xv, w0);                         \
    a##m##1 = pdq_dpwssd512(a##m##1, xv, w1);
            QX_ROW(0) QX_ROW(1) QX_ROW(2) QX_ROW(3)
#undef QX_ROW
        }
#define QX_SUM(m)                            \
    res[2 * m] += qx_hsum_avx512(a##m##0);   \
    res[2 * m + 1] += qx_hsum_avx512(a##m##1);
        QX_SUM(0) QX_SUM(1) QX_SUM(2) QX_SUM(3)
#undef QX_SUM
    }
    qx_tile_tail(res, 4, 2, x, ldx, w, ldw, k, K);
    memcpy(out, res, sizeof res);
}

/* The 4 x 4 tile's 16 named accumulators (a<m><r>: activation row m, weight row r) and one
 * step of 32 columns at k: one weight load per 4 products and one activation load per 4. */
#define QX_ACC4X4                                                                                                   \
    __m512i a00 = _mm512_setzero_si512(), a01 = a00, a02 = a00, a03 = a00, a10 = a00, a11 = a00, a12 = a00, a13 = a00, \
            a20 = a00, a21 = a00, a22 = a00, a23 = a00, a30 = a00, a31 = a00, a32 = a00, a33 = a00
#define QX_ROW4(m)                                     \
    xv = _mm512_loadu_si512((const void *)(x##m + k)); \
    a##m##0 = pdq_dpwssd512(a##m##0, xv, w0);          \
    a##m##1 = pdq_dpwssd512(a##m##1, xv, w1);          \
    a##m##2 = pdq_dpwssd512(a##m##2, xv, w2);          \
    a##m##3 = pdq_dpwssd512(a##m##3, xv, w3);
#define QX_STEP4X4                                                                                                   \
    {                                                                                                                \
        __m512i w0 = w32(w + k), w1 = w32(w + ldw + k), w2 = w32(w + 2 * ldw + k), w3 = w32(w + 3 * ldw + k), xv; \
        QX_ROW4(0) QX_ROW4(1) QX_ROW4(2) QX_ROW4(3)                                                                  \
    }

/* 4 activation rows against 4 weight rows: 16 named accumulators, one weight load per 4 products
 * and one activation load per 4. */
VNNI void pdq_qx_tile4x4_u8_vnni(const int16_t *x, size_t ldx, const uint8_t *w, size_t ldw, int K, int64_t *out) {
    int64_t res[16] = {0};
    int K32 = K / 32 * 32, k = 0;
    const int16_t *x0 = x, *x1 = x + ldx, *x2 = x + 2 * ldx, *x3 = x + 3 * ldx;
    while (k < K32) {
        int e = K32 - k > AVX2_BLOCK ? k + AVX2_BLOCK : K32;
        QX_ACC4X4;
        for (; k < e; k += 32) QX_STEP4X4
#define QX_SUM(m)                                \
    res[4 * m] += qx_hsum_avx512(a##m##0);       \
    res[4 * m + 1] += qx_hsum_avx512(a##m##1);   \
    res[4 * m + 2] += qx_hsum_avx512(a##m##2);   \
    res[4 * m + 3] += qx_hsum_avx512(a##m##3);
        QX_SUM(0) QX_SUM(1) QX_SUM(2) QX_SUM(3)
#undef QX_SUM
    }
    qx_tile_tail(res, 4, 4, x, ldx, w, ldw, k, K);
    memcpy(out, res, sizeof res);
}

/* Lane 4q + k: the sum of the four lanes of a's 128-bit lane q for k = 0, of b's for 1, ... */
VNNI static inline __m512i sum4(__m512i a, __m512i b, __m512i c, __m512i d) {
    __m512i ab = _mm512_add_epi32(_mm512_unpacklo_epi32(a, b), _mm512_unpackhi_epi32(a, b));
    __m512i cd = _mm512_add_epi32(_mm512_unpacklo_epi32(c, d), _mm512_unpackhi_epi32(c, d));
    return _mm512_add_epi32(_mm512_unpacklo_epi64(ab, cd), _mm512_unpackhi_epi64(ab, cd));
}

/* Lane 4n + k: the sum of all 16 lanes of vector k of group n (the 128-bit lanes of sum4's). */
VNNI static inline __m512i sum16(__m512i w0, __m512i w1, __m512i w2, __m512i w3) {
    __m512i s01 = _mm512_add_epi32(_mm512_shuffle_i32x4(w0, w1, _MM_SHUFFLE(2, 0, 2, 0)),
                                   _mm512_shuffle_i32x4(w0, w1, _MM_SHUFFLE(3, 1, 3, 1)));
    __m512i s23 = _mm512_add_epi32(_mm512_shuffle_i32x4(w2, w3, _MM_SHUFFLE(2, 0, 2, 0)),
                                   _mm512_shuffle_i32x4(w2, w3, _MM_SHUFFLE(3, 1, 3, 1)));
    return _mm512_add_epi32(_mm512_shuffle_i32x4(s01, s23, _MM_SHUFFLE(2, 0, 2, 0)),
                            _mm512_shuffle_i32x4(s01, s23, _MM_SHUFFLE(3, 1, 3, 1)));
}

/* pdq_qx_tile4x4_u8_vnni over one group: the 16 sums in int32, lane 4m + r, reduced by a shuffle
 * tree instead of 16 horizontal sums (a group of 32 to 128 columns is a few iterations, so those
 * dominated). The caller keeps K * max code * 32768 < 2^31. */
VNNI static inline __m512i tile4x4_i32(const int16_t *x, size_t ldx, const uint8_t *w, size_t ldw, int K) {
    int K32 = K / 32 * 32, k = 0;
    const int16_t *x0 = x, *x1 = x + ldx, *x2 = x + 2 * ldx, *x3 = x + 3 * ldx;
    QX_ACC4X4;
    for (; k < K32; k += 32) QX_STEP4X4
    __m512i s = sum16(sum4(a00, a01, a02, a03), sum4(a10, a11, a12, a13), sum4(a20, a21, a22, a23),
                      sum4(a30, a31, a32, a33));
    if (k == K) return s;
    int32_t out[16];
    _mm512_storeu_si512(out, s);
    for (; k < K; k++)
        for (int m = 0; m < 4; m++)
            for (int r = 0; r < 4; r++) out[4 * m + r] += (int32_t)x[m * ldx + k] * (int32_t)w[r * ldw + k];
    return _mm512_loadu_si512(out);
}

/* The grouped rule of 4 activation rows against 4 weight rows, every group: v[4m + r] += (double)
 * (sum - zw[r][g] * sumx[m][g]) * sw[r][g], group by group from the caller's v, the same
 * operations as the scalar loop (int64 product and difference, one double product, one double
 * sum), eight lanes at a time. zw, sw: the rows' [ngroups] at row 0, stride ng; sumx the same
 * for the activation rows. */
VNNI void pdq_qx_tile4x4_groups_vnni(const int16_t *x, size_t ldx, const uint8_t *w, size_t ldw, int in, int G,
                                     const uint8_t *zw, const int64_t *sumx, const float *sw, double sx, double *v) {
    int ng = (in + G - 1) / G;
    __m512d v0 = _mm512_loadu_pd(v), v1 = _mm512_loadu_pd(v + 8);
    for (int g = 0; g < ng; g++) {
        int k0 = g * G, K = in - k0 < G ? in - k0 : G;
        __m512i s = tile4x4_i32(x + k0, ldx, w + k0, ldw, K);
        /* lanes 4m + r: rows r's zero point and scale, activation rows m's sums */
        __m512i z = _mm512_set_epi64(zw[3 * ng + g], zw[2 * ng + g], zw[ng + g], zw[g], zw[3 * ng + g], zw[2 * ng + g],
                                     zw[ng + g], zw[g]);
        double s0 = sx * (double)sw[g], s1 = sx * (double)sw[ng + g], s2 = sx * (double)sw[2 * ng + g],
               s3 = sx * (double)sw[3 * ng + g];
        __m512d sc = _mm512_set_pd(s3, s2, s1, s0, s3, s2, s1, s0);
        __m512i x01 = _mm512_set_epi64(sumx[ng + g], sumx[ng + g], sumx[ng + g], sumx[ng + g], sumx[g], sumx[g], sumx[g],
                                       sumx[g]);
        __m512i x23 = _mm512_set_epi64(sumx[3 * ng + g], sumx[3 * ng + g], sumx[3 * ng + g], sumx[3 * ng + g],
                                       sumx[2 * ng + g], sumx[2 * ng + g], sumx[2 * ng + g], sumx[2 * ng + g]);
        __m512i a0 = _mm512_sub_epi64(_mm512_cvtepi32_epi64(_mm512_castsi512_si256(s)), _mm512_mullo_epi64(z, x01));
        __m512i a1 = _mm512_sub_epi64(_mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(s, 1)), _mm512_mullo_epi64(z, x23));
        v0 = _mm512_add_pd(v0, _mm512_mul_pd(_mm512_cvtepi64_pd(a0), sc));
        v1 = _mm512_add_pd(v1, _mm512_mul_pd(_mm512_cvtepi64_pd(a1), sc));
    }
    _mm512_storeu_pd(v, v0);
    _mm512_storeu_pd(v + 8, v1);
}
/* The grouped rule of one activation row against n weight rows, from their exact sums per group
 * (s: [n][ng]): v[r] = sum over g in order from 0.0 of (double)(s[r][g] - zw[r][g] * sumx[g]) *
 * sw[r][g], each term by the scalar loop's operations (int64 product and difference, one double
 * product). 8 rows x 8 groups a block: the terms with lanes over groups (the rows' contiguous
 * loads), transposed in registers to lanes over rows, then added group by group, so every row's
 * sum has the scalar rule's order. zw * sumx by vpmuldq: exact while |sumx| < 2^31, which
 * G * 32768 < 2^31 (G < 65536, the caller's check) keeps. zw, sw: the rows' [ng] at row 0. */
VNNI void pdq_qx_group_rows_vnni(const int64_t *s, int ng, int n, const uint8_t *zw, const int64_t *sumx,
                                 const float *sw, double sx, double *v) {
    for (int r0 = 0; r0 < n; r0 += 8) {
        int nr = n - r0 < 8 ? n - r0 : 8;
        __m512d acc = _mm512_setzero_pd(), vsx = _mm512_set1_pd(sx);
        for (int g0 = 0; g0 < ng; g0 += 8) {
            int ng8 = ng - g0 < 8 ? ng - g0 : 8;
            __mmask8 k = (__mmask8)((1u << ng8) - 1);
            __m512i xs = _mm512_maskz_loadu_epi64(k, sumx + g0);
            __m512d T[8], t[8], u[8], C[8];
            for (int i = 0; i < 8; i++) {
                if (i >= nr) { T[i] = _mm512_setzero_pd(); continue; }
                size_t o = (size_t)(r0 + i) * ng + g0;
                __m512i z = _mm512_cvtepu8_epi64(_mm512_castsi512_si128(_mm512_maskz_loadu_epi8((__mmask64)k, zw + o)));
                __m512i d = _mm512_sub_epi64(_mm512_maskz_loadu_epi64(k, s + o), _mm512_mul_epi32(z, xs));
                __m512d sc = _mm512_mul_pd(vsx, _mm512_cvtps_pd(_mm512_castps512_ps256(_mm512_maskz_loadu_ps((__mmask16)k, sw + o))));
                T[i] = _mm512_mul_pd(_mm512_cvtepi64_pd(d), sc);
            }
            /* T[i] lane j (row i, group j) -> C[j] lane i */
            for (int i = 0; i < 8; i += 2) {
                t[i] = _mm512_unpacklo_pd(T[i], T[i + 1]);     /* groups 0 2 4 6 of rows i, i + 1 */
                t[i + 1] = _mm512_unpackhi_pd(T[i], T[i + 1]); /* groups 1 3 5 7 */
            }
            for (int h = 0; h < 8; h += 4) {
                u[h] = _mm512_shuffle_f64x2(t[h], t[h + 2], 0x88);     /* groups 0 4 of rows h .. h + 3 */
                u[h + 1] = _mm512_shuffle_f64x2(t[h], t[h + 2], 0xDD); /* groups 2 6 */
                u[h + 2] = _mm512_shuffle_f64x2(t[h + 1], t[h + 3], 0x88); /* groups 1 5 */
                u[h + 3] = _mm512_shuffle_f64x2(t[h + 1], t[h + 3], 0xDD); /* groups 3 7 */
            }
            C[0] = _mm512_shuffle_f64x2(u[0], u[4], 0x88);
            C[4] = _mm512_shuffle_f64x2(u[0], u[4], 0xDD);
            C[2] = _mm512_shuffle_f64x2(u[1], u[5], 0x88);
            C[6] = _mm512_shuffle_f64x2(u[1], u[5], 0xDD);
            C[1] = _mm512_shuffle_f64x2(u[2], u[6], 0x88);
            C[5] = _mm512_shuffle_f64x2(u[2], u[6], 0xDD);
            C[3] = _mm512_shuffle_f64x2(u[3], u[7], 0x88);
            C[7] = _mm512_shuffle_f64x2(u[3], u[7], 0xDD);
            for (int j = 0; j < ng8; j++) acc = _mm512_add_pd(acc, C[j]);
        }
        _mm512_mask_storeu_pd(v + r0, (__mmask8)((1u << nr) - 1), acc);
    }
}
#endif
