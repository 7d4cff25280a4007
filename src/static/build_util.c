/* Builder helpers: format names, stop at the first error, add the int32 constants that
 * RESHAPE / TRANSPOSE / STRIDED_SLICE take as inputs in Circle. */
#include "build_util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAME(buf, b, fmt)                                        \
    char buf[256];                                               \
    do {                                                         \
        va_list ap;                                              \
        va_start(ap, fmt);                                       \
        size_t k_ = (size_t)snprintf(buf, sizeof buf, "%s", (b)->prefix); \
        vsnprintf(buf + k_, sizeof buf - k_, fmt, ap);           \
        va_end(ap);                                              \
    } while (0)

static int check(pdq_bld *b, int id) {
    if (id < 0) b->err = 1;
    return id;
}

static int op_named(pdq_bld *b, pdq_op_type t, const int *in, int n, const pdq_op *opt, const char *name) {
    if (b->err) return -1;
    for (int i = 0; i < n; i++)
        if (in[i] < 0) { b->err = 1; return -1; }
    return check(b, pdq_graph_op(b->g, t, in, n, opt, name, b->st));
}

int pdq_b_op(pdq_bld *b, pdq_op_type t, const int *in, int n, const pdq_op *opt, const char *fmt, ...) {
    NAME(name, b, fmt);
    return op_named(b, t, in, n, opt, name);
}

int pdq_b_op1(pdq_bld *b, pdq_op_type t, int x, const char *fmt, ...) {
    NAME(name, b, fmt);
    return op_named(b, t, &x, 1, NULL, name);
}

int pdq_b_op2(pdq_bld *b, pdq_op_type t, int x, int y, const char *fmt, ...) {
    NAME(name, b, fmt);
    int in[2] = {x, y};
    return op_named(b, t, in, 2, NULL, name);
}

int pdq_b_input(pdq_bld *b, pdq_tdtype dt, int ndim, const int *shape, const char *fmt, ...) {
    if (b->err) return -1;
    NAME(name, b, fmt);
    return check(b, pdq_graph_input(b->g, name, dt, ndim, shape, b->st));
}

int pdq_b_const(pdq_bld *b, int ndim, const int *shape, const float *data, int copy, const char *fmt, ...) {
    if (b->err) return -1;
    NAME(name, b, fmt);
    return check(b, pdq_graph_const(b->g, name, PDQ_TF32, ndim, shape, data, copy, b->st));
}

static int ivec(pdq_bld *b, const char *base, const char *suffix, int n, const int32_t *v) {
    if (b->err) return -1;
    char name[300];
    snprintf(name, sizeof name, "%s%s", base, suffix);
    return check(b, pdq_graph_const_i32(b->g, name, n, v, b->st));
}

int pdq_b_reshape(pdq_bld *b, int x, int ndim, const int *shape, const char *fmt, ...) {
    NAME(name, b, fmt);
    int32_t v[PDQ_G_MAX_DIMS];
    for (int i = 0; i < ndim && i < PDQ_G_MAX_DIMS; i++) v[i] = shape[i];
    int in[2] = {x, ivec(b, name, ".shape", ndim, v)};
    return op_named(b, PDQ_OP_RESHAPE, in, 2, NULL, name);
}

int pdq_b_transpose(pdq_bld *b, int x, const int32_t *perm, const char *fmt, ...) {
    NAME(name, b, fmt);
    int nd = (b->err || x < 0) ? 0 : b->g->tensors[x].ndim;
    int in[2] = {x, ivec(b, name, ".perm", nd, perm)};
    return op_named(b, PDQ_OP_TRANSPOSE, in, 2, NULL, name);
}

int pdq_b_slice(pdq_bld *b, int x, const int *begin, const int *end, const char *fmt, ...) {
    NAME(name, b, fmt);
    int nd = (b->err || x < 0) ? 0 : b->g->tensors[x].ndim;
    int32_t vb[PDQ_G_MAX_DIMS], ve[PDQ_G_MAX_DIMS], vs[PDQ_G_MAX_DIMS];
    for (int i = 0; i < nd; i++) { vb[i] = begin[i]; ve[i] = end[i]; vs[i] = 1; }
    int in[4] = {x, ivec(b, name, ".begin", nd, vb), ivec(b, name, ".end", nd, ve),
                 ivec(b, name, ".strides", nd, vs)};
    return op_named(b, PDQ_OP_STRIDED_SLICE, in, 4, NULL, name);
}

int pdq_b_concat(pdq_bld *b, const int *in, int n, int axis, const char *fmt, ...) {
    NAME(name, b, fmt);
    pdq_op opt;
    memset(&opt, 0, sizeof opt);
    opt.opt.concat.axis = axis;
    return op_named(b, PDQ_OP_CONCATENATION, in, n, &opt, name);
}

void pdq_b_output(pdq_bld *b, int tid) {
    if (b->err || tid < 0) { b->err = 1; return; }
    if (pdq_graph_mark_output(b->g, tid, b->st) != PDQ_OK) b->err = 1;
}

int pdq_b_role(pdq_bld *b, int tid, int role) {
    if (tid >= 0 && !b->err) b->g->tensors[tid].role = role + 1;
    return tid;
}

int pdq_b_scaled_const(pdq_bld *b, int n, const float *v, float offset, float s, const char *name) {
    if (b->err) return -1;
    float *d = malloc(sizeof(float) * (size_t)n);
    if (!d) {
        b->err = 1;
        pdq_fail(b->st, PDQ_ERR_NOMEM, "%s", name);
        return -1;
    }
    if (offset != 0.0f)
        for (int i = 0; i < n; i++) d[i] = (offset + v[i]) * s;
    else
        for (int i = 0; i < n; i++) d[i] = v[i] * s;
    char full[256];
    snprintf(full, sizeof full, "%s%s", b->prefix, name);
    int shp[1] = {n};
    return check(b, pdq_graph_const_owned(b->g, full, PDQ_TF32, 1, shp, d, b->st));
}

int pdq_b_gamma(pdq_bld *b, const pdq_config *c, int n, const float *w, float fold, int role, const char *name) {
    int g, sh[1] = {n};
    if (fold != 1.0f || c->norm_offset != 0.0f) g = pdq_b_scaled_const(b, n, w, c->norm_offset, fold, name);
    else g = pdq_b_const(b, 1, sh, w, 0, "%s", name);
    return pdq_b_role(b, g, role);
}
