/* Quality measurements: perplexity with strided sliding windows, logit comparisons. */
#ifndef PDQ_EVAL_H
#define PDQ_EVAL_H

#include <stddef.h>
#include <stdint.h>

#include "pdq/model.h"
#include "pdq/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    double ppl;        /* exp(nll / tokens) */
    double nll;        /* summed negative log-likelihood (nats) */
    long tokens;       /* tokens whose NLL was counted */
    int windows;
} pdq_ppl_result;

/* Scores a sequence of logits for the next token: fills nll_sum with -log softmax(logits)[target]
 * summed over n rows of V logits. Computed in double. */
double pdq_nll_rows(const float *logits, const int32_t *targets, int n, int vocab);

/* A forward that yields all-position logits for one window of ids (T tokens); lets the same
 * strided evaluation run the reference model, the static graphs or an exported model. */
typedef pdq_code (*pdq_window_logits_fn)(void *ctx, const int32_t *ids, int T, float *logits,
                                        pdq_status *st);

/* Strided sliding-window perplexity, HF semantics: windows of max_len advancing by stride; in
 * each window only the tokens not scored by an earlier window count (each token's NLL once).
 * Token 0 is never scored. Shows a progress bar on stderr when label != NULL. */
pdq_code pdq_ppl_windows(pdq_window_logits_fn fn, void *ctx, int vocab, const int32_t *ids, long n,
                         int max_len, int stride, const char *label, pdq_ppl_result *out,
                         pdq_status *st);

/* The same with the reference model as the window function. */
pdq_code pdq_ppl_model(const pdq_model *m, const int32_t *ids, long n, int max_len, int stride,
                       const char *label, pdq_ppl_result *out, pdq_status *st);

/* Reads whitespace-separated decimal ids from a file; *ids malloc'd. */
pdq_code pdq_read_ids_file(const char *path, int32_t **ids, long *n, pdq_status *st);

/* Logit comparison statistics against a reference row. */
typedef struct {
    double mean_abs_diff, max_abs_diff, peir; /* peir = max|d| / (max-min of reference) */
    int top1_agree;
} pdq_logit_cmp;

void pdq_compare_logits(const float *ref, const float *got, int vocab, pdq_logit_cmp *out);
int pdq_argmax(const float *x, int n);

#ifdef __cplusplus
}
#endif
#endif
