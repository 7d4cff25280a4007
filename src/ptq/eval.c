/* Quality of the fake-quant static runtime: perplexity through the prefill graph and step-by-step
 * logits against the FP32 reference model. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pdq/eval.h"
#include "ptq_internal.h"

static pdq_code open_rt(const pdq_model *m, int max_seq, const pdq_static_opts *so, pdq_ptq *ptq, pdq_rt **rt,
                        pdq_status *st) {
    pdq_code rc = pdq_rt_create(m, 1, max_seq, so, rt, st);
    if (rc != PDQ_OK) return rc;
    if (ptq) {
        pdq_ptq_attach(ptq, *rt);
        pdq_ptq_set_mode(ptq, ptq->o.adtype == PDQ_ADT_FLOAT ? PDQ_PTQ_OFF : PDQ_PTQ_FAKEQUANT);
    }
    return PDQ_OK;
}

static void close_rt(pdq_rt *rt, pdq_ptq *ptq) {
    if (ptq) {
        pdq_ptq_set_mode(ptq, PDQ_PTQ_OFF);
        pdq_ptq_forget_graphs(ptq);
    }
    pdq_rt_free(rt);
}

pdq_code pdq_ptq_ppl_static(const pdq_model *m, int max_seq, const pdq_static_opts *so, pdq_ptq *ptq,
                            const int32_t *ids, long n, const char *label, double *ppl, pdq_status *st) {
    pdq_rt *rt;
    pdq_code rc = open_rt(m, max_seq, so, ptq, &rt, st);
    if (rc != PDQ_OK) return rc;
    pdq_ppl_result r;
    rc = pdq_ppl_windows(pdq_rt_window_logits, rt, m->cfg.vocab_size, ids, n, max_seq, max_seq, label, &r, st);
    if (rc == PDQ_OK) *ppl = r.ppl;
    close_rt(rt, ptq);
    return rc;
}

void pdq_ptq_verify_free(pdq_ptq_verify_result *r) {
    free(r->step_mean); free(r->step_max); free(r->step_peir);
    free(r->step_top1); free(r->step_prompt); free(r->step_index);
    for (int i = 0; i < r->n_prompts; i++) {
        if (r->tok_quant) free(r->tok_quant[i]);
        if (r->tok_ref) free(r->tok_ref[i]);
    }
    free(r->tok_quant);
    free(r->tok_ref);
    memset(r, 0, sizeof *r);
}

/* Reference greedy continuation of one prompt (whole-sequence recompute: small and obviously right). */
static pdq_code ref_greedy(const pdq_model *ref, const int32_t *prompt, int len, int n_new, int32_t *out,
                           float *logits, int32_t *seq, pdq_status *st) {
    memcpy(seq, prompt, sizeof(int32_t) * (size_t)len);
    for (int k = 0; k < n_new; k++) {
        pdq_code rc = pdq_model_forward(ref, NULL, 1, len + k, seq, NULL, NULL, logits, 1, st);
        if (rc != PDQ_OK) return rc;
        out[k] = seq[len + k] = pdq_argmax(logits, ref->cfg.vocab_size);
    }
    return PDQ_OK;
}

/* The in-memory runtime as a step runner: prompt at positions 0..n-1 (right padding), prefill
 * logits from the head over every row, the way the exported whole-model prefill computes them. */
typedef struct {
    pdq_rt *rt;
    float *all;
    int V;
} rt_steps;

static pdq_code rt_prefill(void *ctx, const int32_t *ids, int n, float *logits, pdq_status *st) {
    rt_steps *r = ctx;
    pdq_rt_reset(r->rt);
    pdq_code rc = pdq_rt_prefill(r->rt, 1, n, ids, NULL, PDQ_PAD_RIGHT, NULL, r->all, st);
    if (rc == PDQ_OK) memcpy(logits, r->all + (size_t)(n - 1) * r->V, sizeof(float) * (size_t)r->V);
    return rc;
}

static pdq_code rt_decode(void *ctx, int32_t id, float *logits, pdq_status *st) {
    rt_steps *r = ctx;
    return pdq_rt_decode(r->rt, 1, &id, logits, st);
}

pdq_code pdq_ptq_verify(const pdq_model *ref, const pdq_model *m, int max_seq, const pdq_static_opts *so,
                        pdq_ptq *ptq, const int32_t *const *prompts, const int *lens, int n_prompts,
                        int steps, pdq_ptq_verify_result *r, pdq_status *st) {
    memset(r, 0, sizeof *r);
    int maxlen = 0;
    for (int i = 0; i < n_prompts; i++) maxlen = lens[i] > maxlen ? lens[i] : maxlen;
    if (maxlen + steps > max_seq)
        return pdq_fail(st, PDQ_ERR_LIMIT, "verify: prompt of %d tokens + %d steps exceeds max_seq %d", maxlen, steps, max_seq);
    rt_steps rs = {NULL, malloc(sizeof(float) * (size_t)m->cfg.vocab_size * (size_t)(maxlen ? maxlen : 1)), m->cfg.vocab_size};
    if (!rs.all) return pdq_fail(st, PDQ_ERR_NOMEM, "verify");
    pdq_code rc = open_rt(m, max_seq, so, ptq, &rs.rt, st);
    if (rc == PDQ_OK) {
        pdq_step_runner run = {rt_prefill, rt_decode, &rs};
        rc = pdq_verify_steps(ref, &run, prompts, lens, n_prompts, steps, r, st);
        close_rt(rs.rt, ptq);
    }
    free(rs.all);
    return rc;
}

pdq_code pdq_verify_steps(const pdq_model *ref, const pdq_step_runner *run, const int32_t *const *prompts,
                          const int *lens, int n_prompts, int steps, pdq_ptq_verify_result *r, pdq_status *st) {
    memset(r, 0, sizeof *r);
    int V = ref->cfg.vocab_size, per = steps + 1, N = n_prompts * per, maxlen = 0;
    for (int i = 0; i < n_prompts; i++) maxlen = lens[i] > maxlen ? lens[i] : maxlen;
    r->n = N;
    r->n_prompts = n_prompts;
    r->steps = steps;
    r->step_mean = calloc((size_t)N, sizeof(double));
    r->step_max = calloc((size_t)N, sizeof(double));
    r->step_peir = calloc((size_t)N, sizeof(double));
    r->step_top1 = calloc((size_t)N, sizeof(int));
    r->step_prompt = calloc((size_t)N, sizeof(int));
    r->step_index = calloc((size_t)N, sizeof(int));
    r->tok_quant = calloc((size_t)n_prompts, sizeof(int32_t *));
    r->tok_ref = calloc((size_t)n_prompts, sizeof(int32_t *));
    float *lq = malloc(sizeof(float) * (size_t)V), *lr = malloc(sizeof(float) * (size_t)V);
    int32_t *seq = malloc(sizeof(int32_t) * (size_t)(maxlen + per + 1));
    int ok = r->step_mean && r->step_max && r->step_peir && r->step_top1 && r->step_prompt && r->step_index &&
             r->tok_quant && r->tok_ref && lq && lr && seq;
    for (int i = 0; ok && i < n_prompts; i++) {
        ok &= !!(r->tok_quant[i] = malloc(sizeof(int32_t) * (size_t)per));
        ok &= !!(r->tok_ref[i] = malloc(sizeof(int32_t) * (size_t)per));
    }
    pdq_code rc = ok ? PDQ_OK : pdq_fail(st, PDQ_ERR_NOMEM, "verify");
    for (int p = 0; p < n_prompts && rc == PDQ_OK; p++) {
        rc = run->prefill(run->ctx, prompts[p], lens[p], lq, st);
        memcpy(seq, prompts[p], sizeof(int32_t) * (size_t)lens[p]);
        for (int k = 0; k <= steps && rc == PDQ_OK; k++) {
            int len = lens[p] + k, e = p * per + k;
            rc = pdq_model_forward(ref, NULL, 1, len, seq, NULL, NULL, lr, 1, st);
            if (rc != PDQ_OK) break;
            pdq_logit_cmp c;
            pdq_compare_logits(lr, lq, V, &c);
            r->step_mean[e] = c.mean_abs_diff;
            r->step_max[e] = c.max_abs_diff;
            r->step_peir[e] = c.peir;
            r->step_top1[e] = c.top1_agree;
            r->step_prompt[e] = p;
            r->step_index[e] = k;
            int32_t next = pdq_argmax(lq, V);
            r->tok_quant[p][k] = next;
            seq[len] = next;
            if (k < steps) rc = run->decode(run->ctx, next, lq, st);
        }
        if (rc == PDQ_OK) rc = ref_greedy(ref, prompts[p], lens[p], per, r->tok_ref[p], lr, seq, st);
    }
    free(lq); free(lr); free(seq);
    if (rc != PDQ_OK) { pdq_ptq_verify_free(r); return rc; }
    double agree = 0;
    for (int e = 0; e < N; e++) {
        r->mean_abs += r->step_mean[e] / N;
        r->max_abs = fmax(r->max_abs, r->step_max[e]);
        r->peir = fmax(r->peir, r->step_peir[e]);
        agree += r->step_top1[e];
    }
    r->top1 = agree / N;
    return PDQ_OK;
}
