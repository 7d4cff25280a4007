/* The whole-model transform run shared by the in-memory path (pdq_transform_model) and the
 * streaming writer (pdq_transform_write): tables first, then layer by layer, each finished tensor
 * handed to a sink in checkpoint order. */
#ifndef PDQ_TRANSFORM_RUN_H
#define PDQ_TRANSFORM_RUN_H

#include "pdq/transform.h"

typedef struct {
    /* called once per tensor, in the order of pdq_transform_tensor_names */
    pdq_code (*put)(void *ctx, const char *name, const float *data, size_t n, pdq_status *st);
    void *ctx;
} pdq_tensor_sink;

/* Fills o's output fields (untied, final_norm_kept, r1/r2_hadamard) from m and the set. */
void pdq_transform_plan(const pdq_model *m, pdq_transform_opts *o);
/* Transforms m (eager: in place, kept; lazy: each layer acquired, transformed, put, released),
 * handing every tensor to k (NULL: none). */
pdq_code pdq_transform_run(pdq_model *m, pdq_transform_opts *o, const int32_t *calib, int ns, int T,
                           const pdq_tensor_sink *k, pdq_status *st);

#endif
