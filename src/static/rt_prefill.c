/* Prefill: pad to max_seq, compact positions, prefill mask, compact K/V write-back, logits. */
#include <stdlib.h>
#include <string.h>

#include "contract/rt_contract.h"
#include "rt_internal.h"

/* Checks one row's padding layout; returns its real-token count or -1. */
static int row_layout(const uint8_t *mask, int T, pdq_padding pad) {
    if (!mask) return T;
    int n = 0;
    for (int t = 0; t < T; t++) {
        int r = mask[t] != 0;
        if (t > 0) {
            int prev = mask[t - 1] != 0;
            if (pad == PDQ_PAD_LEFT && prev && !r) return -1;  /* real then padding */
            if (pad == PDQ_PAD_RIGHT && !prev && r) return -1; /* padding then real */
        }
        n += r;
    }
    return n;
}

pdq_code pdq_rt_prefill(pdq_rt *rt, int B, int T, const int32_t *ids, const uint8_t *mask,
                        pdq_padding pad, float *logits, float *all_logits, pdq_status *st) {
    int S = rt->max_seq, rd = rt->rd, D = rt->D, V = rt->V;
    if (B != rt->B) return pdq_fail(st, PDQ_ERR_SHAPE, "prefill: batch of %d rows, runtime built for %d", B, rt->B);
    if (T < 1) return pdq_fail(st, PDQ_ERR_ARG, "prefill: empty prompt");
    if (T > S) return pdq_fail(st, PDQ_ERR_LIMIT, "prefill: prompt of %d tokens longer than max_seq %d", T, S);
    if (pad != PDQ_PAD_LEFT && pad != PDQ_PAD_RIGHT) return pdq_fail(st, PDQ_ERR_ARG, "prefill: padding side %d", (int)pad);
    int *n_real = malloc(sizeof(int) * (size_t)B);
    int32_t *pos = malloc(sizeof(int32_t) * (size_t)B * S);
    if (!n_real || !pos) { free(n_real); free(pos); return pdq_fail(st, PDQ_ERR_NOMEM, "prefill"); }
    pdq_code rc = PDQ_OK;
    for (int b = 0; b < B && rc == PDQ_OK; b++) {
        n_real[b] = row_layout(mask ? mask + (size_t)b * T : NULL, T, pad);
        if (n_real[b] < 0)
            rc = pdq_fail(st, PDQ_ERR_ARG, "prefill: row %d: padding is not all on the %s", b,
                          pad == PDQ_PAD_LEFT ? "left" : "right");
        else if (n_real[b] == 0)
            rc = pdq_fail(st, PDQ_ERR_ARG, "prefill: row %d has no real token", b);
    }
    if (rc != PDQ_OK) { free(n_real); free(pos); return rc; }

    /* Graph position i of row b <- caller position t (-1: padding added by the runtime). */
    int shift = pad == PDQ_PAD_LEFT ? S - T : 0;
    for (int b = 0; b < B; b++) {
        int first = pad == PDQ_PAD_LEFT ? S - n_real[b] : 0;
        for (int i = 0; i < S; i++) {
            int t = i - shift;
            int real = i >= first && i < first + n_real[b];
            size_t bi = (size_t)b * S + i;
            rt->ids[bi] = (t >= 0 && t < T) ? ids[(size_t)b * T + t] : 0;
            if (!real) rt->ids[bi] = 0; /* padding embeds token 0; it is masked anyway */
            pos[bi] = real ? i - first : -1;
            rt->pos[bi] = pos[bi];
            pdq_ctr_rope_rows(&rt->tab, rd, pos[bi], &rt->row, bi);
        }
        /* one mask per attention type: full layers see every earlier key, ring layers the window */
        pdq_ctr_prefill_mask(pos + (size_t)b * S, S, 0, rt->o.mask_fill, rt->mask + (size_t)b * S * S);
        if (rt->ring)
            pdq_ctr_prefill_mask(pos + (size_t)b * S, S, rt->window, rt->o.mask_fill, rt->rmask + (size_t)b * S * S);
    }
    rt_stack *s;
    float *h = NULL;
    rc = pdq_rt_stack(rt, RT_PREFILL, S, &s, st);
    if (rc == PDQ_OK) rc = pdq_rt_embed(rt, S, rt->ids, rt->hid_a, st);
    if (rc == PDQ_OK) rc = pdq_rt_run_layers(rt, s, &h, st);
    if (rc == PDQ_OK) {
        for (int b = 0; b < B; b++) rt->len[b] = n_real[b];
        for (int b = 0; b < B; b++) {
            int last = (pad == PDQ_PAD_LEFT ? S : n_real[b]) - 1;
            memcpy(rt->last_h + (size_t)b * D, h + ((size_t)b * S + last) * D, sizeof(float) * (size_t)D);
        }
    }
    if (rc == PDQ_OK && logits) rc = pdq_rt_head(rt, 1, rt->last_h, logits, st);
    if (rc == PDQ_OK && all_logits) {
        if (!rt->logit_buf && !(rt->logit_buf = malloc(sizeof(float) * (size_t)B * S * V)))
            rc = pdq_fail(st, PDQ_ERR_NOMEM, "prefill: all-position logits");
        if (rc == PDQ_OK) rc = pdq_rt_head(rt, S, h, rt->logit_buf, st);
        if (rc == PDQ_OK)
            for (int b = 0; b < B; b++)
                memcpy(all_logits + (size_t)b * T * V, rt->logit_buf + ((size_t)b * S + shift) * V,
                       sizeof(float) * (size_t)T * V);
    }
    if (rc != PDQ_OK) pdq_rt_reset(rt);
    free(n_real);
    free(pos);
    return rc;
}

pdq_code pdq_rt_prefill_rows(pdq_rt *rt, int B, const int32_t *const *ids, const int *lens,
                             pdq_padding pad, float *logits, pdq_status *st) {
    if (B != rt->B) return pdq_fail(st, PDQ_ERR_SHAPE, "prefill: batch of %d rows, runtime built for %d", B, rt->B);
    int T = 0;
    for (int b = 0; b < B; b++) {
        if (lens[b] < 1) return pdq_fail(st, PDQ_ERR_ARG, "prefill: row %d has no token", b);
        if (lens[b] > T) T = lens[b];
    }
    if (T > rt->max_seq)
        return pdq_fail(st, PDQ_ERR_LIMIT, "prefill: prompt of %d tokens longer than max_seq %d", T, rt->max_seq);
    int32_t *pid = calloc((size_t)B * T, sizeof(int32_t));
    uint8_t *pm = calloc((size_t)B * T, 1);
    if (!pid || !pm) { free(pid); free(pm); return pdq_fail(st, PDQ_ERR_NOMEM, "prefill"); }
    for (int b = 0; b < B; b++) {
        int off = pad == PDQ_PAD_LEFT ? T - lens[b] : 0;
        memcpy(pid + (size_t)b * T + off, ids[b], sizeof(int32_t) * (size_t)lens[b]);
        memset(pm + (size_t)b * T + off, 1, (size_t)lens[b]);
    }
    pdq_code rc = pdq_rt_prefill(rt, B, T, pid, pm, pad, logits, NULL, st);
    free(pid);
    free(pm);
    return rc;
}

pdq_code pdq_rt_window_logits(void *ctx, const int32_t *ids, int T, float *logits, pdq_status *st) {
    pdq_rt *rt = ctx;
    if (rt->B != 1) return pdq_fail(st, PDQ_ERR_SHAPE, "window logits need a runtime of batch 1, not %d", rt->B);
    return pdq_rt_prefill(rt, 1, T, ids, NULL, PDQ_PAD_RIGHT, NULL, logits, st);
}
