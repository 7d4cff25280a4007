/* Shape inference and validation per op (TFLite/Circle semantics). */
#include <string.h>

#include "pdq/graph.h"

#define T(i) (&g->tensors[op->in[i]])

static pdq_code need_inputs(const pdq_op *op, int lo, int hi, pdq_status *st) {
    if (op->n_in < lo || op->n_in > hi)
        return pdq_fail(st, PDQ_ERR_ARG, "%s takes %d..%d inputs, got %d", pdq_op_name(op->type), lo,
                        hi, op->n_in);
    return PDQ_OK;
}

static pdq_code need_const_i32(const pdq_graph *g, int tid, int n, pdq_status *st) {
    const pdq_tensor *t = &g->tensors[tid];
    if (t->kind != PDQ_TK_CONST || t->dtype != PDQ_TI32 || t->ndim != 1 || (n >= 0 && t->shape[0] != n))
        return pdq_fail(st, PDQ_ERR_ARG, "%s must be an int32 constant vector of %d", t->name, n);
    return PDQ_OK;
}

/* Numpy/TFLite broadcasting of two shapes (right-aligned). */
static pdq_code broadcast(const pdq_tensor *a, const pdq_tensor *b, int *nd, int *sh, pdq_status *st) {
    int n = a->ndim > b->ndim ? a->ndim : b->ndim;
    for (int i = 0; i < n; i++) {
        int ia = a->ndim - n + i, ib = b->ndim - n + i;
        int da = ia >= 0 ? a->shape[ia] : 1, db = ib >= 0 ? b->shape[ib] : 1;
        if (da != db && da != 1 && db != 1)
            return pdq_fail(st, PDQ_ERR_SHAPE, "%s and %s do not broadcast (dim %d: %d vs %d)",
                            a->name, b->name, i, da, db);
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

pdq_code pdq_op_infer(const pdq_graph *g, const pdq_op *op, int *nd, int *sh, pdq_status *st) {
    for (int i = 0; i < op->n_in; i++)
        if (op->in[i] < 0 || op->in[i] >= g->n_tensors)
            return pdq_fail(st, PDQ_ERR_ARG, "%s input %d is tensor %d (of %d)", pdq_op_name(op->type),
                            i, op->in[i], g->n_tensors);
    pdq_code rc;
    switch (op->type) {
    case PDQ_OP_FULLY_CONNECTED: {
        if ((rc = need_inputs(op, 2, 3, st))) return rc;
        const pdq_tensor *x = T(0), *w = T(1);
        if (w->ndim != 2 || x->ndim < 1 || x->shape[x->ndim - 1] != w->shape[1])
            return pdq_fail(st, PDQ_ERR_SHAPE, "FC %s: input last dim vs weight %s [out,in] mismatch",
                            x->name, w->name);
        if (op->n_in == 3 && (T(2)->ndim != 1 || T(2)->shape[0] != w->shape[0]))
            return pdq_fail(st, PDQ_ERR_SHAPE, "FC bias %s must be [%d]", T(2)->name, w->shape[0]);
        if (op->opt.fc.keep_num_dims) {
            copy_shape(x, nd, sh);
            sh[*nd - 1] = w->shape[0];
        } else {
            int rows = 1;
            for (int i = 0; i < x->ndim - 1; i++) rows *= x->shape[i];
            *nd = 2;
            sh[0] = rows;
            sh[1] = w->shape[0];
        }
        return PDQ_OK;
    }
    case PDQ_OP_BATCH_MATMUL: {
        if ((rc = need_inputs(op, 2, 2, st))) return rc;
        const pdq_tensor *a = T(0), *b = T(1);
        if (a->ndim < 2 || b->ndim < 2)
            return pdq_fail(st, PDQ_ERR_SHAPE, "BATCH_MATMUL needs rank >= 2 (%s, %s)", a->name, b->name);
        int am = a->shape[a->ndim - 2], ak = a->shape[a->ndim - 1];
        if (op->opt.bmm.adj_x) { int t = am; am = ak; ak = t; }
        int bk = b->shape[b->ndim - 2], bn = b->shape[b->ndim - 1];
        if (op->opt.bmm.adj_y) { int t = bk; bk = bn; bn = t; }
        if (ak != bk)
            return pdq_fail(st, PDQ_ERR_SHAPE, "BATCH_MATMUL %s x %s: inner dims %d vs %d", a->name,
                            b->name, ak, bk);
        pdq_tensor ba = *a, bb = *b; /* batch dims only */
        ba.ndim -= 2;
        bb.ndim -= 2;
        if ((rc = broadcast(&ba, &bb, nd, sh, st))) return rc;
        sh[(*nd)++] = am;
        sh[(*nd)++] = bn;
        if (*nd > PDQ_G_MAX_DIMS) return pdq_fail(st, PDQ_ERR_SHAPE, "BATCH_MATMUL rank too large");
        return PDQ_OK;
    }
    case PDQ_OP_ADD: case PDQ_OP_SUB: case PDQ_OP_MUL: case PDQ_OP_DIV:
        if ((rc = need_inputs(op, 2, 2, st))) return rc;
        return broadcast(T(0), T(1), nd, sh, st);
    case PDQ_OP_MEAN: {
        if ((rc = need_inputs(op, 2, 2, st))) return rc;
        if ((rc = need_const_i32(g, op->in[1], -1, st))) return rc;
        const pdq_tensor *x = T(0);
        const int32_t *ax = T(1)->data;
        int red[PDQ_G_MAX_DIMS] = {0};
        for (int i = 0; i < T(1)->shape[0]; i++) {
            int a = norm_axis(ax[i], x->ndim);
            if (a < 0 || a >= x->ndim) return pdq_fail(st, PDQ_ERR_ARG, "MEAN axis %d out of range", ax[i]);
            red[a] = 1;
        }
        *nd = 0;
        for (int i = 0; i < x->ndim; i++) {
            if (!red[i]) sh[(*nd)++] = x->shape[i];
            else if (op->opt.mean.keep_dims) sh[(*nd)++] = 1;
        }
        return PDQ_OK;
    }
    case PDQ_OP_RSQRT: case PDQ_OP_NEG: case PDQ_OP_LOGISTIC:
        if ((rc = need_inputs(op, 1, 1, st))) return rc;
        copy_shape(T(0), nd, sh);
        return PDQ_OK;
    case PDQ_OP_SOFTMAX:
        if ((rc = need_inputs(op, 1, 1, st))) return rc;
        copy_shape(T(0), nd, sh);
        return PDQ_OK;
    case PDQ_OP_RMS_NORM: {
        if ((rc = need_inputs(op, 2, 2, st))) return rc;
        const pdq_tensor *x = T(0), *w = T(1);
        int c = x->shape[x->ndim - 1];
        if (w->ndim != 1 || (w->shape[0] != c && w->shape[0] != 1))
            return pdq_fail(st, PDQ_ERR_SHAPE, "RMS_NORM gamma %s must be [%d] or [1]", w->name, c);
        copy_shape(x, nd, sh);
        return PDQ_OK;
    }
    case PDQ_OP_RESHAPE: {
        if ((rc = need_inputs(op, 2, 2, st))) return rc;
        if ((rc = need_const_i32(g, op->in[1], -1, st))) return rc;
        const pdq_tensor *s = T(1);
        const int32_t *v = s->data;
        if (s->shape[0] > PDQ_G_MAX_DIMS) return pdq_fail(st, PDQ_ERR_SHAPE, "RESHAPE rank too large");
        size_t n = 1;
        for (int i = 0; i < s->shape[0]; i++) {
            if (v[i] <= 0) return pdq_fail(st, PDQ_ERR_SHAPE, "RESHAPE %s: dim %d is %d (static shapes only)", s->name, i, v[i]);
            sh[i] = v[i];
            n *= (size_t)v[i];
        }
        *nd = s->shape[0];
        if (n != pdq_tensor_count(T(0)))
            return pdq_fail(st, PDQ_ERR_SHAPE, "RESHAPE %s: %zu elements into %zu", T(0)->name,
                            pdq_tensor_count(T(0)), n);
        return PDQ_OK;
    }
    case PDQ_OP_TRANSPOSE: {
        if ((rc = need_inputs(op, 2, 2, st))) return rc;
        const pdq_tensor *x = T(0);
        if ((rc = need_const_i32(g, op->in[1], x->ndim, st))) return rc;
        const int32_t *p = T(1)->data;
        int seen[PDQ_G_MAX_DIMS] = {0};
        for (int i = 0; i < x->ndim; i++) {
            if (p[i] < 0 || p[i] >= x->ndim || seen[p[i]])
                return pdq_fail(st, PDQ_ERR_ARG, "TRANSPOSE perm is not a permutation");
            seen[p[i]] = 1;
            sh[i] = x->shape[p[i]];
        }
        *nd = x->ndim;
        return PDQ_OK;
    }
    case PDQ_OP_CONCATENATION: {
        if ((rc = need_inputs(op, 1, 1 << 20, st))) return rc;
        const pdq_tensor *x = T(0);
        int a = norm_axis(op->opt.concat.axis, x->ndim);
        if (a < 0 || a >= x->ndim) return pdq_fail(st, PDQ_ERR_ARG, "CONCATENATION axis %d", op->opt.concat.axis);
        copy_shape(x, nd, sh);
        for (int i = 1; i < op->n_in; i++) {
            const pdq_tensor *y = T(i);
            if (y->ndim != x->ndim || y->dtype != x->dtype)
                return pdq_fail(st, PDQ_ERR_SHAPE, "CONCATENATION %s vs %s rank/dtype", x->name, y->name);
            for (int d = 0; d < x->ndim; d++)
                if (d != a && y->shape[d] != x->shape[d])
                    return pdq_fail(st, PDQ_ERR_SHAPE, "CONCATENATION %s vs %s dim %d", x->name, y->name, d);
            sh[a] += y->shape[a];
        }
        return PDQ_OK;
    }
    case PDQ_OP_STRIDED_SLICE: {
        if ((rc = need_inputs(op, 4, 4, st))) return rc;
        const pdq_tensor *x = T(0);
        for (int i = 1; i < 4; i++)
            if ((rc = need_const_i32(g, op->in[i], x->ndim, st))) return rc;
        const int32_t *b = T(1)->data, *e = T(2)->data, *s = T(3)->data;
        for (int d = 0; d < x->ndim; d++) {
            if (s[d] <= 0 || b[d] < 0 || e[d] > x->shape[d] || b[d] >= e[d])
                return pdq_fail(st, PDQ_ERR_SHAPE, "STRIDED_SLICE of %s: dim %d [%d:%d:%d] of %d",
                                x->name, d, b[d], e[d], s[d], x->shape[d]);
            sh[d] = (e[d] - b[d] + s[d] - 1) / s[d];
        }
        *nd = x->ndim;
        return PDQ_OK;
    }
    case PDQ_OP_SLICE: {
        if ((rc = need_inputs(op, 3, 3, st))) return rc;
        const pdq_tensor *x = T(0);
        for (int i = 1; i < 3; i++)
            if ((rc = need_const_i32(g, op->in[i], x->ndim, st))) return rc;
        const int32_t *b = T(1)->data, *z = T(2)->data;
        for (int d = 0; d < x->ndim; d++) {
            if (b[d] < 0 || z[d] <= 0 || b[d] + z[d] > x->shape[d])
                return pdq_fail(st, PDQ_ERR_SHAPE, "SLICE of %s: dim %d begin %d size %d of %d",
                                x->name, d, b[d], z[d], x->shape[d]);
            sh[d] = z[d];
        }
        *nd = x->ndim;
        return PDQ_OK;
    }
    case PDQ_OP_GATHER: {
        if ((rc = need_inputs(op, 2, 2, st))) return rc;
        const pdq_tensor *p = T(0), *ix = T(1);
        if (ix->dtype != PDQ_TI32) return pdq_fail(st, PDQ_ERR_ARG, "GATHER indices %s must be int32", ix->name);
        int a = norm_axis(op->opt.gather.axis, p->ndim);
        if (a < 0 || a >= p->ndim) return pdq_fail(st, PDQ_ERR_ARG, "GATHER axis %d", op->opt.gather.axis);
        if (p->ndim - 1 + ix->ndim > PDQ_G_MAX_DIMS) return pdq_fail(st, PDQ_ERR_SHAPE, "GATHER rank too large");
        if (ix->kind == PDQ_TK_CONST) {
            const int32_t *v = ix->data;
            for (size_t i = 0; i < pdq_tensor_count(ix); i++)
                if (v[i] < 0 || v[i] >= p->shape[a])
                    return pdq_fail(st, PDQ_ERR_ARG, "GATHER index %d out of range %d", v[i], p->shape[a]);
        }
        *nd = 0;
        for (int i = 0; i < a; i++) sh[(*nd)++] = p->shape[i];
        for (int i = 0; i < ix->ndim; i++) sh[(*nd)++] = ix->shape[i];
        for (int i = a + 1; i < p->ndim; i++) sh[(*nd)++] = p->shape[i];
        return PDQ_OK;
    }
    case PDQ_OP_COUNT: break;
    }
    return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "unknown op type %d", (int)op->type);
}
