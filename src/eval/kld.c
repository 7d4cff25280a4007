/* KL divergence of a model against a base model over a corpus, with llama.cpp's statistics
 * (mean KLD and its standard error, percentiles, top-1 agreement, dp = change of the target's
 * probability). The base keeps top-k log-probabilities per scored token (see eval.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dist/dist.h"
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
    const int32_t *ids;
    const long *row; /* a rank's share: row of each position; NULL: rows in the order scored */
} base_ctx;

static pdq_code base_rows(void *ctx, const float *logits, int from, int count, const int32_t *targets, int vocab,
                          pdq_status *st) {
    base_ctx *c = ctx;
    pdq_kld_base *b = c->b;
    for (int r = 0; r < count; r++) {
        long t = c->row ? c->row[targets + r - c->ids] : b->n;
        if (b->n >= c->cap || t < 0 || t >= c->cap)
            return pdq_fail(st, PDQ_ERR_LIMIT, "kld: more scored tokens than the corpus has (%ld)", c->cap);
        const float *l = logits + (size_t)(from + r) * vocab;
        double lse = log_sum_exp(l, vocab);
        top_k(l, vocab, b->k, c->heap);
        b->n++;
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

/* Rows of the scored tokens rank `rank` of `size` owns; the others stay as allocated. */
static pdq_code base_share(pdq_window_logits_fn fn, void *ctx, int vocab, const int32_t *ids, long n, int max_len,
                           int stride, int k, const char *label, pdq_kld_base *out, int rank, int size, pdq_status *st) {
    memset(out, 0, sizeof *out);
    if (k < 1 || k > vocab) return pdq_fail(st, PDQ_ERR_ARG, "kld: top-k %d outside [1, vocab %d]", k, vocab);
    long cap = n > 1 ? n - 1 : 0; /* at most every token but the first is scored, once */
    pdq_code rc = base_alloc(out, vocab, k, cap, st);
    if (rc != PDQ_OK) return rc;
    if (size > 1) { /* rows of other ranks' tokens are filled by the gather */
        memset(out->top_id, 0, sizeof *out->top_id * (size_t)(cap > 0 ? cap : 1) * k);
        memset(out->top_lp, 0, sizeof *out->top_lp * (size_t)(cap > 0 ? cap : 1) * k);
        memset(out->target_lp, 0, sizeof *out->target_lp * (size_t)(cap > 0 ? cap : 1));
    }
    base_ctx c = {out, cap, malloc(sizeof(v_id) * (size_t)k), ids, NULL};
    long *row = size > 1 ? malloc(sizeof(long) * (size_t)n) : NULL;
    if (!c.heap || (size > 1 && !row)) rc = pdq_fail(st, PDQ_ERR_NOMEM, "kld: scratch for top-%d", k);
    if (row) pdq_windows_rows(n, max_len, stride, size, row, NULL);
    c.row = row;
    if (rc == PDQ_OK)
        rc = pdq_windows_share(fn, ctx, vocab, ids, n, max_len, stride, label, base_rows, &c, NULL, rank, size, st);
    free(c.heap);
    free(row);
    if (rc != PDQ_OK) pdq_kld_base_free(out);
    return rc;
}

pdq_code pdq_kld_base_compute(pdq_window_logits_fn fn, void *ctx, int vocab, const int32_t *ids, long n, int max_len,
                              int stride, int k, const char *label, pdq_kld_base *out, pdq_status *st) {
    return base_share(fn, ctx, vocab, ids, n, max_len, stride, k, label, out, 0, 1, st);
}

/* Every rank's rows (the same layout everywhere) into b: row t from the rank that scored token t. */
static pdq_code base_gather(const pdq_dist *d, pdq_kld_base *b, long n, int max_len, int stride, pdq_status *st) {
    int size = pdq_dist_size(d);
    long cap = pdq_windows_rows(n, max_len, stride, size, NULL, NULL), rows = n > 1 ? n - 1 : 1;
    size_t k = (size_t)b->k, row = k * (sizeof(int32_t) + sizeof(float)) + sizeof(float);
    char *mine = calloc((size_t)rows, row), *all = malloc(row * (size_t)rows * size);
    int *owner = malloc(sizeof(int) * (size_t)rows);
    pdq_code rc = mine && all && owner ? PDQ_OK : pdq_fail(st, PDQ_ERR_NOMEM, "kld: gathering %ld base rows", cap);
    for (long t = 0; !rc && t < cap; t++) {
        char *p = mine + row * (size_t)t;
        memcpy(p, b->top_id + t * k, k * sizeof(int32_t));
        memcpy(p + k * sizeof(int32_t), b->top_lp + t * k, k * sizeof(float));
        memcpy(p + k * (sizeof(int32_t) + sizeof(float)), b->target_lp + t, sizeof(float));
    }
    if (!rc) rc = pdq_dist_allgather(d, mine, row * (size_t)rows, all, st);
    if (!rc) {
        pdq_windows_rows(n, max_len, stride, size, NULL, owner);
        for (long t = 0; t < cap; t++) {
            const char *p = all + row * ((size_t)owner[t] * rows + (size_t)t);
            memcpy(b->top_id + t * k, p, k * sizeof(int32_t));
            memcpy(b->top_lp + t * k, p + k * sizeof(int32_t), k * sizeof(float));
            memcpy(b->target_lp + t, p + k * (sizeof(int32_t) + sizeof(float)), sizeof(float));
        }
        b->n = cap;
    }
    free(mine);
    free(all);
    free(owner);
    return rc;
}

pdq_code pdq_kld_base_compute_split(const struct pdq_dist *d, pdq_window_logits_fn fn, void *ctx, int vocab,
                                    const int32_t *ids, long n, int max_len, int stride, int k, const char *label,
                                    pdq_kld_base *out, pdq_status *st) {
    int rank = pdq_dist_rank(d), size = pdq_dist_size(d);
    if (size == 1) return pdq_kld_base_compute(fn, ctx, vocab, ids, n, max_len, stride, k, label, out, st);
    pdq_code rc = base_share(fn, ctx, vocab, ids, n, max_len, stride, k, rank ? NULL : label, out, rank, size, st);
    if (!rc && (rc = base_gather(d, out, n, max_len, stride, st))) pdq_kld_base_free(out);
    return rc;
}

pdq_code pdq_kld_base_bcast(const struct pdq_dist *d, pdq_kld_base *b, pdq_status *st) {
    if (pdq_dist_size(d) == 1) return PDQ_OK;
    int64_t hdr[3] = {b->vocab, b->k, b->n};
    pdq_code rc = pdq_dist_bcast(d, hdr, sizeof hdr, 0, st);
    if (rc) return rc;
    if (pdq_dist_rank(d) != 0) {
        if ((rc = base_alloc(b, (int)hdr[0], (int)hdr[1], (long)hdr[2], st))) return rc;
        b->n = (long)hdr[2];
    }
    size_t nk = (size_t)hdr[2] * (size_t)hdr[1];
    rc = pdq_dist_bcast(d, b->top_id, nk * sizeof *b->top_id, 0, st);
    if (!rc) rc = pdq_dist_bcast(d, b->top_lp, nk * sizeof *b->top_lp, 0, st);
    if (!rc) rc = pdq_dist_bcast(d, b->target_lp, (size_t)hdr[2] * sizeof *b->target_lp, 0, st);
    if (rc && pdq_dist_rank(d) != 0) pdq_kld_base_free(b);
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
    /* a rank's share of a split run: each scored token's record at its row, folded later */
    const int32_t *ids;
    const long *row; /* the row of each position (a rank's share) */
    double *rec;     /* [rows][KREC] or NULL: fold as computed */
} model_ctx;

enum { KREC = 5 }; /* kl, dp, top-k mass, log p_model(target), top-1 agreement */

/* One token's record into the totals; tokens folded in row order give the same bits however
 * they were computed. */
static void model_fold(model_ctx *c, long t, const double *x) {
    double lm = x[3], lb = (double)c->b->target_lp[t];
    c->kld[t] = x[0];
    c->dp[t] = x[1];
    c->mass += x[2];
    c->top1 += x[4] != 0;
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

static pdq_code model_rows(void *ctx, const float *logits, int from, int count, const int32_t *targets, int vocab,
                           pdq_status *st) {
    model_ctx *c = ctx;
    const pdq_kld_base *b = c->b;
    for (int r = 0; r < count; r++) {
        long t = c->rec ? c->row[targets + r - c->ids] : c->t;
        if (t < 0 || t >= b->n) return pdq_fail(st, PDQ_ERR_ARG, "kld: the base has %ld scored tokens, the corpus more", b->n);
        c->t++;
        const float *l = logits + (size_t)(from + r) * vocab;
        double lse = log_sum_exp(l, vocab);
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
        if (b->k < vocab && pb_rest > 1e-12) kl += pb_rest * (log(pb_rest) - log(pm_rest > 1e-30 ? pm_rest : 1e-30));
        double lm = (double)l[targets[r]] - lse, lb = (double)b->target_lp[t];
        double x[KREC] = {kl > 0 ? kl : 0 /* rounding can leave -1e-17 */, exp(lm) - exp(lb), 1 - pb_rest, lm,
                          pdq_argmax(l, vocab) == id[0]};
        if (c->rec) memcpy(c->rec + (size_t)t * KREC, x, sizeof x);
        else model_fold(c, t, x);
    }
    return PDQ_OK;
}

/* Every rank's records, then all folded in row order on every rank (owner[t] scored row t). */
static pdq_code model_gather(const pdq_dist *d, model_ctx *c, long n, int max_len, int stride, pdq_status *st) {
    int size = pdq_dist_size(d);
    long rows = c->b->n > 0 ? c->b->n : 1, scored = pdq_windows_rows(n, max_len, stride, size, NULL, NULL);
    size_t bytes = (size_t)rows * KREC * sizeof(double);
    double *all = malloc(bytes * (size_t)size);
    int *owner = malloc(sizeof(int) * (size_t)(scored > 0 ? scored : 1));
    long *counts = malloc(sizeof(long) * (size_t)size), done = 0;
    pdq_code rc = all && owner && counts ? PDQ_OK : pdq_fail(st, PDQ_ERR_NOMEM, "kld: gathering %ld token records", c->b->n);
    if (!rc) rc = pdq_dist_allgather(d, c->rec, bytes, all, st);
    if (!rc) rc = pdq_dist_allgather(d, &c->t, sizeof c->t, counts, st);
    for (int r = 0; !rc && r < size; r++) done += counts[r];
    if (!rc && (done != scored || scored > c->b->n))
        rc = pdq_fail(st, PDQ_ERR_ARG, "kld: the corpus scores %ld tokens, the base has %ld (another file or window setting?)",
                      done, c->b->n);
    if (!rc) {
        pdq_windows_rows(n, max_len, stride, size, NULL, owner);
        for (long t = 0; t < scored; t++) model_fold(c, t, all + ((size_t)owner[t] * rows + (size_t)t) * KREC);
        c->t = scored;
    }
    free(counts);
    free(all);
    free(owner);
    return rc;
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
    return pdq_kld_windows_split(NULL, fn, ctx, ids, n, max_len, stride, base, label, out, ppl, st);
}

pdq_code pdq_kld_windows_split(const struct pdq_dist *d, pdq_window_logits_fn fn, void *ctx, const int32_t *ids, long n,
                               int max_len, int stride, const pdq_kld_base *base, const char *label,
                               pdq_kld_result *out, pdq_ppl_result *ppl, pdq_status *st) {
    memset(out, 0, sizeof *out);
    if (ppl) memset(ppl, 0, sizeof *ppl);
    int rank = pdq_dist_rank(d), size = pdq_dist_size(d), windows = 0;
    long cap = base->n;
    model_ctx c = {base, 0, malloc(sizeof(double) * (size_t)(cap ? cap : 1)), malloc(sizeof(double) * (size_t)(cap ? cap : 1)),
                   0, 0, 0, 0, 0, 0, ppl, ids, NULL, NULL};
    long *row = NULL;
    if (size > 1) {
        c.rec = calloc((size_t)(cap ? cap : 1) * KREC, sizeof(double));
        if ((row = malloc(sizeof(long) * (size_t)(n > 0 ? n : 1)))) pdq_windows_rows(n, max_len, stride, size, row, NULL);
        c.row = row;
    }
    pdq_code rc = PDQ_OK;
    if (!c.kld || !c.dp || (size > 1 && (!c.rec || !row))) rc = pdq_fail(st, PDQ_ERR_NOMEM, "kld: per-token statistics for %ld tokens", cap);
    if (rc == PDQ_OK)
        rc = pdq_windows_share(fn, ctx, base->vocab, ids, n, max_len, stride, rank ? NULL : label, model_rows, &c,
                               &windows, rank, size, st);
    if (rc == PDQ_OK && size > 1) {
        int *all = malloc(sizeof(int) * (size_t)size); /* every rank's window count */
        rc = all ? pdq_dist_allgather(d, &windows, sizeof windows, all, st) : pdq_fail(st, PDQ_ERR_NOMEM, "out of memory");
        windows = 0;
        for (int r = 0; rc == PDQ_OK && r < size; r++) windows += all[r];
        free(all);
        if (rc == PDQ_OK) rc = model_gather(d, &c, n, max_len, stride, st);
    }
    if (ppl) ppl->windows = windows;
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
    free(c.rec);
    free(row);
    return rc;
}
