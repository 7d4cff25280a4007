/* CONCATENATION along an axis: the inputs' rows side by side, of any dtype. In a quantized
 * graph every input and the output share one grid (the PTQ edge rule), so codes move as stored. */
#include <stdint.h>
#include <string.h>

#include "ir/layout.h"
#include "ops/op_def.h"
#include "ops/qx_kernel.h"
#include "ops/op_rules.h"

static pdq_code infer(const pdq_graph *g, const pdq_op *op, int *nd, int *sh, pdq_status *st) {
    pdq_code rc;
    if ((rc = pdq_rule_inputs(op, 1, PDQ_G_MAX_OP_INPUTS, st))) return rc;
    const pdq_tensor *x = OPERAND(0);
    if ((rc = pdq_rule_rank(op, x, 1, st))) return rc;
    int a = pdq_rule_axis(op->opt.concat.axis, x->ndim);
    if (a < 0 || a >= x->ndim)
        return pdq_fail(st, PDQ_ERR_ARG, "CONCATENATION of %s: axis %d out of range for rank %d", x->name,
                        op->opt.concat.axis, x->ndim);
    pdq_rule_same_shape(x, nd, sh);
    int64_t len = x->shape[a];
    for (int i = 1; i < op->n_in; i++) {
        const pdq_tensor *y = OPERAND(i);
        if (y->ndim != x->ndim || y->dtype != x->dtype)
            return pdq_fail(st, PDQ_ERR_SHAPE, "CONCATENATION %s vs %s: rank %d/%d, dtype %s/%s", x->name, y->name,
                            x->ndim, y->ndim, pdq_tdtype_name(x->dtype), pdq_tdtype_name(y->dtype));
        for (int d = 0; d < x->ndim; d++)
            if (d != a && y->shape[d] != x->shape[d])
                return pdq_fail(st, PDQ_ERR_SHAPE, "CONCATENATION %s vs %s dim %d: %d vs %d", x->name, y->name, d,
                                x->shape[d], y->shape[d]);
        len += y->shape[a]; /* <= 1024 * INT32_MAX: no int64 overflow */
    }
    return pdq_rule_put_dim(op, sh, a, len, st);
}

static pdq_code f32(const pdq_graph *g, const pdq_op *op, void *const *ptrs, pdq_status *st) {
    (void)st;
    size_t esz = pdq_tdtype_size(g->tensors[op->in[0]].dtype);
    const pdq_tensor *o = &g->tensors[op->out[0]];
    int axis = op->opt.concat.axis < 0 ? op->opt.concat.axis + o->ndim : op->opt.concat.axis;
    size_t outer = 1, inner = 1;
    for (int d = 0; d < axis; d++) outer *= (size_t)o->shape[d];
    for (int d = axis + 1; d < o->ndim; d++) inner *= (size_t)o->shape[d];
    size_t orow = (size_t)o->shape[axis] * inner * esz;
    char *od = ptrs[op->out[0]];
    size_t at = 0;
    for (int i = 0; i < op->n_in; i++) {
        const pdq_tensor *x = &g->tensors[op->in[i]];
        size_t xrow = (size_t)x->shape[axis] * inner * esz;
        const char *xd = ptrs[op->in[i]];
        for (size_t r = 0; r < outer; r++) memcpy(od + r * orow + at, xd + r * xrow, xrow);
        at += xrow;
    }
    return PDQ_OK;
}

static int opt_same(const pdq_op *a, const pdq_op *b) { return a->opt.concat.axis == b->opt.concat.axis; }

const pdq_op_def pdq_op_concatenation = {
    .name = "CONCATENATION", .kind = PDQ_OPK_DATA_MOVE, .grid = PDQ_GRID_OF_ALL,
    .infer = infer, .f32 = f32, .qx = {pdq_qx_move_prepare, pdq_qx_move_run}, .opt_same = opt_same,
};
