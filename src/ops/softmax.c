/* SOFTMAX over the last dim, exp(beta * (x - max)) / sum. Integer mode: each term from the code
 * difference to the row's largest code, exp in double, summed in index order, each term over the
 * sum requantized (include/pdq/qexec.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/op_def.h"
#include "ops/qx_kernel.h"
#include "ops/op_rules.h"

static pdq_code infer(const pdq_graph *g, const pdq_op *op, int *nd, int *sh, pdq_status *st) {
    pdq_code rc; /* over the last axis: rank 0 has none */
    if ((rc = pdq_rule_inputs(op, 1, 1, st)) || (rc = pdq_rule_rank(op, OPERAND(0), 1, st))) return rc;
    pdq_rule_same_shape(OPERAND(0), nd, sh);
    return PDQ_OK;
}

static pdq_code f32(const pdq_graph *g, const pdq_op *op, void *const *ptrs, pdq_status *st) {
    (void)st;
    const pdq_tensor *x = &g->tensors[op->in[0]];
    const float *xd = ptrs[op->in[0]];
    float *y = ptrs[op->out[0]];
    int c = x->shape[x->ndim - 1];
    size_t rows = pdq_tensor_count(x) / (size_t)c;
    float beta = op->opt.softmax.beta;
    for (size_t r = 0; r < rows; r++) {
        const float *xr = xd + r * (size_t)c;
        float *yr = y + r * (size_t)c;
        float mx = xr[0];
        for (int i = 1; i < c; i++) mx = xr[i] > mx ? xr[i] : mx;
        double sum = 0;
        for (int i = 0; i < c; i++) { yr[i] = expf(beta * (xr[i] - mx)); sum += yr[i]; }
        float inv = (float)(1.0 / sum);
        for (int i = 0; i < c; i++) yr[i] *= inv;
    }
    return PDQ_OK;
}

/* ---------------------------------------------------------------- integer */

static pdq_code qx_prepare(pdq_qexec *x, int oi, pdq_status *st) {
    QX_OP_HEAD;
    const qx_t *xq = &x->t[op->in[0]];
    if (a->kind == PDQ_TK_CONST) return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "integer mode: constant input %s", a->name);
    if (!xq->quant) return PDQ_OK;
    /* one row of terms per thread (a table over every code would be 512 KiB per op: 360 MiB for
     * the 1.1B decode graph's per-head softmaxes, each read from DRAM) */
    size_t C = (size_t)a->shape[a->ndim - 1], nt = (size_t)pdq_pool_threads(x->pool);
    p->dacc = malloc(sizeof(double) * C * nt);
    if (!p->dacc) return pdq_fail(st, PDQ_ERR_NOMEM, "integer mode: softmax row of %zu", C);
    return PDQ_OK;
}

static void softmax_task(void *vc, int task, int thread) {
    QX_ROWS_HEAD(vc, task);
    int C = c->c;
    double beta = (double)c->op->opt.softmax.beta;
    for (size_t r = r0; r < r1; r++) {
        size_t base = r * (size_t)C;
        double sum = 0;
        if (xq->quant) {
            /* term_i = exp(-(max code - code_i) * scale * beta), summed in index order; equal codes
             * (the masked positions) share one exp */
            double *term = c->p->dacc + (size_t)thread * (size_t)C, e = 0;
            int64_t mx = qx_code(xq, xd, base), prev = -1;
            for (int i = 1; i < C; i++) { int64_t v = qx_code(xq, xd, base + i); mx = v > mx ? v : mx; }
            for (int i = 0; i < C; i++) {
                int64_t d = mx - qx_code(xq, xd, base + i);
                if (d != prev) { e = exp(-((double)d * xq->s) * beta); prev = d; }
                sum += term[i] = e;
            }
            pdq_qx_grid yg = qx_grid(yq);
            int done = c->x->k.div_i16 && yq->dt == PDQ_TI16 ? c->x->k.div_i16(term, sum, &yg, (int16_t *)yd + base, C) : 0;
            for (int i = done; i < C; i++) qx_st(yq, yd, base + i, term[i] / sum);
        } else {
            double mx = qx_ld(xq, xd, base);
            for (int i = 1; i < C; i++) { double v = qx_ld(xq, xd, base + i); mx = v > mx ? v : mx; }
            for (int i = 0; i < C; i++) sum += exp((qx_ld(xq, xd, base + i) - mx) * beta);
            for (int i = 0; i < C; i++) qx_st(yq, yd, base + i, exp((qx_ld(xq, xd, base + i) - mx) * beta) / sum);
        }
    }
}

static pdq_code qx_run(pdq_qexec *x, int oi, pdq_status *st) {
    (void)st;
    pdq_qx_rows_run(x, &x->g->ops[oi], softmax_task, 0);
    return PDQ_OK;
}

static int opt_same(const pdq_op *a, const pdq_op *b) { return a->opt.softmax.beta == b->opt.softmax.beta; }

static void opt_default(pdq_op *op) { op->opt.softmax.beta = 1.0f; }

const pdq_op_def pdq_op_softmax = {
    .name = "SOFTMAX", .kind = PDQ_OPK_ELEMENTWISE, .grid = PDQ_GRID_OWN,
    .infer = infer, .f32 = f32, .qx = {qx_prepare, qx_run}, .opt_same = opt_same,
    .opt_default = opt_default,
};
