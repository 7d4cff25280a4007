/* Perplexity's standard error and the KL-divergence statistics against brute force: full-vocabulary
 * softmax in the test, the same strided windows walked by hand, numpy-style percentiles; the top-k
 * base is exact at k = vocab and a close lower bound below; the cache file round-trips and refuses
 * another key or a damaged file. */
#include "testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pdq/eval.h"

#define V 40

/* A deterministic fake model: logits from (token, position in window, vocab entry, seed);
 * temperature makes the base peaked or flat. */
typedef struct {
    uint64_t seed;
    double scale;   /* logit spread */
    double noise;   /* extra perturbation (the "quantized" model) */
} fake;

static double hash01(uint64_t x) {
    x ^= x >> 33; x *= 0xff51afd7ed558ccdULL; x ^= x >> 33; x *= 0xc4ceb9fe1a85ec53ULL; x ^= x >> 33;
    return (double)(x >> 11) / 9007199254740992.0;
}

static void fake_row(const fake *f, int32_t tok, int t, float *l) {
    for (int v = 0; v < V; v++) {
        uint64_t k = (uint64_t)tok * 1000003u + (uint64_t)t * 7919u + (uint64_t)v * 104729u;
        double x = f->scale * (hash01(k ^ 0x1234) - 0.5) + (v == (tok * 7 + 3) % V ? 2.0 * f->scale : 0);
        x += f->noise * (hash01(k ^ f->seed) - 0.5);
        l[v] = (float)x;
    }
}

static pdq_code fake_window(void *ctx, const int32_t *ids, int T, float *logits, pdq_status *st) {
    (void)st;
    for (int t = 0; t < T; t++) fake_row(ctx, ids[t], t, logits + (size_t)t * V);
    return PDQ_OK;
}

static int cmpd(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double np_percentile(const double *s, long n, double q) { /* s sorted */
    double pos = q * (n - 1);
    long i = (long)pos;
    if (i + 1 >= n) return s[n - 1];
    return s[i] * (1 - (pos - i)) + s[i + 1] * (pos - i);
}

static void softmax(const float *l, double *p) {
    double mx = l[0], s = 0;
    for (int v = 1; v < V; v++) mx = l[v] > mx ? l[v] : mx;
    for (int v = 0; v < V; v++) s += p[v] = exp(l[v] - mx);
    for (int v = 0; v < V; v++) p[v] /= s;
}

typedef struct {
    long n;
    double kld_mean, kld_se, kld_median, kld_p99, kld_max, top1, dp_mean, dp_rms, dp_p05, dp_p95, ppl_b, ppl_m, ppl_se;
} brute;

/* HF's window loop by hand, full softmax for both models. */
static void brute_force(const fake *fb, const fake *fm, const int32_t *ids, long n, int max_len, int stride, brute *out) {
    double *kl = malloc(sizeof(double) * n), *dp = malloc(sizeof(double) * n);
    double nll_b = 0, nll_m = 0, nll_m2 = 0, top1 = 0;
    long cnt = 0, prev_end = 0;
    float lb[V], lm[V];
    double pb[V], pm[V];
    for (long begin = 0; prev_end < n; begin += stride) {
        long end = begin + max_len < n ? begin + max_len : n;
        for (long i = prev_end > begin + 1 ? prev_end : begin + 1; i < end; i++) {
            int t = (int)(i - 1 - begin); /* row predicting token i */
            fake_row(fb, ids[i - 1], t, lb);
            fake_row(fm, ids[i - 1], t, lm);
            softmax(lb, pb);
            softmax(lm, pm);
            double k = 0;
            int ab = 0, am = 0;
            for (int v = 0; v < V; v++) {
                k += pb[v] * log(pb[v] / pm[v]);
                if (lb[v] > lb[ab]) ab = v;
                if (lm[v] > lm[am]) am = v;
            }
            kl[cnt] = k;
            dp[cnt] = pm[ids[i]] - pb[ids[i]];
            top1 += ab == am;
            nll_b -= log(pb[ids[i]]);
            nll_m -= log(pm[ids[i]]);
            nll_m2 += log(pm[ids[i]]) * log(pm[ids[i]]);
            cnt++;
        }
        prev_end = end;
    }
    double s = 0, s2 = 0, d = 0, d2 = 0;
    for (long i = 0; i < cnt; i++) { s += kl[i]; s2 += kl[i] * kl[i]; d += dp[i]; d2 += dp[i] * dp[i]; }
    out->n = cnt;
    out->kld_mean = s / cnt;
    out->kld_se = sqrt((s2 / cnt - out->kld_mean * out->kld_mean) / (cnt - 1));
    out->dp_mean = d / cnt;
    out->dp_rms = sqrt(d2 / cnt);
    qsort(kl, cnt, sizeof *kl, cmpd);
    qsort(dp, cnt, sizeof *dp, cmpd);
    out->kld_median = np_percentile(kl, cnt, 0.5);
    out->kld_p99 = np_percentile(kl, cnt, 0.99);
    out->kld_max = kl[cnt - 1];
    out->dp_p05 = np_percentile(dp, cnt, 0.05);
    out->dp_p95 = np_percentile(dp, cnt, 0.95);
    out->top1 = top1 / cnt;
    out->ppl_b = exp(nll_b / cnt);
    out->ppl_m = exp(nll_m / cnt);
    double mean = nll_m / cnt;
    out->ppl_se = out->ppl_m * sqrt((nll_m2 / cnt - mean * mean) / (cnt - 1));
    free(kl);
    free(dp);
}

static int32_t *make_ids(long n, uint64_t seed) {
    int32_t *ids = malloc(sizeof *ids * n);
    for (long i = 0; i < n; i++) ids[i] = (int32_t)(tu_rand(&seed) % V);
    return ids;
}

#define NEAR(a, b, tol) assert_true(fabs((a) - (b)) <= (tol) * (1 + fabs(b)))

static void check_exact(long n, int max_len, int stride) {
    fake fb = {1, 4.0, 0.0}, fm = {77, 4.0, 1.5};
    int32_t *ids = make_ids(n, 5 + n);
    pdq_status st = {0};
    pdq_kld_base base;
    brute b;
    brute_force(&fb, &fm, ids, n, max_len, stride, &b);
    assert_int_equal(pdq_kld_base_compute(fake_window, &fb, V, ids, n, max_len, stride, V, NULL, &base, &st), PDQ_OK);
    assert_int_equal(base.n, b.n);
    pdq_kld_result r;
    pdq_ppl_result p;
    assert_int_equal(pdq_kld_windows(fake_window, &fm, ids, n, max_len, stride, &base, NULL, &r, &p, &st), PDQ_OK);
    assert_int_equal(r.tokens, b.n);
    NEAR(r.kld_mean, b.kld_mean, 1e-5);
    NEAR(r.kld_se, b.kld_se, 1e-4);
    NEAR(r.kld_median, b.kld_median, 1e-5);
    NEAR(r.kld_p99, b.kld_p99, 1e-5);
    NEAR(r.kld_max, b.kld_max, 1e-5);
    NEAR(r.top1, b.top1, 1e-12);
    NEAR(r.dp_mean, b.dp_mean, 1e-5);
    NEAR(r.dp_rms, b.dp_rms, 1e-5);
    NEAR(r.dp_p05, b.dp_p05, 1e-5);
    NEAR(r.dp_p95, b.dp_p95, 1e-5);
    NEAR(r.ppl_base, b.ppl_b, 1e-6);
    NEAR(r.ppl, b.ppl_m, 1e-6);
    NEAR(r.ln_ppl_ratio, log(b.ppl_m / b.ppl_b), 1e-6);
    NEAR(p.ppl, b.ppl_m, 1e-6);
    NEAR(p.ppl_se, b.ppl_se, 1e-5);
    /* plain perplexity: the same value and standard error */
    pdq_ppl_result q;
    assert_int_equal(pdq_ppl_windows(fake_window, &fm, V, ids, n, max_len, stride, NULL, &q, &st), PDQ_OK);
    NEAR(q.ppl, b.ppl_m, 1e-9);
    NEAR(q.ppl_se, b.ppl_se, 1e-6);
    assert_true(q.ppl_se > 0);
    pdq_kld_base_free(&base);
    free(ids);
}

static void test_exact_against_brute_force(void **state) {
    (void)state;
    check_exact(300, 64, 64);
    check_exact(300, 64, 16);
    check_exact(97, 200, 200);
}

static void test_topk_lower_bound(void **state) {
    (void)state;
    fake fb = {1, 6.0, 0.0}, fm = {9, 6.0, 1.0};
    long n = 400;
    int32_t *ids = make_ids(n, 11);
    pdq_status st = {0};
    pdq_kld_base exact, part;
    pdq_kld_result re, rp;
    assert_int_equal(pdq_kld_base_compute(fake_window, &fb, V, ids, n, 50, 50, V, NULL, &exact, &st), PDQ_OK);
    assert_int_equal(pdq_kld_base_compute(fake_window, &fb, V, ids, n, 50, 50, 8, NULL, &part, &st), PDQ_OK);
    /* top-k ids in descending probability, and equal to the exact base's first k */
    for (long t = 0; t < part.n; t++)
        for (int j = 0; j < 8; j++) {
            assert_int_equal(part.top_id[t * 8 + j], exact.top_id[t * V + j]);
            if (j) assert_true(part.top_lp[t * 8 + j] <= part.top_lp[t * 8 + j - 1]);
        }
    assert_int_equal(pdq_kld_windows(fake_window, &fm, ids, n, 50, 50, &exact, NULL, &re, NULL, &st), PDQ_OK);
    assert_int_equal(pdq_kld_windows(fake_window, &fm, ids, n, 50, 50, &part, NULL, &rp, NULL, &st), PDQ_OK);
    print_message("top-8 KLD %.6f, exact %.6f\n", rp.kld_mean, re.kld_mean);
    assert_true(rp.kld_mean <= re.kld_mean + 1e-9);
    assert_true(rp.kld_mean >= 0.5 * re.kld_mean);
    NEAR(rp.top1, re.top1, 1e-12);
    NEAR(rp.dp_mean, re.dp_mean, 1e-6);
    /* a model against itself: nothing changes */
    pdq_kld_result self;
    assert_int_equal(pdq_kld_windows(fake_window, &fb, ids, n, 50, 50, &part, NULL, &self, NULL, &st), PDQ_OK);
    assert_true(self.kld_max < 1e-6 && self.top1 == 1.0 && fabs(self.dp_max) < 1e-6 && fabs(self.ln_ppl_ratio) < 1e-6);
    /* another corpus length does not fit the base */
    assert_int_equal(pdq_kld_windows(fake_window, &fm, ids, n - 5, 50, 50, &part, NULL, &rp, NULL, &st), PDQ_ERR_ARG);
    assert_non_null(strstr(st.msg, "base has"));
    pdq_kld_base_free(&exact);
    pdq_kld_base_free(&part);
    free(ids);
}

static void test_cache_file(void **state) {
    (void)state;
    fake fb = {1, 4.0, 0.0};
    long n = 120;
    int32_t *ids = make_ids(n, 3);
    pdq_status st = {0};
    pdq_kld_base b, l;
    assert_int_equal(pdq_kld_base_compute(fake_window, &fb, V, ids, n, 32, 32, 5, NULL, &b, &st), PDQ_OK);
    char *dir = tu_mkdtemp(), path[4200];
    snprintf(path, sizeof path, "%s/base.bin", dir);
    assert_int_equal(pdq_kld_base_save(path, &b, 42, &st), PDQ_OK);
    assert_int_equal(pdq_kld_base_load(path, 42, &l, &st), PDQ_OK);
    assert_int_equal(l.n, b.n);
    assert_int_equal(l.k, 5);
    assert_int_equal(l.vocab, V);
    assert_memory_equal(l.top_id, b.top_id, sizeof(int32_t) * b.n * 5);
    assert_memory_equal(l.top_lp, b.top_lp, sizeof(float) * b.n * 5);
    assert_memory_equal(l.target_lp, b.target_lp, sizeof(float) * b.n);
    pdq_kld_base_free(&l);
    assert_int_equal(pdq_kld_base_load(path, 43, &l, &st), PDQ_ERR_MISSING);
    snprintf(path + strlen(path), 32, ".none");
    assert_int_equal(pdq_kld_base_load(path, 42, &l, &st), PDQ_ERR_MISSING);
    /* truncated and corrupted files are format errors, never a crash */
    size_t len;
    snprintf(path, sizeof path, "%s/base.bin", dir);
    char *bytes = tu_read_file(path, &len);
    assert_non_null(bytes);
    assert_int_equal(tu_write_file(path, bytes, len - 7), 0);
    assert_int_equal(pdq_kld_base_load(path, 42, &l, &st), PDQ_ERR_FORMAT);
    memset(bytes + 8 + 8, 0xff, 8); /* vocab */
    assert_int_equal(tu_write_file(path, bytes, len), 0);
    assert_int_equal(pdq_kld_base_load(path, 42, &l, &st), PDQ_ERR_FORMAT);
    memcpy(bytes, "NOTMAGIC", 8);
    assert_int_equal(tu_write_file(path, bytes, len), 0);
    assert_int_equal(pdq_kld_base_load(path, 42, &l, &st), PDQ_ERR_FORMAT);
    free(bytes);
    tu_rmtree(dir);
    free(dir);
    pdq_kld_base_free(&b);
    assert_int_equal(pdq_kld_base_compute(fake_window, &fb, V, ids, n, 32, 32, V + 1, NULL, &b, &st), PDQ_ERR_ARG);
    free(ids);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exact_against_brute_force),
        cmocka_unit_test(test_topk_lower_bound),
        cmocka_unit_test(test_cache_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
