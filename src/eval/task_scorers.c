/* The scorers of continuations: the reference model with a shared context prefill, a
 * static-shape session (prefill once, append each continuation, rewind) and any window-logits
 * function (one prefill per request), the last two with a hard max_seq limit. */
#include <stdlib.h>
#include <string.h>

#include "pdq/tasks.h"

/* Sums the log-probabilities of targets[0..n) from rows of logits; greedy &= each is the argmax. */
static pdq_code sum_rows(const float *logits, int vocab, const int32_t *targets, int n, double *ll, int *greedy,
                         pdq_status *st) {
    for (int t = 0; t < n; t++) {
        if (targets[t] < 0 || targets[t] >= vocab)
            return pdq_fail(st, PDQ_ERR_ARG, "continuation token %d is outside the vocabulary of %d", targets[t], vocab);
        int top;
        *ll += pdq_ll_token(logits + (size_t)t * vocab, vocab, targets[t], &top);
        *greedy &= top;
    }
    return PDQ_OK;
}

/* ctx + cont without cont's last token, keeping the last keep tokens of ctx + cont; the logits of
 * the continuation are the last n_cont rows. */
static int32_t *join(const int32_t *ctx, int n_ctx, const int32_t *cont, int n_cont, int keep, int *T) {
    int total = n_ctx + n_cont, skip = total > keep ? total - keep : 0;
    *T = total - skip - 1;
    int32_t *ids = malloc((size_t)(*T > 0 ? *T : 1) * sizeof *ids);
    if (!ids) return NULL;
    for (int i = 0; i < *T; i++) {
        int j = skip + i;
        ids[i] = j < n_ctx ? ctx[j] : cont[j - n_ctx];
    }
    return ids;
}

static pdq_code scratch(float **buf, size_t n, pdq_status *st) {
    free(*buf);
    *buf = malloc(n * sizeof **buf);
    return *buf ? PDQ_OK : pdq_fail(st, PDQ_ERR_NOMEM, "out of memory for %zu logits", n);
}

/* ---- reference model ---- */

void pdq_ll_model_free(pdq_ll_model *s) {
    if (!s) return;
    pdq_kvcache_free(&s->kv);
    pdq_kvcache_free(&s->batch);
    free(s->logits);
    free(s->ids);
    s->logits = NULL;
    s->ids = NULL;
    s->rows = 0;
}

/* The harness's path for a request over max_len + 1 tokens: its own window, left-truncated. */
static pdq_code model_truncated(pdq_ll_model *s, const int32_t *ctx, int n_ctx, const int32_t *cont, int n_cont,
                                double *ll, int *greedy, pdq_status *st) {
    const pdq_model *m = s->m;
    int V = m->cfg.vocab_size, T;
    if (n_cont > s->max_len) return pdq_fail(st, PDQ_ERR_LIMIT, "a continuation of %d tokens exceeds max_len %d", n_cont, s->max_len);
    int32_t *ids = join(ctx, n_ctx, cont, n_cont, s->max_len + 1, &T);
    float *lg = ids ? malloc((size_t)T * V * sizeof *lg) : NULL;
    pdq_code rc = lg ? pdq_model_forward(m, NULL, 1, T, ids, NULL, NULL, lg, 0, st)
                     : pdq_fail(st, PDQ_ERR_NOMEM, "out of memory for a window of %d tokens", T);
    *ll = 0;
    *greedy = 1;
    if (rc == PDQ_OK) rc = sum_rows(lg + (size_t)(T - n_cont) * V, V, cont, n_cont, ll, greedy, st);
    free(ids);
    free(lg);
    return rc;
}

/* The continuations' tokens after their first, each as its own forward over the context's
 * cache (logits [T * V]), or, for n > 1, all n as one batch over copies of that cache: one pass
 * over the weights instead of n. A shorter continuation is padded after its end: every position
 * it is scored at comes before the padding, which causal attention keeps out of it. */
#define PDQ_LL_BATCH_MAX_FLOATS ((size_t)64 << 20) /* 256 MiB of batch logits, else one at a time */

static pdq_code model_tails(pdq_ll_model *s, int n_ctx, int32_t *const *cont, const int *n_cont, int n, int T,
                            double *ll, int *greedy, pdq_status *st) {
    const pdq_model *m = s->m;
    int V = m->cfg.vocab_size;
    if (n == 1 || (size_t)n * T * V > PDQ_LL_BATCH_MAX_FLOATS) {
        for (int i = 0; i < n; i++) {
            if (n_cont[i] < 2) continue;
            s->kv.len = n_ctx; /* back to the shared prefix; the slots after it are written anew */
            if (pdq_model_forward(m, &s->kv, 1, n_cont[i] - 1, cont[i], NULL, NULL, s->logits, 0, st) != PDQ_OK ||
                sum_rows(s->logits, V, cont[i] + 1, n_cont[i] - 1, &ll[i], &greedy[i], st) != PDQ_OK)
                return st->code;
        }
        return PDQ_OK;
    }
    if (s->batch.B != n || s->batch.capacity != s->kv.capacity) {
        pdq_kvcache_free(&s->batch);
        if (pdq_kvcache_init(&s->batch, &m->cfg, n, s->kv.capacity, st) != PDQ_OK) return st->code;
    }
    int32_t *ids = realloc(s->ids, (size_t)n * T * sizeof *ids);
    if (!ids) return pdq_fail(st, PDQ_ERR_NOMEM, "out of memory for %d continuations of %d tokens", n, T);
    s->ids = ids;
    for (int b = 0; b < n; b++)
        for (int t = 0; t < T; t++) ids[(size_t)b * T + t] = cont[b][t < n_cont[b] - 1 ? t : n_cont[b] - 1];
    pdq_kvcache_fan_out(&s->batch, &s->kv, n_ctx);
    if (pdq_model_forward(m, &s->batch, n, T, ids, NULL, NULL, s->logits, 0, st) != PDQ_OK) return st->code;
    for (int b = 0; b < n; b++)
        if (sum_rows(s->logits + (size_t)b * T * V, V, cont[b] + 1, n_cont[b] - 1, &ll[b], &greedy[b], st) != PDQ_OK)
            return st->code;
    return PDQ_OK;
}

pdq_code pdq_ll_model_score(void *vs, const int32_t *ctx, int n_ctx, int32_t *const *cont, const int *n_cont, int n,
                            double *ll, int *greedy, pdq_status *st) {
    pdq_ll_model *s = vs;
    const pdq_model *m = s->m;
    int V = m->cfg.vocab_size;
    if (s->max_len <= 0) s->max_len = m->cfg.max_position_embeddings;
    if (n_ctx < 1) return pdq_fail(st, PDQ_ERR_ARG, "a request needs at least one context token");
    int fits = n_ctx <= s->max_len, need = n_ctx, longest = 1;
    for (int i = 0; i < n; i++) {
        fits &= n_ctx + n_cont[i] - 1 <= s->max_len;
        if (n_ctx + n_cont[i] - 1 > need) need = n_ctx + n_cont[i] - 1;
        if (n_cont[i] > longest) longest = n_cont[i];
    }
    if (!fits) {
        for (int i = 0; i < n; i++)
            if (model_truncated(s, ctx, n_ctx, cont[i], n_cont[i], &ll[i], &greedy[i], st) != PDQ_OK) return st->code;
        return PDQ_OK;
    }
    /* cache and logits sized by what the requests need (a model's max length can be 128k) */
    if (need > s->kv.capacity) {
        int cap = 256;
        while (cap < need) cap *= 2;
        if (cap > s->max_len) cap = s->max_len;
        pdq_kvcache_free(&s->kv);
        if (pdq_kvcache_init(&s->kv, &m->cfg, 1, cap, st) != PDQ_OK) return st->code;
    }
    int T = longest - 1;
    size_t batch = (size_t)n * T * V <= PDQ_LL_BATCH_MAX_FLOATS ? (size_t)n * T : (size_t)T;
    if ((int)batch + 1 > s->rows) {
        if (scratch(&s->logits, (batch + 1) * V, st) != PDQ_OK) return st->code;
        s->rows = (int)batch + 1;
    }
    /* the context once: its last row predicts every continuation's first token */
    s->kv.len = 0;
    float *first = s->logits + (size_t)(s->rows - 1) * V; /* the last row: never a tail's */
    if (pdq_model_forward(m, &s->kv, 1, n_ctx, ctx, NULL, NULL, first, 1, st) != PDQ_OK) return st->code;
    for (int i = 0; i < n; i++) {
        ll[i] = 0;
        greedy[i] = 1;
        if (sum_rows(first, V, cont[i], 1, &ll[i], &greedy[i], st) != PDQ_OK) return st->code;
    }
    return T > 0 ? model_tails(s, n_ctx, cont, n_cont, n, T, ll, greedy, st) : PDQ_OK;
}

/* ---- static-shape session (static graphs, Circle pair): prefill once, append, rewind ---- */

void pdq_ll_session_free(pdq_ll_session *s) {
    if (!s) return;
    free(s->logits);
    s->logits = NULL;
}

static pdq_code over_max_seq(int n_ctx, const int *n_cont, int n, int max_seq, pdq_status *st) {
    for (int i = 0; i < n; i++)
        if (n_ctx + n_cont[i] - 1 > max_seq)
            return pdq_fail(st, PDQ_ERR_LIMIT, "a request of %d tokens exceeds max_seq %d", n_ctx + n_cont[i] - 1, max_seq);
    return PDQ_OK;
}

pdq_code pdq_ll_session_score(void *vs, const int32_t *ctx, int n_ctx, int32_t *const *cont, const int *n_cont, int n,
                              double *ll, int *greedy, pdq_status *st) {
    pdq_ll_session *s = vs;
    int V = s->vocab;
    if (n_ctx < 1) return pdq_fail(st, PDQ_ERR_ARG, "a request needs at least one context token");
    if (over_max_seq(n_ctx, n_cont, n, s->max_seq, st) != PDQ_OK) return st->code;
    if (!s->logits && scratch(&s->logits, (size_t)s->max_seq * V, st) != PDQ_OK) return st->code;
    /* row max_seq-1 is free: a continuation appends at most max_seq - n_ctx <= max_seq - 1 rows */
    float *first = s->logits + (size_t)(s->max_seq - 1) * V;
    if (s->prefill(s->ctx, ctx, n_ctx, first, st) != PDQ_OK) return st->code;
    for (int i = 0; i < n; i++) {
        ll[i] = 0;
        greedy[i] = 1;
        if (sum_rows(first, V, cont[i], 1, &ll[i], &greedy[i], st) != PDQ_OK) return st->code;
        if (n_cont[i] < 2) continue;
        if (s->append(s->ctx, cont[i], n_cont[i] - 1, s->logits, st) != PDQ_OK ||
            sum_rows(s->logits, V, cont[i] + 1, n_cont[i] - 1, &ll[i], &greedy[i], st) != PDQ_OK)
            return st->code;
        /* a sliding layer's ring that wrapped into the context cannot go back: prefill it again */
        if (s->rewind(s->ctx, n_ctx, st) != PDQ_OK &&
            (st->code != PDQ_ERR_UNSUPPORTED || s->prefill(s->ctx, ctx, n_ctx, first, st) != PDQ_OK))
            return st->code;
    }
    return PDQ_OK;
}

/* ---- window-logits function (static graphs, Circle pair) ---- */

void pdq_ll_window_free(pdq_ll_window *s) {
    if (!s) return;
    free(s->logits);
    s->logits = NULL;
}

pdq_code pdq_ll_window_score(void *vs, const int32_t *ctx, int n_ctx, int32_t *const *cont, const int *n_cont, int n,
                             double *ll, int *greedy, pdq_status *st) {
    pdq_ll_window *s = vs;
    if (over_max_seq(n_ctx, n_cont, n, s->max_seq, st) != PDQ_OK) return st->code;
    if (!s->logits && scratch(&s->logits, (size_t)s->max_seq * s->vocab, st) != PDQ_OK) return st->code;
    for (int i = 0; i < n; i++) {
        int T;
        int32_t *ids = join(ctx, n_ctx, cont[i], n_cont[i], n_ctx + n_cont[i], &T);
        if (!ids) return pdq_fail(st, PDQ_ERR_NOMEM, "out of memory for a window of %d tokens", T);
        pdq_code rc = s->fn(s->ctx, ids, T, s->logits, st);
        free(ids);
        ll[i] = 0;
        greedy[i] = 1;
        if (rc == PDQ_OK) rc = sum_rows(s->logits + (size_t)(T - n_cont[i]) * s->vocab, s->vocab, cont[i], n_cont[i], &ll[i], &greedy[i], st);
        if (rc != PDQ_OK) return rc;
    }
    return PDQ_OK;
}
