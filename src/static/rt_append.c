/* Append (multi-turn) in buckets of Q tokens, and decode as its Q = 1 case. Keys inside a full
 * layer's graph are concat(past[0:max_seq-Q], new[Q]), inside a sliding one's concat(ring, new[Q]):
 * a query row sees the row's valid past slots in its window plus the new tokens up to itself
 * (causal tail); deltas are written at the slots of positions len[b] + q (rt_contract.h). */
#include <stdlib.h>
#include <string.h>

#include "contract/rt_contract.h"
#include "rt_internal.h"

/* Fills ids/mask/cos/sin/slot for one bucket; r[b] real tokens of row b start at tok[b]. */
static void bucket_inputs(pdq_rt *rt, int Q, const int32_t *ids, int T, const int *start, const int *r) {
    int L = rt->max_seq, rd = rt->rd;
    for (int b = 0; b < rt->B; b++) {
        for (int q = 0; q < Q; q++) {
            size_t bq = (size_t)b * Q + q;
            int real = q < r[b];
            rt->ids[bq] = real ? ids[(size_t)b * T + start[b] + q] : 0;
            int p = rt->len[b] + q;
            rt->pos[bq] = real ? p : -1;
            pdq_ctr_rope_rows(&rt->tab, rd, real ? p : 0, &rt->row, bq);
            if (rt->has_full) pdq_ctr_append_mask_row(L, Q, rt->len[b], q, real, 0, rt->o.mask_fill, rt->mask + bq * L);
            if (rt->ring)
                pdq_ctr_ring_mask_row(rt->ring, rt->window, Q, rt->len[b], q, real, rt->o.mask_fill,
                                      rt->rmask + bq * (size_t)(rt->ring + Q));
        }
    }
}

pdq_code pdq_rt_append(pdq_rt *rt, int B, int T, const int32_t *ids, const int *n, int Q,
                       float *logits, float *all_logits, pdq_status *st) {
    int L = rt->max_seq, D = rt->D, V = rt->V;
    if (B != rt->B) return pdq_fail(st, PDQ_ERR_SHAPE, "append: batch of %d rows, runtime built for %d", B, rt->B);
    if (Q < 1 || Q >= L)
        return pdq_fail(st, PDQ_ERR_LIMIT, "append: bucket of %d tokens too large: must be in [1, max_seq-1 = %d]", Q, L - 1);
    if (T < 1) return pdq_fail(st, PDQ_ERR_ARG, "append: no tokens");
    int *len = malloc(sizeof(int) * (size_t)B * 3);
    if (!len) return pdq_fail(st, PDQ_ERR_NOMEM, "append");
    int *r = len + B, *start = r + B;
    int maxn = 0;
    pdq_code rc = PDQ_OK;
    for (int b = 0; b < B && rc == PDQ_OK; b++) {
        int nb = n ? n[b] : T;
        if (nb < 0 || nb > T) rc = pdq_fail(st, PDQ_ERR_ARG, "append: row %d has %d tokens of %d", b, nb, T);
        else if (rt->len[b] + nb > L)
            rc = pdq_fail(st, PDQ_ERR_LIMIT, "append: cache full: row %d holds %d tokens, %d more exceed max_seq %d",
                          b, rt->len[b], nb, L);
        if (nb > maxn) maxn = nb;
    }
    if (rc == PDQ_OK && maxn == 0) rc = pdq_fail(st, PDQ_ERR_ARG, "append: no row has tokens");
    /* Check every bucket fits before touching the cache: a row's past must fit max_seq - Q. */
    int n_buckets = (maxn + Q - 1) / Q;
    for (int b = 0; b < B && rc == PDQ_OK && rt->has_full; b++) { /* a ring takes any past */
        int nb = n ? n[b] : T;
        for (int c = 0; c * Q < nb && rc == PDQ_OK; c++)
            if (rt->len[b] + c * Q > L - Q)
                rc = pdq_fail(st, PDQ_ERR_LIMIT, "append: bucket %d of row %d: past of %d tokens exceeds the %d slots of a Q=%d graph (max_seq %d); use a smaller bucket",
                              c, b, rt->len[b] + c * Q, L - Q, Q, L);
    }
    rt_stack *s = NULL;
    if (rc == PDQ_OK) rc = pdq_rt_stack(rt, RT_APPEND, Q, &s, st);
    if (rc == PDQ_OK && all_logits && !rt->logit_buf &&
        !(rt->logit_buf = malloc(sizeof(float) * (size_t)B * L * V)))
        rc = pdq_fail(st, PDQ_ERR_NOMEM, "append: logits");
    memcpy(len, rt->len, sizeof(int) * (size_t)B); /* restored on failure */
    for (int c = 0; c < n_buckets && rc == PDQ_OK; c++) {
        for (int b = 0; b < B; b++) {
            int nb = n ? n[b] : T;
            start[b] = c * Q;
            r[b] = nb - c * Q < 0 ? 0 : (nb - c * Q > Q ? Q : nb - c * Q);
        }
        bucket_inputs(rt, Q, ids, T, start, r);
        float *h = NULL;
        rc = pdq_rt_embed(rt, Q, rt->ids, rt->hid_a, st);
        if (rc == PDQ_OK) rc = pdq_rt_run_layers(rt, s, &h, st);
        if (rc != PDQ_OK) break;
        for (int b = 0; b < B; b++)
            if (r[b] > 0 && start[b] + r[b] == (n ? n[b] : T))
                memcpy(rt->last_h + (size_t)b * D, h + ((size_t)b * Q + r[b] - 1) * D, sizeof(float) * (size_t)D);
        if (all_logits) {
            rc = pdq_rt_head(rt, Q, h, rt->logit_buf, st);
            for (int b = 0; b < B && rc == PDQ_OK; b++)
                for (int q = 0; q < r[b]; q++)
                    memcpy(all_logits + ((size_t)b * T + start[b] + q) * V, rt->logit_buf + ((size_t)b * Q + q) * V,
                           sizeof(float) * (size_t)V);
        }
        for (int b = 0; b < B; b++) rt->len[b] += r[b];
    }
    if (rc == PDQ_OK && logits) {
        float *tmp = rt->logit_buf ? rt->logit_buf : NULL;
        if (!tmp && !(tmp = rt->logit_buf = malloc(sizeof(float) * (size_t)B * L * V)))
            rc = pdq_fail(st, PDQ_ERR_NOMEM, "append: logits");
        if (rc == PDQ_OK) rc = pdq_rt_head(rt, 1, rt->last_h, tmp, st);
        for (int b = 0; b < B && rc == PDQ_OK; b++)
            if ((n ? n[b] : T) > 0) memcpy(logits + (size_t)b * V, tmp + (size_t)b * V, sizeof(float) * (size_t)V);
    }
    if (rc != PDQ_OK) memcpy(rt->len, len, sizeof(int) * (size_t)B);
    free(len);
    return rc;
}

pdq_code pdq_rt_decode(pdq_rt *rt, int B, const int32_t *ids, float *logits, pdq_status *st) {
    if (B != rt->B) return pdq_fail(st, PDQ_ERR_SHAPE, "decode: batch of %d rows, runtime built for %d", B, rt->B);
    for (int b = 0; b < B; b++) {
        if (rt->len[b] == 0) return pdq_fail(st, PDQ_ERR_ARG, "decode: row %d has no prompt (prefill first)", b);
        if (rt->len[b] >= rt->max_seq)
            return pdq_fail(st, PDQ_ERR_LIMIT, "decode: cache full: row %d holds %d tokens (max_seq %d)", b,
                            rt->len[b], rt->max_seq);
    }
    return pdq_rt_append(rt, B, 1, ids, NULL, 1, logits, NULL, st);
}
