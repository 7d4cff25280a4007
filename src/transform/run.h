/* The whole-model transform run shared by the in-memory path (pdq_transform_model) and the
 * streaming writer (pdq_transform_write): tables first, then layer by layer, each finished tensor
 * handed to a sink in checkpoint order. */
#ifndef PDQ_TRANSFORM_RUN_H
#define PDQ_TRANSFORM_RUN_H

#include "layer_ops.h"
#include "model/tensor_list.h"
#include "pdq/transform.h"

typedef struct {
    /* called once per piece of each tensor of pdq_tensor_list(PDQ_TORDER_TRANSFORM, stacked), in
     * that order: piece k of a stacked tensor is its k-th linear's rows */
    pdq_code (*put)(void *ctx, const pdq_tensor_entry *e, int piece, const float *data, size_t n, pdq_status *st);
    void *ctx;
} pdq_tensor_sink;

/* Fills o's output fields (untied, final_norm_kept, r1/r2_hadamard) from m and the set. */
void pdq_transform_plan(const pdq_model *m, pdq_transform_opts *o);
/* Transforms m (eager: in place, kept; lazy: each layer acquired, transformed, put, released),
 * handing every tensor to k (NULL: none); keep (NULL: not kept) [n_layers] allocated ranges
 * receives each layer's SmoothQuant ranges. */
pdq_code pdq_transform_run(pdq_model *m, pdq_transform_opts *o, const int32_t *calib, int ns, int T,
                           const pdq_tensor_sink *k, pdq_layer_ranges *keep, pdq_status *st);

/* PDQ_OK when every transform of o keeps the function of cfg's family; else PDQ_ERR_UNSUPPORTED
 * naming the family, the transform and the reason. */
pdq_code pdq_transform_supported(const pdq_config *c, const pdq_transform_opts *o, pdq_status *st);

/* The pieces the run and the lazy view (view.c) share, so both compute the same bits. */
/* 1: the set folds the final norm (its weight as loaded: norm) into lm_head. */
int pdq_transform_folds_final(const pdq_transform_opts *o, const pdq_config *c, const float *norm);
/* One table t [V, D]: fold_norm (NULL: none), the final norm's factor g (pdq_norm_to_gamma), into
 * its columns, then R1 when the set has it. */
pdq_code pdq_transform_table(const pdq_transform_opts *o, const pdq_orth *q, float *t, int V, int D,
                             const float *fold_norm, pdq_status *st);
/* Layer l's fold, CLE, R1 and R2 in place (everything but SmoothQuant, whose ranges come from
 * running the layer so transformed). */
pdq_code pdq_transform_layer_fixed(pdq_layer *L, const pdq_config *c, int l, const pdq_transform_opts *o,
                                   const pdq_orth *q, pdq_status *st);

#endif
