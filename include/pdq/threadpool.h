/* One worker pool for a whole process: pdq's own parallel loops (packed-weight kernels, integer
 * kernels) run their tasks on it instead of starting threads per call. The caller owns the pool
 * (no globals); create it once, hand it to whatever computes, free it at the end. */
#ifndef PDQ_THREADPOOL_H
#define PDQ_THREADPOOL_H

#include "pdq/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pdq_pool pdq_pool;

/* fn(ctx, task, thread) runs once for each task in [0, n_tasks); `thread` in [0, threads) names
 * the worker running it (for per-thread scratch). Tasks are handed out dynamically, so a task
 * must compute the same thing whichever thread runs it: results then do not depend on the
 * thread count. */
typedef void (*pdq_pool_fn)(void *ctx, int task, int thread);

/* A pool of n_threads workers counting the caller (n_threads <= 0: all cores; 1: no threads are
 * started and every task runs on the caller). On error NULL is returned, st is filled and no
 * thread is left running. */
pdq_pool *pdq_pool_create(int n_threads, pdq_status *st);
/* Stops and joins the workers; NULL is a no-op. */
void pdq_pool_free(pdq_pool *p);
/* Workers counting the caller (1 for a NULL pool). */
int pdq_pool_threads(const pdq_pool *p);
/* Runs every task and returns when all are done; the caller works too. A NULL pool runs the
 * tasks in order on the caller. Not reentrant: fn must not call pdq_pool_run on the same pool. */
void pdq_pool_run(pdq_pool *p, int n_tasks, pdq_pool_fn fn, void *ctx);

#ifdef __cplusplus
}
#endif
#endif
