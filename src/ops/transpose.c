/* TRANSPOSE by a constant permutation: one strided copy, planned once (ir/layout.h), of any
 * dtype. */
#include <stdint.h>
#include <string.h>

#include "ir/layout.h"
#include "ops/op_def.h"
#include "ops/qx_kernel.h"
#include "ops/op_rules.h"

static pdq_code infer(const pdq_graph *g, const pdq_op *op, int *nd, int *sh, pdq_status *st) {
    pdq_code rc;
    if ((rc = pdq_rule_inputs(op, 2, 2, st))) return rc;
    const pdq_tensor *x = OPERAND(0);
    if ((rc = pdq_rule_const_i32(g, op, 1, "perm", x->ndim, st))) return rc;
    const int32_t *p = OPERAND(1)->data;
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

static int box(const pdq_graph *g, const pdq_op *op, pdq_k_box *b) {
    if (g->tensors[op->in[1]].kind != PDQ_TK_CONST) return 0;
    const pdq_tensor *x = &g->tensors[op->in[0]], *o = &g->tensors[op->out[0]];
    const int32_t *perm = g->tensors[op->in[1]].data;
    int x6[PDQ_G_MAX_DIMS], o6[PDQ_G_MAX_DIMS];
    long xs6[PDQ_G_MAX_DIMS], src6[PDQ_G_MAX_DIMS];
    pdq_k_shape6(x, x6);
    pdq_k_shape6(o, o6);
    pdq_k_dense_strides6(x6, xs6);
    int pad = PDQ_G_MAX_DIMS - x->ndim;
    for (int d = 0; d < PDQ_G_MAX_DIMS; d++) src6[d] = d < pad ? 0 : xs6[pad + perm[d - pad]];
    pdq_k_box_strided(o6, src6, 0, pdq_tdtype_size(x->dtype), b);
    return 1;
}

static pdq_code f32(const pdq_graph *g, const pdq_op *op, void *const *ptrs, pdq_status *st) {
    (void)st;
    pdq_k_box b;
    box(g, op, &b); /* the perm is constant: inference checks it */
    pdq_k_box_copy(&b, ptrs[op->out[0]], ptrs[op->in[0]]);
    return PDQ_OK;
}

const pdq_op_def pdq_op_transpose = {
    .name = "TRANSPOSE", .kind = PDQ_OPK_DATA_MOVE, .grid = PDQ_GRID_OF_DATA,
    .infer = infer, .f32 = f32, .qx = {pdq_qx_move_prepare, pdq_qx_move_run}, .box = box,
};
