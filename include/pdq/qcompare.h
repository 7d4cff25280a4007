/* Integer mode measured against fake-quant (src/exec/compare_modes.c). */
#ifndef PDQ_QCOMPARE_H
#define PDQ_QCOMPARE_H

#include "pdq/model.h"
#include "pdq/ptq.h"
#include "pdq/qexec.h"
#include "pdq/runtime.h"

typedef struct {
    double ppl_int;        /* through the integer static prefill graph; 0 without eval ids */
    double mean_abs, max_abs, top1;
    int rows;              /* logit rows compared */
} pdq_mode_cmp;

/* On a quantized checkpoint dir (m: its model with the norms fake-quantized, p: its PTQ table):
 * perplexity through the integer static prefill graph (windows of max_seq, stride max_seq; eval
 * may be NULL), and for every prompt prefill + `steps` decode steps of the fake-quant and the
 * integer runtime on the same tokens (fake-quant's greedy ones): mean / max |logit_int -
 * logit_fake| over all logits and the top-1 agreement. vint (may be NULL) gets the integer runtime
 * against the FP32 reference ref, as pdq_ptq_verify computes it for fake-quant. */
pdq_code pdq_compare_int_fake(const pdq_model *ref, const pdq_model *m, const char *qdir, pdq_ptq *p, int max_seq,
                              const pdq_static_opts *so, int threads, const int32_t *eval, long n_eval,
                              const int32_t *const *prompts, const int *lens, int n_prompts, int steps, pdq_mode_cmp *out,
                              pdq_ptq_verify_result *vint, pdq_status *st);

#endif
