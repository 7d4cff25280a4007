/* What the IR knows of each op type, in one table (op_table.c) keyed by pdq_op_type, in the
 * spirit of ggml's per-type traits: its name, its class, the float interpreter's kernel, and the
 * Circle operator it is exported as and imported from. The interpreter dispatches through it,
 * the Circle writer and reader map through it, and every "is this a data move" question asks it.
 * (Each op's shape rule is in graph_infer.c, its integer kernel in src/exec/qx_ops_i16.c and its
 * PTQ edge rule in src/ptq/table.c; their dispatch is still a switch on the type.) Internal. */
#ifndef PDQ_IR_OP_TABLE_H
#define PDQ_IR_OP_TABLE_H

#include "pdq/graph.h"

typedef enum {
    PDQ_OPK_LINALG,      /* FULLY_CONNECTED, BATCH_MATMUL */
    PDQ_OPK_ELEMENTWISE, /* arithmetic and the non-linear ops: read real numbers (float or with qparams) */
    PDQ_OPK_DATA_MOVE,   /* layout only: any dtype, values copied as stored */
} pdq_op_kind;

/* The op's shape rule: checks its operands (counts, ranks, constant operands) and gives the
 * output's shape (graph_infer.c; pdq_op_infer adds the checks every op shares). */
typedef pdq_code (*pdq_infer_fn)(const pdq_graph *g, const pdq_op *op, int *ndim, int *shape, pdq_status *st);

/* The float interpreter's kernel: the op's outputs from its inputs, ptrs[tid] each tensor's data. */
typedef pdq_code (*pdq_f32_kernel)(const pdq_graph *g, const pdq_op *op, void *const *ptrs, pdq_status *st);

typedef struct {
    const char *name;   /* the Circle/TFLite name: "FULLY_CONNECTED", ... */
    pdq_op_kind kind;
    pdq_infer_fn infer;
    pdq_f32_kernel f32;
    int circle_code;    /* Circle BuiltinOperator */
    int circle_options; /* its BuiltinOptions table type (CIRCLE_OPT_NONE: it has none) */
} pdq_op_def;

/* The row of t, or NULL when t is not an op type. */
const pdq_op_def *pdq_op_def_of(pdq_op_type t);
/* The op type exported as Circle builtin `code`, or -1 when none is. */
int pdq_op_of_circle(int code);
static inline int pdq_op_is_data_move(pdq_op_type t) {
    const pdq_op_def *d = pdq_op_def_of(t);
    return d && d->kind == PDQ_OPK_DATA_MOVE;
}

#endif
