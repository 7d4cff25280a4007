/* The integer executor's AVX2 sums (FULLY_CONNECTED's tiles, BATCH_MATMUL's axpy): the scalar
 * reference's exact integers (qx_fc_i16_scalar.c). The int32 lanes each add 2 products per 16
 * elements: 2048 elements are 256 products per lane (< 2^31, see the scalar file), then they
 * flush to int64 totals. */
#include <string.h>

#include "kernels/qx_kernels.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#include "kernels/qx_hsum.h"

#define AVX2_BLOCK 2048

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
    qx_tile_tail(res, 4, 2, x, ldx, w, ldw, k, K);
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
    qx_tile_tail(res, 1, 4, x, 0, w, ldw, k, K);
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
#endif
