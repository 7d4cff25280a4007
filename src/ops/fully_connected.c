/* FULLY_CONNECTED: x[..., in] . w[out, in]^T (+ bias[out]) -> [..., out] (keep_num_dims) or
 * [rows, out]. Float: cblas (gemv for decode's few rows). Integer: fully_connected_int.c, by the rule
 * of include/pdq/qexec.h (exact sums, per row or per row and group of columns). */
#include <cblas.h>
#include <string.h>

#include "ops/op_def.h"
#include "ops/qx_kernel.h"
#include "ops/op_rules.h"

static pdq_code infer(const pdq_graph *g, const pdq_op *op, int *nd, int *sh, pdq_status *st) {
    pdq_code rc;
    if ((rc = pdq_rule_inputs(op, 2, 3, st))) return rc;
    const pdq_tensor *x = OPERAND(0), *w = OPERAND(1);
    if ((rc = pdq_rule_rank(op, x, 1, st))) return rc;
    if (w->ndim != 2)
        return pdq_fail(st, PDQ_ERR_SHAPE, "FULLY_CONNECTED: weight %s has rank %d, needs [out, in]", w->name, w->ndim);
    if (x->shape[x->ndim - 1] != w->shape[1])
        return pdq_fail(st, PDQ_ERR_SHAPE, "FULLY_CONNECTED: input %s last dim %d vs weight %s [out,in] = [%d,%d]",
                        x->name, x->shape[x->ndim - 1], w->name, w->shape[0], w->shape[1]);
    if (op->n_in == 3) {
        const pdq_tensor *b = OPERAND(2);
        if (b->ndim != 1 || b->shape[0] != w->shape[0])
            return pdq_fail(st, PDQ_ERR_SHAPE, "FULLY_CONNECTED bias %s must be [%d]", b->name, w->shape[0]);
    }
    if (op->opt.fc.keep_num_dims) {
        pdq_rule_same_shape(x, nd, sh);
        sh[*nd - 1] = w->shape[0];
        return PDQ_OK;
    }
    int64_t rows = 1;
    for (int i = 0; i < x->ndim - 1; i++) rows *= x->shape[i]; /* <= x's element count */
    *nd = 2;
    sh[1] = w->shape[0];
    return pdq_rule_put_dim(op, sh, 0, rows, st);
}

static pdq_code f32(const pdq_graph *g, const pdq_op *op, void *const *ptrs, pdq_status *st) {
    (void)st;
    const pdq_tensor *x = &g->tensors[op->in[0]], *w = &g->tensors[op->in[1]];
    const float *xd = ptrs[op->in[0]], *wd = ptrs[op->in[1]];
    float *y = ptrs[op->out[0]];
    int in = w->shape[1], out = w->shape[0];
    int rows = (int)(pdq_tensor_count(x) / (size_t)in);
    if (op->n_in == 3) {
        const float *bias = ptrs[op->in[2]];
        for (int r = 0; r < rows; r++) memcpy(y + (size_t)r * out, bias, sizeof(float) * (size_t)out);
    }
    float beta = op->n_in == 3 ? 1.0f : 0.0f;
    if (rows < 8) {
        /* Few rows (decode): sgemm would repack the whole weight each call; gemv streams it. */
        for (int r = 0; r < rows; r++)
            cblas_sgemv(CblasRowMajor, CblasNoTrans, out, in, 1.0f, wd, in, xd + (size_t)r * in, 1, beta,
                        y + (size_t)r * out, 1);
        return PDQ_OK;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, out, in, 1.0f, xd, in, wd, in, beta, y, out);
    return PDQ_OK;
}

static int opt_same(const pdq_op *a, const pdq_op *b) { return !a->opt.fc.keep_num_dims == !b->opt.fc.keep_num_dims; }

static void opt_default(pdq_op *op) { op->opt.fc.keep_num_dims = 1; }

const pdq_op_def pdq_op_fully_connected = {
    .name = "FULLY_CONNECTED", .kind = PDQ_OPK_LINALG, .grid = PDQ_GRID_OWN,
    .infer = infer, .f32 = f32, .qx = {pdq_qx_fc_prepare, pdq_qx_fc_run}, .opt_same = opt_same,
    .opt_default = opt_default,
};
