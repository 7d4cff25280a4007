/* Quality of an exported pair, measured through the files themselves: perplexity through the
 * prefill file and the verify loop of the activation step (pdq_verify_steps) over the Circle
 * runtime, so the numbers compare one to one with report.json's in-memory ones. */
#include "pdq/circle_export.h"
#include "pdq/eval.h"

pdq_code pdq_crt_ppl(const char *outdir, int per_layer, const int32_t *ids, long n, const char *label, double *ppl,
                     pdq_status *st) {
    pdq_crt *rt;
    pdq_code rc = pdq_crt_open(outdir, !per_layer, &rt, st);
    if (rc != PDQ_OK) return rc;
    int S = pdq_crt_max_seq(rt);
    pdq_ppl_result r;
    rc = pdq_ppl_windows(pdq_crt_window_logits, rt, pdq_crt_vocab(rt), ids, n, S, S, label, &r, st);
    if (rc == PDQ_OK) *ppl = r.ppl;
    pdq_crt_free(rt);
    return rc;
}

static pdq_code crt_prefill(void *ctx, const int32_t *ids, int n, float *logits, pdq_status *st) {
    return pdq_crt_prefill(ctx, ids, n, logits, st);
}

static pdq_code crt_decode(void *ctx, int32_t id, float *logits, pdq_status *st) {
    return pdq_crt_decode(ctx, id, logits, st);
}

pdq_code pdq_crt_verify(pdq_crt *rt, const pdq_model *ref, const int32_t *const *prompts, const int *lens,
                        int n_prompts, int steps, pdq_ptq_verify_result *out, pdq_status *st) {
    if (ref->cfg.vocab_size != pdq_crt_vocab(rt))
        return pdq_fail(st, PDQ_ERR_SHAPE, "circle verify: reference vocab %d, exported files %d", ref->cfg.vocab_size,
                        pdq_crt_vocab(rt));
    for (int i = 0; i < n_prompts; i++)
        if (lens[i] + steps > pdq_crt_max_seq(rt))
            return pdq_fail(st, PDQ_ERR_LIMIT, "circle verify: prompt of %d tokens + %d steps exceeds max_seq %d", lens[i],
                            steps, pdq_crt_max_seq(rt));
    pdq_step_runner run = {crt_prefill, crt_decode, rt};
    return pdq_verify_steps(ref, &run, prompts, lens, n_prompts, steps, out, st);
}
