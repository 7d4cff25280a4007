/* SLICE (begin, size) and STRIDED_SLICE (begin, end, positive strides; no masks) by constant
 * int32 vectors: one strided copy, planned once (ir/layout.h), of any dtype. */
#include <stdint.h>
#include <string.h>

#include "ir/layout.h"
#include "ops/op_def.h"
#include "ops/qx_kernel.h"
#include "ops/op_rules.h"

static pdq_code infer_slice(const pdq_graph *g, const pdq_op *op, int strided, int *nd, int *sh, pdq_status *st) {
    pdq_code rc;
    int n = strided ? 4 : 3;
    static const char *const roles[2][3] = {{"begin", "size", ""}, {"begin", "end", "strides"}};
    if ((rc = pdq_rule_inputs(op, n, n, st))) return rc;
    const pdq_tensor *x = OPERAND(0);
    for (int i = 1; i < n; i++)
        if ((rc = pdq_rule_const_i32(g, op, i, roles[strided][i - 1], x->ndim, st))) return rc;
    const int32_t *b = OPERAND(1)->data, *z = OPERAND(2)->data, *s = strided ? OPERAND(3)->data : NULL;
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
        if ((rc = pdq_rule_put_dim(op, sh, d, v, st))) return rc;
    }
    *nd = x->ndim;
    return PDQ_OK;
}

static pdq_code infer_strided(const pdq_graph *g, const pdq_op *op, int *nd, int *sh, pdq_status *st) {
    return infer_slice(g, op, 1, nd, sh, st);
}

static pdq_code infer_plain(const pdq_graph *g, const pdq_op *op, int *nd, int *sh, pdq_status *st) {
    return infer_slice(g, op, 0, nd, sh, st);
}

static int box(const pdq_graph *g, const pdq_op *op, pdq_k_box *bx) {
    int strided = op->type == PDQ_OP_STRIDED_SLICE;
    for (int i = 1; i < op->n_in; i++)
        if (g->tensors[op->in[i]].kind != PDQ_TK_CONST) return 0;
    const pdq_tensor *x = &g->tensors[op->in[0]], *o = &g->tensors[op->out[0]];
    const int32_t *b = g->tensors[op->in[1]].data;
    const int32_t *s = strided ? g->tensors[op->in[3]].data : NULL;
    int x6[PDQ_G_MAX_DIMS], o6[PDQ_G_MAX_DIMS];
    long xs6[PDQ_G_MAX_DIMS], src6[PDQ_G_MAX_DIMS];
    pdq_k_shape6(x, x6);
    pdq_k_shape6(o, o6);
    pdq_k_dense_strides6(x6, xs6);
    int pad = PDQ_G_MAX_DIMS - x->ndim;
    long off = 0;
    for (int d = 0; d < PDQ_G_MAX_DIMS; d++) {
        int step = (d < pad || !s) ? 1 : s[d - pad];
        src6[d] = xs6[d] * step;
        if (d >= pad) off += (long)b[d - pad] * xs6[d];
    }
    pdq_k_box_strided(o6, src6, off, pdq_tdtype_size(x->dtype), bx);
    return 1;
}

static pdq_code f32(const pdq_graph *g, const pdq_op *op, void *const *ptrs, pdq_status *st) {
    (void)st;
    pdq_k_box b;
    box(g, op, &b); /* begin / size / end / strides are constant: inference checks them */
    pdq_k_box_copy(&b, ptrs[op->out[0]], ptrs[op->in[0]]);
    return PDQ_OK;
}

const pdq_op_def pdq_op_strided_slice = {
    .name = "STRIDED_SLICE", .kind = PDQ_OPK_DATA_MOVE, .grid = PDQ_GRID_OF_DATA,
    .infer = infer_strided, .f32 = f32, .qx = {pdq_qx_move_prepare, pdq_qx_move_run}, .box = box,
};

const pdq_op_def pdq_op_slice = {
    .name = "SLICE", .kind = PDQ_OPK_DATA_MOVE, .grid = PDQ_GRID_OF_DATA,
    .infer = infer_plain, .f32 = f32, .qx = {pdq_qx_move_prepare, pdq_qx_move_run}, .box = box,
};
