/* RSQRT, NEG, LOGISTIC: one real function of each element. Float in float32; integer mode by a
 * table over every input code (each entry the rule of include/pdq/qexec.h: the code's value in
 * double, the function, requantized), or per element where the input is not a code. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "exec/qx_internal.h"
#include "ops/op_def.h"
#include "ops/op_rules.h"

static pdq_code infer(const pdq_graph *g, const pdq_op *op, int *nd, int *sh, pdq_status *st) {
    pdq_code rc = pdq_rule_inputs(op, 1, 1, st);
    if (!rc) pdq_rule_same_shape(OPERAND(0), nd, sh);
    return rc;
}

static pdq_code f32(const pdq_graph *g, const pdq_op *op, void *const *ptrs, pdq_status *st) {
    (void)st;
    const float *x = ptrs[op->in[0]];
    float *y = ptrs[op->out[0]];
    size_t n = pdq_tensor_count(&g->tensors[op->out[0]]);
    switch (op->type) {
    case PDQ_OP_RSQRT: for (size_t i = 0; i < n; i++) y[i] = 1.0f / sqrtf(x[i]); break;
    case PDQ_OP_NEG: for (size_t i = 0; i < n; i++) y[i] = -x[i]; break;
    default: for (size_t i = 0; i < n; i++) y[i] = 1.0f / (1.0f + expf(-x[i])); break; /* LOGISTIC */
    }
    return PDQ_OK;
}

/* ---------------------------------------------------------------- integer */

static double unary_f(pdq_op_type t, double v) {
    switch (t) {
    case PDQ_OP_NEG: return -v;
    case PDQ_OP_RSQRT: return 1.0 / sqrt(v);
    default: return 1.0 / (1.0 + exp(-v)); /* LOGISTIC */
    }
}

static pdq_code qx_prepare(pdq_qexec *x, int oi, pdq_status *st) {
    QX_OP_HEAD;
    const qx_t *xq = &x->t[op->in[0]];
    if (a->kind == PDQ_TK_CONST) return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "integer mode: constant input %s", a->name);
    if (!xq->quant || !yq->quant) return PDQ_OK; /* computed per element */
    size_t n = (size_t)(xq->hi - xq->lo + 1);
    p->table = malloc(sizeof(int16_t) * n); /* int16 or uint8 codes: 128 KiB for an int16 input */
    if (!p->table) return pdq_fail(st, PDQ_ERR_NOMEM, "integer mode: table");
    for (size_t i = 0; i < n; i++) {
        double v = unary_f(op->type, pdq_rq_value(xq->lo + (int64_t)i, xq->s, xq->zp));
        p->table[i] = (int16_t)pdq_rq_code(v, yq->s, yq->zp, yq->lo, yq->hi);
    }
    return PDQ_OK;
}

static void unary_task(void *vc, int task, int thread) {
    (void)thread;
    QX_ROWS_HEAD(vc, task);
    size_t i0 = r0 * (size_t)c->c, i1 = r1 * (size_t)c->c;
    const int16_t *tab = c->p->table;
    if (tab && yq->dt == PDQ_TI16) {
        int16_t *y = yd;
        for (size_t i = i0; i < i1; i++) y[i] = (int16_t)tab[qx_code(xq, xd, i) - xq->lo];
    } else if (tab) {
        uint8_t *y = yd;
        for (size_t i = i0; i < i1; i++) y[i] = (uint8_t)tab[qx_code(xq, xd, i) - xq->lo];
    } else {
        for (size_t i = i0; i < i1; i++) qx_st(yq, yd, i, unary_f(c->op->type, qx_ld(xq, xd, i)));
    }
}

static pdq_code qx_run(pdq_qexec *x, int oi, pdq_status *st) {
    (void)st;
    pdq_qx_rows_run(x, &x->g->ops[oi], unary_task, 1);
    return PDQ_OK;
}

#define UNARY_OP(var, NAME)                                                                          \
    const pdq_op_def var = {                                                                        \
        .name = #NAME, .kind = PDQ_OPK_ELEMENTWISE, .grid = PDQ_GRID_OWN,                           \
        .infer = infer, .f32 = f32, .qx = {qx_prepare, qx_run},                                     \
    }
UNARY_OP(pdq_op_rsqrt, RSQRT);
UNARY_OP(pdq_op_neg, NEG);
UNARY_OP(pdq_op_logistic, LOGISTIC);
