/* Perplexity with the strided sliding-window method (HF's "perplexity of fixed-length models"):
 * windows of max_len tokens start every `stride` tokens; a window scores only the tokens that no
 * earlier window scored, so each token's NLL counts exactly once and later windows still give
 * those tokens up to max_len - stride tokens of context. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dist/dist.h"
#include "pdq/eval.h"
#include "pdq/progress.h"
#include "windows.h"

double pdq_nll_rows(const float *logits, const int32_t *targets, int n, int vocab) {
    double total = 0.0;
    for (int r = 0; r < n; r++) {
        const float *l = logits + (size_t)r * vocab;
        float mx = l[0];
        for (int i = 1; i < vocab; i++)
            if (l[i] > mx) mx = l[i];
        double sum = 0.0;
        for (int i = 0; i < vocab; i++) sum += exp((double)l[i] - mx);
        total += log(sum) + mx - (double)l[targets[r]];
    }
    return total;
}

pdq_code pdq_windows_share(pdq_window_logits_fn fn, void *ctx, int vocab, const int32_t *ids, long n, int max_len,
                           int stride, const char *label, pdq_scored_fn cb, void *cb_ctx, int *windows, int rank,
                           int size, pdq_status *st) {
    if (windows) *windows = 0;
    if (max_len < 2 || stride < 1 || stride > max_len)
        return pdq_fail(st, PDQ_ERR_ARG, "perplexity: need max-len >= 2 and 1 <= stride <= max-len (got %d, %d)", max_len, stride);
    if (n < 2) return pdq_fail(st, PDQ_ERR_ARG, "perplexity: need at least 2 tokens, got %ld", n);
    for (long i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= vocab)
            return pdq_fail(st, PDQ_ERR_ARG, "perplexity: token id %d at %ld is outside the vocabulary [0, %d)", ids[i], i, vocab);
    float *logits = malloc((size_t)max_len * vocab * sizeof *logits);
    if (!logits) return pdq_fail(st, PDQ_ERR_NOMEM, "perplexity: logits for %d tokens", max_len);
    long n_windows = 0;
    for (long begin = 0, prev_end = 0, w = 0; prev_end < n; begin += stride, w++) {
        long end = begin + max_len < n ? begin + max_len : n;
        prev_end = end;
        n_windows += w % size == rank;
    }
    pdq_progress bar;
    if (label) pdq_progress_start(&bar, label, n_windows);
    pdq_code rc = PDQ_OK;
    long prev_end = 0;
    int done = 0;
    for (long begin = 0, w = 0; prev_end < n; begin += stride, w++) {
        long end = begin + max_len < n ? begin + max_len : n;
        int T = (int)(end - begin);
        long first = prev_end > begin + 1 ? prev_end : begin + 1; /* first scored target */
        if (w % size != rank) { /* another rank's window */
            prev_end = end;
            continue;
        }
        if ((rc = fn(ctx, ids + begin, T, logits, st)) != PDQ_OK) break;
        /* The logits at position p predict token p+1. */
        int from = (int)(first - 1 - begin), count = (int)(end - first);
        if (count > 0 && (rc = cb(cb_ctx, logits, from, count, ids + first, vocab, st)) != PDQ_OK) break;
        done++;
        prev_end = end;
        if (label) pdq_progress_update(&bar, done);
    }
    if (label) pdq_progress_finish(&bar);
    free(logits);
    if (windows) *windows = done;
    return rc;
}

long pdq_windows_rows(long n, int max_len, int stride, int size, long *row, int *owner) {
    long t = 0;
    for (long i = 0; row && i < n; i++) row[i] = -1;
    for (long begin = 0, prev_end = 0, w = 0; prev_end < n; begin += stride, w++) {
        long end = begin + max_len < n ? begin + max_len : n;
        for (long p = (prev_end > begin + 1 ? prev_end : begin + 1); p < end; p++, t++) {
            if (row) row[p] = t;
            if (owner) owner[t] = (int)(w % size);
        }
        prev_end = end;
    }
    return t;
}

pdq_code pdq_windows_each(pdq_window_logits_fn fn, void *ctx, int vocab, const int32_t *ids, long n, int max_len,
                          int stride, const char *label, pdq_scored_fn cb, void *cb_ctx, int *windows, pdq_status *st) {
    return pdq_windows_share(fn, ctx, vocab, ids, n, max_len, stride, label, cb, cb_ctx, windows, 0, 1, st);
}

static pdq_code ppl_rows(void *ctx, const float *logits, int from, int count, const int32_t *targets, int vocab,
                         pdq_status *st) {
    (void)st;
    pdq_ppl_result *out = ctx;
    for (int r = 0; r < count; r++) {
        double nll = pdq_nll_rows(logits + (size_t)(from + r) * vocab, targets + r, 1, vocab);
        out->nll += nll;
        out->nll_sq += nll * nll;
    }
    out->tokens += count;
    return PDQ_OK;
}

/* A split evaluation's rows: each scored token's NLL at its position, summed later in token order. */
typedef struct {
    const int32_t *ids;
    double *nll; /* [n], 0 where another rank scores */
    long tokens;
} split_rows_ctx;

static pdq_code split_rows(void *ctx, const float *logits, int from, int count, const int32_t *targets, int vocab,
                           pdq_status *st) {
    (void)st;
    split_rows_ctx *c = ctx;
    for (int r = 0; r < count; r++)
        c->nll[targets + r - c->ids] = pdq_nll_rows(logits + (size_t)(from + r) * vocab, targets + r, 1, vocab);
    c->tokens += count;
    return PDQ_OK;
}

static pdq_code ppl_finish(pdq_ppl_result *out, pdq_status *st) {
    if (!isfinite(out->nll)) return pdq_fail(st, PDQ_ERR_NUMERIC, "perplexity: NLL is not finite");
    double N = (double)out->tokens, mean = out->nll / N;
    out->ppl = exp(mean);
    /* llama.cpp's estimate: the mean NLL's standard error carried through exp() */
    double var = N > 1 ? (out->nll_sq / N - mean * mean) * N / (N - 1) : 0;
    out->ppl_se = N > 1 && var > 0 ? out->ppl * sqrt(var / N) : 0;
    return PDQ_OK;
}

pdq_code pdq_ppl_windows(pdq_window_logits_fn fn, void *ctx, int vocab, const int32_t *ids, long n,
                         int max_len, int stride, const char *label, pdq_ppl_result *out,
                         pdq_status *st) {
    memset(out, 0, sizeof *out);
    pdq_code rc = pdq_windows_each(fn, ctx, vocab, ids, n, max_len, stride, label, ppl_rows, out, &out->windows, st);
    return rc ? rc : ppl_finish(out, st);
}

pdq_code pdq_ppl_windows_split(const struct pdq_dist *d, pdq_window_logits_fn fn, void *ctx, int vocab,
                               const int32_t *ids, long n, int max_len, int stride, const char *label,
                               pdq_ppl_result *out, pdq_status *st) {
    int rank = pdq_dist_rank(d), size = pdq_dist_size(d);
    if (size == 1) return pdq_ppl_windows(fn, ctx, vocab, ids, n, max_len, stride, label, out, st);
    memset(out, 0, sizeof *out);
    if (n < 0 || (size_t)n > ((size_t)1 << 40) / ((size_t)size * sizeof(double)))
        return pdq_fail(st, PDQ_ERR_ARG, "perplexity: %ld tokens over %d ranks exceed the gather limit", n, size);
    split_rows_ctx c = {ids, calloc((size_t)n + 1, sizeof(double)), 0};
    double *all = malloc(((size_t)n + 1) * size * sizeof(double));
    long counts[2];
    long *allc = malloc(2 * (size_t)size * sizeof(long));
    pdq_code rc = c.nll && all && allc ? PDQ_OK : pdq_fail(st, PDQ_ERR_NOMEM, "perplexity: NLLs of %ld tokens", n);
    if (!rc)
        rc = pdq_windows_share(fn, ctx, vocab, ids, n, max_len, stride, rank == 0 ? label : NULL, split_rows, &c,
                          &out->windows, rank, size, st);
    counts[0] = c.tokens, counts[1] = out->windows;
    /* every rank's token NLLs (zero at the tokens others score: adding them is exact), then one
     * sum in token order: the one-process run's order, for any number of ranks */
    if (!rc) rc = pdq_dist_allgather(d, c.nll, ((size_t)n + 1) * sizeof(double), all, st);
    if (!rc) rc = pdq_dist_allgather(d, counts, sizeof counts, allc, st);
    if (!rc) {
        out->windows = 0;
        for (int r = 0; r < size; r++) out->tokens += allc[2 * r], out->windows += (int)allc[2 * r + 1];
        if (rank == 0 && label) { /* the work split, once */
            fprintf(stderr, "%s: windows per rank", label);
            for (int r = 0; r < size; r++) fprintf(stderr, " %s%ld", r ? "| " : "", allc[2 * r + 1]);
            fprintf(stderr, "\n");
        }
        for (long t = 0; t < n; t++) {
            double v = all[t];
            for (int r = 1; r < size; r++) v += all[(size_t)r * (n + 1) + t];
            if (v != 0.0) out->nll += v, out->nll_sq += v * v;
        }
    }
    free(c.nll);
    free(all);
    free(allc);
    return rc ? rc : ppl_finish(out, st);
}

static pdq_code model_window(void *ctx, const int32_t *ids, int T, float *logits, pdq_status *st) {
    return pdq_model_forward((const pdq_model *)ctx, NULL, 1, T, ids, NULL, NULL, logits, 0, st);
}

pdq_code pdq_ppl_model(const pdq_model *m, const int32_t *ids, long n, int max_len, int stride,
                       const char *label, pdq_ppl_result *out, pdq_status *st) {
    return pdq_ppl_windows(model_window, (void *)m, m->cfg.vocab_size, ids, n, max_len, stride, label, out, st);
}

pdq_code pdq_ppl_model_split(const struct pdq_dist *d, const pdq_model *m, const int32_t *ids, long n, int max_len,
                             int stride, const char *label, pdq_ppl_result *out, pdq_status *st) {
    return pdq_ppl_windows_split(d, model_window, (void *)m, m->cfg.vocab_size, ids, n, max_len, stride, label, out, st);
}
