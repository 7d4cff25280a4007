/* Static-shape sessions for pdq eval's shared-prefix scorer (pdq_ll_session): the in-memory
 * static runtime and the exported Circle pair, driven through their public prefill / append /
 * rewind calls (src/job/eval_session.c; pdq eval and the quantize job's tasks). */
#ifndef PDQ_JOB_EVAL_SESSION_H
#define PDQ_JOB_EVAL_SESSION_H

#include "pdq/circle_export.h"
#include "pdq/runtime.h"
#include "pdq/tasks.h"

/* The static runtime (batch 1): appends follow pdq_buckets_plan over buckets (ascending, 1 first),
 * the plan the Circle runtime follows for an export with the same buckets, so both run the same
 * graphs on the same rows. */
typedef struct {
    pdq_rt *rt;
    int vocab;
    int nb, bq[PDQ_MAX_BUCKETS + 1];
    int *plan;  /* owned [max_seq] */
} eval_rt_session;

/* Fills s (over rt, buckets as parsed by pdq_buckets_parse; NULL: decode steps only) and ll. */
pdq_code eval_rt_session_init(eval_rt_session *s, pdq_rt *rt, int vocab, const int *buckets, int nb, pdq_ll_session *ll,
                              pdq_status *st);
void eval_rt_session_free(eval_rt_session *s);

/* The exported pair: its own buckets (manifest append_buckets). */
void eval_crt_session_init(pdq_crt *crt, pdq_ll_session *ll);

#endif
