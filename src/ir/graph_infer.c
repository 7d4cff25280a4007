/* Shape inference and validation per op (TFLite/Circle semantics). Every graph goes through it
 * (the builders, pdq_graph_validate, the Circle importer), so it treats its operands as hostile:
 * operand counts, ranks, dtypes, axes, permutations, begin/size/stride ranges and constant
 * indices are checked, and every output dim and element count is computed in int64 and held to
 * PDQ_G_MAX_ELEMS before it is stored in an int (include/pdq/graph.h). Dtype rules that depend on
 * qparams are pdq_graph_validate's: builders annotate qparams after adding an op. */
#include <stdint.h>
#include <string.h>

#include "pdq/graph.h"

#include "ir/infer_rules.h"
#include "ir/op_table.h"

#define T(i) (&g->tensors[op->in[i]])
#define OPN pdq_op_name(op->type)

static pdq_code need_inputs(const pdq_op *op, int lo, int hi, pdq_status *st) {
    if (op->n_in < lo || op->n_in > hi)
        return pdq_fail(st, PDQ_ERR_ARG, "%s takes %d..%d inputs, got %d", OPN, lo, hi, op->n_in);
    return PDQ_OK;
}

static pdq_code need_const_i32(const pdq_graph *g, const pdq_op *op, int k, const char *role, int n,
                               pdq_status *st) {
    const pdq_tensor *t = T(k);
    if (t->kind != PDQ_TK_CONST || t->dtype != PDQ_TI32 || t->ndim != 1 || !t->data ||
        (n >= 0 && t->shape[0] != n)) {
        if (n >= 0)
            return pdq_fail(st, PDQ_ERR_ARG, "%s %s %s must be an int32 constant vector of %d entries (is %s%s, rank %d)",
                            OPN, role, t->name, n, t->kind == PDQ_TK_CONST ? "" : "non-constant ",
                            pdq_tdtype_name(t->dtype), t->ndim);
        return pdq_fail(st, PDQ_ERR_ARG, "%s %s %s must be an int32 constant vector (is %s%s, rank %d)", OPN, role,
                        t->name, t->kind == PDQ_TK_CONST ? "" : "non-constant ", pdq_tdtype_name(t->dtype), t->ndim);
    }
    return PDQ_OK;
}

static pdq_code need_rank(const pdq_op *op, const pdq_tensor *t, int lo, pdq_status *st) {
    if (t->ndim < lo)
        return pdq_fail(st, PDQ_ERR_SHAPE, "%s: %s has rank %d, the op needs rank >= %d", OPN, t->name, t->ndim, lo);
    return PDQ_OK;
}

/* Stores an output dim computed in int64 once it is known to be a positive, bounded int. */
static pdq_code put_dim(const pdq_op *op, int *sh, int d, int64_t v, pdq_status *st) {
    if (v <= 0 || v > PDQ_G_MAX_ELEMS)
        return pdq_fail(st, PDQ_ERR_LIMIT, "%s: output dim %d would be %lld (limit 1..%lld)", OPN, d, (long long)v,
                        (long long)PDQ_G_MAX_ELEMS);
    sh[d] = (int)v;
    return PDQ_OK;
}

/* Numpy/TFLite broadcasting of two shapes (right-aligned). */
static pdq_code broadcast(const pdq_op *op, const pdq_tensor *a, const pdq_tensor *b, int *nd, int *sh,
                          pdq_status *st) {
    int n = a->ndim > b->ndim ? a->ndim : b->ndim;
    for (int i = 0; i < n; i++) {
        int ia = a->ndim - n + i, ib = b->ndim - n + i;
        int da = ia >= 0 ? a->shape[ia] : 1, db = ib >= 0 ? b->shape[ib] : 1;
        if (da != db && da != 1 && db != 1)
            return pdq_fail(st, PDQ_ERR_SHAPE, "%s: %s and %s do not broadcast (dim %d: %d vs %d)", OPN, a->name,
                            b->name, i, da, db);
        sh[i] = da > db ? da : db;
    }
    *nd = n;
    return PDQ_OK;
}

static void copy_shape(const pdq_tensor *t, int *nd, int *sh) {
    *nd = t->ndim;
    memcpy(sh, t->shape, sizeof(int) * (size_t)t->ndim);
}

static int norm_axis(int axis, int nd) { return axis < 0 ? axis + nd : axis; }

pdq_code pdq_infer_fc(const pdq_graph *g, const pdq_op *op, int *nd, int *sh, pdq_status *st) {
    pdq_code rc;
    if ((rc = need_inputs(op, 2, 3, st))) return rc;
    const pdq_tensor *x = T(0), *w = T(1);
    if ((rc = need_rank(op, x, 1, st))) return rc;
    if (w->ndim != 2)
        return pdq_fail(st, PDQ_ERR_SHAPE, "FULLY_CONNECTED: weight %s has rank %d, needs [out, in]", w->name, w->ndim);
    if (x->shape[x->ndim - 1] != w->shape[1])
        return pdq_fail(st, PDQ_ERR_SHAPE, "FULLY_CONNECTED: input %s last dim %d vs weight %s [out,in] = [%d,%d]",
                        x->name, x->shape[x->ndim - 1], w->name, w->shape[0], w->shape[1]);
    if (op->n_in == 3) {
        const pdq_tensor *b = T(2);
        if (b->ndim != 1 || b->shape[0] != w->shape[0])
            return pdq_fail(st, PDQ_ERR_SHAPE, "FULLY_CONNECTED bias %s must be [%d]", b->name, w->shape[0]);
    }
    if (op->opt.fc.keep_num_dims) {
        copy_shape(x, nd, sh);
        sh[*nd - 1] = w->shape[0];
        return PDQ_OK;
    }
    int64_t rows = 1;
    for (int i = 0; i < x->ndim - 1; i++) rows *= x->shape[i]; /* <= x's element count */
    *nd = 2;
    sh[1] = w->shape[0];
    return put_dim(op, sh, 0, rows, st);
}

pdq_code pdq_infer_bmm(const pdq_graph *g, const pdq_op *op, int *nd, int *sh, pdq_status *st) {
    pdq_code rc;
    if ((rc = need_inputs(op, 2, 2, st))) return rc;
    const pdq_tensor *a = T(0), *b = T(1);
    if ((rc = need_rank(op, a, 2, st)) || (rc = need_rank(op, b, 2, st))) return rc;
    int am = a->shape[a->ndim - 2], ak = a->shape[a->ndim - 1];
    if (op->opt.bmm.adj_x) { int t = am; am = ak; ak = t; }
    int bk = b->shape[b->ndim - 2], bn = b->shape[b->ndim - 1];
    if (op->opt.bmm.adj_y) { int t = bk; bk = bn; bn = t; }
    if (ak != bk)
        return pdq_fail(st, PDQ_ERR_SHAPE, "BATCH_MATMUL %s x %s: inner dims %d vs %d", a->name, b->name, ak, bk);
    pdq_tensor ba = *a, bb = *b; /* batch dims only */
    ba.ndim -= 2;
    bb.ndim -= 2;
    if ((rc = broadcast(op, &ba, &bb, nd, sh, st))) return rc;
    if (*nd + 2 > PDQ_G_MAX_DIMS) return pdq_fail(st, PDQ_ERR_SHAPE, "BATCH_MATMUL rank too large");
    sh[(*nd)++] = am;
    sh[(*nd)++] = bn;
    return PDQ_OK;
}

pdq_code pdq_infer_mean(const pdq_graph *g, const pdq_op *op, int *nd, int *sh, pdq_status *st) {
    pdq_code rc;
    if ((rc = need_inputs(op, 2, 2, st))) return rc;
    if ((rc = need_const_i32(g, op, 1, "axes", -1, st))) return rc;
    const pdq_tensor *x = T(0);
    const int32_t *ax = T(1)->data;
    int red[PDQ_G_MAX_DIMS] = {0};
    for (int i = 0; i < T(1)->shape[0]; i++) {
        int a = norm_axis(ax[i], x->ndim);
        if (a < 0 || a >= x->ndim)
            return pdq_fail(st, PDQ_ERR_ARG, "MEAN of %s: axis %d out of range for rank %d", x->name, ax[i], x->ndim);
        red[a] = 1;
    }
    *nd = 0;
    for (int i = 0; i < x->ndim; i++) {
        if (!red[i]) sh[(*nd)++] = x->shape[i];
        else if (op->opt.mean.keep_dims) sh[(*nd)++] = 1;
    }
    return PDQ_OK;
}

pdq_code pdq_infer_reshape(const pdq_graph *g, const pdq_op *op, int *nd, int *sh, pdq_status *st) {
    pdq_code rc;
    if ((rc = need_inputs(op, 2, 2, st))) return rc;
    if ((rc = need_const_i32(g, op, 1, "new shape", -1, st))) return rc;
    const pdq_tensor *s = T(1);
    const int32_t *v = s->data;
    if (s->shape[0] > PDQ_G_MAX_DIMS)
        return pdq_fail(st, PDQ_ERR_SHAPE, "RESHAPE %s: rank %d (max %d)", s->name, s->shape[0], PDQ_G_MAX_DIMS);
    int64_t n = 1;
    for (int i = 0; i < s->shape[0]; i++) {
        if (v[i] <= 0)
            return pdq_fail(st, PDQ_ERR_SHAPE, "RESHAPE %s: dim %d is %d (static shapes only)", s->name, i, v[i]);
        sh[i] = v[i];
        n *= v[i];
        if (n > PDQ_G_MAX_ELEMS)
            return pdq_fail(st, PDQ_ERR_LIMIT, "RESHAPE %s: more than %lld elements", s->name, (long long)PDQ_G_MAX_ELEMS);
    }
    *nd = s->shape[0];
    if ((size_t)n != pdq_tensor_count(T(0)))
        return pdq_fail(st, PDQ_ERR_SHAPE, "RESHAPE %s: %zu elements into %lld", T(0)->name, pdq_tensor_count(T(0)),
                        (long long)n);
    return PDQ_OK;
}

pdq_code pdq_infer_transpose(const pdq_graph *g, const pdq_op *op, int *nd, int *sh, pdq_status *st) {
    pdq_code rc;
    if ((rc = need_inputs(op, 2, 2, st))) return rc;
    const pdq_tensor *x = T(0);
    if ((rc = need_const_i32(g, op, 1, "perm", x->ndim, st))) return rc;
    const int32_t *p = T(1)->data;
    int seen[PDQ_G_MAX_DIMS] = {0};
    for (int i = 0; i < x->ndim; i++) {
        if (p[i] < 0 || p[i] >= x->ndim || seen[p[i]])
            return pdq_fail(st, PDQ_ERR_ARG, "TRANSPOSE of %s: perm[%d] = %d is not a permutation of 0..%d", x->name, i,
                            p[i], x->ndim - 1);
        seen[p[i]] = 1;
        sh[i] = x->shape[p[i]];
    }
    *nd = x->ndim;
    return PDQ_OK;
}

pdq_code pdq_infer_concat(const pdq_graph *g, const pdq_op *op, int *nd, int *sh, pdq_status *st) {
    pdq_code rc;
    if ((rc = need_inputs(op, 1, PDQ_G_MAX_OP_INPUTS, st))) return rc;
    const pdq_tensor *x = T(0);
    if ((rc = need_rank(op, x, 1, st))) return rc;
    int a = norm_axis(op->opt.concat.axis, x->ndim);
    if (a < 0 || a >= x->ndim)
        return pdq_fail(st, PDQ_ERR_ARG, "CONCATENATION of %s: axis %d out of range for rank %d", x->name,
                        op->opt.concat.axis, x->ndim);
    copy_shape(x, nd, sh);
    int64_t len = x->shape[a];
    for (int i = 1; i < op->n_in; i++) {
        const pdq_tensor *y = T(i);
        if (y->ndim != x->ndim || y->dtype != x->dtype)
            return pdq_fail(st, PDQ_ERR_SHAPE, "CONCATENATION %s vs %s: rank %d/%d, dtype %s/%s", x->name, y->name,
                            x->ndim, y->ndim, pdq_tdtype_name(x->dtype), pdq_tdtype_name(y->dtype));
        for (int d = 0; d < x->ndim; d++)
            if (d != a && y->shape[d] != x->shape[d])
                return pdq_fail(st, PDQ_ERR_SHAPE, "CONCATENATION %s vs %s dim %d: %d vs %d", x->name, y->name, d,
                                x->shape[d], y->shape[d]);
        len += y->shape[a]; /* <= 1024 * INT32_MAX: no int64 overflow */
    }
    return put_dim(op, sh, a, len, st);
}

static pdq_code infer_slice(const pdq_graph *g, const pdq_op *op, int strided, int *nd, int *sh, pdq_status *st) {
    pdq_code rc;
    int n = strided ? 4 : 3;
    static const char *const roles[2][3] = {{"begin", "size", ""}, {"begin", "end", "strides"}};
    if ((rc = need_inputs(op, n, n, st))) return rc;
    const pdq_tensor *x = T(0);
    for (int i = 1; i < n; i++)
        if ((rc = need_const_i32(g, op, i, roles[strided][i - 1], x->ndim, st))) return rc;
    const int32_t *b = T(1)->data, *z = T(2)->data, *s = strided ? T(3)->data : NULL;
    for (int d = 0; d < x->ndim; d++) {
        int64_t dim = x->shape[d], lo = b[d], v;
        if (strided) {
            int64_t hi = z[d], step = s[d];
            if (step <= 0 || lo < 0 || hi > dim || lo >= hi)
                return pdq_fail(st, PDQ_ERR_SHAPE, "STRIDED_SLICE of %s: dim %d [%d:%d:%d] outside 0..%d (positive strides)",
                                x->name, d, b[d], z[d], s[d], x->shape[d]);
            v = (hi - lo + step - 1) / step;
        } else {
            if (lo < 0 || z[d] <= 0 || lo + z[d] > dim)
                return pdq_fail(st, PDQ_ERR_SHAPE, "SLICE of %s: dim %d begin %d + size %d outside 0..%d", x->name,
                                d, b[d], z[d], x->shape[d]);
            v = z[d];
        }
        if ((rc = put_dim(op, sh, d, v, st))) return rc;
    }
    *nd = x->ndim;
    return PDQ_OK;
}

pdq_code pdq_infer_gather(const pdq_graph *g, const pdq_op *op, int *nd, int *sh, pdq_status *st) {
    pdq_code rc;
    if ((rc = need_inputs(op, 2, 2, st))) return rc;
    const pdq_tensor *p = T(0), *ix = T(1);
    if (ix->dtype != PDQ_TI32)
        return pdq_fail(st, PDQ_ERR_ARG, "GATHER indices %s must be int32 (is %s)", ix->name, pdq_tdtype_name(ix->dtype));
    if ((rc = need_rank(op, p, 1, st))) return rc;
    int a = norm_axis(op->opt.gather.axis, p->ndim);
    if (a < 0 || a >= p->ndim)
        return pdq_fail(st, PDQ_ERR_ARG, "GATHER of %s: axis %d out of range for rank %d", p->name, op->opt.gather.axis,
                        p->ndim);
    if (p->ndim - 1 + ix->ndim > PDQ_G_MAX_DIMS)
        return pdq_fail(st, PDQ_ERR_SHAPE, "GATHER of %s by %s: output rank %d (max %d)", p->name, ix->name,
                        p->ndim - 1 + ix->ndim, PDQ_G_MAX_DIMS);
    if (ix->kind == PDQ_TK_CONST) { /* runtime indices are checked by the kernel */
        const int32_t *v = ix->data;
        if (!v) return pdq_fail(st, PDQ_ERR_ARG, "GATHER indices %s: constant without data", ix->name);
        for (size_t i = 0; i < pdq_tensor_count(ix); i++)
            if (v[i] < 0 || v[i] >= p->shape[a])
                return pdq_fail(st, PDQ_ERR_ARG, "GATHER indices %s[%zu] = %d out of range [0,%d)", ix->name, i, v[i],
                                p->shape[a]);
    }
    *nd = 0;
    for (int i = 0; i < a; i++) sh[(*nd)++] = p->shape[i];
    for (int i = 0; i < ix->ndim; i++) sh[(*nd)++] = ix->shape[i];
    for (int i = a + 1; i < p->ndim; i++) sh[(*nd)++] = p->shape[i];
    return PDQ_OK;
}

pdq_code pdq_infer_binary(const pdq_graph *g, const pdq_op *op, int *nd, int *sh, pdq_status *st) {
    pdq_code rc = need_inputs(op, 2, 2, st);
    return rc ? rc : broadcast(op, T(0), T(1), nd, sh, st);
}

pdq_code pdq_infer_unary(const pdq_graph *g, const pdq_op *op, int *nd, int *sh, pdq_status *st) {
    pdq_code rc = need_inputs(op, 1, 1, st);
    if (!rc) copy_shape(T(0), nd, sh);
    return rc;
}

pdq_code pdq_infer_softmax(const pdq_graph *g, const pdq_op *op, int *nd, int *sh, pdq_status *st) {
    pdq_code rc; /* over the last axis: rank 0 has none */
    if ((rc = need_inputs(op, 1, 1, st)) || (rc = need_rank(op, T(0), 1, st))) return rc;
    copy_shape(T(0), nd, sh);
    return PDQ_OK;
}

pdq_code pdq_infer_rms_norm(const pdq_graph *g, const pdq_op *op, int *nd, int *sh, pdq_status *st) {
    pdq_code rc;
    if ((rc = need_inputs(op, 2, 2, st))) return rc;
    const pdq_tensor *x = T(0), *w = T(1);
    if ((rc = need_rank(op, x, 1, st))) return rc;
    int c = x->shape[x->ndim - 1];
    if (w->ndim != 1 || (w->shape[0] != c && w->shape[0] != 1))
        return pdq_fail(st, PDQ_ERR_SHAPE, "RMS_NORM gamma %s must be [%d] or [1]", w->name, c);
    copy_shape(x, nd, sh);
    return PDQ_OK;
}

pdq_code pdq_infer_strided_slice(const pdq_graph *g, const pdq_op *op, int *nd, int *sh, pdq_status *st) {
    return infer_slice(g, op, 1, nd, sh, st);
}

pdq_code pdq_infer_plain_slice(const pdq_graph *g, const pdq_op *op, int *nd, int *sh, pdq_status *st) {
    return infer_slice(g, op, 0, nd, sh, st);
}

pdq_code pdq_op_infer(const pdq_graph *g, const pdq_op *op, int *nd, int *sh, pdq_status *st) {
    if (op->n_in < 0 || op->n_in > PDQ_G_MAX_OP_INPUTS || (op->n_in && !op->in))
        return pdq_fail(st, PDQ_ERR_LIMIT, "%s: %d inputs (max %d)", OPN, op->n_in, PDQ_G_MAX_OP_INPUTS);
    for (int i = 0; i < op->n_in; i++) {
        if (op->in[i] < 0 || op->in[i] >= g->n_tensors)
            return pdq_fail(st, PDQ_ERR_ARG, "%s input %d is tensor %d (of %d)", OPN, i, op->in[i], g->n_tensors);
        if (T(i)->ndim < 0 || T(i)->ndim > PDQ_G_MAX_DIMS)
            return pdq_fail(st, PDQ_ERR_SHAPE, "%s input %s has rank %d (max %d)", OPN, T(i)->name, T(i)->ndim,
                            PDQ_G_MAX_DIMS);
    }
    const pdq_op_def *d = pdq_op_def_of(op->type);
    if (!d) return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "unknown op type %d", (int)op->type);
    pdq_code rc = d->infer(g, op, nd, sh, st);
    if (rc != PDQ_OK) return rc;
    /* one bound for every op: the output's element count (each dim is already a positive int) */
    int64_t n = 1;
    for (int d = 0; d < *nd; d++) {
        if (sh[d] <= 0) return pdq_fail(st, PDQ_ERR_SHAPE, "%s: output dim %d is %d", OPN, d, sh[d]);
        n *= sh[d];
        if (n > PDQ_G_MAX_ELEMS)
            return pdq_fail(st, PDQ_ERR_LIMIT, "%s: output of more than %lld elements (limit per tensor)", OPN,
                            (long long)PDQ_G_MAX_ELEMS);
    }
    return PDQ_OK;
}
