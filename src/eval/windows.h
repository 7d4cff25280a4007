/* The strided-window walk shared by perplexity and KL divergence: both must score exactly the
 * same tokens in the same order. */
#ifndef PDQ_EVAL_WINDOWS_H
#define PDQ_EVAL_WINDOWS_H

#include "pdq/eval.h"

/* Called for each window with its logits: rows [from, from + count) predict targets[0..count). */
typedef pdq_code (*pdq_scored_fn)(void *ctx, const float *logits, int from, int count, const int32_t *targets,
                                  int vocab, pdq_status *st);

/* Validates the arguments and ids, runs fn window by window and hands every window's scored rows
 * to cb. windows (may be NULL) receives the number of windows. */
pdq_code pdq_windows_each(pdq_window_logits_fn fn, void *ctx, int vocab, const int32_t *ids, long n, int max_len,
                          int stride, const char *label, pdq_scored_fn cb, void *cb_ctx, int *windows, pdq_status *st);

/* The same over windows w with w % size == rank only (a rank's share of a split evaluation; rank 0
 * of 1: every window); windows receives the windows this call ran. */
pdq_code pdq_windows_share(pdq_window_logits_fn fn, void *ctx, int vocab, const int32_t *ids, long n, int max_len,
                           int stride, const char *label, pdq_scored_fn cb, void *cb_ctx, int *windows, int rank,
                           int size, pdq_status *st);
/* Which rank scores each token under that split: owner[t] for scored token t (position t + 1),
 * [n - 1]. Every token but the first is scored once, in position order. */
void pdq_windows_owners(long n, int max_len, int stride, int size, int *owner);

#endif
