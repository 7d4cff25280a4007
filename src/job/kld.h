/* KL divergence against an FP32 model, its logits cached per evaluation file (top-k per token,
 * pdq/eval.h) so that later runs only run the model under test: pdq ppl --kld and the quantize
 * job's --kld. */
#ifndef PDQ_JOB_KLD_H
#define PDQ_JOB_KLD_H

#include <stdint.h>

#include "job.h"
#include "pdq/eval.h"

typedef struct {
    const char *base_dir, *cache_dir;
    int top_k, no_cache, threads;
    /* the ranks of a distributed job (NULL: one process): the FP32 side and the model side are
     * split over them (collective: every rank calls job_kld); rank 0 alone reads and writes the
     * cache and broadcasts a cached base */
    const struct pdq_dist *dist;
} kld_opts;

/* Base (cached or computed) then the model side through fn. *reused: 1 when the cache was used.
 * Returns 0, or 1 with the error in j (warnings are its notes). */
int job_kld(const job_ctx *j, const kld_opts *o, const int32_t *ids, long n, int max_len, int stride,
            pdq_window_logits_fn fn, void *ctx, int vocab, pdq_kld_result *out, pdq_ppl_result *ppl, int *reused,
            char *cache_path, int cache_path_len);

#endif
