/* AVX2 kernels of the integer executor's ops (src/ops/), declared in qx_kernels.h.
 * int16 stores: four doubles at a time through the same IEEE operations, in the same order, as
 * include/pdq/requant.h's scalar rule (no FMA: this file is built for AVX2 alone), so every result
 * is the scalar path's bit for bit. Each handles a multiple of 4 elements and returns how many;
 * the caller's scalar loop finishes the row.
 * BATCH_MATMUL rows: exact integer sums, as the scalar int64 loop gives them. */
#include "kernels/qx_kernels.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#define AVX2 __attribute__((target("avx2")))

/* pdq_rq_code for four doubles onto an int16 grid: round half even (the 1.5 * 2^52 addition below
 * 2^51 in magnitude), + zero point, NaN -> zero point, clamp to [lo, hi]. */
typedef struct {
    __m256d s, zp, lo, hi;
} grid4;

AVX2 static grid4 grid_of(const pdq_qx_grid *q) {
    return (grid4){_mm256_set1_pd(q->s), _mm256_set1_pd((double)q->zp), _mm256_set1_pd((double)q->lo),
                   _mm256_set1_pd((double)q->hi)};
}

AVX2 static __m128i code4(__m256d y, const grid4 *g) {
    const __m256d big = _mm256_set1_pd(6755399441055744.0), lim = _mm256_set1_pd(2251799813685248.0);
    const __m256d absmask = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7fffffffffffffffLL));
    __m256d v = _mm256_div_pd(y, g->s);
    __m256d small = _mm256_cmp_pd(_mm256_and_pd(v, absmask), lim, _CMP_LT_OQ);
    __m256d r = _mm256_blendv_pd(v, _mm256_sub_pd(_mm256_add_pd(v, big), big), small);
    __m256d q = _mm256_add_pd(r, g->zp);
    __m256d res = _mm256_blendv_pd(g->lo, q, _mm256_cmp_pd(q, g->lo, _CMP_GE_OQ));
    res = _mm256_blendv_pd(res, g->zp, _mm256_cmp_pd(q, q, _CMP_UNORD_Q));
    res = _mm256_blendv_pd(res, g->hi, _mm256_cmp_pd(q, g->hi, _CMP_GE_OQ));
    return _mm256_cvttpd_epi32(res); /* an integer in [lo, hi]: exact */
}

AVX2 static void store4(int16_t *y, __m128i c) { _mm_storel_epi64((__m128i *)(void *)y, _mm_packs_epi32(c, c)); }

/* (code - zp) * s of four int16 codes, or of one broadcast (stride 0). */
AVX2 static __m256d value4(const int16_t *a, int stride, __m256d z, __m256d s) {
    __m128i c = stride ? _mm_cvtepi16_epi32(_mm_loadl_epi64((const __m128i *)(const void *)a)) : _mm_set1_epi32(a[0]);
    return _mm256_mul_pd(_mm256_sub_pd(_mm256_cvtepi32_pd(c), z), s);
}

AVX2 int pdq_qx_bin_i16_avx2(pdq_qx_binop t, const pdq_qx_grid *aq, const int16_t *a, int sa, const pdq_qx_grid *bq, const int16_t *b,
                             int sb, const pdq_qx_grid *yq, int16_t *y, int n) {
    grid4 g = grid_of(yq);
    __m256d za = _mm256_set1_pd((double)aq->zp), fa = _mm256_set1_pd(aq->s);
    __m256d zb = _mm256_set1_pd((double)bq->zp), fb = _mm256_set1_pd(bq->s);
    int i = 0;
    for (; i + 4 <= n; i += 4) {
        __m256d u = value4(a + (size_t)i * sa, sa, za, fa), v = value4(b + (size_t)i * sb, sb, zb, fb);
        __m256d r = t == PDQ_QX_ADD ? _mm256_add_pd(u, v) : t == PDQ_QX_SUB ? _mm256_sub_pd(u, v) : _mm256_mul_pd(u, v);
        store4(y + i, code4(r, &g));
    }
    return i;
}

/* Four int64 to double, exactly for |x| < 2^51: x + the bits of 1.5 * 2^52 is that double's bit
 * pattern plus x units in the last place (spacing 1), so subtracting 1.5 * 2^52 leaves x. */
AVX2 static __m256d i64_to_f64(__m256i x) {
    const __m256d magic = _mm256_set1_pd(6755399441055744.0);
    return _mm256_sub_pd(_mm256_castsi256_pd(_mm256_add_epi64(x, _mm256_castpd_si256(magic))), magic);
}

AVX2 static int below_2p51(__m256i x) {
    const __m256i lim = _mm256_set1_epi64x((int64_t)1 << 51), nlim = _mm256_set1_epi64x(-((int64_t)1 << 51));
    __m256i out = _mm256_or_si256(_mm256_cmpgt_epi64(x, lim), _mm256_cmpgt_epi64(nlim, x));
    return _mm256_testz_si256(out, out);
}

AVX2 int pdq_qx_sums_i16_avx2(const int64_t *acc, const double *mult, int per_elem, const float *bias, const pdq_qx_grid *yq,
                              int16_t *y, int n) {
    grid4 g = grid_of(yq);
    int i = 0;
    for (; i + 4 <= n; i += 4) {
        __m256i a = _mm256_loadu_si256((const __m256i *)(const void *)(acc + i));
        if (!below_2p51(a)) break; /* the scalar loop takes it from here */
        __m256d v = _mm256_mul_pd(i64_to_f64(a), per_elem ? _mm256_loadu_pd(mult + i) : _mm256_set1_pd(mult[0]));
        if (bias) v = _mm256_add_pd(v, _mm256_cvtps_pd(_mm_loadu_ps(bias + i)));
        store4(y + i, code4(v, &g));
    }
    return i;
}

AVX2 int pdq_qx_div_i16_avx2(const double *v, double d, const pdq_qx_grid *yq, int16_t *y, int n) {
    grid4 g = grid_of(yq);
    __m256d dv = _mm256_set1_pd(d);
    int i = 0;
    for (; i + 4 <= n; i += 4) store4(y + i, code4(_mm256_div_pd(_mm256_loadu_pd(v + i), dv), &g));
    return i;
}

AVX2 int pdq_qx_codes_i16_avx2(const double *v, const pdq_qx_grid *yq, int16_t *y, int n) {
    grid4 g = grid_of(yq);
    int i = 0;
    for (; i + 4 <= n; i += 4) store4(y + i, code4(_mm256_loadu_pd(v + i), &g));
    return i;
}

AVX2 int pdq_qx_scale_i16_avx2(const pdq_qx_grid *xq, const int16_t *x, double inv, const double *gamma, int gn,
                               const pdq_qx_grid *yq, int16_t *y, int n) {
    grid4 g = grid_of(yq);
    __m256d z = _mm256_set1_pd((double)xq->zp), s = _mm256_set1_pd(xq->s), iv = _mm256_set1_pd(inv);
    int i = 0;
    for (; i + 4 <= n; i += 4) {
        __m256d gm = gn == 1 ? _mm256_set1_pd(gamma[0]) : _mm256_loadu_pd(gamma + i);
        store4(y + i, code4(_mm256_mul_pd(_mm256_mul_pd(value4(x + i, 1, z, s), iv), gm), &g));
    }
    return i;
}
/* acc[j] += sum_k av[k] * b[k * ldb + j], 64 columns at a time in 8 int32 registers. Rows go in
 * pairs: the two rows' int16 values interleaved (unpacklo/hi) against (av[k], av[k + 1]) in one
 * vpmaddwd, whose lanes hold av[k] b[k][j] + av[k+1] b[k+1][j] (columns 0-3, 8-11 of each 16 in
 * the lo register, 4-7, 12-15 in the hi one). |av|, |b| <= 32768, so while the sum of |av| taken
 * in stays at or below 65535 no lane and no pair sum passes 65535 * 32768 < 2^31; past it the
 * lanes go into the int64 totals and start again (a pair over the bound on its own, both at
 * -32768, goes as two single rows). The same exact integers as the int64 axpy. */
AVX2 static void flush16(int64_t *acc, __m256i lo, __m256i hi) {
    int32_t l[8], h[8];
    _mm256_storeu_si256((__m256i *)(void *)l, lo);
    _mm256_storeu_si256((__m256i *)(void *)h, hi);
    for (int i = 0; i < 4; i++) {
        acc[i] += l[i];
        acc[4 + i] += h[i];
        acc[8 + i] += l[4 + i];
        acc[12 + i] += h[4 + i];
    }
}

AVX2 void pdq_qx_bmm_acc_i16_avx2(int64_t *acc, const int32_t *av, int K, const int16_t *b, long ldb, int N) {
    int N16 = N / 16 * 16;
    for (int j0 = 0; j0 < N16; j0 += 64) {
        int nq = (N16 - j0) / 16 < 4 ? (N16 - j0) / 16 : 4;
        __m256i lo[4], hi[4];
        for (int q = 0; q < 4; q++) lo[q] = hi[q] = _mm256_setzero_si256();
        int64_t budget = 0;
        for (int k = 0; k < K;) {
            int step = k + 1 < K ? 2 : 1;
            int32_t a0 = av[k], a1 = step == 2 ? av[k + 1] : 0;
            int64_t m0 = a0 < 0 ? -(int64_t)a0 : a0, m1 = a1 < 0 ? -(int64_t)a1 : a1;
            if (m0 + m1 > 65535) { a1 = 0; m1 = 0; step = 1; }
            if (budget + m0 + m1 > 65535) {
                for (int q = 0; q < nq; q++) {
                    flush16(acc + j0 + 16 * q, lo[q], hi[q]);
                    lo[q] = hi[q] = _mm256_setzero_si256();
                }
                budget = 0;
            }
            budget += m0 + m1;
            if (m0 + m1) {
                __m256i w = _mm256_set1_epi32((int32_t)(((uint32_t)(uint16_t)a1 << 16) | (uint16_t)a0));
                const int16_t *r0 = b + (size_t)k * (size_t)ldb + j0;
                const int16_t *r1 = step == 2 ? r0 + ldb : r0; /* a1 = 0 when single */
                for (int q = 0; q < nq; q++) {
                    __m256i x0 = _mm256_loadu_si256((const __m256i *)(const void *)(r0 + 16 * q));
                    __m256i x1 = _mm256_loadu_si256((const __m256i *)(const void *)(r1 + 16 * q));
                    lo[q] = _mm256_add_epi32(lo[q], _mm256_madd_epi16(_mm256_unpacklo_epi16(x0, x1), w));
                    hi[q] = _mm256_add_epi32(hi[q], _mm256_madd_epi16(_mm256_unpackhi_epi16(x0, x1), w));
                }
            }
            k += step;
        }
        for (int q = 0; q < nq; q++) flush16(acc + j0 + 16 * q, lo[q], hi[q]);
    }
    for (int k = 0; k < K && N16 < N; k++) pdq_qx_axpy_i16_scalar(acc + N16, av[k], b + (size_t)k * (size_t)ldb + N16, N - N16);
}

#endif
