/* The op table (op_def.h): each op type's row, defined in the op's own file, in enum order
 * (test_graph checks every type has one). */
#include "ops/op_def.h"

static const pdq_op_def *const k_ops[PDQ_OP_COUNT] = {
    [PDQ_OP_FULLY_CONNECTED] = &pdq_op_fully_connected,
    [PDQ_OP_BATCH_MATMUL] = &pdq_op_batch_matmul,
    [PDQ_OP_ADD] = &pdq_op_add,
    [PDQ_OP_SUB] = &pdq_op_sub,
    [PDQ_OP_MUL] = &pdq_op_mul,
    [PDQ_OP_DIV] = &pdq_op_div,
    [PDQ_OP_MEAN] = &pdq_op_mean,
    [PDQ_OP_RSQRT] = &pdq_op_rsqrt,
    [PDQ_OP_NEG] = &pdq_op_neg,
    [PDQ_OP_LOGISTIC] = &pdq_op_logistic,
    [PDQ_OP_RMS_NORM] = &pdq_op_rms_norm,
    [PDQ_OP_SOFTMAX] = &pdq_op_softmax,
    [PDQ_OP_RESHAPE] = &pdq_op_reshape,
    [PDQ_OP_TRANSPOSE] = &pdq_op_transpose,
    [PDQ_OP_CONCATENATION] = &pdq_op_concatenation,
    [PDQ_OP_STRIDED_SLICE] = &pdq_op_strided_slice,
    [PDQ_OP_SLICE] = &pdq_op_slice,
    [PDQ_OP_GATHER] = &pdq_op_gather,
    [PDQ_OP_TANH] = &pdq_op_tanh,
    [PDQ_OP_GELU] = &pdq_op_gelu,
};

const pdq_op_def *pdq_op_def_of(pdq_op_type t) {
    return (int)t >= 0 && t < PDQ_OP_COUNT ? k_ops[t] : NULL;
}
