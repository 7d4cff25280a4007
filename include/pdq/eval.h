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
    double nll_sq;     /* sum of squared per-token NLLs */
    double ppl_se;     /* standard error of ppl: ppl * sd(nll) / sqrt(tokens - 1) (delta method) */
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

/* The same split over the ranks of a distributed job (struct pdq_dist, src/dist; NULL: one
 * process): window w runs on rank w % ranks, every rank's per-token NLLs are gathered and summed in
 * token order on every rank, so out is bit-identical to pdq_ppl_windows for any number of ranks.
 * Progress (label) shows on rank 0 only. Collective: every rank calls it with the same arguments. */
struct pdq_dist;
pdq_code pdq_ppl_windows_split(const struct pdq_dist *d, pdq_window_logits_fn fn, void *ctx, int vocab,
                               const int32_t *ids, long n, int max_len, int stride, const char *label,
                               pdq_ppl_result *out, pdq_status *st);
pdq_code pdq_ppl_model_split(const struct pdq_dist *d, const pdq_model *m, const int32_t *ids, long n, int max_len,
                             int stride, const char *label, pdq_ppl_result *out, pdq_status *st);

/* ---- KL divergence against a base (FP32) model over a corpus, llama.cpp-style ----
 * The base side keeps, per scored token (the tokens pdq_ppl_windows scores, in order), its top-k
 * log-probabilities and the target's log-probability: k * 8 + 4 bytes a token instead of the whole
 * vocabulary, so it can be cached per evaluation file. KL(base || model) is computed over those k
 * tokens plus one bucket for the rest of the vocabulary (exact when k == vocab, otherwise a lower
 * bound that is tight when the top-k hold nearly all of the base's mass). */
typedef struct {
    int vocab, k;
    long n;            /* scored tokens */
    int32_t *top_id;   /* [n * k], most probable first */
    float *top_lp;     /* [n * k] log-probabilities */
    float *target_lp;  /* [n] log-probability of the actual next token */
} pdq_kld_base;

/* Runs fn over the windows and records the base distributions (k <= vocab). */
pdq_code pdq_kld_base_compute(pdq_window_logits_fn fn, void *ctx, int vocab, const int32_t *ids, long n, int max_len,
                              int stride, int k, const char *label, pdq_kld_base *out, pdq_status *st);
/* The same split over the ranks of a distributed job (NULL: one process): window w on rank
 * w % ranks, the rows gathered on every rank, bit-identical to pdq_kld_base_compute. Collective. */
pdq_code pdq_kld_base_compute_split(const struct pdq_dist *d, pdq_window_logits_fn fn, void *ctx, int vocab,
                                    const int32_t *ids, long n, int max_len, int stride, int k, const char *label,
                                    pdq_kld_base *out, pdq_status *st);
/* Rank 0's base (loaded from a cache) onto every rank (the others' b is allocated here). Collective. */
pdq_code pdq_kld_base_bcast(const struct pdq_dist *d, pdq_kld_base *b, pdq_status *st);
/* Binary cache file; key identifies model, ids and windows: load fails (PDQ_ERR_MISSING) on another key. */
pdq_code pdq_kld_base_save(const char *path, const pdq_kld_base *b, uint64_t key, pdq_status *st);
pdq_code pdq_kld_base_load(const char *path, uint64_t key, pdq_kld_base *out, pdq_status *st);
void pdq_kld_base_free(pdq_kld_base *b);

typedef struct {
    long tokens;
    double kld_mean, kld_se, kld_median, kld_p99, kld_max;
    double top1, top1_se;                 /* fraction of tokens whose argmax equals the base's */
    double dp_mean, dp_se, dp_rms;        /* dp = p_model(target) - p_base(target) */
    double dp_p01, dp_p05, dp_median, dp_p95, dp_p99, dp_min, dp_max;
    double ppl_base, ppl, ln_ppl_ratio, ln_ppl_ratio_se;
    int k, vocab;                         /* the base's top-k (k == vocab: exact) */
    double base_mass;                     /* mean base probability inside the top-k */
} pdq_kld_result;

/* The model side over the same windows; ppl (may be NULL) receives the model's perplexity too. */
pdq_code pdq_kld_windows(pdq_window_logits_fn fn, void *ctx, const int32_t *ids, long n, int max_len, int stride,
                         const pdq_kld_base *base, const char *label, pdq_kld_result *out, pdq_ppl_result *ppl,
                         pdq_status *st);

/* The same split over the ranks (NULL: one process): window w on rank w % ranks, each token's
 * record gathered and folded in token order on every rank, so out and ppl are bit-identical to
 * pdq_kld_windows for any number of ranks. Progress (label) on rank 0 only. Collective. */
pdq_code pdq_kld_windows_split(const struct pdq_dist *d, pdq_window_logits_fn fn, void *ctx, const int32_t *ids, long n,
                               int max_len, int stride, const pdq_kld_base *base, const char *label,
                               pdq_kld_result *out, pdq_ppl_result *ppl, pdq_status *st);

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
