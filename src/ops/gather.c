/* GATHER of rows by int32 indices (checked at run when not constant), of any dtype. In integer
 * mode a GATHER of a constant table (the embedding) dequantizes each row as the exported file's
 * DEQUANTIZE of the table does and requantizes it to the output's grid; of activations, codes
 * move as stored. */
#include <stdint.h>
#include <string.h>

#include "ir/layout.h"
#include "ops/op_def.h"
#include "ops/qx_kernel.h"
#include "ops/op_rules.h"

#include <stdlib.h>

static pdq_code infer(const pdq_graph *g, const pdq_op *op, int *nd, int *sh, pdq_status *st) {
    pdq_code rc;
    if ((rc = pdq_rule_inputs(op, 2, 2, st))) return rc;
    const pdq_tensor *p = OPERAND(0), *ix = OPERAND(1);
    if (ix->dtype != PDQ_TI32)
        return pdq_fail(st, PDQ_ERR_ARG, "GATHER indices %s must be int32 (is %s)", ix->name, pdq_tdtype_name(ix->dtype));
    if ((rc = pdq_rule_rank(op, p, 1, st))) return rc;
    int a = pdq_rule_axis(op->opt.gather.axis, p->ndim);
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

static pdq_code f32(const pdq_graph *g, const pdq_op *op, void *const *ptrs, pdq_status *st) {
    size_t esz = pdq_tdtype_size(g->tensors[op->in[0]].dtype);
    const pdq_tensor *p = &g->tensors[op->in[0]], *ix = &g->tensors[op->in[1]];
    int axis = op->opt.gather.axis < 0 ? op->opt.gather.axis + p->ndim : op->opt.gather.axis;
    size_t outer = 1, inner = 1;
    for (int d = 0; d < axis; d++) outer *= (size_t)p->shape[d];
    for (int d = axis + 1; d < p->ndim; d++) inner *= (size_t)p->shape[d];
    size_t ni = pdq_tensor_count(ix);
    const int32_t *idx = ptrs[op->in[1]];
    const char *pd = ptrs[op->in[0]];
    char *od = ptrs[op->out[0]];
    int n_axis = p->shape[axis];
    for (size_t i = 0; i < ni; i++)
        if (idx[i] < 0 || idx[i] >= n_axis)
            return pdq_fail(st, PDQ_ERR_ARG, "GATHER %s: index %d out of range [0,%d)", p->name, idx[i], n_axis);
    size_t blk = inner * esz;
    for (size_t r = 0; r < outer; r++)
        for (size_t i = 0; i < ni; i++)
            memcpy(od + (r * ni + i) * blk, pd + (r * (size_t)n_axis + (size_t)idx[i]) * blk, blk);
    return PDQ_OK;
}

/* ---------------------------------------------------------------- integer */

/* Per-row scale / zero point of a quantized constant along dim 0 (GATHER of the embedding). */
static pdq_code const_rows(const pdq_tensor *t, qx_prep *p, pdq_status *st) {
    int rows = t->shape[0];
    if (t->q->block || (t->q->n != 1 && (t->q->n != rows || t->q->quantized_dim != 0)))
        return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "integer mode: %s: %d scales%s, need 1 or one per row", t->name, t->q->n,
                        t->q->block ? " in groups" : "");
    p->row_s = malloc(sizeof(double) * (size_t)rows);
    p->row_zp = malloc(sizeof(int64_t) * (size_t)rows);
    if (!p->row_s || !p->row_zp) return pdq_fail(st, PDQ_ERR_NOMEM, "integer mode: %s", t->name);
    for (int r = 0; r < rows; r++) {
        int c = t->q->n == 1 ? 0 : r;
        p->row_s[r] = (double)t->q->scale[c];
        p->row_zp[r] = t->q->zero_point[c];
    }
    return PDQ_OK;
}

static pdq_code qx_prepare(pdq_qexec *x, int oi, pdq_status *st) {
    QX_OP_HEAD;
    if (a->kind != PDQ_TK_CONST) return pdq_qx_move_prepare(x, oi, st);
    if (a->q && a->dtype != PDQ_TF32) return const_rows(a, p, st);
    if (a->dtype != PDQ_TF32) return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "integer mode: GATHER of %s", a->name);
    return PDQ_OK;
}

static pdq_code gather_const(pdq_qexec *x, const pdq_op *op, pdq_status *st) {
    const pdq_graph *g = x->g;
    const pdq_tensor *pt = &g->tensors[op->in[0]], *it = &g->tensors[op->in[1]];
    const qx_prep *p = &x->prep[op - g->ops];
    const qx_t *yq = &x->t[op->out[0]];
    void *yd = x->ptrs[op->out[0]];
    const int32_t *idx = x->ptrs[op->in[1]];
    int axis = op->opt.gather.axis < 0 ? op->opt.gather.axis + pt->ndim : op->opt.gather.axis;
    if (axis != 0) return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "integer mode: GATHER of constant %s on axis %d", pt->name, axis);
    size_t row = pdq_tensor_count(pt) / (size_t)pt->shape[0], n = pdq_tensor_count(it);
    for (size_t i = 0; i < n; i++) {
        int r = idx[i];
        if (r < 0 || r >= pt->shape[0])
            return pdq_fail(st, PDQ_ERR_ARG, "GATHER %s: index %d out of range [0,%d)", pt->name, r, pt->shape[0]);
        for (size_t k = 0; k < row; k++) {
            size_t src = (size_t)r * row + k;
            /* a quantized row is dequantized to float32 first, as the exported file's DEQUANTIZE of
             * the table computes it (TFLite's weight-only GATHER form), then requantized: the
             * in-memory graph and the Circle file give the same codes */
            double v = p->row_s ? (double)(float)pdq_rq_value(pdq_qx_const_code(pt, src), p->row_s[r], p->row_zp[r])
                                : (double)((const float *)pt->data)[src];
            qx_st(yq, yd, i * row + k, v);
        }
    }
    return PDQ_OK;
}

static pdq_code qx_run(pdq_qexec *x, int oi, pdq_status *st) {
    const pdq_op *op = &x->g->ops[oi];
    if (x->g->tensors[op->in[0]].kind == PDQ_TK_CONST) return gather_const(x, op, st);
    return pdq_qx_move_run(x, oi, st);
}

static int opt_same(const pdq_op *a, const pdq_op *b) { return a->opt.gather.axis == b->opt.gather.axis; }

const pdq_op_def pdq_op_gather = {
    .name = "GATHER", .kind = PDQ_OPK_DATA_MOVE, .grid = PDQ_GRID_OF_DATA,
    .infer = infer, .f32 = f32, .qx = {qx_prepare, qx_run}, .opt_same = opt_same,
};
