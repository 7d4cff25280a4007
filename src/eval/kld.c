/* KL divergence of a model against a base model over a corpus, with llama.cpp's statistics
 * (mean KLD and its standard error, percentiles, top-1 agreement, dp = change of the target's
 * probability). The base keeps top-k log-probabilities per scored token (see eval.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pdq/eval.h"
#include "pdq/file.h"
#include "windows.h"

typedef struct {
    float v;
    int id;
} v_id;

/* a ranks above b: larger value, ties to the lower id */
static int above(const v_id *a, const v_id *b) { return a->v > b->v || (a->v == b->v && a->id < b->id); }

static int by_rank(const void *a, const void *b) { return above(a, b) ? -1 : above(b, a) ? 1 : 0; }

static void sift_down(v_id *h, int k, int i) { /* min-heap on rank: h[0] is the lowest kept */
    for (;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        if (l < k && above(&h[m], &h[l])) m = l;
        if (r < k && above(&h[m], &h[r])) m = r;
        if (m == i) return;
        v_id t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

/* The k highest logits, highest first: a size-k heap that rejects almost every entry with one
 * comparison, O(vocab) in practice. */
static void top_k(const float *l, int vocab, int k, v_id *h) {
    for (int i = 0; i < k; i++) h[i] = (v_id){l[i], i};
    for (int i = k / 2 - 1; i >= 0; i--) sift_down(h, k, i);
    for (int i = k; i < vocab; i++) {
        v_id c = {l[i], i};
        if (!above(&c, &h[0])) continue;
        h[0] = c;
        sift_down(h, k, 0);
    }
    qsort(h, (size_t)k, sizeof *h, by_rank);
}

/* log(sum(exp(l))) of one row: max-shifted, float exponentials summed in double. */
static double log_sum_exp(const float *l, int vocab) {
    float mx = l[0];
    for (int i = 1; i < vocab; i++)
        if (l[i] > mx) mx = l[i];
    double sum = 0;
    for (int i = 0; i < vocab; i++) sum += expf(l[i] - mx);
    return log(sum) + mx;
}

typedef struct {
    pdq_kld_base *b;
    long cap;
    v_id *heap; /* [k] */
} base_ctx;

static pdq_code base_rows(void *ctx, const float *logits, int from, int count, const int32_t *targets, int vocab,
                          pdq_status *st) {
    base_ctx *c = ctx;
    pdq_kld_base *b = c->b;
    for (int r = 0; r < count; r++) {
        if (b->n >= c->cap) return pdq_fail(st, PDQ_ERR_LIMIT, "kld: more scored tokens than the corpus has (%ld)", c->cap);
        const float *l = logits + (size_t)(from + r) * vocab;
        double lse = log_sum_exp(l, vocab);
        top_k(l, vocab, b->k, c->heap);
        long t = b->n++;
        for (int j = 0; j < b->k; j++) {
            b->top_id[t * b->k + j] = c->heap[j].id;
            b->top_lp[t * b->k + j] = (float)((double)c->heap[j].v - lse);
        }
        b->target_lp[t] = (float)((double)l[targets[r]] - lse);
    }
    return PDQ_OK;
}

static pdq_code base_alloc(pdq_kld_base *b, int vocab, int k, long n, pdq_status *st) {
    memset(b, 0, sizeof *b);
    b->vocab = vocab;
    b->k = k;
    size_t nk = (size_t)(n > 0 ? n : 1) * (size_t)k;
    b->top_id = malloc(nk * sizeof *b->top_id);
    b->top_lp = malloc(nk * sizeof *b->top_lp);
    b->target_lp = malloc((size_t)(n > 0 ? n : 1) * sizeof *b->target_lp);
    if (!b->top_id || !b->top_lp || !b->target_lp) {
        pdq_kld_base_free(b);
        return pdq_fail(st, PDQ_ERR_NOMEM, "kld: base distributions for %ld tokens x top-%d", n, k);
    }
    return PDQ_OK;
}

void pdq_kld_base_free(pdq_kld_base *b) {
    if (!b) return;
    free(b->top_id);
    free(b->top_lp);
    free(b->target_lp);
    memset(b, 0, sizeof *b);
}

pdq_code pdq_kld_base_compute(pdq_window_logits_fn fn, void *ctx, int vocab, const int32_t *ids, long n, int max_len,
                              int stride, int k, const char *label, pdq_kld_base *out, pdq_status *st) {
    memset(out, 0, sizeof *out);
    if (k < 1 || k > vocab) return pdq_fail(st, PDQ_ERR_ARG, "kld: top-k %d outside [1, vocab %d]", k, vocab);
    long cap = n > 1 ? n - 1 : 0; /* at most every token but the first is scored, once */
    pdq_code rc = base_alloc(out, vocab, k, cap, st);
    if (rc != PDQ_OK) return rc;
    base_ctx c = {out, cap, malloc(sizeof(v_id) * (size_t)k)};
    if (!c.heap) rc = pdq_fail(st, PDQ_ERR_NOMEM, "kld: scratch for top-%d", k);
    if (rc == PDQ_OK) rc = pdq_windows_each(fn, ctx, vocab, ids, n, max_len, stride, label, base_rows, &c, NULL, st);
    free(c.heap);
    if (rc != PDQ_OK) pdq_kld_base_free(out);
    return rc;
}

/* ---- cache file: magic, version, key, vocab, k, n, then the arrays (native endianness) ---- */

static const char k_magic[8] = {'P', 'D', 'Q', 'K', 'L', 'D', '0', '1'};

pdq_code pdq_kld_base_save(const char *path, const pdq_kld_base *b, uint64_t key, pdq_status *st) {
    pdq_file_writer *w;
    pdq_code rc = pdq_file_begin(path, NULL, &w, st); /* temp + rename: pdq/file.h */
    if (rc) return rc;
    int64_t hdr[4] = {(int64_t)key, b->vocab, b->k, b->n};
    size_t nk = (size_t)b->n * (size_t)b->k;
    rc = pdq_file_put(w, k_magic, 8, st);
    if (!rc) rc = pdq_file_put(w, hdr, sizeof hdr, st);
    if (!rc) rc = pdq_file_put(w, b->top_id, sizeof *b->top_id * nk, st);
    if (!rc) rc = pdq_file_put(w, b->top_lp, sizeof *b->top_lp * nk, st);
    if (!rc) rc = pdq_file_put(w, b->target_lp, sizeof *b->target_lp * (size_t)b->n, st);
    if (rc) {
        pdq_file_abort(w);
        return rc;
    }
    return pdq_file_commit(w, st);
}

pdq_code pdq_kld_base_load(const char *path, uint64_t key, pdq_kld_base *out, pdq_status *st) {
    memset(out, 0, sizeof *out);
    if (!pdq_file_exists(path)) return pdq_fail(st, PDQ_ERR_MISSING, "%s: no cached base logits", path);
    pdq_file_map *fm;
    pdq_code rc = pdq_file_map_open(path, &fm, st);
    if (rc) return rc;
    const unsigned char *p = fm->data;
    int64_t hdr[4];
    if (fm->size < 8 + sizeof hdr || memcmp(p, k_magic, 8) != 0)
        rc = pdq_fail(st, PDQ_ERR_FORMAT, "%s: not a pdq KLD cache file", path);
    else memcpy(hdr, p + 8, sizeof hdr);
    if (rc == PDQ_OK && (uint64_t)hdr[0] != key)
        rc = pdq_fail(st, PDQ_ERR_MISSING, "%s: cached for another model, corpus or window setting", path);
    else if (rc == PDQ_OK && (hdr[1] < 1 || hdr[1] > (1 << 24) || hdr[2] < 1 || hdr[2] > hdr[1] || hdr[3] < 0 || hdr[3] > ((int64_t)1 << 34) / hdr[2]))
        rc = pdq_fail(st, PDQ_ERR_FORMAT, "%s: bad header (vocab %lld, k %lld, tokens %lld)", path, (long long)hdr[1],
                      (long long)hdr[2], (long long)hdr[3]);
    if (rc == PDQ_OK) { /* the header must describe exactly this file before anything is allocated */
        uint64_t want = 8 + sizeof hdr + (uint64_t)hdr[3] * ((uint64_t)hdr[2] * 8 + 4);
        if ((uint64_t)fm->size != want)
            rc = pdq_fail(st, PDQ_ERR_FORMAT, "%s: %zu bytes, the header says %llu", path, fm->size, (unsigned long long)want);
    }
    if (rc == PDQ_OK) rc = base_alloc(out, (int)hdr[1], (int)hdr[2], (long)hdr[3], st);
    if (rc == PDQ_OK) {
        out->n = (long)hdr[3];
        size_t nk = (size_t)out->n * (size_t)out->k;
        const unsigned char *q = p + 8 + sizeof hdr;
        memcpy(out->top_id, q, sizeof *out->top_id * nk);
        q += sizeof *out->top_id * nk;
        memcpy(out->top_lp, q, sizeof *out->top_lp * nk);
        q += sizeof *out->top_lp * nk;
        memcpy(out->target_lp, q, sizeof *out->target_lp * (size_t)out->n);
        for (size_t i = 0; rc == PDQ_OK && i < nk; i++)
            if (out->top_id[i] < 0 || out->top_id[i] >= out->vocab)
                rc = pdq_fail(st, PDQ_ERR_FORMAT, "%s: token id %d outside the vocabulary", path, out->top_id[i]);
            else if (!(out->top_lp[i] <= 0.0f) || !isfinite(out->top_lp[i])) /* log-probabilities */
                rc = pdq_fail(st, PDQ_ERR_FORMAT, "%s: log-probability %g is not <= 0", path, (double)out->top_lp[i]);
        for (long i = 0; rc == PDQ_OK && i < out->n; i++)
            if (!(out->target_lp[i] <= 0.0f) || !isfinite(out->target_lp[i]))
                rc = pdq_fail(st, PDQ_ERR_FORMAT, "%s: log-probability %g is not <= 0", path, (double)out->target_lp[i]);
        if (rc != PDQ_OK) pdq_kld_base_free(out);
    }
    pdq_file_map_close(fm);
    return rc;
}

/* ---- the model side ---- */

typedef struct {
    const pdq_kld_base *b;
    long t;               /* next base row */
    double *kld, *dp;     /* [n] per token */
    long top1;
    double mass;          /* sum of the base's top-k mass */
    double nll, nll_base; /* for the ppl ratio */
    double lr_sum, lr_sq; /* per-token log ratio of target probabilities */
    pdq_ppl_result *ppl;
} model_ctx;

static pdq_code model_rows(void *ctx, const float *logits, int from, int count, const int32_t *targets, int vocab,
                           pdq_status *st) {
    model_ctx *c = ctx;
    const pdq_kld_base *b = c->b;
    for (int r = 0; r < count; r++) {
        if (c->t >= b->n) return pdq_fail(st, PDQ_ERR_ARG, "kld: the base has %ld scored tokens, the corpus more", b->n);
        const float *l = logits + (size_t)(from + r) * vocab;
        double lse = log_sum_exp(l, vocab);
        long t = c->t++;
        const int32_t *id = b->top_id + t * b->k;
        const float *blp = b->top_lp + t * b->k;
        double kl = 0, pb_rest = 1, pm_rest = 1;
        for (int j = 0; j < b->k; j++) {
            double pb = exp((double)blp[j]);
            double lm = (double)l[id[j]] - lse;
            kl += pb * ((double)blp[j] - lm);
            pb_rest -= pb;
            pm_rest -= exp(lm);
        }
        /* the rest of the vocabulary as one bucket (nothing left when k == vocab) */
        c->mass += 1 - pb_rest;
        if (b->k < vocab && pb_rest > 1e-12) kl += pb_rest * (log(pb_rest) - log(pm_rest > 1e-30 ? pm_rest : 1e-30));
        c->kld[t] = kl > 0 ? kl : 0; /* rounding can leave -1e-17 */
        c->top1 += pdq_argmax(l, vocab) == id[0];
        double lm = (double)l[targets[r]] - lse, lb = (double)b->target_lp[t];
        c->dp[t] = exp(lm) - exp(lb);
        c->nll -= lm;
        c->nll_base -= lb;
        c->lr_sum += lm - lb;
        c->lr_sq += (lm - lb) * (lm - lb);
        if (c->ppl) {
            c->ppl->nll -= lm;
            c->ppl->nll_sq += lm * lm;
            c->ppl->tokens++;
        }
    }
    return PDQ_OK;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Percentile q in [0, 1] of sorted v[n], linear interpolation (numpy's default). */
static double pct(const double *v, long n, double q) {
    double pos = q * (double)(n - 1);
    long i = (long)floor(pos);
    if (i >= n - 1) return v[n - 1];
    return v[i] + (pos - (double)i) * (v[i + 1] - v[i]);
}

static void mean_se(const double *v, long n, double *mean, double *se) {
    double s = 0, s2 = 0;
    for (long i = 0; i < n; i++) { s += v[i]; s2 += v[i] * v[i]; }
    *mean = s / (double)n;
    double var = n > 1 ? (s2 / (double)n - *mean * *mean) * (double)n / (double)(n - 1) : 0;
    *se = var > 0 ? sqrt(var / (double)n) : 0;
}

pdq_code pdq_kld_windows(pdq_window_logits_fn fn, void *ctx, const int32_t *ids, long n, int max_len, int stride,
                         const pdq_kld_base *base, const char *label, pdq_kld_result *out, pdq_ppl_result *ppl,
                         pdq_status *st) {
    memset(out, 0, sizeof *out);
    if (ppl) memset(ppl, 0, sizeof *ppl);
    long cap = base->n;
    model_ctx c = {base, 0, malloc(sizeof(double) * (size_t)(cap ? cap : 1)), malloc(sizeof(double) * (size_t)(cap ? cap : 1)),
                   0, 0, 0, 0, 0, 0, ppl};
    pdq_code rc = PDQ_OK;
    if (!c.kld || !c.dp) rc = pdq_fail(st, PDQ_ERR_NOMEM, "kld: per-token statistics for %ld tokens", cap);
    if (rc == PDQ_OK)
        rc = pdq_windows_each(fn, ctx, base->vocab, ids, n, max_len, stride, label, model_rows, &c, ppl ? &ppl->windows : NULL, st);
    if (rc == PDQ_OK && c.t != base->n)
        rc = pdq_fail(st, PDQ_ERR_ARG, "kld: the corpus scores %ld tokens, the base has %ld (another file or window setting?)",
                      c.t, base->n);
    if (rc == PDQ_OK && c.t < 2) rc = pdq_fail(st, PDQ_ERR_ARG, "kld: need at least 2 scored tokens");
    if (rc == PDQ_OK) {
        long N = c.t;
        out->tokens = N;
        out->k = base->k;
        out->vocab = base->vocab;
        out->base_mass = c.mass / (double)N;
        mean_se(c.kld, N, &out->kld_mean, &out->kld_se);
        double dpm, dps;
        mean_se(c.dp, N, &dpm, &dps);
        out->dp_mean = dpm;
        out->dp_se = dps;
        double sq = 0;
        for (long i = 0; i < N; i++) sq += c.dp[i] * c.dp[i];
        out->dp_rms = sqrt(sq / (double)N);
        qsort(c.kld, (size_t)N, sizeof(double), cmp_double);
        qsort(c.dp, (size_t)N, sizeof(double), cmp_double);
        out->kld_median = pct(c.kld, N, 0.5);
        out->kld_p99 = pct(c.kld, N, 0.99);
        out->kld_max = c.kld[N - 1];
        out->dp_min = c.dp[0];
        out->dp_p01 = pct(c.dp, N, 0.01);
        out->dp_p05 = pct(c.dp, N, 0.05);
        out->dp_median = pct(c.dp, N, 0.5);
        out->dp_p95 = pct(c.dp, N, 0.95);
        out->dp_p99 = pct(c.dp, N, 0.99);
        out->dp_max = c.dp[N - 1];
        out->top1 = (double)c.top1 / (double)N;
        out->top1_se = sqrt(out->top1 * (1 - out->top1) / (double)(N - 1));
        out->ppl = exp(c.nll / (double)N);
        out->ppl_base = exp(c.nll_base / (double)N);
        /* ln(PPL(model)/PPL(base)) = mean of -(log p_model - log p_base) per token */
        double m = c.lr_sum / (double)N, var = (c.lr_sq / (double)N - m * m) * (double)N / (double)(N - 1);
        out->ln_ppl_ratio = -m;
        out->ln_ppl_ratio_se = var > 0 ? sqrt(var / (double)N) : 0;
        if (ppl) {
            ppl->ppl = out->ppl;
            double mn = ppl->nll / (double)N, v2 = (ppl->nll_sq / (double)N - mn * mn) * (double)N / (double)(N - 1);
            ppl->ppl_se = v2 > 0 ? ppl->ppl * sqrt(v2 / (double)N) : 0;
        }
    }
    free(c.kld);
    free(c.dp);
    return rc;
}
