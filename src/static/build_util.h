/* Small helpers for the graph builders (private): error short-circuiting and name formatting. */
#ifndef PDQ_STATIC_BUILD_UTIL_H
#define PDQ_STATIC_BUILD_UTIL_H

#include "pdq/config.h"
#include "pdq/graph.h"

typedef struct {
    pdq_graph *g;
    pdq_status *st;
    int err;            /* set once a step fails; later steps return -1 */
    char prefix[96];    /* e.g. "model.layers.3." */
} pdq_bld;

/* Every helper takes a printf-style name suffix appended to the prefix. */
int pdq_b_op(pdq_bld *b, pdq_op_type t, const int *in, int n, const pdq_op *opt, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
int pdq_b_op1(pdq_bld *b, pdq_op_type t, int x, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
int pdq_b_op2(pdq_bld *b, pdq_op_type t, int x, int y, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
int pdq_b_input(pdq_bld *b, pdq_tdtype dt, int ndim, const int *shape, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
int pdq_b_const(pdq_bld *b, int ndim, const int *shape, const float *data, int copy, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
/* RESHAPE x to shape; the shape constant is named "<out>.shape". */
int pdq_b_reshape(pdq_bld *b, int x, int ndim, const int *shape, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
int pdq_b_transpose(pdq_bld *b, int x, const int32_t *perm, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* STRIDED_SLICE x[begin:end] (unit strides); consts "<out>.begin/.end/.strides". */
int pdq_b_slice(pdq_bld *b, int x, const int *begin, const int *end, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
int pdq_b_concat(pdq_bld *b, const int *in, int n, int axis, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
void pdq_b_output(pdq_bld *b, int tid);
/* Marks constant tid with its model role (pdq/family.h); returns tid. */
int pdq_b_role(pdq_bld *b, int tid, int role);
/* A [n] constant (prefix + name) holding v * s, or (offset + v) * s when offset is not 0, owned by
 * the graph. */
int pdq_b_scaled_const(pdq_bld *b, int n, const float *v, float offset, float s, const char *name);
/* A norm's gamma of n values with its role: the stored weight (borrowed), or, for Gemma's (1 + w)
 * norms (cfg->norm_offset), (1 + w) computed in float32 -- exactly the factor HF's Gemma3RMSNorm
 * multiplies by, so the graph's RMS_NORM computes HF's float32 values; times fold (the k_proj
 * scale fold into k_norm, 1 otherwise). */
int pdq_b_gamma(pdq_bld *b, const pdq_config *c, int n, const float *w, float fold, int role, const char *name);

#endif
