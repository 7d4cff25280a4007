/* Packed-weight kernels against a brute-force reference (dequantize in double, then dot):
 * uint4/uint8, per-channel and grouped (32, 64, 128, partial last groups, an odd group size that
 * starts groups mid-byte), zero points 0 / mid / max / random, odd shapes, a column permutation.
 * The AVX-512, AVX2 and scalar paths agree bit for bit, as do 1, 2 and 3 threads, GEMM vs GEMV
 * rows and scratch per call vs a workspace kept across calls. */
#include "testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/qmatmul.h"
#include "pdq/quant.h"

typedef struct {
    pdq_qtype type;
    int rows, cols, group; /* group 0: per-channel */
    int zmode;             /* 0: zero 0, 1: mid, 2: max, 3: random */
    int perm;
} kcase;

typedef struct {
    pdq_qmatrix w;
    uint8_t *codes, *packed, *zeros;
    float *scales;
    int32_t *perm;
} kmat;

static void kmat_make(const kcase *k, uint64_t *rng, kmat *m) {
    memset(m, 0, sizeof *m);
    int maxq = k->type == PDQ_QT_U4 ? 15 : 255;
    int group = k->group ? k->group : k->cols, ng = (k->cols + group - 1) / group;
    size_t n = (size_t)k->rows * k->cols;
    m->codes = malloc(n);
    for (size_t i = 0; i < n; i++) m->codes[i] = (uint8_t)(tu_rand(rng) % (uint64_t)(maxq + 1));
    size_t rb = k->type == PDQ_QT_U4 ? (size_t)(k->cols + 1) / 2 : (size_t)k->cols;
    m->packed = calloc((size_t)k->rows * rb, 1);
    for (int r = 0; r < k->rows; r++) {
        if (k->type == PDQ_QT_U4) pdq_pack4(m->codes + (size_t)r * k->cols, (size_t)k->cols, m->packed + (size_t)r * rb);
        else memcpy(m->packed + (size_t)r * rb, m->codes + (size_t)r * k->cols, (size_t)k->cols);
    }
    m->scales = malloc(sizeof(float) * (size_t)k->rows * ng);
    m->zeros = malloc((size_t)k->rows * ng);
    for (int i = 0; i < k->rows * ng; i++) {
        m->scales[i] = (float)(0.001 + 0.05 * tu_randu(rng));
        int z = k->zmode == 0 ? 0 : k->zmode == 1 ? (maxq + 1) / 2 : k->zmode == 2 ? maxq : (int)(tu_rand(rng) % (uint64_t)(maxq + 1));
        m->zeros[i] = (uint8_t)z;
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

static void kmat_free(kmat *m) {
    free(m->codes); free(m->packed); free(m->zeros); free(m->scales); free(m->perm);
}

/* y_ref[i, r] = sum_c x[i, perm(c)] * scale * (code - zero), in double. mag = sum of
 * |x| * scale * (code + zero): the kernels sum scale * x * code and subtract scale * zero * sum(x),
 * so float rounding is relative to both parts, not to their (possibly cancelling) difference. */
static void reference(const kcase *k, const kmat *m, const float *x, int n, double *y, double *mag) {
    int group = k->group ? k->group : k->cols, ng = (k->cols + group - 1) / group;
    for (int i = 0; i < n; i++)
        for (int r = 0; r < k->rows; r++) {
            double s = 0, a = 0;
            for (int c = 0; c < k->cols; c++) {
                size_t g = (size_t)r * ng + (size_t)(c / group);
                double wv = (double)m->scales[g] * ((double)m->codes[(size_t)r * k->cols + c] - (double)m->zeros[g]);
                double xv = x[(size_t)i * k->cols + (m->perm ? m->perm[c] : c)];
                s += xv * wv;
                a += fabs(xv) * m->scales[g] * ((double)m->codes[(size_t)r * k->cols + c] + (double)m->zeros[g]);
            }
            y[(size_t)i * k->rows + r] = s;
            mag[(size_t)i * k->rows + r] = a;
        }
}

/* Every other call takes its scratch from one workspace kept across all calls (every shape and
 * row count: grown, reused with stale contents), the others allocate per call; the callers
 * compare the runs bit for bit, so the two must agree. */
static pdq_scratch shared_work;
static unsigned run_calls;

/* isa 0: the best path, 1: scalar, 2: AVX2 (no AVX-512) */
static void run_w(const pdq_qmatrix *w, pdq_pool *pool, int isa, const float *x, int n, float *y) {
    pdq_qctx ctx = {.pool = pool, .force_scalar = isa == 1, .no_avx512 = isa == 2, .no_int = 1,
                    .work = run_calls++ & 1 ? &shared_work : NULL};
    pdq_status st = {0};
    assert_int_equal(pdq_qmatmul(&ctx, w, x, n, y, &st), PDQ_OK);
}
static void run(const kmat *m, pdq_pool *pool, int isa, const float *x, int n, float *y) { run_w(&m->w, pool, isa, x, n, y); }

/* Matrices the 4-row layout was checked on (test_shapes_and_groups asserts there were some). */
static int rows4_cases;

static void check_case(const kcase *k, pdq_pool *pools[3], uint64_t *rng) {
    kmat m;
    kmat_make(k, rng, &m);
    /* the same matrix in the 4-row layout (where it applies) gives the same bits everywhere */
    pdq_qmatrix w4 = m.w;
    pdq_status st = {0};
    assert_int_equal(pdq_qmatrix_pack_rows4(&w4, &st), PDQ_OK);
    int packed = w4.layout == PDQ_QL_ROWS4;
    assert_int_equal(packed, m.w.row_bytes % 64 == 0 && (k->group == 0 || k->group >= k->cols ||
                                                        (k->type == PDQ_QT_U4 ? k->group % 32 : k->group % 16) == 0));
    rows4_cases += packed;
    static const int ns[] = {1, 3, 13};
    for (size_t t = 0; t < sizeof ns / sizeof ns[0]; t++) {
        int n = ns[t];
        size_t ny = (size_t)n * k->rows;
        float *x = malloc(sizeof(float) * (size_t)n * k->cols);
        for (size_t i = 0; i < (size_t)n * k->cols; i++) x[i] = (float)tu_randn(rng);
        double *yr = malloc(sizeof(double) * ny), *mag = malloc(sizeof(double) * ny);
        float *y = malloc(sizeof(float) * ny), *y2 = malloc(sizeof(float) * ny), *y1 = malloc(sizeof(float) * (size_t)k->rows);
        reference(k, &m, x, n, yr, mag);
        run(&m, pools[0], 0, x, n, y);
        for (size_t i = 0; i < ny; i++) {
            double tol = 1e-6 * mag[i] + 1e-30;
            if (fabs(y[i] - yr[i]) > tol)
                fail_msg("%s [%d x %d] group %d zmode %d perm %d n %d: y[%zu] = %.9g, reference %.9g", k->type ? "u8" : "u4",
                         k->rows, k->cols, k->group, k->zmode, k->perm, n, i, (double)y[i], yr[i]);
        }
        /* scalar == AVX2 == AVX-512, and any thread count, bit for bit */
        for (int isa = 1; isa <= 2; isa++) {
            run(&m, pools[0], isa, x, n, y2);
            assert_memory_equal(y, y2, sizeof(float) * ny);
        }
        for (int p = 1; p < 3; p++)
            for (int isa = 0; isa <= 2; isa++) {
                run(&m, pools[p], isa, x, n, y2);
                assert_memory_equal(y, y2, sizeof(float) * ny);
            }
        for (int p = 0; packed && p < 3; p++)
            for (int isa = 0; isa <= 2; isa++) {
                memset(y2, 0xA5, sizeof(float) * ny);
                run_w(&w4, pools[p], isa, x, n, y2);
                assert_memory_equal(y, y2, sizeof(float) * ny);
            }
        /* each GEMM row equals the GEMV of that row */
        for (int i = 0; i < n; i++) {
            run(&m, pools[1], 0, x + (size_t)i * k->cols, 1, y1);
            assert_memory_equal(y + (size_t)i * k->rows, y1, sizeof(float) * (size_t)k->rows);
        }
        free(x); free(yr); free(mag); free(y); free(y2); free(y1);
    }
    /* the dequantized row (what the embedding lookup uses) is the loader's expression */
    float *row = malloc(sizeof(float) * (size_t)k->cols);
    int group = k->group ? k->group : k->cols, ng = (k->cols + group - 1) / group;
    for (int r = 0; r < k->rows; r += k->rows > 4 ? k->rows / 4 : 1) {
        for (int lay = 0; lay < 1 + packed; lay++) {
            pdq_qmatrix_dequant_row(lay ? &w4 : &m.w, r, row);
            for (int c = 0; c < k->cols; c++) {
                size_t g = (size_t)r * ng + (size_t)(c / group);
                float want = m.scales[g] * ((float)m.codes[(size_t)r * k->cols + c] - (float)m.zeros[g]);
                assert_true(row[m.perm ? m.perm[c] : c] == want);
            }
        }
    }
    free(row);
    free(w4.owned_codes);
    kmat_free(&m);
}

static void test_shapes_and_groups(void **state) {
    (void)state;
    pdq_pool *pools[3];
    tu_pools_create(pools);
    uint64_t rng = 12345;
    static const int dims[][2] = {{172, 688}, {688, 172}, {8, 8}, {1, 33}, {33, 1}, {33, 172}, {5, 256}, {1, 1}, {6, 640}};
    static const int groups[] = {0, 32, 64, 128, 33, 8};
    for (int t = 0; t < PDQ_QT_COUNT; t++)
        for (size_t d = 0; d < sizeof dims / sizeof dims[0]; d++)
            for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++) {
                if (groups[g] > dims[d][1]) continue;
                for (int z = 0; z < 4; z++) {
                    kcase k = {(pdq_qtype)t, dims[d][0], dims[d][1], groups[g], z, 0};
                    check_case(&k, pools, &rng);
                }
            }
    assert_true(rows4_cases >= 24); /* 5 x 256 and 6 x 640, both types, 3-4 groups, 4 zero modes */
    tu_pools_free(pools);
}

static void test_permutation(void **state) {
    (void)state;
    pdq_pool *pools[3];
    tu_pools_create(pools);
    rows4_cases = 0;
    uint64_t rng = 777;
    for (int t = 0; t < PDQ_QT_COUNT; t++) {
        kcase a = {(pdq_qtype)t, 37, 256, 32, 3, 1}, b = {(pdq_qtype)t, 20, 172, 0, 3, 1};
        check_case(&a, pools, &rng);
        check_case(&b, pools, &rng);
    }
    assert_true(rows4_cases > 0);
    tu_pools_free(pools);
}

static void test_bad_descriptions(void **state) {
    (void)state;
    pdq_status st = {0};
    pdq_qmatrix w;
    uint8_t codes[16] = {0}, zeros[4] = {0, 0, 16, 0};
    float scales[4] = {1, 1, 1, 1};
    int32_t perm[4] = {0, 1, 2, 4};
    assert_int_equal(pdq_qmatrix_init(&w, PDQ_QT_U4, 0, 4, 0, codes, scales, zeros, NULL, "w", &st), PDQ_ERR_SHAPE);
    assert_int_equal(pdq_qmatrix_init(&w, PDQ_QT_U4, 4, 4, 0, codes, scales, zeros, NULL, "w", &st), PDQ_ERR_FORMAT);
    assert_non_null(strstr(st.msg, "zero point 16"));
    assert_int_equal(pdq_qmatrix_init(&w, PDQ_QT_U8, 4, 4, 0, codes, scales, zeros, NULL, "w", &st), PDQ_OK);
    assert_int_equal(pdq_qmatrix_init(&w, PDQ_QT_U8, 1, 4, 0, codes, scales, zeros, perm, "w", &st), PDQ_ERR_FORMAT);
    assert_int_equal(pdq_qmatrix_init(&w, (pdq_qtype)7, 1, 4, 0, codes, scales, zeros, NULL, "w", &st), PDQ_ERR_ARG);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shapes_and_groups),
        cmocka_unit_test(test_permutation),
        cmocka_unit_test(test_bad_descriptions),
    };
    printf("kernel path on this CPU: %s\n", pdq_qmatmul_path(NULL));
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    pdq_scratch_free(&shared_work);
    return rc;
}
