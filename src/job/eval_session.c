/* The two static-shape sessions pdq eval scores continuations on: prefill the shared context,
 * append each continuation through the append buckets, rewind to the context. */
#include <stdlib.h>
#include <string.h>

#include "eval_session.h"

static pdq_code rt_prefill(void *ctx, const int32_t *ids, int n, float *last, pdq_status *st) {
    eval_rt_session *s = ctx;
    return pdq_rt_prefill(s->rt, 1, n, ids, NULL, PDQ_PAD_RIGHT, last, NULL, st);
}

static pdq_code rt_append(void *ctx, const int32_t *ids, int n, float *rows, pdq_status *st) {
    eval_rt_session *s = ctx;
    int len = pdq_rt_len(s->rt, 0), S = pdq_rt_max_seq(s->rt);
    int k = pdq_buckets_plan(s->bq, s->nb, len, n, S, s->plan, S);
    if (k < 0) return pdq_fail(st, PDQ_ERR_LIMIT, "append: %d tokens after %d exceed max_seq %d", n, len, S);
    for (int c = 0, done = 0; c < k; done += s->plan[c++]) {
        int Q = s->plan[c];
        if (pdq_rt_append(s->rt, 1, Q, ids + done, NULL, Q, NULL, rows + (size_t)done * s->vocab, st) != PDQ_OK)
            return st->code;
    }
    return PDQ_OK;
}

static pdq_code rt_rewind(void *ctx, int len, pdq_status *st) {
    return pdq_rt_rewind(((eval_rt_session *)ctx)->rt, 0, len, st);
}

pdq_code eval_rt_session_init(eval_rt_session *s, pdq_rt *rt, int vocab, const int *buckets, int nb, pdq_ll_session *ll,
                              pdq_status *st) {
    memset(s, 0, sizeof *s);
    memset(ll, 0, sizeof *ll);
    if (pdq_rt_batch(rt) != 1) return pdq_fail(st, PDQ_ERR_SHAPE, "eval: a session needs a runtime of batch 1, not %d", pdq_rt_batch(rt));
    s->rt = rt;
    s->vocab = vocab;
    s->bq[s->nb++] = 1; /* decode: always there, as in an export */
    for (int i = 0; i < nb && s->nb <= PDQ_MAX_BUCKETS; i++)
        if (buckets[i] > 1) s->bq[s->nb++] = buckets[i];
    if (!(s->plan = malloc(sizeof(int) * (size_t)pdq_rt_max_seq(rt)))) return pdq_fail(st, PDQ_ERR_NOMEM, "eval: bucket plan");
    *ll = (pdq_ll_session){rt_prefill, rt_append, rt_rewind, s, vocab, pdq_rt_max_seq(rt), NULL};
    return PDQ_OK;
}

void eval_rt_session_free(eval_rt_session *s) {
    if (!s) return;
    free(s->plan);
    s->plan = NULL;
}

static pdq_code crt_prefill(void *ctx, const int32_t *ids, int n, float *last, pdq_status *st) {
    return pdq_crt_prefill(ctx, ids, n, last, st);
}

static pdq_code crt_append(void *ctx, const int32_t *ids, int n, float *rows, pdq_status *st) {
    return pdq_crt_append(ctx, ids, n, NULL, rows, st);
}

static pdq_code crt_rewind(void *ctx, int len, pdq_status *st) { return pdq_crt_rewind(ctx, len, st); }

void eval_crt_session_init(pdq_crt *crt, pdq_ll_session *ll) {
    *ll = (pdq_ll_session){crt_prefill, crt_append, crt_rewind, crt, pdq_crt_vocab(crt), pdq_crt_max_seq(crt), NULL};
}
