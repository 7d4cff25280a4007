/* RSQRT, NEG, LOGISTIC, TANH, GELU: one real function of each element. Float in float32; integer mode by a
 * table over every input code (each entry the rule of include/pdq/qexec.h: the code's value in
 * double, the function, requantized), or per element where the input is not a code. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/op_def.h"
#include "ops/qx_kernel.h"
#include "ops/op_rules.h"

static pdq_code infer(const pdq_graph *g, const pdq_op *op, int *nd, int *sh, pdq_status *st) {
    pdq_code rc = pdq_rule_inputs(op, 1, 1, st);
    if (!rc) pdq_rule_same_shape(OPERAND(0), nd, sh);
    return rc;
}

/* PyTorch's gelu: exact 0.5 x (1 + erf(x / sqrt 2)), or (approximate) the tanh form
 * 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) in its float32 order of operations. */
static float gelu_f32(float x, int approximate) {
    if (!approximate) return 0.5f * x * (1.0f + erff(x * (float)M_SQRT1_2));
    const float beta = (float)(M_SQRT2 * M_2_SQRTPI * 0.5), kappa = 0.044715f;
    return 0.5f * x * (1.0f + tanhf(beta * (x + kappa * (x * x * x))));
}

static pdq_code f32(const pdq_graph *g, const pdq_op *op, void *const *ptrs, pdq_status *st) {
    (void)st;
    const float *x = ptrs[op->in[0]];
    float *y = ptrs[op->out[0]];
    size_t n = pdq_tensor_count(&g->tensors[op->out[0]]);
    switch (op->type) {
    case PDQ_OP_RSQRT: for (size_t i = 0; i < n; i++) y[i] = 1.0f / sqrtf(x[i]); break;
    case PDQ_OP_NEG: for (size_t i = 0; i < n; i++) y[i] = -x[i]; break;
    case PDQ_OP_TANH: for (size_t i = 0; i < n; i++) y[i] = tanhf(x[i]); break;
    case PDQ_OP_GELU: for (size_t i = 0; i < n; i++) y[i] = gelu_f32(x[i], op->opt.gelu.approximate); break;
    default: for (size_t i = 0; i < n; i++) y[i] = 1.0f / (1.0f + expf(-x[i])); break; /* LOGISTIC */
    }
    return PDQ_OK;
}

/* ---------------------------------------------------------------- integer */

/* The integer rule's real function, in double (the table of include/pdq/qexec.h's rule). */
static double unary_f(const pdq_op *op, double v) {
    switch (op->type) {
    case PDQ_OP_NEG: return -v;
    case PDQ_OP_RSQRT: return 1.0 / sqrt(v);
    case PDQ_OP_TANH: return tanh(v);
    case PDQ_OP_GELU:
        if (!op->opt.gelu.approximate) return 0.5 * v * (1.0 + erf(v * M_SQRT1_2));
        return 0.5 * v * (1.0 + tanh(sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v)));
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
        double v = unary_f(op, pdq_rq_value(xq->lo + (int64_t)i, xq->s, xq->zp));
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
        for (size_t i = i0; i < i1; i++) qx_st(yq, yd, i, unary_f(c->op, qx_ld(xq, xd, i)));
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
UNARY_OP(pdq_op_tanh, TANH);

static int gelu_same(const pdq_op *a, const pdq_op *b) { return !a->opt.gelu.approximate == !b->opt.gelu.approximate; }

const pdq_op_def pdq_op_gelu = {
    .name = "GELU", .kind = PDQ_OPK_ELEMENTWISE, .grid = PDQ_GRID_OWN,
    .infer = infer, .f32 = f32, .qx = {qx_prepare, qx_run}, .opt_same = gelu_same,
};
