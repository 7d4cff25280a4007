/* GPTQ against a straightforward O(n^3) implementation written here: column by column, no lazy
 * blocks, explicit inverse Hessian by Gauss-Jordan elimination in double and the OBS update
 * with Schur-complement removal of each quantized column. Also: Hessian accumulation by brute
 * force, loss <= RTN on correlated problems, dead inputs and bad input. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>
#include <cjson/cJSON.h>

#include "kernels/rank1_fma.h"
#include "kernels/transpose_map.h"
#include "pdq/npy.h"
#include "pdq/quant.h"
#include "pdq/threadpool.h"
#include "testutil.h"

/* In-place inverse of a [n, n] double matrix by Gauss-Jordan with partial pivoting. */
static void gj_inverse(double *a, int n) {
    double *inv = calloc((size_t)n * n, sizeof(double));
    for (int i = 0; i < n; i++) inv[i * n + i] = 1;
    for (int c = 0; c < n; c++) {
        int p = c;
        for (int r = c + 1; r < n; r++)
            if (fabs(a[r * n + c]) > fabs(a[p * n + c])) p = r;
        for (int k = 0; k < n; k++) {
            double t = a[c * n + k]; a[c * n + k] = a[p * n + k]; a[p * n + k] = t;
            t = inv[c * n + k]; inv[c * n + k] = inv[p * n + k]; inv[p * n + k] = t;
        }
        double d = a[c * n + c];
        for (int k = 0; k < n; k++) { a[c * n + k] /= d; inv[c * n + k] /= d; }
        for (int r = 0; r < n; r++) {
            if (r == c) continue;
            double f = a[r * n + c];
            if (f == 0) continue;
            for (int k = 0; k < n; k++) { a[r * n + k] -= f * a[c * n + k]; inv[r * n + k] -= f * inv[c * n + k]; }
        }
    }
    memcpy(a, inv, sizeof(double) * n * n);
    free(inv);
}

/* The reference: returns dequantized weights [rows, cols] in original order. */
static void ref_gptq(const pdq_gptq_opts *o, const float *w, int rows, int cols, const float *H, float *deq,
                     uint8_t *codes) {
    const pdq_qscheme *s = &o->scheme;
    int G = s->group, maxq = (1 << s->bits) - 1, ng = G ? (cols + G - 1) / G : 1;
    double *h = malloc(sizeof(double) * cols * cols), *W = malloc(sizeof(double) * rows * cols);
    float *wz = malloc(sizeof(float) * rows * cols), *colbuf = malloc(sizeof(float) * rows * (G ? G : 1));
    float *sc = malloc(sizeof(float) * rows), *ze = malloc(sizeof(float) * rows);
    float *ssc = malloc(sizeof(float) * rows * ng), *sze = malloc(sizeof(float) * rows * ng);
    int *perm = malloc(sizeof(int) * cols);
    for (int i = 0; i < cols * cols; i++) h[i] = H[i];
    memcpy(wz, w, sizeof(float) * rows * cols);
    for (int c = 0; c < cols; c++)
        if (h[c * cols + c] == 0) {
            h[c * cols + c] = 1;
            for (int r = 0; r < rows; r++) wz[r * cols + c] = 0;
        }
    if (s->per_tensor) {
        pdq_qparams_find(s, w, 1, rows * cols, 0, 1, sc, ze);
        for (int r = 1; r < rows; r++) { sc[r] = sc[0]; ze[r] = ze[0]; }
    } else if (!G) {
        pdq_qparams_find(s, w, rows, cols, cols, 1, sc, ze);
    } else {
        for (int g = 0; g < ng; g++)
            for (int r = 0; r < rows; r++)
                pdq_qparams_find(s, wz + r * cols + g * G, 1, cols - g * G < G ? cols - g * G : G, 0, 1,
                                 &ssc[r * ng + g], &sze[r * ng + g]);
    }
    /* act-order: selection by descending diagonal, ties to the lower index */
    int *done = calloc(cols, sizeof(int));
    for (int j = 0; j < cols; j++) {
        int b = -1;
        for (int c = 0; c < cols; c++)
            if (!done[c] && (b < 0 || (o->actorder && h[c * cols + c] > h[b * cols + b]))) b = c;
        perm[j] = b;
        done[b] = 1;
    }
    double mean = 0;
    for (int c = 0; c < cols; c++) mean += h[c * cols + c];
    for (int c = 0; c < cols; c++) h[c * cols + c] += o->percdamp * mean / cols;
    gj_inverse(h, cols);
    double *hc = malloc(sizeof(double) * cols * cols); /* permuted inverse */
    for (int a = 0; a < cols; a++)
        for (int b = 0; b < cols; b++) hc[a * cols + b] = h[perm[a] * cols + perm[b]];
    for (int r = 0; r < rows; r++)
        for (int j = 0; j < cols; j++) W[r * cols + j] = wz[r * cols + perm[j]];
    for (int j = 0; j < cols; j++) {
        if (G && o->static_groups) {
            int g = perm[j] / G;
            for (int r = 0; r < rows; r++) { sc[r] = ssc[r * ng + g]; ze[r] = sze[r * ng + g]; }
        } else if (G && j % G == 0) {
            int width = cols - j < G ? cols - j : G; /* a shorter last group with partial_groups */
            for (int r = 0; r < rows; r++)
                for (int k = 0; k < width; k++) colbuf[r * G + k] = (float)W[r * cols + j + k];
            pdq_qparams_find(s, colbuf, rows, width, G, 1, sc, ze);
        }
        double d = hc[j * cols + j];
        for (int r = 0; r < rows; r++) {
            float x = (float)W[r * cols + j];
            int q = pdq_qcode(x, sc[r], ze[r], maxq);
            double qv = (double)(sc[r] * ((float)q - ze[r]));
            deq[r * cols + perm[j]] = (float)qv;
            if (codes) codes[r * cols + perm[j]] = (uint8_t)q;
            double e = (W[r * cols + j] - qv) / d;
            for (int k = j + 1; k < cols; k++) W[r * cols + k] -= e * hc[j * cols + k];
        }
        for (int a = j + 1; a < cols; a++)
            for (int b = j + 1; b < cols; b++) hc[a * cols + b] -= hc[a * cols + j] * hc[j * cols + b] / d;
    }
    free(h); free(W); free(wz); free(colbuf); free(sc); free(ze); free(ssc); free(sze); free(perm); free(done); free(hc);
}

/* Correlated inputs X = Z A (plus a per-feature scale spread), H = 2/N X^T X. */
static float *make_problem(uint64_t *s, int rows, int cols, int N, float **H_out) {
    float *w = malloc(sizeof(float) * rows * cols);
    for (int i = 0; i < rows * cols; i++) w[i] = (float)tu_randn(s);
    double *a = malloc(sizeof(double) * cols * cols), *x = malloc(sizeof(double) * N * cols);
    for (int i = 0; i < cols * cols; i++) a[i] = tu_randn(s) * 0.3 + (i % (cols + 1) == 0 ? 1.0 : 0.0);
    double *z = malloc(sizeof(double) * cols);
    for (int n = 0; n < N; n++) {
        for (int k = 0; k < cols; k++) z[k] = tu_randn(s);
        for (int c = 0; c < cols; c++) {
            double v = 0;
            for (int k = 0; k < cols; k++) v += z[k] * a[k * cols + c];
            x[n * cols + c] = v * (1.0 + 3.0 * (c % 7) / 7.0);
        }
    }
    float *H = malloc(sizeof(float) * cols * cols);
    for (int i = 0; i < cols; i++)
        for (int j = 0; j < cols; j++) {
            double v = 0;
            for (int n = 0; n < N; n++) v += x[n * cols + i] * x[n * cols + j];
            H[i * cols + j] = (float)(2.0 * v / N);
        }
    free(a); free(x); free(z);
    *H_out = H;
    return w;
}

static double brute_loss(const float *w, const float *q, int rows, int cols, const float *H) {
    double l = 0;
    for (int r = 0; r < rows; r++)
        for (int i = 0; i < cols; i++)
            for (int j = 0; j < cols; j++)
                l += ((double)w[r * cols + i] - q[r * cols + i]) * H[i * cols + j] * ((double)w[r * cols + j] - q[r * cols + j]);
    return l;
}

typedef struct { int rows, cols, bits, group, actorder, static_groups, sym, mse, blocksize, per_tensor; } cfg_t;

static void check_against_reference(const cfg_t *c, uint64_t seed) {
    uint64_t s = seed;
    float *H;
    float *w = make_problem(&s, c->rows, c->cols, 3 * c->cols, &H);
    pdq_gptq_opts o;
    pdq_gptq_opts_default(&o, c->bits);
    o.scheme.group = c->group;
    o.scheme.sym = c->sym;
    o.scheme.mse = c->mse;
    o.scheme.per_tensor = c->per_tensor;
    o.scheme.partial_groups = 1;
    o.actorder = c->actorder;
    o.static_groups = c->static_groups;
    o.blocksize = c->blocksize;
    pdq_qresult r;
    pdq_status st = {0};
    assert_int_equal(pdq_gptq(&o, w, c->rows, c->cols, H, "w", &r, &st), PDQ_OK);
    int n = c->rows * c->cols, maxq = (1 << c->bits) - 1;
    float *deq = malloc(sizeof(float) * n);
    uint8_t *codes = malloc(n);
    ref_gptq(&o, w, c->rows, c->cols, H, deq, codes);
    double maxd = 0;
    int code_diff = 0;
    for (int i = 0; i < n; i++) {
        maxd = fmax(maxd, fabs(deq[i] - r.deq[i]));
        code_diff += codes[i] != r.codes[i];
        /* codes, grids and dequantized values agree in the library's own result */
        int g = r.g_idx ? r.g_idx[i % c->cols] : 0;
        float sc = r.scale[(i / c->cols) * r.ngroups + g], ze = r.zero[(i / c->cols) * r.ngroups + g];
        assert_true(r.codes[i] <= maxq);
        assert_float_equal(r.deq[i], sc * ((float)r.codes[i] - ze), 1e-6 * (fabsf(r.deq[i]) + 1));
    }
    if (maxd > 1e-4 || code_diff)
        print_message("cfg %dx%d b%d g%d act%d static%d sym%d mse%d bs%d: max |diff| %g, %d codes differ\n",
                      c->rows, c->cols, c->bits, c->group, c->actorder, c->static_groups, c->sym, c->mse,
                      c->blocksize, maxd, code_diff);
    assert_true(maxd <= 1e-4);
    assert_int_equal(code_diff, 0);
    /* losses: brute-force tr(dW H dW^T); GPTQ beats RTN */
    double bl = brute_loss(w, r.deq, c->rows, c->cols, H);
    assert_true(fabs(bl - r.loss) <= 1e-5 * fabs(bl) + 1e-9);
    assert_true(r.loss <= r.rtn_loss);
    pdq_qresult_free(&r);
    free(deq); free(codes); free(w); free(H);
}

static void test_matches_reference(void **state) {
    (void)state;
    const cfg_t cfgs[] = {
        {8, 16, 4, 0, 1, 0, 0, 0, 128, 0},  {8, 16, 3, 0, 0, 0, 0, 0, 128, 0},
        {16, 64, 4, 16, 1, 0, 0, 0, 128, 0}, {16, 64, 4, 16, 1, 1, 0, 0, 128, 0},
        {16, 64, 3, 16, 0, 0, 1, 0, 24, 0},  {16, 64, 2, 8, 1, 0, 0, 0, 12, 0},
        {16, 64, 4, 0, 1, 0, 1, 0, 7, 0},    {16, 64, 3, 32, 1, 1, 0, 1, 16, 0},
        {12, 48, 4, 0, 1, 0, 0, 1, 128, 0},  {12, 48, 8, 0, 1, 0, 0, 0, 5, 0},
        {12, 48, 4, 0, 1, 0, 0, 0, 16, 1},
        /* groups that do not divide the input (shorter last group) */
        {10, 60, 4, 16, 1, 0, 0, 0, 16, 0},  {10, 60, 3, 16, 1, 1, 0, 0, 128, 0},
        {10, 60, 4, 16, 0, 0, 1, 0, 20, 0},  {10, 40, 4, 64, 1, 0, 0, 0, 128, 0},
    };
    for (size_t i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++) check_against_reference(&cfgs[i], 100 + i);
}

/* Random correlated problems: GPTQ's loss never exceeds RTN's on the same H and grid. */
static void test_loss_below_rtn(void **state) {
    (void)state;
    uint64_t s = 77;
    int worse = 0, total = 0;
    for (int t = 0; t < 12; t++) {
        int rows = 24, cols = 64;
        float *H;
        float *w = make_problem(&s, rows, cols, 200, &H);
        pdq_gptq_opts o;
        pdq_gptq_opts_default(&o, 2 + t % 3);
        o.scheme.group = (t & 4) ? 16 : 0;
        o.actorder = t % 2;
        pdq_qresult r;
        assert_int_equal(pdq_gptq(&o, w, rows, cols, H, "w", &r, NULL), PDQ_OK);
        pdq_qresult rt;
        assert_int_equal(pdq_rtn_result(&o.scheme, w, rows, cols, H, "w", &rt, NULL), PDQ_OK);
        assert_float_equal(rt.loss, r.rtn_loss, 1e-9 * rt.loss);
        assert_float_equal(rt.loss, brute_loss(w, rt.deq, rows, cols, H), 1e-5 * rt.loss);
        worse += r.loss > r.rtn_loss;
        total++;
        assert_true(r.loss < 0.9 * r.rtn_loss);
        pdq_qresult_free(&r);
        pdq_qresult_free(&rt);
        free(w); free(H);
    }
    assert_int_equal(worse, 0);
    assert_int_equal(total, 12);
}

static void test_hessian_brute_force(void **state) {
    (void)state;
    uint64_t s = 4;
    int n = 24, rows[3] = {5, 17, 1};
    pdq_hessian h;
    assert_int_equal(pdq_hessian_init(&h, n, NULL), PDQ_OK);
    double *ref = calloc(n * n, sizeof(double));
    int N = 0;
    for (int b = 0; b < 3; b++) {
        float *x = malloc(sizeof(float) * rows[b] * n);
        for (int i = 0; i < rows[b] * n; i++) x[i] = (float)tu_randn(&s);
        assert_int_equal(pdq_hessian_add(&h, x, rows[b], NULL), PDQ_OK);
        for (int r = 0; r < rows[b]; r++)
            for (int i = 0; i < n; i++)
                for (int j = 0; j < n; j++) ref[i * n + j] += (double)x[r * n + i] * x[r * n + j];
        N += rows[b];
        free(x);
    }
    float *H = malloc(sizeof(float) * n * n);
    pdq_hessian_get(&h, H);
    for (int i = 0; i < n * n; i++) assert_float_equal(H[i], 2 * ref[i] / N, 1e-5 * (fabs(2 * ref[i] / N) + 1));
    float bad[24] = {0};
    bad[5] = INFINITY;
    pdq_status st = {0};
    assert_int_equal(pdq_hessian_add(&h, bad, 1, &st), PDQ_ERR_NUMERIC);
    assert_non_null(strstr(st.msg, "NaN or Inf"));
    pdq_hessian_free(&h);
    free(ref); free(H);
}

/* The Hessian's bands give the same bits one after the other and on pools of 2 and 3 workers
 * (BLAS single-threaded), at widths that cut into 8 bands or fewer (n < 8 * 16). */
static void test_hessian_bands(void **state) {
    (void)state;
    uint64_t s = 8;
    const int ns[] = {1, 20, 203, 300};
    int blas_threads = openblas_get_num_threads();
    openblas_set_num_threads(1);
    for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
        int n = ns[k], rows = 37;
        float *x = malloc(sizeof(float) * rows * n), *Ha = malloc(sizeof(float) * n * n),
              *Hb = malloc(sizeof(float) * n * n);
        for (int i = 0; i < rows * n; i++) x[i] = (float)tu_randn(&s);
        pdq_hessian h;
        assert_int_equal(pdq_hessian_init(&h, n, NULL), PDQ_OK);
        assert_int_equal(pdq_hessian_add(&h, x, rows, NULL), PDQ_OK);
        assert_int_equal(pdq_hessian_add(&h, x, 5, NULL), PDQ_OK);
        pdq_hessian_get(&h, Ha);
        double worst = 0; /* against the brute-force sum */
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++) {
                double ref = 0;
                for (int r = 0; r < rows; r++) ref += (double)x[r * n + i] * x[r * n + j];
                for (int r = 0; r < 5; r++) ref += (double)x[r * n + i] * x[r * n + j];
                ref *= 2.0 / (rows + 5);
                double e = fabs(Ha[(size_t)i * n + j] - ref) / (fabs(ref) + 1);
                if (e > worst) worst = e;
            }
        assert_true(worst < 1e-5);
        for (int t = 2; t <= 3; t++) {
            pdq_pool *pool = pdq_pool_create(t, NULL);
            assert_non_null(pool);
            pdq_hessian_reset(&h);
            h.pool = pool;
            assert_int_equal(pdq_hessian_add(&h, x, rows, NULL), PDQ_OK);
            assert_int_equal(pdq_hessian_add(&h, x, 5, NULL), PDQ_OK);
            pdq_hessian_get(&h, Hb);
            assert_memory_equal(Ha, Hb, sizeof(float) * n * n);
            h.pool = NULL;
            pdq_pool_free(pool);
        }
        pdq_hessian_free(&h);
        free(x);
        free(Ha);
        free(Hb);
    }
    openblas_set_num_threads(blas_threads);
}

/* Dead inputs (never active) come out exactly zero and do not disturb the rest. */
static void test_dead_inputs(void **state) {
    (void)state;
    uint64_t s = 21;
    int rows = 8, cols = 32;
    float *H;
    float *w = make_problem(&s, rows, cols, 100, &H);
    int dead[3] = {0, 7, 31};
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < cols; i++) H[dead[k] * cols + i] = H[i * cols + dead[k]] = 0;
    pdq_gptq_opts o;
    pdq_gptq_opts_default(&o, 4);
    o.scheme.group = 8;
    pdq_qresult r;
    assert_int_equal(pdq_gptq(&o, w, rows, cols, H, "w", &r, NULL), PDQ_OK);
    for (int r0 = 0; r0 < rows; r0++)
        for (int k = 0; k < 3; k++) assert_float_equal(r.deq[r0 * cols + dead[k]], 0, 0);
    float *deq = malloc(sizeof(float) * rows * cols);
    ref_gptq(&o, w, rows, cols, H, deq, NULL);
    for (int i = 0; i < rows * cols; i++) assert_float_equal(deq[i], r.deq[i], 1e-4);
    assert_true(r.loss <= r.rtn_loss);
    pdq_qresult_free(&r);
    free(deq); free(w); free(H);
}

static void test_bad_input(void **state) {
    (void)state;
    uint64_t s = 1;
    int rows = 4, cols = 16;
    float *H;
    float *w = make_problem(&s, rows, cols, 40, &H);
    pdq_gptq_opts o;
    pdq_gptq_opts_default(&o, 4);
    pdq_qresult r;
    pdq_status st = {0};
    w[3] = NAN;
    assert_int_equal(pdq_gptq(&o, w, rows, cols, H, "layer.x", &r, &st), PDQ_ERR_NUMERIC);
    assert_non_null(strstr(st.msg, "layer.x"));
    w[3] = 0;
    H[5] = INFINITY;
    assert_int_equal(pdq_gptq(&o, w, rows, cols, H, "w", &r, &st), PDQ_ERR_NUMERIC);
    for (int i = 0; i < cols * cols; i++) H[i] = (i % (cols + 1) == 0) ? -1.0f : 0.0f; /* negative definite */
    assert_int_equal(pdq_gptq(&o, w, rows, cols, H, "w", &r, &st), PDQ_ERR_NUMERIC);
    assert_non_null(strstr(st.msg, "positive definite"));
    o.scheme.group = 5;
    assert_int_equal(pdq_gptq(&o, w, rows, cols, H, "w", &r, &st), PDQ_ERR_ARG);
    o.scheme.group = 0;
    o.scheme.bits = 9;
    assert_int_equal(pdq_gptq(&o, w, rows, cols, H, "w", &r, &st), PDQ_ERR_ARG);
    free(w); free(H);
}


/* pdq gptq-matrix: the files it writes are the library's result for H = 2/N X^T X, in both
 * --inputs and --hessian forms. */
static void test_gptq_matrix_cli(void **state) {
    (void)state;
    uint64_t s = 8;
    int rows = 12, cols = 40, N = 90;
    float *w = malloc(sizeof(float) * rows * cols), *x = malloc(sizeof(float) * N * cols);
    for (int i = 0; i < rows * cols; i++) w[i] = (float)tu_randn(&s);
    /* correlated inputs: from the second row on, half of the element one row and column back */
    for (int i = 0; i < N * cols; i++) x[i] = (float)(tu_randn(&s) + (i > cols ? 0.5 * x[i - cols - 1] : 0.0));
    char *dir = tu_mkdtemp(), path[1024], cmd[4096];
    int64_t ws[2] = {rows, cols}, xs[2] = {N, cols}, hs[2] = {cols, cols};
    snprintf(path, sizeof path, "%s/W.npy", dir);
    assert_int_equal(pdq_npy_write(path, PDQ_NPY_F32, 2, ws, w, NULL), PDQ_OK);
    snprintf(path, sizeof path, "%s/X.npy", dir);
    assert_int_equal(pdq_npy_write(path, PDQ_NPY_F32, 2, xs, x, NULL), PDQ_OK);
    pdq_hessian h;
    assert_int_equal(pdq_hessian_init(&h, cols, NULL), PDQ_OK);
    assert_int_equal(pdq_hessian_add(&h, x, N, NULL), PDQ_OK);
    float *H = malloc(sizeof(float) * cols * cols);
    pdq_hessian_get(&h, H);
    pdq_hessian_free(&h);
    snprintf(path, sizeof path, "%s/H.npy", dir);
    assert_int_equal(pdq_npy_write(path, PDQ_NPY_F32, 2, hs, H, NULL), PDQ_OK);
    pdq_gptq_opts o;
    pdq_gptq_opts_default(&o, 3);
    o.scheme.group = 8;
    o.scheme.sym = 1;
    pdq_qresult r;
    assert_int_equal(pdq_gptq(&o, w, rows, cols, H, "w", &r, NULL), PDQ_OK);
    for (int form = 0; form < 2; form++) {
        snprintf(cmd, sizeof cmd, "%s gptq-matrix --weight %s/W.npy %s %s/%s --wbits 3 --group 8 --sym --out %s/o%d",
                 tu_pdq_bin(), dir, form ? "--hessian" : "--inputs", dir, form ? "H.npy" : "X.npy", dir, form);
        char *out = NULL;
        int rc = tu_run(cmd, &out);
        if (rc) print_message("%s\n%s\n", cmd, out ? out : "");
        assert_int_equal(rc, 0);
        free(out);
        pdq_npy a;
        snprintf(path, sizeof path, "%s/o%d/dequant.npy", dir, form);
        assert_int_equal(pdq_npy_read(path, &a, NULL), PDQ_OK);
        assert_int_equal(a.dtype, PDQ_NPY_F32);
        assert_memory_equal(a.data, r.deq, sizeof(float) * rows * cols);
        pdq_npy_free(&a);
        snprintf(path, sizeof path, "%s/o%d/codes.npy", dir, form);
        assert_int_equal(pdq_npy_read(path, &a, NULL), PDQ_OK);
        assert_int_equal(a.dtype, PDQ_NPY_U8);
        assert_memory_equal(a.data, r.codes, (size_t)rows * cols);
        pdq_npy_free(&a);
        snprintf(path, sizeof path, "%s/o%d/scales.npy", dir, form);
        assert_int_equal(pdq_npy_read(path, &a, NULL), PDQ_OK);
        assert_int_equal(a.ndim, 2);
        assert_int_equal(a.shape[1], 5);
        assert_memory_equal(a.data, r.scale, sizeof(float) * rows * 5);
        pdq_npy_free(&a);
        snprintf(path, sizeof path, "%s/o%d/zeros.npy", dir, form);
        assert_int_equal(pdq_npy_read(path, &a, NULL), PDQ_OK);
        for (int i = 0; i < rows * 5; i++) assert_float_equal(((float *)a.data)[i], 4.0f, 0); /* sym, 3 bits */
        pdq_npy_free(&a);
        snprintf(path, sizeof path, "%s/o%d/result.json", dir, form);
        char *txt = tu_read_file(path, NULL);
        assert_non_null(txt);
        cJSON *j = cJSON_Parse(txt);
        free(txt);
        assert_float_equal(cJSON_GetObjectItem(j, "loss")->valuedouble, r.loss, 1e-9 * r.loss);
        assert_float_equal(cJSON_GetObjectItem(j, "rtn_loss")->valuedouble, r.rtn_loss, 1e-9 * r.rtn_loss);
        cJSON_Delete(j);
    }
    /* shape mismatch is a clear error */
    snprintf(cmd, sizeof cmd, "%s gptq-matrix --weight %s/W.npy --hessian %s/W.npy --out %s/bad 2>&1", tu_pdq_bin(), dir, dir, dir);
    char *out = NULL;
    assert_int_not_equal(tu_run(cmd, &out), 0);
    assert_non_null(strstr(out, "Hessian must be"));
    free(out);
    pdq_qresult_free(&r);
    tu_rmtree(dir);
    free(dir); free(w); free(x); free(H);
}

/* Linears sharing one H through a pdq_gptq_hcache (q/k/v in the pipeline) get the bits they get
 * without it; a different H is not mistaken for the cached one. */
static void test_hessian_cache(void **state) {
    (void)state;
    uint64_t s = 31;
    for (int t = 0; t < 4; t++) {
        int rows = 20, cols = 48;
        float *H, *H2;
        float *w = make_problem(&s, rows, cols, 150, &H);
        float *w2 = make_problem(&s, rows, cols, 150, &H2);
        pdq_gptq_opts o;
        pdq_gptq_opts_default(&o, 3 + t % 2);
        o.scheme.group = (t & 2) ? 16 : 0;
        o.actorder = !(t & 1);
        pdq_gptq_hcache hc = {0};
        pdq_gptq_opts oc = o;
        oc.hcache = &hc;
        const float *ws[3] = {w, w2, w2};
        const float *hs[3] = {H, H, H2};
        for (int k = 0; k < 3; k++) {
            pdq_qresult a, b;
            assert_int_equal(pdq_gptq(&o, ws[k], rows, cols, hs[k], "w", &a, NULL), PDQ_OK);
            assert_int_equal(pdq_gptq(&oc, ws[k], rows, cols, hs[k], "w", &b, NULL), PDQ_OK);
            assert_ptr_equal(hc.H, hs[k]);
            assert_memory_equal(a.codes, b.codes, (size_t)rows * cols);
            assert_memory_equal(a.deq, b.deq, (size_t)rows * cols * sizeof(float));
            assert_memory_equal(a.scale, b.scale, (size_t)rows * a.ngroups * sizeof(float));
            assert_true(a.loss == b.loss && a.rtn_loss == b.rtn_loss);
            pdq_qresult_free(&a);
            pdq_qresult_free(&b);
        }
        pdq_gptq_hcache_free(&hc);
        free(w); free(H); free(w2); free(H2);
    }
}

/* The rank-1 update's definition: one fused multiply-add below fma_end, a rounded product then a
 * rounded sum from it on (rows r0..r1-1). */
static void rank1_rule(float *w, const float *e, float a, int r0, int r1, int fma_end) {
    for (int r = r0; r < r1; r++) {
        if (r < fma_end) w[r] = fmaf(a, e[r], w[r]);
        else {
            float p = a * e[r];
            w[r] = w[r] + p;
        }
    }
}

/* n updates at once (pdq_rank1_fma_seq) give the bits of the definition applied n times in order,
 * at every level, for spans that start below, straddle and start above the fused rows. */
static void test_rank1_seq(void **state) {
    (void)state;
    uint64_t s = 9;
    int rows = 203, n = 37;
    size_t es = 211;
    float *e = malloc(sizeof(float) * es * n), *a = malloc(sizeof(float) * n), *w0 = malloc(sizeof(float) * rows),
          *ref = malloc(sizeof(float) * rows), *w = malloc(sizeof(float) * rows);
    for (size_t i = 0; i < es * n; i++) e[i] = (float)(tu_randu(&s) - 0.5) * 3.0f;
    for (int t = 0; t < n; t++) a[t] = (float)(tu_randu(&s) - 0.5);
    for (int r = 0; r < rows; r++) w0[r] = (float)(tu_randu(&s) - 0.5);
    const int spans[][3] = {{0, 203, 192}, {0, 128, 192}, {128, 203, 192}, {3, 77, 64}, {0, 203, 0}, {40, 41, 32},
                            {0, 203, 203}};
    for (size_t k = 0; k < sizeof spans / sizeof spans[0]; k++) {
        int r0 = spans[k][0], r1 = spans[k][1], fe = spans[k][2];
        for (int nn = 0; nn <= n; nn += 9) {
            memcpy(ref, w0, sizeof(float) * rows);
            for (int t = 0; t < nn; t++) rank1_rule(ref, e + (size_t)t * es, a[t], r0, r1, fe);
            for (int lv = 0; lv < PDQ_LEVEL_COUNT; lv++) {
                if (!pdq_cpu_has_level((pdq_level)lv)) continue;
                memcpy(w, w0, sizeof(float) * rows);
                pdq_rank1_fma_seq((pdq_level)lv, w + r0, e + r0, es, a, nn, r1 - r0, fe - r0);
                assert_memory_equal(w, ref, sizeof(float) * rows);
            }
        }
    }
    free(e); free(a); free(w0); free(ref); free(w);
}

/* The in-block column loop's row tiles (128 rows) on a pool of 2 or 3 workers give the bits of
 * one thread, for per-channel and grouped grids (current, reference and static groups, with and
 * without act-order), rows not a multiple of the tile; and a grid that fails in the third tile
 * reports the error one thread reports. */
static void test_pool_tiles(void **state) {
    (void)state;
    uint64_t s = 77;
    int rows = 300, cols = 64;
    float *H;
    float *w = make_problem(&s, rows, cols, 2 * cols, &H);
    pdq_pool *pools[2] = {pdq_pool_create(2, NULL), pdq_pool_create(3, NULL)};
    assert_non_null(pools[0]);
    assert_non_null(pools[1]);
    for (int t = 0; t < 6; t++) {
        pdq_gptq_opts o;
        pdq_gptq_opts_default(&o, 4);
        o.scheme.group = t == 0 ? 0 : 16;
        o.ref_groups = t == 2 || t == 5;
        o.static_groups = t == 3;
        o.actorder = t != 4;
        o.blocksize = t == 5 ? 24 : 128;
        pdq_qresult a;
        assert_int_equal(pdq_gptq(&o, w, rows, cols, H, "w", &a, NULL), PDQ_OK);
        for (int p = 0; p < 2; p++) {
            pdq_gptq_opts op = o;
            op.pool = pools[p];
            pdq_qresult b;
            assert_int_equal(pdq_gptq(&op, w, rows, cols, H, "w", &b, NULL), PDQ_OK);
            assert_memory_equal(a.codes, b.codes, (size_t)rows * cols);
            assert_memory_equal(a.deq, b.deq, (size_t)rows * cols * sizeof(float));
            assert_memory_equal(a.scale, b.scale, (size_t)rows * a.ngroups * sizeof(float));
            assert_memory_equal(a.zero, b.zero, (size_t)rows * a.ngroups * sizeof(float));
            if (a.g_idx) assert_memory_equal(a.g_idx, b.g_idx, (size_t)cols * sizeof(int32_t));
            assert_true(a.loss == b.loss && a.rtn_loss == b.rtn_loss);
            pdq_qresult_free(&b);
        }
        pdq_qresult_free(&a);
    }
    /* row 270 (third tile) needs an f16 scale past 65504 */
    for (int c = 0; c < cols; c++) w[270 * cols + c] = c % 2 ? 3e6f : -3e6f;
    pdq_gptq_opts o;
    pdq_gptq_opts_default(&o, 4);
    o.scheme.group = 16;
    o.scheme.group_scale = PDQ_QSCALE_F16;
    pdq_status s1 = {0}, s2 = {0};
    pdq_qresult a, b;
    pdq_code r1 = pdq_gptq(&o, w, rows, cols, H, "w", &a, &s1);
    o.pool = pools[0];
    pdq_code r2 = pdq_gptq(&o, w, rows, cols, H, "w", &b, &s2);
    assert_int_equal(r1, PDQ_ERR_NUMERIC);
    assert_int_equal(r2, r1);
    assert_string_equal(s1.msg, s2.msg);
    assert_non_null(strstr(s1.msg, "grid 270"));
    pdq_pool_free(pools[0]);
    pdq_pool_free(pools[1]);
    free(w);
    free(H);
}

/* One rank-1 row update: every level gives the definition's bits. */
static void test_rank1_levels(void **state) {
    (void)state;
    uint64_t s = 5;
    int n = 203;
    float *e = malloc(n * sizeof(float)), *w0 = malloc(n * sizeof(float)), *w = malloc(n * sizeof(float)),
          *ref = malloc(n * sizeof(float));
    for (int i = 0; i < n; i++) {
        e[i] = (float)(tu_randu(&s) - 0.5) * 3.0f;
        w0[i] = (float)(tu_randu(&s) - 0.5);
    }
    const int spans[][3] = {{0, 203, 192}, {0, 128, 192}, {128, 203, 192}, {3, 77, 64}, {0, 203, 0}, {40, 41, 32}};
    for (size_t k = 0; k < sizeof spans / sizeof spans[0]; k++) {
        int r0 = spans[k][0], r1 = spans[k][1], fe = spans[k][2];
        float a = -0.3721f;
        memcpy(ref, w0, n * sizeof(float));
        rank1_rule(ref, e, a, r0, r1, fe);
        for (int lv = 0; lv < PDQ_LEVEL_COUNT; lv++) {
            if (!pdq_cpu_has_level((pdq_level)lv)) continue;
            memcpy(w, w0, n * sizeof(float));
            pdq_rank1_fma_seq((pdq_level)lv, w + r0, e + r0, 0, &a, 1, r1 - r0, fe - r0);
            assert_memory_equal(w, ref, n * sizeof(float));
        }
    }
    free(e); free(w0); free(w); free(ref);
}

/* GPTQ's permuted transposes against their index definitions, at every level, on shapes with and
 * without whole 8 x 8 tiles and bands (rows, cols 1 .. 203), a random permutation each. */
static void test_transpose_map(void **state) {
    (void)state;
    uint64_t s = 21;
    const int shapes[][2] = {{1, 1}, {8, 8}, {7, 9}, {64, 16}, {65, 17}, {128, 48}, {203, 130}, {16, 200}, {3, 64}};
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        int rows = shapes[k][0], cols = shapes[k][1];
        size_t n = (size_t)rows * cols;
        float *a = malloc(sizeof(float) * n), *out = malloc(sizeof(float) * n);
        uint8_t *a8 = malloc(n), *out8 = malloc(n);
        int *map = malloc(sizeof(int) * (size_t)cols);
        for (size_t i = 0; i < n; i++) {
            a[i] = (float)(tu_randu(&s) - 0.5);
            a8[i] = (uint8_t)tu_rand(&s);
        }
        for (int c = 0; c < cols; c++) map[c] = c;
        for (int c = cols - 1; c > 0; c--) { /* Fisher-Yates */
            int j = (int)(tu_rand(&s) % (uint64_t)(c + 1)), t = map[c];
            map[c] = map[j];
            map[j] = t;
        }
        /* a as [cols][rows] for the gathers, as [rows][cols] for the scatter */
        pdq_k_transpose_gather_u8(out8, a8, (size_t)rows, (size_t)cols, map);
        for (int r = 0; r < rows; r++)
            for (int c = 0; c < cols; c++) assert_int_equal(out8[(size_t)r * cols + c], a8[(size_t)map[c] * rows + r]);
        for (int lv = 0; lv < PDQ_LEVEL_COUNT; lv++) {
            if (!pdq_cpu_has_level((pdq_level)lv)) continue;
            memset(out, 0xff, sizeof(float) * n);
            pdq_k_transpose_gather_f32((pdq_level)lv, out, a, (size_t)rows, (size_t)cols, map);
            for (int r = 0; r < rows; r++)
                for (int c = 0; c < cols; c++)
                    assert_true(out[(size_t)r * cols + c] == a[(size_t)map[c] * rows + r]);
            memset(out, 0xff, sizeof(float) * n);
            pdq_k_transpose_scatter_f32((pdq_level)lv, out, a, (size_t)rows, (size_t)cols, map);
            for (int r = 0; r < rows; r++)
                for (int c = 0; c < cols; c++)
                    assert_true(out[(size_t)map[c] * rows + r] == a[(size_t)r * cols + c]);
        }
        free(a);
        free(out);
        free(a8);
        free(out8);
        free(map);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matches_reference), cmocka_unit_test(test_loss_below_rtn),
        cmocka_unit_test(test_hessian_brute_force), cmocka_unit_test(test_dead_inputs),
        cmocka_unit_test(test_bad_input), cmocka_unit_test(test_gptq_matrix_cli),
        cmocka_unit_test(test_hessian_cache), cmocka_unit_test(test_rank1_levels),
        cmocka_unit_test(test_pool_tiles), cmocka_unit_test(test_rank1_seq),
        cmocka_unit_test(test_transpose_map), cmocka_unit_test(test_hessian_bands),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
