/* The op table (op_table.h). One row per pdq_op_type, in enum order (checked by test_graph). */
#include "ir/op_table.h"

#include "circle/circle_defs.h"
#include "ir/infer_rules.h"
#include "ir/ops.h"

/* class, shape rule, float kernel (then: Circle operator and options, PTQ grid rule) */
#define LIN(r) PDQ_OPK_LINALG, pdq_infer_##r, pdq_k_linalg
#define ELT(r) PDQ_OPK_ELEMENTWISE, pdq_infer_##r, pdq_k_elementwise
#define MOVE(r) PDQ_OPK_DATA_MOVE, pdq_infer_##r, pdq_k_shape

static const pdq_op_def k_ops[PDQ_OP_COUNT] = {
    [PDQ_OP_FULLY_CONNECTED] = {"FULLY_CONNECTED", LIN(fc), CIRCLE_OP_FULLY_CONNECTED, CIRCLE_OPT_FullyConnectedOptions, PDQ_GRID_OWN},
    [PDQ_OP_BATCH_MATMUL] = {"BATCH_MATMUL", LIN(bmm), CIRCLE_OP_BATCH_MATMUL, CIRCLE_OPT_BatchMatMulOptions, PDQ_GRID_OWN},
    [PDQ_OP_ADD] = {"ADD", ELT(binary), CIRCLE_OP_ADD, CIRCLE_OPT_AddOptions, PDQ_GRID_OWN},
    [PDQ_OP_SUB] = {"SUB", ELT(binary), CIRCLE_OP_SUB, CIRCLE_OPT_SubOptions, PDQ_GRID_OWN},
    [PDQ_OP_MUL] = {"MUL", ELT(binary), CIRCLE_OP_MUL, CIRCLE_OPT_MulOptions, PDQ_GRID_OWN},
    [PDQ_OP_DIV] = {"DIV", ELT(binary), CIRCLE_OP_DIV, CIRCLE_OPT_DivOptions, PDQ_GRID_OWN},
    [PDQ_OP_MEAN] = {"MEAN", ELT(mean), CIRCLE_OP_MEAN, CIRCLE_OPT_ReducerOptions, PDQ_GRID_OWN},
    [PDQ_OP_RSQRT] = {"RSQRT", ELT(unary), CIRCLE_OP_RSQRT, CIRCLE_OPT_NONE, PDQ_GRID_OWN},
    [PDQ_OP_NEG] = {"NEG", ELT(unary), CIRCLE_OP_NEG, CIRCLE_OPT_NegOptions, PDQ_GRID_OWN},
    [PDQ_OP_LOGISTIC] = {"LOGISTIC", ELT(unary), CIRCLE_OP_LOGISTIC, CIRCLE_OPT_NONE, PDQ_GRID_OWN},
    [PDQ_OP_RMS_NORM] = {"RMS_NORM", ELT(rms_norm), CIRCLE_OP_RMS_NORM, CIRCLE_OPT_RmsNormOptions, PDQ_GRID_OWN},
    [PDQ_OP_SOFTMAX] = {"SOFTMAX", ELT(softmax), CIRCLE_OP_SOFTMAX, CIRCLE_OPT_SoftmaxOptions, PDQ_GRID_OWN},
    [PDQ_OP_RESHAPE] = {"RESHAPE", MOVE(reshape), CIRCLE_OP_RESHAPE, CIRCLE_OPT_ReshapeOptions, PDQ_GRID_OF_DATA},
    [PDQ_OP_TRANSPOSE] = {"TRANSPOSE", MOVE(transpose), CIRCLE_OP_TRANSPOSE, CIRCLE_OPT_TransposeOptions, PDQ_GRID_OF_DATA},
    [PDQ_OP_CONCATENATION] = {"CONCATENATION", MOVE(concat), CIRCLE_OP_CONCATENATION, CIRCLE_OPT_ConcatenationOptions, PDQ_GRID_OF_ALL},
    [PDQ_OP_STRIDED_SLICE] = {"STRIDED_SLICE", MOVE(strided_slice), CIRCLE_OP_STRIDED_SLICE, CIRCLE_OPT_StridedSliceOptions, PDQ_GRID_OF_DATA},
    [PDQ_OP_SLICE] = {"SLICE", MOVE(plain_slice), CIRCLE_OP_SLICE, CIRCLE_OPT_NONE, PDQ_GRID_OF_DATA},
    [PDQ_OP_GATHER] = {"GATHER", MOVE(gather), CIRCLE_OP_GATHER, CIRCLE_OPT_GatherOptions, PDQ_GRID_OF_DATA},
};

const pdq_op_def *pdq_op_def_of(pdq_op_type t) {
    return (int)t >= 0 && t < PDQ_OP_COUNT && k_ops[t].name ? &k_ops[t] : NULL;
}

int pdq_op_of_circle(int code) {
    for (int t = 0; t < PDQ_OP_COUNT; t++)
        if (k_ops[t].name && k_ops[t].circle_code == code) return t;
    return -1;
}
