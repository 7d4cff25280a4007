/* What the IR knows of each op type, in one table (op_table.c) keyed by pdq_op_type, in the
 * spirit of ggml's per-type traits: its name, its class, its shape rule, the float interpreter's
 * kernel, the Circle operator it is exported as and imported from, and its PTQ edge rule. Shape
 * inference and the interpreter dispatch through it, the Circle writer and reader map through it,
 * PTQ groups edges by it, and every "is this a data move" question asks it. (Its integer kernel,
 * src/exec/qx_ops_i16.c, is still chosen by a switch on the type: the executor sits above the
 * IR.) Internal. */
#ifndef PDQ_IR_OP_TABLE_H
#define PDQ_IR_OP_TABLE_H

#include "pdq/graph.h"

typedef enum {
    PDQ_OPK_LINALG,      /* FULLY_CONNECTED, BATCH_MATMUL */
    PDQ_OPK_ELEMENTWISE, /* arithmetic and the non-linear ops: read real numbers (float or with qparams) */
    PDQ_OPK_DATA_MOVE,   /* layout only: any dtype, values copied as stored */
} pdq_op_kind;

/* The PTQ edge rule: which activation grids an op's output shares (src/ptq/table.c unites them). */
typedef enum {
    PDQ_GRID_OWN,     /* observed on its own */
    PDQ_GRID_OF_DATA, /* its data input's (input 0): a layout op moves codes as they are; GATHER
                         only of activations (of a constant table, an embedding, it is its own) */
    PDQ_GRID_OF_ALL,  /* one grid for the output and every input (CONCATENATION) */
} pdq_grid_rule;

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
    pdq_grid_rule grid;
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
