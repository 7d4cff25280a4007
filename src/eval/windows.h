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
/* The scored tokens of the walk, in order (row t is the t-th scored token): row[p] = the row of
 * position p, -1 if unscored ([n], may be NULL); owner[t] = the rank that scores row t when the
 * windows are split over size ranks ([n - 1], may be NULL). Returns the number of rows. (The first
 * token of a window that starts where the previous one ended has no context and is not scored.) */
long pdq_windows_rows(long n, int max_len, int stride, int size, long *row, int *owner);

#endif
