/* RESHAPE to the shape of a constant int32 vector (static shapes only): the elements as stored.
 * In integer mode a same-shape RESHAPE between two grids is how an imported QUANTIZE or
 * DEQUANTIZE runs: each value goes to the output's grid by the one requantization rule. */
#include <stdint.h>
#include <string.h>

#include "ir/layout.h"
#include "ops/op_def.h"
#include "ops/qx_kernel.h"
#include "ops/op_rules.h"

static pdq_code infer(const pdq_graph *g, const pdq_op *op, int *nd, int *sh, pdq_status *st) {
    pdq_code rc;
    if ((rc = pdq_rule_inputs(op, 2, 2, st))) return rc;
    if ((rc = pdq_rule_const_i32(g, op, 1, "new shape", -1, st))) return rc;
    const pdq_tensor *s = OPERAND(1);
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
    if ((size_t)n != pdq_tensor_count(OPERAND(0)))
        return pdq_fail(st, PDQ_ERR_SHAPE, "RESHAPE %s: %zu elements into %lld", OPERAND(0)->name, pdq_tensor_count(OPERAND(0)),
                        (long long)n);
    return PDQ_OK;
}

static pdq_code f32(const pdq_graph *g, const pdq_op *op, void *const *ptrs, pdq_status *st) {
    (void)st; /* moves any dtype: the integer executor runs it too */
    if (ptrs[op->out[0]] != ptrs[op->in[0]])
        memcpy(ptrs[op->out[0]], ptrs[op->in[0]],
               pdq_tensor_count(&g->tensors[op->in[0]]) * pdq_tdtype_size(g->tensors[op->in[0]].dtype));
    return PDQ_OK;
}

static pdq_code qx_prepare(pdq_qexec *x, int oi, pdq_status *st) {
    QX_OP_HEAD;
    if (a->kind != PDQ_TK_CONST && !qx_same_grid(&x->t[op->in[0]], yq) &&
        pdq_tensor_count(a) == pdq_tensor_count(&g->tensors[op->out[0]])) {
        p->requant_move = 1;
        return PDQ_OK;
    }
    return pdq_qx_move_prepare(x, oi, st);
}

static pdq_code qx_run(pdq_qexec *x, int oi, pdq_status *st) {
    const pdq_op *op = &x->g->ops[oi];
    if (!x->prep[oi].requant_move) return pdq_qx_move_run(x, oi, st);
    const qx_t *xq = &x->t[op->in[0]], *yq = &x->t[op->out[0]];
    size_t n = pdq_tensor_count(&x->g->tensors[op->out[0]]);
    for (size_t i = 0; i < n; i++) qx_st(yq, x->ptrs[op->out[0]], i, qx_ld(xq, x->ptrs[op->in[0]], i));
    return PDQ_OK;
}

const pdq_op_def pdq_op_reshape = {
    .name = "RESHAPE", .kind = PDQ_OPK_DATA_MOVE, .grid = PDQ_GRID_OF_DATA,
    .infer = infer, .f32 = f32, .qx = {qx_prepare, qx_run},
};
