/* The integer path of the packed kernels (uint4 and uint8 weights, x rounded to int16 per block;
 * the rule of src/kernels/qmatmul.h) against a reference written here from the rule alone: round x per
 * block, exact int64 block sums, the float epilogue in its fixed order. Every path (scalar,
 * AVX2 with and without VNNI, AVX-512 VNNI), 1/2/3 threads and GEMM vs GEMV rows must equal it bit
 * for bit, over per-channel rows and groups 32/64/128/256, zero points 0/mid/max/random, odd
 * shapes and a column permutation, with scratch per call or one workspace kept across calls; the result is also within the 16-bit rounding bound of the
 * double-precision dequantized product, and a NaN or Inf in x gives NaN. uint8 also runs the
 * extreme codes and zero points that drive |S| toward its int32 bound. */
#include "testutil.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/qmatmul.h"
#include "pdq/quant.h"

typedef struct {
    int rows, cols, group; /* group 0: per-channel */
    int zmode;             /* 0: zero 0, 1: mid, 2: max, 3: random */
    int perm;
    pdq_qtype type;
} icase;

typedef struct {
    pdq_qmatrix w;
    uint8_t *codes, *packed, *zeros;
    float *scales;
    int32_t *perm;
    int group, ng;
} imat;

static void imat_make(const icase *k, uint64_t *rng, imat *m) {
    memset(m, 0, sizeof *m);
    m->group = k->group ? k->group : k->cols;
    m->ng = (k->cols + m->group - 1) / m->group;
    int u4 = k->type == PDQ_QT_U4, levels = u4 ? 16 : 256;
    size_t n = (size_t)k->rows * k->cols, rb = u4 ? (size_t)(k->cols + 1) / 2 : (size_t)k->cols;
    m->codes = malloc(n);
    for (size_t i = 0; i < n; i++) m->codes[i] = (uint8_t)(tu_rand(rng) % (uint64_t)levels);
    m->packed = calloc((size_t)k->rows * rb, 1);
    for (int r = 0; r < k->rows; r++) {
        if (u4) pdq_pack4(m->codes + (size_t)r * k->cols, (size_t)k->cols, m->packed + (size_t)r * rb);
        else memcpy(m->packed + (size_t)r * rb, m->codes + (size_t)r * k->cols, (size_t)k->cols);
    }
    m->scales = malloc(sizeof(float) * (size_t)k->rows * m->ng);
    m->zeros = malloc((size_t)k->rows * m->ng);
    for (int i = 0; i < k->rows * m->ng; i++) {
        m->scales[i] = (float)(0.001 + 0.05 * tu_randu(rng));
        m->zeros[i] = (uint8_t)(k->zmode == 0 ? 0 : k->zmode == 1 ? levels / 2 : k->zmode == 2 ? levels - 1
                                : (int)(tu_rand(rng) % (uint64_t)levels));
    }
    if (k->perm) {
        m->perm = malloc(sizeof(int32_t) * (size_t)k->cols);
        for (int c = 0; c < k->cols; c++) m->perm[c] = c;
        for (int c = k->cols - 1; c > 0; c--) {
            int j = (int)(tu_rand(rng) % (uint64_t)(c + 1));
            int32_t t = m->perm[c]; m->perm[c] = m->perm[j]; m->perm[j] = t;
        }
    }
    pdq_status st = {0};
    assert_int_equal(pdq_qmatrix_init(&m->w, k->type, k->rows, k->cols, k->group, m->packed, m->scales, m->zeros,
                                      m->perm, "test", &st), PDQ_OK);
}

static void imat_free(imat *m) {
    free(m->codes); free(m->packed); free(m->zeros); free(m->scales); free(m->perm);
}

/* The block of the rule: 128 columns, or the group when it is 32 or 64. */
static int block_of(const icase *k) {
    int g = k->group ? k->group : k->cols;
    return g < k->cols && (g == 32 || g == 64) ? g : 128;
}

/* Half-to-even rounding of a float quotient, written with floor (not rintf). */
static double round_half_even(double v) {
    double f = floor(v), d = v - f;
    if (d > 0.5) return f + 1;
    if (d < 0.5) return f;
    return fmod(f, 2.0) == 0.0 ? f : f + 1;
}

/* The rule for one row of x: xq[cols] in stored column order, xs[nblocks]. */
static void ref_round(const icase *k, const imat *m, const float *x, int32_t *xq, float *xs) {
    int B = block_of(k), nb = (k->cols + B - 1) / B;
    for (int b = 0; b < nb; b++) {
        int c0 = b * B, c1 = c0 + B < k->cols ? c0 + B : k->cols;
        float mx = 0;
        int bad = 0;
        for (int c = c0; c < c1; c++) {
            float v = x[m->perm ? m->perm[c] : c];
            if (isnan(v) || isinf(v)) bad = 1;
            else if (fabsf(v) > mx) mx = fabsf(v);
        }
        float s = bad ? NAN : mx / 32767.0f;
        xs[b] = s;
        for (int c = c0; c < c1; c++) {
            double q = 0;
            if (!bad && s > 0) {
                float quot = x[m->perm ? m->perm[c] : c] / s;
                q = round_half_even((double)quot);
                if (q > 32767) q = 32767;
                if (q < -32767) q = -32767;
            }
            xq[c] = (int32_t)q;
        }
    }
}

/* y[r] by the rule, from the unpacked codes. */
static void ref_row(const icase *k, const imat *m, const float *x, float *y) {
    int B = block_of(k), nb = (k->cols + B - 1) / B;
    int32_t *xq = malloc(sizeof(int32_t) * (size_t)k->cols);
    float *xs = malloc(sizeof(float) * (size_t)nb);
    ref_round(k, m, x, xq, xs);
    for (int r = 0; r < k->rows; r++) {
        float y_r = 0, t = 0;
        for (int b = 0; b < nb; b++) {
            int c0 = b * B, c1 = c0 + B < k->cols ? c0 + B : k->cols, g = c0 / m->group;
            int64_t S = 0;
            for (int c = c0; c < c1; c++)
                S += ((int64_t)m->codes[(size_t)r * k->cols + c] - m->zeros[(size_t)r * m->ng + g]) * xq[c];
            assert_true(S > INT32_MIN && S < INT32_MAX);
            t = fmaf(xs[b], (float)S, t);
            int last = c1 == k->cols || (c1 % m->group) == 0;
            if (last) {
                y_r = fmaf(m->scales[(size_t)r * m->ng + g], t, y_r);
                t = 0;
            }
        }
        y[r] = y_r;
    }
    free(xq);
    free(xs);
}

/* 0 best, 1 scalar, 2 AVX2 (VNNI where the CPU has it), 3 AVX2 without VNNI, 4 no VNNI at all */
#define N_ISA 5
/* One workspace kept across every check_case call (matrices and row counts of every size, so it
 * grows and is reused with stale contents): its results must be those of per-call scratch. */
static pdq_scratch shared_work;

static void run_ws(const pdq_qmatrix *w, pdq_pool *pool, int isa, const float *x, int n, float *y, pdq_scratch *work) {
    pdq_qctx ctx = {.pool = pool, .force_scalar = isa == 1, .no_avx512 = isa == 2 || isa == 3, .no_vnni = isa >= 3,
                    .work = work};
    pdq_status st = {0};
    assert_int_equal(pdq_qmatmul(&ctx, w, x, n, y, &st), PDQ_OK);
}
static void run_w(const pdq_qmatrix *w, pdq_pool *pool, int isa, const float *x, int n, float *y) {
    pdq_qctx ctx = {.pool = pool, .force_scalar = isa == 1, .no_avx512 = isa == 2 || isa == 3, .no_vnni = isa >= 3};
    pdq_status st = {0};
    assert_int_equal(pdq_qmatmul(&ctx, w, x, n, y, &st), PDQ_OK);
}
static void run(const imat *m, pdq_pool *pool, int isa, const float *x, int n, float *y) { run_w(&m->w, pool, isa, x, n, y); }

/* Matrices the 4-row layout was checked on (the tests assert there were some). */
static int rows4_cases;

/* |y - exact| <= sum over blocks of xs_b / 2 * sum |w| (the rounding of x) plus float rounding. */
static void check_close(const icase *k, const imat *m, const float *x, const float *y) {
    int B = block_of(k), nb = (k->cols + B - 1) / B;
    int32_t *xq = malloc(sizeof(int32_t) * (size_t)k->cols);
    float *xs = malloc(sizeof(float) * (size_t)nb);
    ref_round(k, m, x, xq, xs);
    for (int r = 0; r < k->rows; r++) {
        double exact = 0, bound = 0, mag = 0;
        for (int c = 0; c < k->cols; c++) {
            size_t g = (size_t)r * m->ng + (size_t)(c / m->group);
            double wv = (double)m->scales[g] * ((double)m->codes[(size_t)r * k->cols + c] - m->zeros[g]);
            double xv = x[m->perm ? m->perm[c] : c];
            exact += xv * wv;
            bound += 0.5 * (double)xs[c / B] * fabs(wv);
            mag += fabs(xv * wv);
        }
        double tol = bound * (1 + 1e-6) + 1e-6 * mag + 1e-30;
        if (fabs(y[r] - exact) > tol)
            fail_msg("[%d x %d] group %d: y[%d] = %.9g, exact %.9g, bound %.3g", k->rows, k->cols, k->group, r,
                     (double)y[r], exact, tol);
    }
    free(xq);
    free(xs);
}

static void check_case(const icase *k, pdq_pool *pools[3], uint64_t *rng) {
    imat m;
    imat_make(k, rng, &m);
    pdq_qmatrix w4 = m.w; /* the same matrix in the 4-row layout, where it applies */
    pdq_status st = {0};
    assert_int_equal(pdq_qmatrix_pack_rows4(&w4, &st), PDQ_OK);
    int packed = w4.layout == PDQ_QL_ROWS4;
    rows4_cases += packed;
    static const int ns[] = {1, 2, 5, 13, 37};
    for (size_t t = 0; t < sizeof ns / sizeof ns[0]; t++) {
        int n = ns[t];
        size_t ny = (size_t)n * k->rows;
        float *x = malloc(sizeof(float) * (size_t)n * k->cols);
        for (size_t i = 0; i < (size_t)n * k->cols; i++) x[i] = (float)tu_randn(rng);
        if (n == 5) /* a row of zeros and a row with one zero block */
            for (int c = 0; c < k->cols; c++) {
                x[(size_t)1 * k->cols + c] = 0;
                if (c < 64) x[(size_t)2 * k->cols + (m.perm ? m.perm[c] : c)] = 0;
            }
        float *yr = malloc(sizeof(float) * ny), *y = malloc(sizeof(float) * ny), *y1 = malloc(sizeof(float) * (size_t)k->rows);
        for (int i = 0; i < n; i++) {
            ref_row(k, &m, x + (size_t)i * k->cols, yr + (size_t)i * k->rows);
            check_close(k, &m, x + (size_t)i * k->cols, yr + (size_t)i * k->rows);
        }
        for (int lay = 0; lay < 1 + packed; lay++)
            for (int p = 0; p < 3; p++)
                for (int isa = 0; isa < 2 * N_ISA; isa++) {
                    if (n == 37 && isa % N_ISA > 1) continue; /* the long GEMM: best and scalar */
                    memset(y, 0xA5, sizeof(float) * ny);
                    run_ws(lay ? &w4 : &m.w, pools[p], isa % N_ISA, x, n, y, isa >= N_ISA ? &shared_work : NULL);
                    for (size_t i = 0; i < ny; i++)
                        if (memcmp(&y[i], &yr[i], sizeof(float)) != 0)
                            fail_msg("u%d [%d x %d] group %d zmode %d perm %d layout %d n %d isa %d threads %d: y[%zu] "
                                     "= %.9g, rule %.9g", k->type == PDQ_QT_U4 ? 4 : 8, k->rows, k->cols, k->group,
                                     k->zmode, k->perm, lay, n, isa, p + 1, i, (double)y[i], (double)yr[i]);
                }
        /* each GEMM row is the GEMV of that row */
        for (int i = 0; i < n; i++) {
            run(&m, pools[1], 0, x + (size_t)i * k->cols, 1, y1);
            assert_memory_equal(yr + (size_t)i * k->rows, y1, sizeof(float) * (size_t)k->rows);
        }
        free(x); free(yr); free(y); free(y1);
    }
    free(w4.owned_codes);
    imat_free(&m);
}

static const pdq_qtype types[] = {PDQ_QT_U4, PDQ_QT_U8};
#define N_TYPES (sizeof types / sizeof types[0])

static void test_shapes_and_groups(void **state) {
    (void)state;
    pdq_pool *pools[3];
    tu_pools_create(pools);
    uint64_t rng = 4242;
    static const int dims[][2] = {{37, 172}, {20, 688}, {9, 5632}, {6, 8}, {3, 1}, {33, 300}, {17, 256}, {1, 129}, {11, 320}};
    static const int groups[] = {0, 32, 64, 128, 256};
    for (size_t t = 0; t < N_TYPES; t++)
        for (size_t d = 0; d < sizeof dims / sizeof dims[0]; d++)
            for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++) {
                if (groups[g] >= dims[d][1]) continue;
                for (int z = 0; z < 4; z++) {
                    if (dims[d][1] == 5632 && z != 3) continue; /* the long rows: random zero points only */
                    icase k = {dims[d][0], dims[d][1], groups[g], z, 0, types[t]};
                    check_case(&k, pools, &rng);
                }
            }
    assert_true(rows4_cases >= 40); /* 9 x 5632, 17 x 256 (both types), 11 x 320 (uint8) */
    assert_non_null(shared_work.p);
    pdq_scratch_free(&shared_work);
    tu_pools_free(pools);
}

static void test_permutation(void **state) {
    (void)state;
    pdq_pool *pools[3];
    tu_pools_create(pools);
    rows4_cases = 0;
    uint64_t rng = 99;
    for (size_t t = 0; t < N_TYPES; t++) {
        icase a = {37, 256, 32, 3, 1, types[t]}, b = {20, 172, 0, 3, 1, types[t]}, c = {18, 688, 128, 3, 1, types[t]};
        check_case(&a, pools, &rng);
        check_case(&b, pools, &rng);
        check_case(&c, pools, &rng);
    }
    assert_true(rows4_cases > 0);
    pdq_scratch_free(&shared_work);
    tu_pools_free(pools);
}

/* pdq_qmatmul_many: several matrices of one input, x rounded once for a run that reads it alike
 * (the same type, plan and column order) and again where the next one differs (another type,
 * group or permutation, or the same permutation in another array): every output equals the rule. */
static void test_many(void **state) {
    (void)state;
    pdq_pool *pools[3];
    tu_pools_create(pools);
    uint64_t rng = 4242;
    enum { COLS = 512, NM = 6 };
    const icase ks[NM] = {
        {64, COLS, 32, 3, 0, PDQ_QT_U4}, {24, COLS, 32, 0, 0, PDQ_QT_U4}, {40, COLS, 32, 3, 0, PDQ_QT_U8},
        {36, COLS, 0, 3, 0, PDQ_QT_U4},  {20, COLS, 32, 3, 1, PDQ_QT_U4}, {28, COLS, 32, 1, 0, PDQ_QT_U4},
    };
    imat m[NM];
    pdq_qmatrix w4[NM];
    pdq_status st = {0};
    for (int i = 0; i < NM; i++) {
        imat_make(&ks[i], &rng, &m[i]);
        w4[i] = m[i].w;
        assert_int_equal(pdq_qmatrix_pack_rows4(&w4[i], &st), PDQ_OK);
    }
    /* matrix 5 takes matrix 4's permutation, copied: the same column order in another array */
    int32_t *perm5 = malloc(sizeof(int32_t) * COLS);
    memcpy(perm5, m[4].perm, sizeof(int32_t) * COLS);
    m[5].w.perm = w4[5].perm = perm5;
    icase k5 = ks[5];
    k5.perm = 1;
    m[5].perm = perm5; /* ref_row reads the permutation from the imat */
    static const int runs[][PDQ_QMATMUL_MANY + 1] = {/* count, then matrices */
                                                      {3, 0, 1, 5}, {4, 0, 2, 1, 0}, {3, 3, 0, 1}, {4, 0, 4, 5, 1}, {2, 4, 5}};
    for (size_t r = 0; r < sizeof runs / sizeof *runs; r++) {
        int nw = runs[r][0];
        for (int n = 1; n <= 3; n += 2) {
            float *x = malloc(sizeof(float) * (size_t)n * COLS), *ys[PDQ_QMATMUL_MANY], *yr[PDQ_QMATMUL_MANY];
            for (int i = 0; i < n * COLS; i++) x[i] = (float)tu_randn(&rng);
            for (int j = 0; j < nw; j++) {
                int id = runs[r][1 + j];
                const icase *k = id == 5 ? &k5 : &ks[id];
                ys[j] = malloc(sizeof(float) * (size_t)n * k->rows);
                yr[j] = malloc(sizeof(float) * (size_t)n * k->rows);
                for (int i = 0; i < n; i++) ref_row(k, &m[id], x + (size_t)i * COLS, yr[j] + (size_t)i * k->rows);
            }
            for (int lay = 0; lay < 2; lay++)
                for (int p = 0; p < 3; p++)
                    for (int isa = 0; isa < 2 * N_ISA; isa++) {
                        const pdq_qmatrix *ws[PDQ_QMATMUL_MANY];
                        for (int j = 0; j < nw; j++) {
                            ws[j] = lay ? &w4[runs[r][1 + j]] : &m[runs[r][1 + j]].w;
                            memset(ys[j], 0xA5, sizeof(float) * (size_t)n * ws[j]->rows);
                        }
                        pdq_qctx ctx = {.pool = pools[p], .force_scalar = isa % N_ISA == 1,
                                        .no_avx512 = isa % N_ISA == 2 || isa % N_ISA == 3, .no_vnni = isa % N_ISA >= 3,
                                        .work = isa >= N_ISA ? &shared_work : NULL};
                        assert_int_equal(pdq_qmatmul_many(&ctx, nw, ws, x, n, ys, &st), PDQ_OK);
                        for (int j = 0; j < nw; j++)
                            if (memcmp(ys[j], yr[j], sizeof(float) * (size_t)n * ws[j]->rows) != 0)
                                fail_msg("run %zu matrix %d (of %d) n %d layout %d threads %d isa %d differs from the rule",
                                         r, j, nw, n, lay, p + 1, isa);
                    }
            for (int j = 0; j < nw; j++) {
                free(ys[j]);
                free(yr[j]);
            }
            free(x);
        }
    }
    for (int i = 0; i < NM; i++) {
        if (w4[i].owned_codes != m[i].w.owned_codes) free(w4[i].owned_codes);
        if (i == 5) m[i].perm = NULL;
        imat_free(&m[i]);
    }
    free(perm5);
    pdq_scratch_free(&shared_work);
    tu_pools_free(pools);
}

/* x values that stress the rounding: exact halves of xs, the block maximum, huge and tiny
 * magnitudes. */
static void test_rounding_edges(void **state) {
    (void)state;
    pdq_pool *pools[3];
    tu_pools_create(pools);
    uint64_t rng = 5;
    for (size_t t = 0; t < N_TYPES; t++) {
        icase k = {7, 256, 0, 3, 0, types[t]};
        imat m;
        imat_make(&k, &rng, &m);
        static const float scales[] = {1.0f, 3e37f, 1e-30f, 1e-41f};
        for (size_t s = 0; s < sizeof scales / sizeof scales[0]; s++) {
            float x[256], yr[7], y[7];
            for (int c = 0; c < 256; c++) x[c] = scales[s] * (float)((c % 7) - 3) * (c % 2 ? 0.5f : 1.0f) / 3.0f;
            x[5] = scales[s];
            ref_row(&k, &m, x, yr);
            for (int p = 0; p < 3; p++)
                for (int isa = 0; isa < N_ISA; isa++) {
                    run(&m, pools[p], isa, x, 1, y);
                    assert_memory_equal(yr, y, sizeof y);
                }
        }
        imat_free(&m);
    }
    tu_pools_free(pools);
}

/* uint8 at the int32 bound of the rule: codes 0 or 255 against zero points 255 or 0 and x of
 * one magnitude (xq = +-32767 everywhere), so |S| = 255 * 32767 * 128 in every full block,
 * in both signs, per channel and in groups, through the GEMV and the GEMM. */
static void test_u8_extremes(void **state) {
    (void)state;
    pdq_pool *pools[3];
    tu_pools_create(pools);
    uint64_t rng = 11;
    static const int groups[] = {0, 128, 64, 32};
    for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++) {
        icase k = {9, 400, groups[g], 3, 0, PDQ_QT_U8};
        imat m;
        imat_make(&k, &rng, &m);
        for (int r = 0; r < k.rows; r++)
            for (int c = 0; c < k.cols; c++) {
                int hi = r % 3 == 0 || (r % 3 == 2 && c % 2);
                m.codes[(size_t)r * k.cols + c] = m.packed[(size_t)r * k.cols + c] = (uint8_t)(hi ? 255 : 0);
            }
        for (int i = 0; i < k.rows * m.ng; i++) m.zeros[i] = (uint8_t)((i / m.ng) % 2 ? 255 : 0);
        int n = 3;
        float x[3 * 400], yr[3 * 9], y[3 * 9];
        for (int c = 0; c < k.cols; c++) {
            x[c] = 1.5f;
            x[k.cols + c] = -1.5f;
            x[2 * k.cols + c] = c % 2 ? 1.5f : -1.5f;
        }
        for (int i = 0; i < n; i++) ref_row(&k, &m, x + (size_t)i * k.cols, yr + (size_t)i * k.rows);
        for (int p = 0; p < 3; p++)
            for (int isa = 0; isa < N_ISA; isa++) {
                run(&m, pools[p], isa, x, n, y);
                assert_memory_equal(yr, y, sizeof y);
                for (int i = 0; i < n; i++) {
                    run(&m, pools[p], isa, x + (size_t)i * k.cols, 1, y);
                    assert_memory_equal(yr + (size_t)i * k.rows, y, sizeof(float) * (size_t)k.rows);
                }
            }
        imat_free(&m);
    }
    tu_pools_free(pools);
}

/* pdq_qexact_rows (the integer executor's sums): raw code * xq in int64, any int16 xq (-32768
 * included), uint4 and uint8, on every path, in both layouts, over row ranges that start and end
 * mid-block. */
static void test_exact_sums(void **state) {
    (void)state;
    uint64_t rng = 21;
    static const int dims[][2] = {{9, 5632}, {17, 256}, {37, 172}, {20, 688}, {6, 8}, {3, 1}, {5, 129}, {8, 4224}};
    int packed_cases = 0;
    for (size_t d = 0; d < 2 * (sizeof dims / sizeof dims[0]); d++) {
        int u8 = d >= sizeof dims / sizeof dims[0];
        size_t dd = d % (sizeof dims / sizeof dims[0]);
        icase k = {dims[dd][0], dims[dd][1], 0, 3, 0, u8 ? PDQ_QT_U8 : PDQ_QT_U4};
        imat m;
        imat_make(&k, &rng, &m);
        assert_true(pdq_qexact_ok(&m.w));
        int16_t *xq = malloc(sizeof(int16_t) * (size_t)k.cols);
        for (int mode = 0; mode < 3; mode++) { /* random, all -32768, alternating extremes */
            for (int c = 0; c < k.cols; c++)
                xq[c] = mode == 0 ? (int16_t)(tu_rand(&rng) & 0xFFFF) : mode == 1 ? INT16_MIN : (c % 2 ? INT16_MAX : INT16_MIN);
            if (mode == 1) { /* the largest codes: the largest |sum| */
                for (int i = 0; i < k.rows * k.cols; i++) m.codes[i] = u8 ? 255 : 15;
                for (int r = 0; r < k.rows; r++) {
                    if (u8) memcpy(m.packed + (size_t)r * k.cols, m.codes + (size_t)r * k.cols, (size_t)k.cols);
                    else pdq_pack4(m.codes + (size_t)r * k.cols, (size_t)k.cols, m.packed + (size_t)r * m.w.row_bytes);
                }
            }
            int64_t *want = malloc(sizeof(int64_t) * (size_t)k.rows), *got = malloc(sizeof(int64_t) * (size_t)k.rows);
            for (int r = 0; r < k.rows; r++) {
                int64_t t = 0;
                for (int c = 0; c < k.cols; c++) t += (int64_t)m.codes[(size_t)r * k.cols + c] * xq[c];
                want[r] = t;
            }
            pdq_qmatrix w4 = m.w;
            pdq_status st = {0};
            assert_int_equal(pdq_qmatrix_pack_rows4(&w4, &st), PDQ_OK);
            packed_cases += w4.layout == PDQ_QL_ROWS4;
            uint8_t *buf = aligned_alloc(64, (pdq_qexact_bytes(&m.w) + 63) / 64 * 64);
            pdq_qexact_prepare(&m.w, xq, buf);
            for (int lay = 0; lay < 2; lay++)
                for (int isa = 0; isa < N_ISA; isa++) {
                    pdq_qctx ctx = {.force_scalar = isa == 1, .no_avx512 = isa == 2 || isa == 3, .no_vnni = isa >= 3};
                    const pdq_qmatrix *w = lay ? &w4 : &m.w;
                    memset(got, 0xA5, sizeof(int64_t) * (size_t)k.rows);
                    pdq_qexact_rows(&ctx, w, buf, 0, k.rows, k.rows, got);
                    for (int r = 0; r < k.rows; r++)
                        if (got[r] != want[r])
                            fail_msg("u%d [%d x %d] mode %d layout %d isa %d: s[%d] = %lld, want %lld", u8 ? 8 : 4, k.rows,
                                     k.cols, mode, lay, isa, r, (long long)got[r], (long long)want[r]);
                    /* a task's range from a block start to a row mid-block, prefetch bounded by it */
                    int r1 = k.rows > 4 ? k.rows - 1 : k.rows;
                    pdq_qexact_rows(&ctx, w, buf, k.rows >= 8 ? 4 : 0, r1, r1, got);
                    for (int r = k.rows >= 8 ? 4 : 0; r < r1; r++) assert_true(got[r - (k.rows >= 8 ? 4 : 0)] == want[r]);
                }
            free(buf);
            free(w4.owned_codes);
            free(want);
            free(got);
        }
        free(xq);
        imat_free(&m);
    }
    assert_true(packed_cases >= 18); /* 5632, 256 and 4224 columns, both types, three modes each */
}

static void test_nonfinite(void **state) {
    (void)state;
    pdq_pool *pools[3];
    tu_pools_create(pools);
    uint64_t rng = 7;
    static const int groups[] = {0, 32, 128};
    for (size_t t = 0; t < N_TYPES; t++)
        for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++) {
            icase k = {13, 300, groups[g], 3, 0, types[t]};
            imat m;
            imat_make(&k, &rng, &m);
            int n = 6;
            float *x = malloc(sizeof(float) * (size_t)n * k.cols), *y = malloc(sizeof(float) * (size_t)n * k.rows);
            for (int i = 0; i < n * k.cols; i++) x[i] = (float)tu_randn(&rng);
            x[0 * k.cols + 250] = NAN;
            x[2 * k.cols + 3] = INFINITY;
            x[5 * k.cols + 299] = -INFINITY;
            for (int isa = 0; isa < N_ISA; isa++)
                for (int gemv = 0; gemv < 2; gemv++) {
                    if (gemv)
                        for (int i = 0; i < n; i++) run(&m, pools[1], isa, x + (size_t)i * k.cols, 1, y + (size_t)i * k.rows);
                    else run(&m, pools[1], isa, x, n, y);
                    for (int i = 0; i < n; i++)
                        for (int r = 0; r < k.rows; r++) {
                            int bad = i == 0 || i == 2 || i == 5;
                            float v = y[(size_t)i * k.rows + r];
                            if (bad ? !isnan(v) : !isfinite(v))
                                fail_msg("u%d group %d isa %d gemv %d: y[%d, %d] = %g", types[t] == PDQ_QT_U4 ? 4 : 8,
                                         groups[g], isa, gemv, i, r, (double)v);
                        }
                }
            free(x);
            free(y);
            imat_free(&m);
        }
    tu_pools_free(pools);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shapes_and_groups),
        cmocka_unit_test(test_permutation),
        cmocka_unit_test(test_many),
        cmocka_unit_test(test_rounding_edges),
        cmocka_unit_test(test_u8_extremes),
        cmocka_unit_test(test_nonfinite),
        cmocka_unit_test(test_exact_sums),
    };
    printf("integer kernel path on this CPU: %s\n", pdq_qmatmul_path(NULL));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
