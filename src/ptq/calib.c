/* Calibration: observed prefills of full max_seq windows, optional observed greedy decode steps
 * after a shortened prefill of each window, then the same replay counting clipped values. */
#include <stdlib.h>

#include "pdq/eval.h"
#include "pdq/progress.h"
#include "ptq_internal.h"

static pdq_code run_pass(pdq_ptq *p, pdq_rt *rt, const int32_t *samples, int nsamples, int K,
                         pdq_ptq_mode mode, float *logits, float *all, int V, pdq_progress *pg, long *done,
                         pdq_status *st) {
    int S = p->max_seq, P = S - 1 - K;
    pdq_code rc = PDQ_OK;
    for (int s = 0; s < nsamples && rc == PDQ_OK; s++) {
        const int32_t *ids = samples + (size_t)s * S;
        pdq_rt_reset(rt);
        pdq_ptq_set_mode(p, mode);
        /* All positions' logits, so the head graph sees every position as in evaluation. */
        rc = pdq_rt_prefill(rt, 1, S, ids, NULL, PDQ_PAD_RIGHT, NULL, all, st);
        if (mode == PDQ_PTQ_OBSERVE) pdq_ptq_step(p);
        pdq_progress_update(pg, ++*done);
    }
    for (int s = 0; K > 0 && s < nsamples && rc == PDQ_OK; s++) {
        const int32_t *ids = samples + (size_t)s * S;
        pdq_rt_reset(rt);
        pdq_ptq_set_mode(p, PDQ_PTQ_OFF); /* this prefill repeats part of an observed one */
        rc = pdq_rt_prefill(rt, 1, P, ids, NULL, PDQ_PAD_RIGHT, logits, NULL, st);
        pdq_ptq_set_mode(p, mode);
        for (int k = 0; k < K && rc == PDQ_OK; k++) {
            int32_t tok = pdq_argmax(logits, V);
            rc = pdq_rt_decode(rt, 1, &tok, logits, st);
            if (mode == PDQ_PTQ_OBSERVE) pdq_ptq_step(p);
        }
        pdq_progress_update(pg, ++*done);
    }
    pdq_ptq_set_mode(p, PDQ_PTQ_OFF);
    return rc;
}

pdq_code pdq_ptq_calibrate(pdq_ptq *p, pdq_rt *rt, const int32_t *samples, int nsamples,
                           const pdq_ptq_calib_opts *co, pdq_status *st) {
    int S = p->max_seq, K = co ? co->decode_steps : 0;
    if (pdq_rt_batch(rt) != 1 || pdq_rt_max_seq(rt) != S)
        return pdq_fail(st, PDQ_ERR_ARG, "ptq calibration: runtime has batch %d, max_seq %d (need 1, %d)",
                        pdq_rt_batch(rt), pdq_rt_max_seq(rt), S);
    if (nsamples < 1) return pdq_fail(st, PDQ_ERR_ARG, "ptq calibration: no samples");
    if (K < 0 || K > S - 2)
        return pdq_fail(st, PDQ_ERR_ARG, "ptq calibration: %d decode steps do not fit max_seq %d (at most %d)",
                        K, S, S - 2);
    int V = p->vocab;
    float *logits = malloc(sizeof(float) * (size_t)V), *all = malloc(sizeof(float) * (size_t)V * S);
    if (!logits || !all) { free(logits); free(all); return pdq_fail(st, PDQ_ERR_NOMEM, "ptq calibration: logits"); }
    pdq_ptq_attach(p, rt);
    int count = p->o.adtype != PDQ_ADT_FLOAT;
    long per = (long)nsamples * (K > 0 ? 2 : 1), done = 0;
    pdq_progress pg;
    pdq_progress_start(&pg, co && co->label ? co->label : "calibration", per * (count ? 2 : 1));
    if (!(co && co->label)) pg.enabled = 0;
    pdq_code rc = run_pass(p, rt, samples, nsamples, K, PDQ_PTQ_OBSERVE, logits, all, V, &pg, &done, st);
    if (rc == PDQ_OK) rc = pdq_ptq_finalize(p, p->o.adtype, st);
    for (int i = 0; i < p->n_groups; i++) p->groups[i].clipped = p->groups[i].counted = 0;
    if (rc == PDQ_OK && count) rc = run_pass(p, rt, samples, nsamples, K, PDQ_PTQ_COUNT_CLIP, logits, all, V, &pg, &done, st);
    pdq_progress_finish(&pg);
    pdq_rt_set_hook(rt, NULL, NULL);
    pdq_ptq_forget_graphs(p);
    p->calib_samples = nsamples;
    p->calib_decode_steps = K;
    free(logits);
    free(all);
    return rc;
}
