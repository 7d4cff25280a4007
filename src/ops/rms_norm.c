/* RMS_NORM: y = gamma * x / sqrt(mean(x^2) + epsilon) over the last dim, gamma [C] or [1].
 * Integer mode: the sum of squared codes exact in int64, then the rule of include/pdq/qexec.h
 * (double, requantized), AVX2 on int16 rows giving the scalar rule's bits. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/op_def.h"
#include "ops/qx_kernel.h"
#include "ops/op_rules.h"

static pdq_code infer(const pdq_graph *g, const pdq_op *op, int *nd, int *sh, pdq_status *st) {
    pdq_code rc;
    if ((rc = pdq_rule_inputs(op, 2, 2, st))) return rc;
    const pdq_tensor *x = OPERAND(0), *w = OPERAND(1);
    if ((rc = pdq_rule_rank(op, x, 1, st))) return rc;
    int c = x->shape[x->ndim - 1];
    if (w->ndim != 1 || (w->shape[0] != c && w->shape[0] != 1))
        return pdq_fail(st, PDQ_ERR_SHAPE, "RMS_NORM gamma %s must be [%d] or [1]", w->name, c);
    pdq_rule_same_shape(x, nd, sh);
    return PDQ_OK;
}

static pdq_code f32(const pdq_graph *g, const pdq_op *op, void *const *ptrs, pdq_status *st) {
    (void)st;
    const pdq_tensor *x = &g->tensors[op->in[0]], *w = &g->tensors[op->in[1]];
    const float *xd = ptrs[op->in[0]], *wd = ptrs[op->in[1]];
    float *y = ptrs[op->out[0]];
    int c = x->shape[x->ndim - 1];
    size_t rows = pdq_tensor_count(x) / (size_t)c;
    int wc = w->shape[0];
    for (size_t r = 0; r < rows; r++) {
        const float *xr = xd + r * (size_t)c;
        float *yr = y + r * (size_t)c;
        double ss = 0;
        for (int i = 0; i < c; i++) ss += (double)xr[i] * xr[i];
        float inv = (float)(1.0 / sqrt(ss / c + (double)op->opt.rms.epsilon));
        for (int i = 0; i < c; i++) yr[i] = wd[wc == 1 ? 0 : i] * (xr[i] * inv);
    }
    return PDQ_OK;
}

/* ---------------------------------------------------------------- integer */

static pdq_code qx_prepare(pdq_qexec *x, int oi, pdq_status *st) {
    QX_OP_HEAD;
    const pdq_tensor *w = &g->tensors[op->in[1]];
    if (a->kind == PDQ_TK_CONST || w->kind != PDQ_TK_CONST)
        return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "integer mode: RMS_NORM needs a constant gamma (%s)", w->name);
    p->gamma_n = (int)pdq_tensor_count(w);
    if (p->gamma_n != 1 && p->gamma_n != a->shape[a->ndim - 1])
        return pdq_fail(st, PDQ_ERR_SHAPE, "integer mode: RMS_NORM gamma %s has %d values for rows of %d", w->name,
                        p->gamma_n, a->shape[a->ndim - 1]);
    p->gamma = malloc(sizeof(double) * (size_t)p->gamma_n);
    if (!p->gamma) return pdq_fail(st, PDQ_ERR_NOMEM, "integer mode: gamma");
    for (int i = 0; i < p->gamma_n; i++) p->gamma[i] = pdq_qx_const_value(w, (size_t)i);
    return PDQ_OK;
}

static void rms_task(void *vc, int task, int thread) {
    (void)thread;
    QX_ROWS_HEAD(vc, task);
    int C = c->c, gn = c->p->gamma_n;
    double eps = (double)c->op->opt.rms.epsilon;
    for (size_t r = r0; r < r1; r++) {
        size_t base = r * (size_t)C;
        double ms;
        if (xq->quant) { /* sum of squared codes: exact */
            int64_t ss = 0;
            for (int i = 0; i < C; i++) {
                int64_t v = qx_code(xq, xd, base + i) - xq->zp;
                ss += v * v;
            }
            ms = (double)ss * (xq->s * xq->s) / (double)C;
        } else {
            double ss = 0;
            for (int i = 0; i < C; i++) { double v = qx_ld(xq, xd, base + i); ss += v * v; }
            ms = ss / (double)C;
        }
        double inv = 1.0 / sqrt(ms + eps);
        int done = 0;
        if (xq->dt == PDQ_TI16 && yq->dt == PDQ_TI16 && c->x->k.scale_i16) {
            pdq_qx_grid xg = qx_grid(xq), yg = qx_grid(yq);
            done = c->x->k.scale_i16(&xg, (const int16_t *)xd + base, inv, c->p->gamma, gn, &yg, (int16_t *)yd + base, C);
        }
        for (int i = done; i < C; i++)
            qx_st(yq, yd, base + i, qx_ld(xq, xd, base + i) * inv * c->p->gamma[gn == 1 ? 0 : i]);
    }
}

static pdq_code qx_run(pdq_qexec *x, int oi, pdq_status *st) {
    (void)st;
    pdq_qx_rows_run(x, &x->g->ops[oi], rms_task, 0);
    return PDQ_OK;
}

static int opt_same(const pdq_op *a, const pdq_op *b) { return a->opt.rms.epsilon == b->opt.rms.epsilon; }

static void opt_default(pdq_op *op) { op->opt.rms.epsilon = 1e-6f; }

const pdq_op_def pdq_op_rms_norm = {
    .name = "RMS_NORM", .kind = PDQ_OPK_ELEMENTWISE, .grid = PDQ_GRID_OWN,
    .infer = infer, .f32 = f32, .qx = {qx_prepare, qx_run}, .opt_same = opt_same,
    .opt_default = opt_default,
};
