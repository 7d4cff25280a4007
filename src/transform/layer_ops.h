/* One decoder layer's part of each transform, in place. The whole-model run (apply.c) calls them
 * layer by layer, so a lazily loaded model is transformed with one layer in memory. */
#ifndef PDQ_TRANSFORM_LAYER_OPS_H
#define PDQ_TRANSFORM_LAYER_OPS_H

#include "pdq/transform.h"

/* attn_norm into q/k/v's columns, ffn_norm into gate/up's (the pre-FFN norm of a sandwich
 * block); both norms become unit factors. The post-branch norms of a sandwich block stay. */
void pdq_fold_layer(pdq_layer *L, const pdq_config *c);
/* A stored norm weight w against the factor it multiplies by, g = cfg->norm_offset + w: in place,
 * w -> g, g -> w, the unit factor's w, and whether every factor is 1. Offset 0 leaves the bits. */
void pdq_norm_to_gamma(const pdq_config *c, float *w, int n);
void pdq_norm_from_gamma(const pdq_config *c, float *g, int n);
void pdq_norm_set_unit(const pdq_config *c, float *w, int n);
int pdq_norm_is_unit(const pdq_config *c, const float *w, int n);
/* CLE on up->down and v->o (see cle.c). */
pdq_code pdq_cle_layer(pdq_layer *L, const pdq_config *c, pdq_status *st);
/* R1 with q [D]: readers W -> W Q, writers (o, down) W -> Q^T W. */
pdq_code pdq_r1_layer(pdq_layer *L, const pdq_config *c, const pdq_orth *q, pdq_status *st);
/* R2 of layer l (its own head_dim matrix from seed and l), applied on pool. */
pdq_code pdq_r2_layer(pdq_layer *L, const pdq_config *c, int l, pdq_rot_kind kind, uint64_t seed,
                      struct pdq_pool *pool, int force_scalar, pdq_status *st);

/* One layer's activation ranges (max |x| per input channel): qkv [D], o [H*hd], gate [D], down [I]. */
typedef struct {
    float *qkv, *o, *gate, *down;
} pdq_layer_ranges;

pdq_code pdq_layer_ranges_alloc(pdq_layer_ranges *r, const pdq_config *c, pdq_status *st);
void pdq_layer_ranges_free(pdq_layer_ranges *r);
void pdq_layer_ranges_copy(pdq_layer_ranges *dst, const pdq_layer_ranges *src, const pdq_config *c);
/* Zeroes r, then runs the ns windows x [ns, T, D] through layer l (weights L) in place, taking
 * the ranges of every linear's input: x becomes the next layer's input. */
pdq_code pdq_layer_ranges_collect(const pdq_model *m, int l, const pdq_layer *L, float *x, int ns, int T,
                                  pdq_layer_ranges *r, pdq_status *st);
/* SmoothQuant on one layer from its ranges. */
pdq_code pdq_smooth_layer(pdq_layer *L, const pdq_config *c, const pdq_layer_ranges *r, float alpha, pdq_status *st);

#endif
