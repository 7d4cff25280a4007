/* The Circle spelling of every IR op (circle/op_circle.h): code, options table, the operand a
 * file may omit, and the options' way in and out. An op with no options moves none; an option
 * pdq would silently ignore on import (a fused activation, a slice mask) is refused. */
#include "circle/op_circle.h"

#include "circle/circle_defs.h"

static pdq_code fc_put(const pdq_graph *g, const pdq_op *op, pdq_circle_options *o, pdq_status *st) {
    (void)g, (void)st;
    o->fc.keep_num_dims = op->opt.fc.keep_num_dims != 0;
    return PDQ_OK;
}
static pdq_code fc_get(const pdq_circle_options *o, int has, pdq_op *op, int oi, pdq_status *st) {
    op->opt.fc.keep_num_dims = has ? o->fc.keep_num_dims : 0;
    if (has && o->fc.fused_activation_function)
        return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "circle import: operator %d (FULLY_CONNECTED): fused activation %d", oi,
                        o->fc.fused_activation_function);
    if (has && o->fc.weights_format)
        return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "circle import: operator %d (FULLY_CONNECTED): weights_format %d (DEFAULT only)",
                        oi, o->fc.weights_format);
    return PDQ_OK;
}

static pdq_code bmm_put(const pdq_graph *g, const pdq_op *op, pdq_circle_options *o, pdq_status *st) {
    (void)g, (void)st;
    o->bmm.adjoint_lhs = op->opt.bmm.adj_x != 0;
    o->bmm.adjoint_rhs = op->opt.bmm.adj_y != 0;
    return PDQ_OK;
}
static pdq_code bmm_get(const pdq_circle_options *o, int has, pdq_op *op, int oi, pdq_status *st) {
    (void)oi, (void)st;
    if (has) {
        op->opt.bmm.adj_x = o->bmm.adjoint_lhs;
        op->opt.bmm.adj_y = o->bmm.adjoint_rhs;
    }
    return PDQ_OK;
}

static pdq_code binary_put(const pdq_graph *g, const pdq_op *op, pdq_circle_options *o, pdq_status *st) {
    (void)g, (void)st;
    *o = pdq_circle_options_default((uint8_t)pdq_circle_spelling_of(op->type)->options);
    return PDQ_OK;
}
/* The four options tables differ in type but each starts with the fused activation, which pdq
 * does not compute. */
static pdq_code binary_get(const pdq_circle_options *o, int has, pdq_op *op, int oi, pdq_status *st) {
    int fused = !has ? 0
              : op->type == PDQ_OP_ADD ? o->add.fused_activation_function
              : op->type == PDQ_OP_SUB ? o->sub.fused_activation_function
              : op->type == PDQ_OP_MUL ? o->mul.fused_activation_function
                                       : o->div.fused_activation_function;
    if (fused)
        return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "circle import: operator %d (%s): fused activation %d", oi,
                        pdq_op_name(op->type), fused);
    return PDQ_OK;
}

static pdq_code mean_put(const pdq_graph *g, const pdq_op *op, pdq_circle_options *o, pdq_status *st) {
    (void)g, (void)st;
    o->reducer.keep_dims = op->opt.mean.keep_dims != 0;
    return PDQ_OK;
}
static pdq_code mean_get(const pdq_circle_options *o, int has, pdq_op *op, int oi, pdq_status *st) {
    (void)oi, (void)st;
    op->opt.mean.keep_dims = has ? o->reducer.keep_dims : 0;
    return PDQ_OK;
}

static pdq_code rms_put(const pdq_graph *g, const pdq_op *op, pdq_circle_options *o, pdq_status *st) {
    (void)g, (void)st;
    o->rms_norm.epsilon = op->opt.rms.epsilon;
    return PDQ_OK;
}
static pdq_code rms_get(const pdq_circle_options *o, int has, pdq_op *op, int oi, pdq_status *st) {
    op->opt.rms.epsilon = has ? o->rms_norm.epsilon : 1e-6f;
    if (!(op->opt.rms.epsilon >= 0) || op->opt.rms.epsilon > 1e30f)
        return pdq_fail(st, PDQ_ERR_FORMAT, "circle import: operator %d (RMS_NORM): epsilon %g (finite and >= 0 needed)",
                        oi, (double)op->opt.rms.epsilon);
    return PDQ_OK;
}

static pdq_code softmax_put(const pdq_graph *g, const pdq_op *op, pdq_circle_options *o, pdq_status *st) {
    (void)g, (void)st;
    o->softmax.beta = op->opt.softmax.beta;
    return PDQ_OK;
}
static pdq_code softmax_get(const pdq_circle_options *o, int has, pdq_op *op, int oi, pdq_status *st) {
    op->opt.softmax.beta = has ? o->softmax.beta : 1.0f;
    if (!(op->opt.softmax.beta > -1e30f && op->opt.softmax.beta < 1e30f))
        return pdq_fail(st, PDQ_ERR_FORMAT, "circle import: operator %d (SOFTMAX): beta %g (finite needed)", oi,
                        (double)op->opt.softmax.beta);
    return PDQ_OK;
}

/* Circle's ReshapeOptions repeats the constant shape operand. */
static pdq_code reshape_put(const pdq_graph *g, const pdq_op *op, pdq_circle_options *o, pdq_status *st) {
    const pdq_tensor *s = &g->tensors[op->in[1]];
    int r = s->shape[0];
    if (r > PDQ_CIRCLE_MAX_RANK) return pdq_fail(st, PDQ_ERR_LIMIT, "circle export: reshape rank %d", r);
    o->reshape.rank = r;
    for (int i = 0; i < r; i++) o->reshape.new_shape[i] = ((const int32_t *)s->data)[i];
    return PDQ_OK;
}

static pdq_code concat_put(const pdq_graph *g, const pdq_op *op, pdq_circle_options *o, pdq_status *st) {
    (void)g, (void)st;
    o->concat.axis = op->opt.concat.axis;
    return PDQ_OK;
}
static pdq_code concat_get(const pdq_circle_options *o, int has, pdq_op *op, int oi, pdq_status *st) {
    if (has) op->opt.concat.axis = o->concat.axis;
    if (has && o->concat.fused_activation_function)
        return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "circle import: operator %d (CONCATENATION): fused activation", oi);
    return PDQ_OK;
}

/* pdq writes no masks; a file with any would mean another slice than the one computed */
static pdq_code strided_slice_get(const pdq_circle_options *o, int has, pdq_op *op, int oi, pdq_status *st) {
    (void)op;
    if (has && (o->strided_slice.begin_mask || o->strided_slice.end_mask || o->strided_slice.ellipsis_mask ||
                o->strided_slice.new_axis_mask || o->strided_slice.shrink_axis_mask || o->strided_slice.offset))
        return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "circle import: operator %d (STRIDED_SLICE): non-zero masks", oi);
    return PDQ_OK;
}

static pdq_code gather_put(const pdq_graph *g, const pdq_op *op, pdq_circle_options *o, pdq_status *st) {
    (void)g, (void)st;
    o->gather.axis = op->opt.gather.axis;
    return PDQ_OK;
}
static pdq_code gather_get(const pdq_circle_options *o, int has, pdq_op *op, int oi, pdq_status *st) {
    if (!has) return PDQ_OK;
    op->opt.gather.axis = o->gather.axis;
    if (o->gather.batch_dims)
        return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "circle import: operator %d (GATHER): batch_dims %d", oi,
                        o->gather.batch_dims);
    return PDQ_OK;
}

static pdq_code gelu_put(const pdq_graph *g, const pdq_op *op, pdq_circle_options *o, pdq_status *st) {
    (void)g, (void)st;
    o->gelu.approximate = op->opt.gelu.approximate != 0;
    return PDQ_OK;
}
static pdq_code gelu_get(const pdq_circle_options *o, int has, pdq_op *op, int oi, pdq_status *st) {
    (void)oi, (void)st;
    op->opt.gelu.approximate = has && o->gelu.approximate; /* the schema's default: exact */
    return PDQ_OK;
}

static const pdq_circle_spelling k_circle_ops[PDQ_OP_COUNT] = {
    [PDQ_OP_FULLY_CONNECTED] = {CIRCLE_OP_FULLY_CONNECTED, CIRCLE_OPT_FullyConnectedOptions, 2, fc_put, fc_get},
    [PDQ_OP_BATCH_MATMUL] = {CIRCLE_OP_BATCH_MATMUL, CIRCLE_OPT_BatchMatMulOptions, 0, bmm_put, bmm_get},
    [PDQ_OP_ADD] = {CIRCLE_OP_ADD, CIRCLE_OPT_AddOptions, 0, binary_put, binary_get},
    [PDQ_OP_SUB] = {CIRCLE_OP_SUB, CIRCLE_OPT_SubOptions, 0, binary_put, binary_get},
    [PDQ_OP_MUL] = {CIRCLE_OP_MUL, CIRCLE_OPT_MulOptions, 0, binary_put, binary_get},
    [PDQ_OP_DIV] = {CIRCLE_OP_DIV, CIRCLE_OPT_DivOptions, 0, binary_put, binary_get},
    [PDQ_OP_MEAN] = {CIRCLE_OP_MEAN, CIRCLE_OPT_ReducerOptions, 0, mean_put, mean_get},
    [PDQ_OP_RSQRT] = {CIRCLE_OP_RSQRT, CIRCLE_OPT_NONE, 0, NULL, NULL},
    [PDQ_OP_NEG] = {CIRCLE_OP_NEG, CIRCLE_OPT_NegOptions, 0, NULL, NULL},
    [PDQ_OP_LOGISTIC] = {CIRCLE_OP_LOGISTIC, CIRCLE_OPT_NONE, 0, NULL, NULL},
    [PDQ_OP_RMS_NORM] = {CIRCLE_OP_RMS_NORM, CIRCLE_OPT_RmsNormOptions, 0, rms_put, rms_get},
    [PDQ_OP_SOFTMAX] = {CIRCLE_OP_SOFTMAX, CIRCLE_OPT_SoftmaxOptions, 0, softmax_put, softmax_get},
    [PDQ_OP_RESHAPE] = {CIRCLE_OP_RESHAPE, CIRCLE_OPT_ReshapeOptions, 0, reshape_put, NULL},
    [PDQ_OP_TRANSPOSE] = {CIRCLE_OP_TRANSPOSE, CIRCLE_OPT_TransposeOptions, 0, NULL, NULL},
    [PDQ_OP_CONCATENATION] = {CIRCLE_OP_CONCATENATION, CIRCLE_OPT_ConcatenationOptions, 0, concat_put, concat_get},
    [PDQ_OP_STRIDED_SLICE] = {CIRCLE_OP_STRIDED_SLICE, CIRCLE_OPT_StridedSliceOptions, 0, NULL, strided_slice_get},
    [PDQ_OP_SLICE] = {CIRCLE_OP_SLICE, CIRCLE_OPT_NONE, 0, NULL, NULL},
    [PDQ_OP_GATHER] = {CIRCLE_OP_GATHER, CIRCLE_OPT_GatherOptions, 0, gather_put, gather_get},
    [PDQ_OP_TANH] = {CIRCLE_OP_TANH, CIRCLE_OPT_NONE, 0, NULL, NULL},
    [PDQ_OP_GELU] = {CIRCLE_OP_GELU, CIRCLE_OPT_GeluOptions, 0, gelu_put, gelu_get},
};

const pdq_circle_spelling *pdq_circle_spelling_of(pdq_op_type t) {
    return (int)t >= 0 && t < PDQ_OP_COUNT ? &k_circle_ops[t] : NULL;
}

int pdq_op_of_circle(int code) {
    for (int t = 0; t < PDQ_OP_COUNT; t++)
        if (k_circle_ops[t].code == code) return t;
    return -1;
}
