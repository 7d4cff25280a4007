/* Integer FULLY_CONNECTED: int16 (or uint8) activations x uint4/uint8 weight codes, per-row or
 * per-tensor scale and zero point, or one per row and group of columns.
 *   acc[m][r] = sum_k x[m][k] * w[r][k] - zw[r] * sum_k x[m][k]      (exact, int64)
 *   y[m][r]   = acc * (sx * sw[r]) (+ bias[r]), requantized to the output grid.
 * Groups: acc[m][r][g] the same over group g's columns, and y[m][r] = sum over g, in group order
 * from 0.0, of acc[m][r][g] * (sx * sw[r][g]) in double (+ bias[r]); with one group this is the
 * per-row rule, bit for bit.
 * Overflow: |x| <= 32768 and w <= 255, so a product is at most 8,355,840 in magnitude and a block
 * of 256 products (the scalar int32 partial sum) at most 2,139,095,040 < 2^31. The AVX2 kernel's
 * int32 lanes each add 2 products per 16 elements: 2048 elements are 256 products per lane. Both
 * flush to int64 totals, so both give the same exact integer. AVX-512 VNNI (vpdpwssd) adds 2
 * products per int32 lane per 32 elements: 2048 elements are 128 products per lane. */
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "kernels/qmatmul.h"
#include "kernels/rows4.h"
#include "kernels/simd_acc.h"
#include "pdq/file.h"
#include "pdq/quant.h"
#include "qx_hsum.h"
#include "qx_internal.h"

#define SCALAR_BLOCK 256
#define GROUP_ROWS 64   /* weight rows per call of the grouped exact sums (decode) */
#define AVX2_BLOCK 2048

void pdq_qx_axpy_i16_scalar(int64_t *acc, int32_t a, const int16_t *b, int n) {
    for (int j = 0; j < n; j++) acc[j] += (int64_t)(a * (int32_t)b[j]);
}

int64_t pdq_qx_dot_u8_scalar(const int16_t *x, const uint8_t *w, int n) {
    int64_t tot = 0;
    for (int k0 = 0; k0 < n; k0 += SCALAR_BLOCK) {
        int e = n - k0 < SCALAR_BLOCK ? n : k0 + SCALAR_BLOCK;
        int32_t s = 0;
        for (int k = k0; k < e; k++) s += (int32_t)x[k] * (int32_t)w[k];
        tot += s;
    }
    return tot;
}

#if defined(__x86_64__) || defined(__i386__)
int pdq_qx_cpu_avx2(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") ? 1 : 0;
}

__attribute__((target("avx2"))) int64_t pdq_qx_dot_u8_avx2(const int16_t *x, const uint8_t *w, int n) {
    __m256i tot = _mm256_setzero_si256(); /* 4 x int64 */
    int k = 0;
    while (n - k >= 16) {
        int e = k + ((n - k) / 16) * 16;
        if (e - k > AVX2_BLOCK) e = k + AVX2_BLOCK;
        __m256i s = _mm256_setzero_si256();
        for (; k < e; k += 16) {
            __m256i xv = _mm256_loadu_si256((const __m256i *)(x + k));
            __m256i wv = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(w + k)));
            s = _mm256_add_epi32(s, _mm256_madd_epi16(xv, wv));
        }
        tot = _mm256_add_epi64(tot, _mm256_cvtepi32_epi64(_mm256_castsi256_si128(s)));
        tot = _mm256_add_epi64(tot, _mm256_cvtepi32_epi64(_mm256_extracti128_si256(s, 1)));
    }
    int64_t lanes[4];
    _mm256_storeu_si256((__m256i *)lanes, tot);
    int64_t r = lanes[0] + lanes[1] + lanes[2] + lanes[3];
    for (; k < n; k++) r += (int32_t)x[k] * (int32_t)w[k];
    return r;
}

/* *a + the 16-bit dot products of x and w (vpmaddwd, vpaddd) in place: with intrinsics on an array
 * of accumulators GCC 12 kept them on the stack, a load and a store around every product. */
__attribute__((target("avx2"))) static inline void madd_acc(__m256i *a, __m256i x, __m256i w) {
    __m256i t;
    __asm__("vpmaddwd %2, %3, %1\n\tvpaddd %1, %0, %0" : "+x"(*a), "=&x"(t) : "x"(x), "x"(w));
}

/* The 4 x 2 AVX2 tile's 8 named accumulators (a<m><r>: activation row m, weight row r) and one
 * step of 16 columns at k. */
#define QX_ACC4X2 \
    __m256i a00 = _mm256_setzero_si256(), a01 = a00, a10 = a00, a11 = a00, a20 = a00, a21 = a00, a30 = a00, a31 = a00
#define QX_ROW2(m)                                         \
    xv = _mm256_loadu_si256((const __m256i *)(x##m + k)); \
    madd_acc(&a##m##0, xv, w0);                            \
    madd_acc(&a##m##1, xv, w1);
#define QX_STEP4X2                                                                      \
    {                                                                                   \
        __m256i w0 = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(w + k)));  \
        __m256i xv, w1 = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(w + ldw + k))); \
        QX_ROW2(0) QX_ROW2(1) QX_ROW2(2) QX_ROW2(3)                                     \
    }

/* Prefill (GEMM): each weight load serves 4 activation rows, each activation load 2 weight rows;
 * the 8 accumulators are named so that they stay in registers. */
__attribute__((target("avx2"))) void pdq_qx_tile4x2_u8_avx2(const int16_t *x, size_t ldx, const uint8_t *w, size_t ldw,
                                                            int K, int64_t *out) {
    int64_t res[8] = {0};
    int K16 = K / 16 * 16, k = 0;
    const int16_t *x0 = x, *x1 = x + ldx, *x2 = x + 2 * ldx, *x3 = x + 3 * ldx;
    while (k < K16) {
        int e = K16 - k > AVX2_BLOCK ? k + AVX2_BLOCK : K16;
        QX_ACC4X2;
        for (; k < e; k += 16) QX_STEP4X2
#define QX_SUM(m)                          \
    res[2 * m] += qx_hsum_avx2(a##m##0);   \
    res[2 * m + 1] += qx_hsum_avx2(a##m##1);
        QX_SUM(0) QX_SUM(1) QX_SUM(2) QX_SUM(3)
#undef QX_SUM
    }
    for (; k < K; k++)
        for (int m = 0; m < 4; m++)
            for (int r = 0; r < 2; r++) res[2 * m + r] += (int32_t)x[m * ldx + k] * (int32_t)w[r * ldw + k];
    memcpy(out, res, sizeof res);
}
/* The grouped rule of 4 activation rows against 2 weight rows, every group (pdq_qx_tile4x4_groups_vnni
 * in AVX2): a group's 8 sums in int32 registers (p->group_i32: they fit), reduced by hadd into
 * one vector, then v[2m + r] += ((double)sum - zw[r][g] * sumx[m][g]) * (sx * sw[r][g]) four
 * lanes at a time. Every step is exact until the one product and the one sum, which are the
 * scalar loop's: the int32 -> double conversion, zw * sumx (< 2^39) and the difference (< 2^53)
 * are integers a double holds. */
__attribute__((target("avx2"))) void pdq_qx_tile4x2_groups_avx2(const int16_t *x, size_t ldx, const uint8_t *w,
                                                                size_t ldw, int in, int G, const uint8_t *zw,
                                                                const int64_t *sumx, const float *sw, double sx,
                                                                double *v) {
    int ng = (in + G - 1) / G;
    const int16_t *x0 = x, *x1 = x + ldx, *x2 = x + 2 * ldx, *x3 = x + 3 * ldx;
    __m256d v0 = _mm256_loadu_pd(v), v1 = _mm256_loadu_pd(v + 4);
    for (int g = 0; g < ng; g++) {
        int k0 = g * G, K = in - k0 < G ? in - k0 : G, k1 = k0 + K / 16 * 16, k = k0;
        QX_ACC4X2;
        for (; k < k1; k += 16) QX_STEP4X2
        /* lane 2m + r: the sum of a<m><r> */
        __m256i h0 = _mm256_hadd_epi32(_mm256_hadd_epi32(a00, a01), _mm256_hadd_epi32(a10, a11));
        __m256i h1 = _mm256_hadd_epi32(_mm256_hadd_epi32(a20, a21), _mm256_hadd_epi32(a30, a31));
        __m256i S = _mm256_add_epi32(_mm256_permute2x128_si256(h0, h1, 0x20), _mm256_permute2x128_si256(h0, h1, 0x31));
        if (k < k0 + K) { /* the group's last columns, fewer than 16 */
            int32_t t[8];
            _mm256_storeu_si256((__m256i *)t, S);
            for (; k < k0 + K; k++)
                for (int m = 0; m < 4; m++)
                    for (int r = 0; r < 2; r++) t[2 * m + r] += (int32_t)x[m * ldx + k] * (int32_t)w[r * ldw + k];
            S = _mm256_loadu_si256((const __m256i *)t);
        }
        double z0 = zw[g], z1 = zw[ng + g], s0 = sx * (double)sw[g], s1 = sx * (double)sw[ng + g];
        double m0 = (double)sumx[g], m1 = (double)sumx[ng + g], m2 = (double)sumx[2 * ng + g], m3 = (double)sumx[3 * ng + g];
        __m256d z = _mm256_set_pd(z1, z0, z1, z0), sc = _mm256_set_pd(s1, s0, s1, s0);
        __m256d d0 = _mm256_sub_pd(_mm256_cvtepi32_pd(_mm256_castsi256_si128(S)), _mm256_mul_pd(z, _mm256_set_pd(m1, m1, m0, m0)));
        __m256d d1 = _mm256_sub_pd(_mm256_cvtepi32_pd(_mm256_extracti128_si256(S, 1)), _mm256_mul_pd(z, _mm256_set_pd(m3, m3, m2, m2)));
        v0 = _mm256_add_pd(v0, _mm256_mul_pd(d0, sc));
        v1 = _mm256_add_pd(v1, _mm256_mul_pd(d1, sc));
    }
    _mm256_storeu_pd(v, v0);
    _mm256_storeu_pd(v + 4, v1);
}

__attribute__((target("avx2"))) void pdq_qx_dot4_u8_avx2(const int16_t *x, const uint8_t *w, size_t ldw, int K,
                                                         int64_t *out) {
    int64_t res[4] = {0};
    int K16 = K / 16 * 16, k = 0;
    while (k < K16) {
        int e = K16 - k > AVX2_BLOCK ? k + AVX2_BLOCK : K16;
        __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
        for (; k < e; k += 16) {
            __m256i xv = _mm256_loadu_si256((const __m256i *)(x + k));
            a0 = _mm256_add_epi32(a0, _mm256_madd_epi16(xv, _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(w + k)))));
            a1 = _mm256_add_epi32(a1, _mm256_madd_epi16(xv, _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(w + ldw + k)))));
            a2 = _mm256_add_epi32(a2, _mm256_madd_epi16(xv, _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(w + 2 * ldw + k)))));
            a3 = _mm256_add_epi32(a3, _mm256_madd_epi16(xv, _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(w + 3 * ldw + k)))));
        }
        res[0] += qx_hsum_avx2(a0);
        res[1] += qx_hsum_avx2(a1);
        res[2] += qx_hsum_avx2(a2);
        res[3] += qx_hsum_avx2(a3);
    }
    for (; k < K; k++)
        for (int r = 0; r < 4; r++) res[r] += (int32_t)x[k] * (int32_t)w[r * ldw + k];
    memcpy(out, res, sizeof res);
}

/* Exact int64 -> double for |v| < 2^51 (AVX2 has no vcvtqq2pd): v + (2^52 + 2^51) lands in the
 * mantissa of a double of that exponent, and subtracting the constant leaves v exactly. */
__attribute__((target("avx2"))) static inline __m256d i64_to_pd(__m256i v) {
    const __m256d magic = _mm256_set1_pd(6755399441055744.0);
    return _mm256_sub_pd(_mm256_castsi256_pd(_mm256_add_epi64(v, _mm256_castpd_si256(magic))), magic);
}

/* pdq_qx_group_rows_vnni in AVX2: 4 rows x 4 groups a block, the terms with lanes over groups,
 * transposed to lanes over rows and added group by group; groups past the last whole 4 and rows
 * past the last whole 4 by the scalar loop, after them in the same order. Needs |sumx| < 2^31
 * (vpmuldq) and |s - zw * sumx| < 2^51, which G < 65536 keeps. */
__attribute__((target("avx2"))) void pdq_qx_group_rows_avx2(const int64_t *s, int ng, int n, const uint8_t *zw,
                                                           const int64_t *sumx, const float *sw, double sx, double *v) {
    int ng4 = ng / 4 * 4, n4 = n / 4 * 4;
    __m256d vsx = _mm256_set1_pd(sx);
    for (int r0 = 0; r0 < n4; r0 += 4) {
        __m256d acc = _mm256_setzero_pd();
        for (int g0 = 0; g0 < ng4; g0 += 4) {
            __m256i xs = _mm256_loadu_si256((const __m256i *)(sumx + g0));
            __m256d T[4];
            for (int i = 0; i < 4; i++) {
                size_t o = (size_t)(r0 + i) * ng + g0;
                int32_t zb;
                memcpy(&zb, zw + o, 4);
                __m256i z = _mm256_cvtepu8_epi64(_mm_cvtsi32_si128(zb));
                __m256i d = _mm256_sub_epi64(_mm256_loadu_si256((const __m256i *)(s + o)), _mm256_mul_epi32(z, xs));
                __m256d sc = _mm256_mul_pd(vsx, _mm256_cvtps_pd(_mm_loadu_ps(sw + o)));
                T[i] = _mm256_mul_pd(i64_to_pd(d), sc);
            }
            /* T[i] lane j (row i, group j) -> C[j] lane i */
            __m256d t0 = _mm256_unpacklo_pd(T[0], T[1]), t1 = _mm256_unpackhi_pd(T[0], T[1]);
            __m256d t2 = _mm256_unpacklo_pd(T[2], T[3]), t3 = _mm256_unpackhi_pd(T[2], T[3]);
            acc = _mm256_add_pd(acc, _mm256_permute2f128_pd(t0, t2, 0x20)); /* group 0 */
            acc = _mm256_add_pd(acc, _mm256_permute2f128_pd(t1, t3, 0x20)); /* group 1 */
            acc = _mm256_add_pd(acc, _mm256_permute2f128_pd(t0, t2, 0x31)); /* group 2 */
            acc = _mm256_add_pd(acc, _mm256_permute2f128_pd(t1, t3, 0x31)); /* group 3 */
        }
        _mm256_storeu_pd(v + r0, acc);
    }
    for (int r = 0; r < n; r++) {
        if (r >= n4) v[r] = 0.0;
        for (int g = r < n4 ? ng4 : 0; g < ng; g++)
            v[r] += qx_group_term(s[(size_t)r * ng + g], zw[(size_t)r * ng + g], sumx[g], sw[(size_t)r * ng + g], sx);
    }
}

__attribute__((target("avx2"))) void pdq_qx_axpy_i16_avx2(int64_t *acc, int32_t a, const int16_t *b, int n) {
    __m256i av = _mm256_set1_epi32(a);
    int j = 0;
    for (; j + 8 <= n; j += 8) {
        /* |a * b| <= 2^30: the int32 product is exact, the sum is int64 */
        __m256i p = _mm256_mullo_epi32(av, _mm256_cvtepi16_epi32(_mm_loadu_si128((const __m128i *)(b + j))));
        __m256i lo = _mm256_loadu_si256((const __m256i *)(acc + j)), hi = _mm256_loadu_si256((const __m256i *)(acc + j + 4));
        lo = _mm256_add_epi64(lo, _mm256_cvtepi32_epi64(_mm256_castsi256_si128(p)));
        hi = _mm256_add_epi64(hi, _mm256_cvtepi32_epi64(_mm256_extracti128_si256(p, 1)));
        _mm256_storeu_si256((__m256i *)(acc + j), lo);
        _mm256_storeu_si256((__m256i *)(acc + j + 4), hi);
    }
    for (; j < n; j++) acc[j] += (int64_t)(a * (int32_t)b[j]);
}
#define VNNI __attribute__((target("avx512f,avx512bw,avx512dq,avx512vnni")))

int pdq_qx_cpu_vnni(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vnni");
}

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
    for (; k < K; k++)
        for (int r = 0; r < 4; r++) res[r] += (int32_t)x[k] * (int32_t)w[r * ldw + k];
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
    for (; k < K; k++)
        for (int m = 0; m < 4; m++)
            for (int r = 0; r < 2; r++) res[2 * m + r] += (int32_t)x[m * ldx + k] * (int32_t)w[r * ldw + k];
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
    for (; k < K; k++)
        for (int m = 0; m < 4; m++)
            for (int r = 0; r < 4; r++) res[4 * m + r] += (int32_t)x[m * ldx + k] * (int32_t)w[r * ldw + k];
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
#else
int pdq_qx_cpu_avx2(void) { return 0; }
int pdq_qx_cpu_vnni(void) { return 0; }
void pdq_qx_tile4x4_u8_vnni(const int16_t *x, size_t ldx, const uint8_t *w, size_t ldw, int K, int64_t *out) {
    for (int m = 0; m < 4; m++)
        for (int r = 0; r < 4; r++) out[4 * m + r] = pdq_qx_dot_u8_scalar(x + m * ldx, w + r * ldw, K);
}
void pdq_qx_tile4x4_groups_vnni(const int16_t *x, size_t ldx, const uint8_t *w, size_t ldw, int in, int G,
                                const uint8_t *zw, const int64_t *sumx, const float *sw, double sx, double *v) {
    int ng = (in + G - 1) / G;
    for (int g = 0; g < ng; g++) {
        int k0 = g * G, K = in - k0 < G ? in - k0 : G;
        for (int m = 0; m < 4; m++)
            for (int r = 0; r < 4; r++) {
                v[4 * m + r] += qx_group_term(pdq_qx_dot_u8_scalar(x + m * ldx + k0, w + r * ldw + k0, K),
                                              zw[(size_t)r * ng + g], sumx[(size_t)m * ng + g], sw[(size_t)r * ng + g], sx);
            }
    }
}
void pdq_qx_dot4_u8_vnni(const int16_t *x, const uint8_t *w, size_t ldw, int K, int64_t *out) {
    pdq_qx_dot4_u8_avx2(x, w, ldw, K, out);
}
void pdq_qx_group_rows_vnni(const int64_t *s, int ng, int n, const uint8_t *zw, const int64_t *sumx, const float *sw,
                            double sx, double *v) {
    for (int r = 0; r < n; r++) {
        v[r] = 0.0;
        for (int g = 0; g < ng; g++)
            v[r] += qx_group_term(s[(size_t)r * ng + g], zw[(size_t)r * ng + g], sumx[g], sw[(size_t)r * ng + g], sx);
    }
}
void pdq_qx_tile4x2_u8_vnni(const int16_t *x, size_t ldx, const uint8_t *w, size_t ldw, int K, int64_t *out) {
    pdq_qx_tile4x2_u8_avx2(x, ldx, w, ldw, K, out);
}
void pdq_qx_dot4_u8_avx2(const int16_t *x, const uint8_t *w, size_t ldw, int K, int64_t *out) {
    for (int r = 0; r < 4; r++) out[r] = pdq_qx_dot_u8_scalar(x, w + r * ldw, K);
}
void pdq_qx_axpy_i16_avx2(int64_t *acc, int32_t a, const int16_t *b, int n) { pdq_qx_axpy_i16_scalar(acc, a, b, n); }
void pdq_qx_group_rows_avx2(const int64_t *s, int ng, int n, const uint8_t *zw, const int64_t *sumx, const float *sw,
                            double sx, double *v) {
    pdq_qx_group_rows_vnni(s, ng, n, zw, sumx, sw, sx, v);
}
void pdq_qx_tile4x2_groups_avx2(const int16_t *x, size_t ldx, const uint8_t *w, size_t ldw, int in, int G,
                                const uint8_t *zw, const int64_t *sumx, const float *sw, double sx, double *v) {
    int ng = (in + G - 1) / G;
    for (int g = 0; g < ng; g++) {
        int k0 = g * G, K = in - k0 < G ? in - k0 : G;
        for (int m = 0; m < 4; m++)
            for (int r = 0; r < 2; r++) {
                v[2 * m + r] += qx_group_term(pdq_qx_dot_u8_scalar(x + m * ldx + k0, w + r * ldw + k0, K),
                                              zw[(size_t)r * ng + g], sumx[(size_t)m * ng + g], sw[(size_t)r * ng + g], sx);
            }
    }
}
void pdq_qx_tile4x2_u8_avx2(const int16_t *x, size_t ldx, const uint8_t *w, size_t ldw, int K, int64_t *out) {
    for (int m = 0; m < 4; m++)
        for (int r = 0; r < 2; r++) out[2 * m + r] = pdq_qx_dot_u8_scalar(x + m * ldx, w + r * ldw, K);
}
int64_t pdq_qx_dot_u8_avx2(const int16_t *x, const uint8_t *w, int n) { return pdq_qx_dot_u8_scalar(x, w, n); }
#endif

/* The decode form of a uint4 or uint8 weight for the packed kernels: the 4-row layout where the
 * shape allows, zero points 0 and scales 1 (the executor applies its own), and room for the
 * prepared activation rows. Rows of whole bytes are the graph's own bytes (uint4 with an even
 * width is already packed per row); an odd uint4 width is repacked a row at a time. When the 4-row
 * layout copied the codes and the graph's lie in a file mapping, their pages are given back. */
static pdq_code packed_decode(qx_prep *p, const pdq_tensor *w, pdq_status *st) {
    int u4 = w->dtype == PDQ_TU4;
    size_t rb = u4 ? (size_t)(p->fin + 1) / 2 : (size_t)p->fin;
    uint8_t *codes = NULL;
    unsigned char *grid = malloc((sizeof(float) + 1) * (size_t)p->fout);
    p->qm = calloc(1, sizeof *p->qm);
    if (u4 && p->fin % 2) codes = malloc(rb * (size_t)p->fout + p->fin);
    if (!grid || !p->qm || (u4 && p->fin % 2 && !codes)) {
        free(codes);
        free(grid);
        return pdq_fail(st, PDQ_ERR_NOMEM, "integer mode: packed copy of %s", w->name);
    }
    if (codes) {
        uint8_t *row = codes + rb * (size_t)p->fout; /* one row of codes, scratch */
        for (int r = 0; r < p->fout; r++) {
            pdq_unpack4_at(w->data, (size_t)r * p->fin, (size_t)p->fin, row);
            pdq_pack4(row, (size_t)p->fin, codes + (size_t)r * rb);
        }
    }
    float *scales = (float *)(void *)grid;
    uint8_t *zeros = grid + sizeof(float) * (size_t)p->fout;
    for (int r = 0; r < p->fout; r++) {
        scales[r] = 1.0f;
        zeros[r] = 0;
    }
    pdq_code rc = pdq_qmatrix_init(p->qm, u4 ? PDQ_QT_U4 : PDQ_QT_U8, p->fout, p->fin, 0, codes ? codes : w->data, scales,
                                   zeros, NULL, w->name, st);
    if (rc) {
        free(codes);
        free(grid);
        return rc;
    }
    p->qm->owned = grid;
    p->qm->owned_codes = codes; /* replaced (and freed) by the 4-row copy */
    if ((rc = pdq_qmatrix_pack_rows4(p->qm, st))) return rc;
    if (w->file_backed && p->qm->codes != (const uint8_t *)w->data) pdq_file_drop_pages(w->data, pdq_tensor_bytes(w));
    p->xbytes = (pdq_qexact_bytes(p->qm) + 63) / 64 * 64;
    if (!(p->xbuf = aligned_alloc(64, p->xbytes * (size_t)(p->rows ? p->rows : 1))))
        return pdq_fail(st, PDQ_ERR_NOMEM, "integer mode: activation rows of %s", w->name);
    return PDQ_OK;
}

pdq_code pdq_qx_fc_prepare(pdq_qexec *x, int oi, pdq_status *st) {
    const pdq_graph *g = x->g;
    const pdq_op *op = &g->ops[oi];
    qx_prep *p = &x->prep[oi];
    const pdq_tensor *xt = &g->tensors[op->in[0]], *w = &g->tensors[op->in[1]];
    if (w->kind != PDQ_TK_CONST || w->ndim != 2)
        return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "integer mode: weight %s must be a 2-d constant", w->name);
    if (xt->kind == PDQ_TK_CONST)
        return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "integer mode: constant FC input %s", xt->name);
    p->fout = w->shape[0];
    p->fin = w->shape[1];
    p->rows = (int)(pdq_tensor_count(xt) / (size_t)p->fin);
    if (op->n_in == 3) {
        const pdq_tensor *b = &g->tensors[op->in[2]];
        if (b->kind != PDQ_TK_CONST || b->dtype != PDQ_TF32 || b->q || (int)pdq_tensor_count(b) != p->fout)
            return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "integer mode: bias %s must be a float32 constant of %d values", b->name,
                            p->fout);
        p->bias = b->data;
    }
    const qx_t *xq = &x->t[op->in[0]];
    int wq = (w->dtype == PDQ_TU4 || w->dtype == PDQ_TU8) && w->q;
    if (w->dtype == PDQ_TF32 && !w->q) {
        p->wf = w->data;
        return PDQ_OK; /* double fallback */
    }
    if (!wq)
        return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "integer mode: weight %s of dtype %s%s", w->name, pdq_tdtype_name(w->dtype),
                        w->q ? "" : " without qparams");
    p->group = w->q->block ? w->q->block : p->fin;
    p->ngroups = (p->fin + p->group - 1) / p->group;
    /* a group's 4 x 4 tile sums fit int32: |sum| <= group * max code * 32768 */
    p->group_i32 = p->ngroups > 1 && (int64_t)p->group * (w->dtype == PDQ_TU4 ? 15 : 255) * 32768 < INT32_MAX;
    if (w->q->block ? w->q->n != p->fout * p->ngroups : w->q->n != 1 && (w->q->n != p->fout || w->q->quantized_dim != 0))
        return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "integer mode: weight %s: %d scales, need 1, one per output row (%d) or "
                        "one per row and group", w->name, w->q->n, p->fout);
    if (!xq->quant) {
        /* float activations with a quantized weight: dequantized weight, double fallback */
        return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "integer mode: float input %s of a quantized weight %s", xt->name, w->name);
    }
    if (xq->dt == PDQ_TI16 && xq->zp != 0)
        return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "integer mode: int16 input %s with zero point %lld (symmetric only)",
                        xt->name, (long long)xq->zp);
    p->int_path = 1;
    p->w = w->data;
    size_t ng = (size_t)p->ngroups, nq = (size_t)p->fout * ng;
    p->sx = xq->s;
    if (ng > 1) { /* compact grids where the values allow (group_grids reads either form; n == out * ng) */
        int shared = 1, f16 = 1;
        for (size_t i = 0; i < nq && (shared || f16); i++) {
            shared &= w->q->zero_point[i] == w->q->zero_point[i % ng];
            f16 &= w->q->scale[i] >= 0.0f && pdq_f16_to_f32(pdq_f32_to_f16(w->q->scale[i])) == w->q->scale[i];
        }
        p->gz_stride = shared ? 0 : ng;
        p->gz = malloc(shared ? GROUP_ROWS * ng : nq); /* shared: its row repeated for the kernels' [rows][ngroups] */
        if (f16 && (p->gs16 = malloc(sizeof(uint16_t) * nq)))
            for (size_t i = 0; i < nq; i++) p->gs16[i] = pdq_f32_to_f16(w->q->scale[i]);
        else p->gs = w->q->scale;
        size_t wide = (size_t)pdq_pool_threads(x->o.pool) * GROUP_ROWS * ng * sizeof(float);
        if (p->gs16 && !(p->gwide = malloc(wide))) return pdq_fail(st, PDQ_ERR_NOMEM, "integer mode: FC %s", w->name);
    } else {
        p->zw = malloc(sizeof(int32_t) * nq);
        p->sw = malloc(sizeof(double) * nq);
    }
    p->sumx = malloc(sizeof(int64_t) * (size_t)(p->rows ? p->rows : 1) * ng);
    if (xq->dt == PDQ_TU8) p->xs = malloc(sizeof(int16_t) * pdq_tensor_count(xt));
    if ((ng > 1 ? !p->gz : !p->zw || !p->sw) || !p->sumx || (xq->dt == PDQ_TU8 && !p->xs))
        return pdq_fail(st, PDQ_ERR_NOMEM, "integer mode: FC %s", w->name);
    int hi = w->dtype == PDQ_TU4 ? 15 : 255;
    for (size_t i = 0; i < nq; i++) {
        size_t c = w->q->n == 1 ? 0 : i;
        int64_t z = w->q->zero_point[c];
        double s = (double)w->q->scale[c];
        if (z < 0 || z > hi || !(s >= 0))
            return pdq_fail(st, PDQ_ERR_FORMAT, "integer mode: weight %s row %zu group %zu: zero point %lld / scale %g",
                            w->name, i / ng, i % ng, (long long)z, s);
        p->any_zw |= z != 0;
        if (ng > 1) {
            if (p->gz_stride || i < ng) p->gz[i] = (uint8_t)z;
        } else {
            p->zw[i] = (int32_t)z;
            p->sw[i] = xq->s * s; /* the one double product sx * sw[r] */
        }
    }
    if (ng > 1 && !p->gz_stride)
        for (int k = 1; k < GROUP_ROWS; k++) memcpy(p->gz + (size_t)k * ng, p->gz, ng);
    /* grouped decode: the packed exact sums per group where a SIMD kernel has them (uint4, groups
     * of 32k columns, AVX2 or AVX-512 VNNI), else the tiles group by group */
    pdq_qctx kc = {.no_avx512 = x->simd < 2};
    if (x->simd && p->rows < 4 && p->ngroups > 1 &&
        pdq_qexact_groups_fast(&kc, w->dtype == PDQ_TU4 ? PDQ_QT_U4 : PDQ_QT_U8, p->group)) {
        size_t n = (size_t)pdq_pool_threads(x->o.pool) * GROUP_ROWS * ng;
        if (!(p->gsum = malloc(sizeof(int64_t) * n))) return pdq_fail(st, PDQ_ERR_NOMEM, "integer mode: FC %s", w->name);
        return packed_decode(p, w, st);
    }
    if (x->simd && p->rows < 4 && p->ngroups == 1) return packed_decode(p, w, st);
    if (w->dtype == PDQ_TU4) { /* rows of codes unpacked per task: 4 rows per thread */
        p->u4 = 1;
        size_t n = (size_t)pdq_pool_threads(x->o.pool) * 4 * (size_t)p->fin;
        if (!(p->wrows = malloc(n ? n : 1))) return pdq_fail(st, PDQ_ERR_NOMEM, "integer mode: FC %s", w->name);
    }
    return PDQ_OK;
}

typedef struct {
    pdq_qexec *x;
    const pdq_op *op;
    const qx_prep *p;
    const int16_t *xs;
    int chunk;
    pdq_qctx kctx; /* the packed kernels' paths, as the executor's SIMD level allows */
} fc_ctx;

/* y[m, r] from its value before the bias: the bias, then the output's rule. */
static inline void fc_put_v(const qx_prep *p, const qx_t *yq, void *y, int m, int r, double v) {
    if (p->bias) v += (double)p->bias[r];
    qx_st(yq, y, (size_t)m * p->fout + r, v);
}

/* y[m, r] from a, the exact sum with the zero point's share taken out: the one double product and
 * the bias, then the output's rule. */
static inline void fc_put(const qx_prep *p, const qx_t *yq, void *y, int m, int r, int64_t a) {
    fc_put_v(p, yq, y, m, r, (double)a * p->sw[r]);
}

/* Rows r .. r + n - 1's (n <= GROUP_ROWS) zero points and float32 scales as [n][ngroups] arrays,
 * what the grouped kernels read: stored so, or the shared row's GROUP_ROWS copies, and f16
 * scales widened (exactly) into the thread's scratch. */
static void group_grids(const qx_prep *p, int r, int n, int thread, const uint8_t **zw, const float **sw) {
    size_t ng = (size_t)p->ngroups;
    *zw = p->gz + (size_t)(p->gz_stride ? r : 0) * ng;
    if (!p->gs16) {
        *sw = p->gs + (size_t)r * ng;
        return;
    }
    float *fs = p->gwide + (size_t)thread * GROUP_ROWS * ng;
    pdq_qscale_widen(p->gs16 + (size_t)r * ng, PDQ_QSCALE_F16, (size_t)n * ng, fs);
    *sw = fs;
}

/* Group g's term of y[m, r] in the grouped rule, from the exact sum a over the group's columns
 * (zw, sw: row r's grids). */
static inline double group_term(const qx_prep *p, int m, int g, const uint8_t *zw, const float *sw, int64_t a) {
    return qx_group_term(a, zw[g], p->sumx[(size_t)m * p->ngroups + g], sw[g], p->sx);
}

/* y[m + i][r + j] from v[i * nr + j], values before the bias (nm x nr, row stride nr): each
 * activation row's int16 outputs four at a time where there is no bias (simd), the rest by
 * fc_put_v. */
static void fc_put_tile(const qx_prep *p, const qx_t *yq, void *y, int simd, int m, int nm, int r, int nr,
                        const double *v) {
    for (int i = 0; i < nm; i++) {
        int j = simd && !p->bias && yq->dt == PDQ_TI16
                    ? pdq_qx_codes_i16_avx2(v + (size_t)i * nr, yq, (int16_t *)y + (size_t)(m + i) * p->fout + r, nr)
                    : 0;
        for (; j < nr; j++) fc_put_v(p, yq, y, m + i, r + j, v[(size_t)i * nr + j]);
    }
}

/* ... from the exact sum a = sum x * code of row r, taking the zero point's share out first. */
static inline void fc_store(const qx_prep *p, const qx_t *yq, void *y, int m, int r, int64_t a) {
    if (p->zw[r]) a -= (int64_t)p->zw[r] * p->sumx[m];
    fc_put(p, yq, y, m, r, a);
}

/* Codes of weight rows r .. r + n - 1 (n <= 4), one per byte: the graph's bytes (uint8), or
 * unpacked into the thread's rows (uint4; once per row group, shared by every activation row). */
static const uint8_t *w_rows(const qx_prep *p, int r, int n, int thread) {
    if (!p->u4) return p->w + (size_t)r * p->fin;
    uint8_t *d = p->wrows + (size_t)thread * 4 * (size_t)p->fin;
    pdq_unpack4_at(p->w, (size_t)r * p->fin, (size_t)n * p->fin, d);
    return d;
}

/* Exact sums over K columns of nm activation rows (x, stride ldx) against nr weight rows (w,
 * stride ldw): acc[i * nr + j]. nm 4 needs nr 2 or 4 (4: VNNI); nr 4 with nm 1 is a dot of 4. */
static void tile_sums(int simd, const int16_t *x, size_t ldx, const uint8_t *w, size_t ldw, int K, int nm, int nr,
                      int64_t *acc) {
    if (nm == 4 && nr == 4) {
        pdq_qx_tile4x4_u8_vnni(x, ldx, w, ldw, K, acc);
    } else if (nm == 4) {
        (simd == 2 ? pdq_qx_tile4x2_u8_vnni : pdq_qx_tile4x2_u8_avx2)(x, ldx, w, ldw, K, acc);
    } else if (nr == 4) {
        (simd == 2 ? pdq_qx_dot4_u8_vnni : pdq_qx_dot4_u8_avx2)(x, w, ldw, K, acc);
    } else {
        for (int j = 0; j < nr; j++)
            acc[j] = simd ? pdq_qx_dot_u8_avx2(x, w + (size_t)j * ldw, K) : pdq_qx_dot_u8_scalar(x, w + (size_t)j * ldw, K);
    }
}

static void fc_task(void *vc, int task, int thread) {
    const fc_ctx *c = vc;
    const qx_prep *p = c->p;
    const qx_t *yq = &c->x->t[c->op->out[0]];
    void *y = c->x->ptrs[c->op->out[0]];
    int r0 = task * c->chunk, r1 = r0 + c->chunk < p->fout ? r0 + c->chunk : p->fout;
    int in = p->fin;
    int simd = c->x->simd;
    if (p->qm && p->ngroups > 1) { /* grouped decode: exact sums per row and group, GROUP_ROWS rows a call */
        int ng = p->ngroups;
        int64_t *s = p->gsum + (size_t)thread * GROUP_ROWS * ng;
        for (int m = 0; m < p->rows; m++)
            for (int a = r0; a < r1; a += GROUP_ROWS) {
                int b = a + GROUP_ROWS < r1 ? a + GROUP_ROWS : r1;
                pdq_qexact_groups(&c->kctx, p->qm, p->xbuf + (size_t)m * p->xbytes, p->group, a, b, r1, s);
                double v[GROUP_ROWS];
                const uint8_t *zw;
                const float *sw;
                group_grids(p, a, b - a, thread, &zw, &sw);
                if (simd && p->group < 65536) {
                    (simd == 2 ? pdq_qx_group_rows_vnni : pdq_qx_group_rows_avx2)(s, ng, b - a, zw, p->sumx + (size_t)m * ng,
                                                                                  sw, p->sx, v);
                } else {
                    for (int r = a; r < b; r++) {
                        v[r - a] = 0.0;
                        for (int g = 0; g < ng; g++)
                            v[r - a] += group_term(p, m, g, zw + (size_t)(r - a) * ng, sw + (size_t)(r - a) * ng,
                                                   s[(size_t)(r - a) * ng + g]);
                    }
                }
                fc_put_tile(p, yq, y, simd, m, 1, a, b - a, v);
            }
        return;
    }
    if (p->qm) { /* decode: the packed kernels' exact sums, 256 rows at a time */
        int64_t s[256];
        for (int m = 0; m < p->rows; m++)
            for (int a = r0; a < r1; a += 256) {
                int b = a + 256 < r1 ? a + 256 : r1;
                pdq_qexact_rows(&c->kctx, p->qm, p->xbuf + (size_t)m * p->xbytes, a, b, r1, s);
                if (p->any_zw)
                    for (int j = a; j < b; j++) s[j - a] -= (int64_t)p->zw[j] * p->sumx[m];
                int r = a; /* int16 outputs four at a time, the rest by fc_put */
                if (yq->dt == PDQ_TI16)
                    r += pdq_qx_sums_i16_avx2(s, p->sw + a, 1, p->bias ? p->bias + a : NULL, yq,
                                              (int16_t *)y + (size_t)m * p->fout + a, b - a);
                for (; r < b; r++) fc_put(p, yq, y, m, r, s[r - a]);
            }
        return;
    }
    int ng = p->ngroups;
    /* grouped decode (no packed form): dots of 4 rows with SIMD */
    int dot4 = simd && ng > 1 && p->rows < 4;
    for (int r = r0; r < r1;) {
        /* prefill: 4x4 tiles (VNNI) or 4x2 (AVX2); the scalar path (and decode without SIMD) row by row */
        int nr = ((simd == 2 && p->rows >= 4) || dot4) && r + 3 < r1 ? 4
                 : simd && p->rows >= 4 && r + 1 < r1               ? 2
                                                                    : 1;
        const uint8_t *wr = w_rows(p, r, nr, thread), *zw = NULL;
        const float *sw = NULL;
        if (ng > 1) group_grids(p, r, nr, thread, &zw, &sw);
        for (int m = 0; m < p->rows;) {
            int64_t acc[16];
            int nm = nr >= 2 && p->rows >= 4 && m + 4 <= p->rows ? 4 : 1;
            const int16_t *xm = c->xs + (size_t)m * in;
            if (ng == 1) {
                tile_sums(simd, xm, (size_t)in, wr, (size_t)in, in, nm, nr, acc);
                for (int i = 0; i < nm; i++)
                    for (int j = 0; j < nr; j++) fc_store(p, yq, y, m + i, r + j, acc[i * nr + j]);
            } else if (nm == 4 && nr == 4 && p->group_i32) { /* VNNI 4 x 4: every group in one call */
                double v[16] = {0};
                pdq_qx_tile4x4_groups_vnni(xm, (size_t)in, wr, (size_t)in, in, p->group, zw, p->sumx + (size_t)m * ng, sw,
                                           p->sx, v);
                fc_put_tile(p, yq, y, simd, m, 4, r, 4, v);
            } else if (nm == 4 && nr == 2 && p->group_i32) { /* AVX2 4 x 2: every group in one call */
                double v[8] = {0};
                pdq_qx_tile4x2_groups_avx2(xm, (size_t)in, wr, (size_t)in, in, p->group, zw, p->sumx + (size_t)m * ng, sw,
                                           p->sx, v);
                fc_put_tile(p, yq, y, simd, m, 4, r, 2, v);
            } else {
                double v[16] = {0};
                for (int g = 0; g < ng; g++) {
                    int k0 = g * p->group, K = in - k0 < p->group ? in - k0 : p->group;
                    tile_sums(simd, xm + k0, (size_t)in, wr + k0, (size_t)in, K, nm, nr, acc);
                    for (int i = 0; i < nm; i++)
                        for (int j = 0; j < nr; j++)
                            v[i * nr + j] += group_term(p, m + i, g, zw + (size_t)j * ng, sw + (size_t)j * ng, acc[i * nr + j]);
                }
                fc_put_tile(p, yq, y, simd, m, nm, r, nr, v);
            }
            m += nm;
        }
        r += nr;
    }
}

/* A float operand: sum in double in index order (scalar, the same on every thread). */
static void fc_float_task(void *vc, int task, int thread) {
    (void)thread;
    const fc_ctx *c = vc;
    const qx_prep *p = c->p;
    const qx_t *xq = &c->x->t[c->op->in[0]], *yq = &c->x->t[c->op->out[0]];
    const void *xd = c->x->ptrs[c->op->in[0]];
    void *y = c->x->ptrs[c->op->out[0]];
    int r0 = task * c->chunk, r1 = r0 + c->chunk < p->fout ? r0 + c->chunk : p->fout;
    int in = p->fin, out = p->fout;
    for (int r = r0; r < r1; r++)
        for (int m = 0; m < p->rows; m++) {
            double v = p->bias ? (double)p->bias[r] : 0.0;
            for (int k = 0; k < in; k++) v += qx_ld(xq, xd, (size_t)m * in + k) * (double)p->wf[(size_t)r * in + k];
            qx_st(yq, y, (size_t)m * out + r, v);
        }
}

pdq_code pdq_qx_fc_run(pdq_qexec *x, int oi, pdq_status *st) {
    (void)st;
    const pdq_op *op = &x->g->ops[oi];
    qx_prep *p = &x->prep[oi];
    fc_ctx c = {.x = x, .op = op, .p = p, .chunk = 16};
    int threads = pdq_pool_threads(x->o.pool);
    /* decode streams the weight: contiguous shares per thread, as the packed GEMVs split it;
     * prefill: enough tasks to balance, few enough that each streams a useful slice */
    if (p->rows < 4) c.chunk = qk_gemv_rows_per_task(p->fout, threads);
    else
        while (c.chunk < 256 && (p->fout + c.chunk - 1) / c.chunk > 16 * threads) c.chunk *= 2;
    int tasks = (p->fout + c.chunk - 1) / c.chunk;
    if (!p->int_path) {
        pdq_qx_par(x, tasks, fc_float_task, &c);
        return PDQ_OK;
    }
    const qx_t *xq = &x->t[op->in[0]];
    size_t nx = (size_t)p->rows * p->fin;
    if (xq->dt == PDQ_TU8) {
        const uint8_t *src = x->ptrs[op->in[0]];
        for (size_t i = 0; i < nx; i++) p->xs[i] = (int16_t)((int)src[i] - (int)xq->zp);
        c.xs = p->xs;
    } else {
        c.xs = x->ptrs[op->in[0]];
    }
    if (p->any_zw)
        for (int m = 0; m < p->rows; m++)
            for (int g = 0; g < p->ngroups; g++) {
                int64_t s = 0;
                const int16_t *xm = c.xs + (size_t)m * p->fin;
                int k1 = (g + 1) * p->group < p->fin ? (g + 1) * p->group : p->fin;
                for (int k = g * p->group; k < k1; k++) s += xm[k];
                p->sumx[(size_t)m * p->ngroups + g] = s;
            }
    if (p->qm)
        for (int m = 0; m < p->rows; m++) pdq_qexact_prepare(p->qm, c.xs + (size_t)m * p->fin, p->xbuf + (size_t)m * p->xbytes);
    c.kctx = (pdq_qctx){.no_avx512 = x->simd < 2}; /* simd 0 never reaches the packed kernels */
    pdq_qx_par(x, tasks, fc_task, &c);
    return PDQ_OK;
}
