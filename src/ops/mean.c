/* MEAN over the axes of a constant int32 vector (keep_dims). Float only: the graphs pdq builds
 * use RMS_NORM, so integer mode has no kernel for it (an imported file that uses it runs in float
 * or fake-quant mode). */
#include <string.h>

#include "ir/layout.h"
#include "ops/op_def.h"
#include "ops/op_rules.h"

static pdq_code infer(const pdq_graph *g, const pdq_op *op, int *nd, int *sh, pdq_status *st) {
    pdq_code rc;
    if ((rc = pdq_rule_inputs(op, 2, 2, st))) return rc;
    if ((rc = pdq_rule_const_i32(g, op, 1, "axes", -1, st))) return rc;
    const pdq_tensor *x = OPERAND(0);
    const int32_t *ax = OPERAND(1)->data;
    int red[PDQ_G_MAX_DIMS] = {0};
    for (int i = 0; i < OPERAND(1)->shape[0]; i++) {
        int a = pdq_rule_axis(ax[i], x->ndim);
        if (a < 0 || a >= x->ndim)
            return pdq_fail(st, PDQ_ERR_ARG, "MEAN of %s: axis %d out of range for rank %d", x->name, ax[i], x->ndim);
        red[a] = 1;
    }
    *nd = 0;
    for (int i = 0; i < x->ndim; i++) {
        if (!red[i]) sh[(*nd)++] = x->shape[i];
        else if (op->opt.mean.keep_dims) sh[(*nd)++] = 1;
    }
    return PDQ_OK;
}

static pdq_code f32(const pdq_graph *g, const pdq_op *op, void *const *ptrs, pdq_status *st) {
    (void)st;
    const pdq_tensor *x = &g->tensors[op->in[0]], *ax = &g->tensors[op->in[1]];
    const float *xd = ptrs[op->in[0]];
    float *y = ptrs[op->out[0]];
    const int32_t *axes = ax->data;
    int red[PDQ_G_MAX_DIMS] = {0};
    int pad = PDQ_G_MAX_DIMS - x->ndim;
    for (int i = 0; i < ax->shape[0]; i++) red[pad + (axes[i] < 0 ? axes[i] + x->ndim : axes[i])] = 1;
    int x6[PDQ_G_MAX_DIMS], o6[PDQ_G_MAX_DIMS];
    pdq_k_shape6(x, x6);
    long ostr[PDQ_G_MAX_DIMS], acc = 1;
    for (int d = PDQ_G_MAX_DIMS - 1; d >= 0; d--) {
        o6[d] = red[d] ? 1 : x6[d];
        ostr[d] = red[d] ? 0 : acc;
        acc *= o6[d];
    }
    size_t n = pdq_tensor_count(x), no = (size_t)acc;
    double cnt = (double)n / (double)no;
    memset(y, 0, sizeof(float) * no);
    /* Accumulate in the output buffer (float); fine for the reductions used here. */
    for (size_t i = 0; i < n; i++) {
        size_t rem = i;
        long off = 0;
        for (int d = PDQ_G_MAX_DIMS - 1; d >= 0; d--) {
            off += (long)(rem % (size_t)x6[d]) * ostr[d];
            rem /= (size_t)x6[d];
        }
        y[off] += xd[i];
    }
    for (size_t i = 0; i < no; i++) y[i] = (float)(y[i] / cnt);
    return PDQ_OK;
}

static int opt_same(const pdq_op *a, const pdq_op *b) { return !a->opt.mean.keep_dims == !b->opt.mean.keep_dims; }

const pdq_op_def pdq_op_mean = {
    .name = "MEAN", .kind = PDQ_OPK_ELEMENTWISE, .grid = PDQ_GRID_OWN, .params_at = 1,
    .infer = infer, .f32 = f32, .opt_same = opt_same,
};
