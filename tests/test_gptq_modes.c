/* GPTQ variants: --gptq-ref-groups against a line-by-line port of IST-DASLab's fasterquant
 * (blocked, W1 copy per block, group grids read from W where the block's own updates are not
 * applied), and the GPTQ-aware grid search against brute force over its candidate grids. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pdq/quant.h"
#include "testutil.h"

/* Gauss-Jordan inverse in place (SPD input). */
static void inverse(double *a, int n) {
    double *b = calloc((size_t)n * n, sizeof(double));
    for (int i = 0; i < n; i++) b[i * n + i] = 1;
    for (int c = 0; c < n; c++) {
        double p = a[c * n + c];
        for (int k = 0; k < n; k++) { a[c * n + k] /= p; b[c * n + k] /= p; }
        for (int r = 0; r < n; r++) {
            if (r == c) continue;
            double f = a[r * n + c];
            for (int k = 0; k < n; k++) { a[r * n + k] -= f * a[c * n + k]; b[r * n + k] -= f * b[c * n + k]; }
        }
    }
    memcpy(a, b, sizeof(double) * n * n);
    free(b);
}

/* torch.linalg.cholesky(A, upper=True): A = U^T U. */
static void chol_upper(const double *a, double *u, int n) {
    memset(u, 0, sizeof(double) * n * n);
    for (int i = 0; i < n; i++) {
        double s = a[i * n + i];
        for (int k = 0; k < i; k++) s -= u[k * n + i] * u[k * n + i];
        u[i * n + i] = sqrt(s);
        for (int j = i + 1; j < n; j++) {
            double t = a[i * n + j];
            for (int k = 0; k < i; k++) t -= u[k * n + i] * u[k * n + j];
            u[i * n + j] = t / u[i * n + i];
        }
    }
}

/* IST-DASLab gptq.py fasterquant (groups, optional act-order, no static groups), codes out in the
 * original column order. */
static void dasl_gptq(const pdq_qscheme *s, int actorder, int bs, float percdamp, const float *w, int rows, int cols,
                      const float *Hf, uint8_t *codes) {
    int G = s->group, maxq = (1 << s->bits) - 1;
    double *H = malloc(sizeof(double) * cols * cols), *U = malloc(sizeof(double) * cols * cols);
    double *W = malloc(sizeof(double) * rows * cols), *W1 = malloc(sizeof(double) * rows * bs);
    double *Err1 = malloc(sizeof(double) * rows * bs);
    float *buf = malloc(sizeof(float) * rows * G), *sc = malloc(sizeof(float) * rows), *ze = malloc(sizeof(float) * rows);
    int *perm = malloc(sizeof(int) * cols);
    double *diag = malloc(sizeof(double) * cols);
    for (int i = 0; i < cols * cols; i++) H[i] = Hf[i];
    for (int i = 0; i < rows * cols; i++) W[i] = w[i];
    for (int c = 0; c < cols; c++) {
        if (H[c * cols + c] == 0) { H[c * cols + c] = 1; for (int r = 0; r < rows; r++) W[r * cols + c] = 0; }
        diag[c] = H[c * cols + c];
        perm[c] = c;
    }
    if (actorder) /* torch.argsort(diag, descending=True), stable */
        for (int i = 1; i < cols; i++)
            for (int j = i; j > 0 && diag[perm[j]] > diag[perm[j - 1]]; j--) { int t = perm[j]; perm[j] = perm[j - 1]; perm[j - 1] = t; }
    double *Hp = malloc(sizeof(double) * cols * cols), *Wp = malloc(sizeof(double) * rows * cols);
    for (int a = 0; a < cols; a++)
        for (int b = 0; b < cols; b++) Hp[a * cols + b] = H[perm[a] * cols + perm[b]];
    for (int r = 0; r < rows; r++)
        for (int j = 0; j < cols; j++) Wp[r * cols + j] = W[r * cols + perm[j]];
    double mean = 0;
    for (int c = 0; c < cols; c++) mean += Hp[c * cols + c];
    for (int c = 0; c < cols; c++) Hp[c * cols + c] += percdamp * mean / cols;
    inverse(Hp, cols);
    chol_upper(Hp, U, cols);
    for (int i1 = 0; i1 < cols; i1 += bs) {
        int i2 = i1 + bs < cols ? i1 + bs : cols, count = i2 - i1;
        for (int r = 0; r < rows; r++)
            for (int i = 0; i < count; i++) W1[r * bs + i] = Wp[r * cols + i1 + i];
        for (int i = 0; i < count; i++) {
            if ((i1 + i) % G == 0) { /* quantizer.find_params(W[:, (i1+i):(i1+i+groupsize)]) */
                int width = cols - (i1 + i) < G ? cols - (i1 + i) : G;
                for (int r = 0; r < rows; r++)
                    for (int k = 0; k < width; k++) buf[r * G + k] = (float)Wp[r * cols + i1 + i + k];
                pdq_qparams_find(s, buf, rows, width, G, 1, sc, ze);
            }
            double d = U[(i1 + i) * cols + i1 + i];
            for (int r = 0; r < rows; r++) {
                float x = (float)W1[r * bs + i];
                int q = pdq_qcode(x, sc[r], ze[r], maxq);
                double qv = (double)(sc[r] * ((float)q - ze[r]));
                codes[r * cols + perm[i1 + i]] = (uint8_t)q;
                double e = (W1[r * bs + i] - qv) / d;
                for (int k = i; k < count; k++) W1[r * bs + k] -= e * U[(i1 + i) * cols + i1 + k];
                Err1[r * bs + i] = e;
            }
        }
        for (int r = 0; r < rows; r++)
            for (int k = i2; k < cols; k++) {
                double t = 0;
                for (int i = 0; i < count; i++) t += Err1[r * bs + i] * U[(i1 + i) * cols + k];
                Wp[r * cols + k] -= t;
            }
    }
    free(H); free(U); free(W); free(W1); free(Err1); free(buf); free(sc); free(ze); free(perm); free(diag); free(Hp); free(Wp);
}

static float *problem(uint64_t *s, int rows, int cols, float **H_out) {
    int N = 3 * cols;
    float *w = malloc(sizeof(float) * rows * cols);
    for (int i = 0; i < rows * cols; i++) w[i] = (float)tu_randn(s);
    double *x = malloc(sizeof(double) * N * cols);
    for (int n = 0; n < N; n++) {
        double common = tu_randn(s);
        for (int c = 0; c < cols; c++) x[n * cols + c] = (tu_randn(s) + 0.7 * common) * (1.0 + 2.0 * (c % 5) / 5.0);
    }
    float *H = malloc(sizeof(float) * cols * cols);
    for (int i = 0; i < cols; i++)
        for (int j = 0; j < cols; j++) {
            double v = 0;
            for (int n = 0; n < N; n++) v += x[n * cols + i] * x[n * cols + j];
            H[i * cols + j] = (float)(2.0 * v / N);
        }
    free(x);
    *H_out = H;
    return w;
}

typedef struct { int rows, cols, bits, group, actorder, blocksize, sym; } mcfg;

static int codes_differ(const uint8_t *a, const uint8_t *b, int n) {
    int d = 0;
    for (int i = 0; i < n; i++) d += a[i] != b[i];
    return d;
}

static void test_ref_groups(void **state) {
    (void)state;
    const mcfg cfgs[] = {
        {12, 64, 4, 16, 1, 32, 0}, {12, 64, 4, 16, 0, 32, 0}, {10, 72, 3, 24, 1, 32, 0},
        {10, 60, 4, 16, 1, 20, 1}, {8, 96, 4, 32, 1, 128, 0}, {8, 48, 2, 8, 1, 12, 0},
    };
    int total_default_diff = 0;
    for (size_t t = 0; t < sizeof cfgs / sizeof cfgs[0]; t++) {
        const mcfg *c = &cfgs[t];
        uint64_t s = 500 + t;
        float *H, *w = problem(&s, c->rows, c->cols, &H);
        pdq_gptq_opts o;
        pdq_gptq_opts_default(&o, c->bits);
        o.scheme.group = c->group;
        o.scheme.partial_groups = 1;
        o.scheme.sym = c->sym;
        o.actorder = c->actorder;
        o.blocksize = c->blocksize;
        int n = c->rows * c->cols;
        uint8_t *ref = malloc(n);
        dasl_gptq(&o.scheme, c->actorder, c->blocksize, o.percdamp, w, c->rows, c->cols, H, ref);
        pdq_qresult a, b;
        o.ref_groups = 1;
        assert_int_equal(pdq_gptq(&o, w, c->rows, c->cols, H, "w", &a, NULL), PDQ_OK);
        o.ref_groups = 0;
        assert_int_equal(pdq_gptq(&o, w, c->rows, c->cols, H, "w", &b, NULL), PDQ_OK);
        int dr = codes_differ(ref, a.codes, n), dd = codes_differ(ref, b.codes, n);
        print_message("%dx%d b%d g%d act%d bs%d: reference mode %d codes differ, default mode %d (loss %.4g vs %.4g)\n",
                      c->rows, c->cols, c->bits, c->group, c->actorder, c->blocksize, dr, dd, a.loss, b.loss);
        assert_int_equal(dr, 0);
        total_default_diff += dd;
        pdq_qresult_free(&a);
        pdq_qresult_free(&b);
        free(ref); free(w); free(H);
    }
    /* the two modes really are different algorithms */
    assert_true(total_default_diff > 0);
}

/* Every row of the search result is GPTQ with one of the candidate grids, the one with the least
 * row loss; the total loss never exceeds plain GPTQ's (candidate p = 1). */
static void test_gptq_aware_search(void **state) {
    (void)state;
    uint64_t s = 42;
    int rows = 16, cols = 48;
    float *H, *w = problem(&s, rows, cols, &H);
    for (int i = 0; i < cols; i++) w[3 * cols + i] *= (i == 5) ? 12.0f : 1.0f; /* a row with an outlier */
    pdq_gptq_opts o;
    pdq_gptq_opts_default(&o, 3);
    pdq_qresult plain, r;
    assert_int_equal(pdq_gptq(&o, w, rows, cols, H, "w", &plain, NULL), PDQ_OK);
    o.mse_gptq = 1;
    o.mse_gptq_steps = 5;
    o.mse_gptq_range = 0.3f;
    assert_int_equal(pdq_gptq(&o, w, rows, cols, H, "w", &r, NULL), PDQ_OK);
    assert_true(r.loss <= plain.loss * (1 + 1e-6));
    /* brute force: each candidate separately */
    pdq_qscheme base = o.scheme;
    float sc0[16], ze0[16], sc[16];
    pdq_qparams_find(&base, w, rows, cols, cols, 1, sc0, ze0);
    double best[16];
    int bestk[16];
    pdq_qresult cand[6];
    for (int k = 0; k <= 5; k++) {
        float p = 1.0f - (float)k * 0.3f / 5.0f;
        for (int i = 0; i < rows; i++) sc[i] = sc0[i] * p;
        pdq_gptq_opts go = o;
        go.mse_gptq = 0;
        assert_int_equal(pdq_gptq_fixed_grid(&go, w, rows, cols, H, "w", sc, ze0, &cand[k], NULL), PDQ_OK);
        for (int i = 0; i < rows; i++) {
            double l = 0;
            for (int a = 0; a < cols; a++)
                for (int b = 0; b < cols; b++)
                    l += ((double)w[i * cols + a] - cand[k].deq[i * cols + a]) * H[a * cols + b] *
                         ((double)w[i * cols + b] - cand[k].deq[i * cols + b]);
            if (k == 0 || l < best[i] * (1 - 1e-9)) { best[i] = l; bestk[i] = k; }
        }
    }
    int shrunk = 0;
    for (int i = 0; i < rows; i++) {
        assert_memory_equal(r.codes + i * cols, cand[bestk[i]].codes + i * cols, (size_t)cols);
        assert_true(r.scale[i] == cand[bestk[i]].scale[i]);
        shrunk += bestk[i] > 0;
    }
    print_message("GPTQ-aware search: loss %.5g vs plain GPTQ %.5g, %d of %d rows shrunk\n", r.loss, plain.loss, shrunk, rows);
    assert_true(shrunk > 0);
    for (int k = 0; k <= 5; k++) pdq_qresult_free(&cand[k]);
    pdq_qresult_free(&plain);
    pdq_qresult_free(&r);
    /* groups are refused with a message */
    pdq_status st = {0};
    o.scheme.group = 16;
    assert_int_equal(pdq_gptq(&o, w, rows, cols, H, "w", &r, &st), PDQ_ERR_ARG);
    assert_non_null(strstr(st.msg, "per output row"));
    free(w);
    free(H);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ref_groups),
        cmocka_unit_test(test_gptq_aware_search),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
