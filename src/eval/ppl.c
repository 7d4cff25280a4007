/* Perplexity with the strided sliding-window method (HF's "perplexity of fixed-length models"):
 * windows of max_len tokens start every `stride` tokens; a window scores only the tokens that no
 * earlier window scored, so each token's NLL counts exactly once and later windows still give
 * those tokens up to max_len - stride tokens of context. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

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

pdq_code pdq_windows_each(pdq_window_logits_fn fn, void *ctx, int vocab, const int32_t *ids, long n, int max_len,
                          int stride, const char *label, pdq_scored_fn cb, void *cb_ctx, int *windows, pdq_status *st) {
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
    for (long begin = 0, prev_end = 0; prev_end < n; begin += stride) {
        long end = begin + max_len < n ? begin + max_len : n;
        prev_end = end;
        n_windows++;
    }
    pdq_progress bar;
    if (label) pdq_progress_start(&bar, label, n_windows);
    pdq_code rc = PDQ_OK;
    long prev_end = 0;
    int done = 0;
    for (long begin = 0; prev_end < n; begin += stride) {
        long end = begin + max_len < n ? begin + max_len : n;
        int T = (int)(end - begin);
        long first = prev_end > begin + 1 ? prev_end : begin + 1; /* first scored target */
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

pdq_code pdq_ppl_windows(pdq_window_logits_fn fn, void *ctx, int vocab, const int32_t *ids, long n,
                         int max_len, int stride, const char *label, pdq_ppl_result *out,
                         pdq_status *st) {
    memset(out, 0, sizeof *out);
    pdq_code rc = pdq_windows_each(fn, ctx, vocab, ids, n, max_len, stride, label, ppl_rows, out, &out->windows, st);
    if (rc != PDQ_OK) return rc;
    if (!isfinite(out->nll)) return pdq_fail(st, PDQ_ERR_NUMERIC, "perplexity: NLL is not finite");
    double N = (double)out->tokens, mean = out->nll / N;
    out->ppl = exp(mean);
    /* llama.cpp's estimate: the mean NLL's standard error carried through exp() */
    double var = N > 1 ? (out->nll_sq / N - mean * mean) * N / (N - 1) : 0;
    out->ppl_se = N > 1 && var > 0 ? out->ppl * sqrt(var / N) : 0;
    return PDQ_OK;
}

static pdq_code model_window(void *ctx, const int32_t *ids, int T, float *logits, pdq_status *st) {
    return pdq_model_forward((const pdq_model *)ctx, NULL, 1, T, ids, NULL, NULL, logits, 0, st);
}

pdq_code pdq_ppl_model(const pdq_model *m, const int32_t *ids, long n, int max_len, int stride,
                       const char *label, pdq_ppl_result *out, pdq_status *st) {
    return pdq_ppl_windows(model_window, (void *)m, m->cfg.vocab_size, ids, n, max_len, stride, label, out, st);
}
