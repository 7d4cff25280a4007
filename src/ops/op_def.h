/* Everything pdq knows of one op type, in one row: its name and class, its shape rule, its float
 * kernel, its integer kernel and its PTQ edge rule -- in the spirit of ggml's per-type traits. It
 * knows no file format: how an op is spelled in a Circle file is circle/op_circle.c's table.
 * Each op's row and the functions it names live in that op's own file under src/ops/ (a family
 * sharing one rule, ADD/SUB/MUL/DIV say, shares a file); op_table.c lists the rows by pdq_op_type. Shape inference, the float interpreter, the
 * integer executor, graph comparison and PTQ all dispatch through it, so adding an op is its enum
 * member, its file, its line in op_table.c, its row in circle/op_circle.c and its tests. Internal. */
#ifndef PDQ_OPS_OP_DEF_H
#define PDQ_OPS_OP_DEF_H

#include <stdint.h>

#include "pdq/graph.h"

/* The integer executor, as the kernels' function pointers name it (ops/qx_kernel.h defines it,
 * exec/qexec.c drives it). */
typedef struct pdq_qexec pdq_qexec;

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

/* The shape rule: checks the op's operands (counts, ranks, constant operands) and gives the
 * output's shape (pdq_op_infer in ir/graph_infer.c adds the checks every op shares). */
typedef pdq_code (*pdq_infer_fn)(const pdq_graph *g, const pdq_op *op, int *ndim, int *shape, pdq_status *st);

/* The float interpreter's kernel: the op's outputs from its inputs, ptrs[tid] each tensor's data. */
typedef pdq_code (*pdq_f32_kernel)(const pdq_graph *g, const pdq_op *op, void *const *ptrs, pdq_status *st);

/* The integer executor's kernel (src/exec): prepare once per executor (tables, constants,
 * scratch), run per call; both given the op's index in the executor's graph. */
typedef struct {
    pdq_code (*prepare)(pdq_qexec *x, int op_index, pdq_status *st);
    pdq_code (*run)(pdq_qexec *x, int op_index, pdq_status *st);
} pdq_qx_kernel;

/* A layout op that is one strided copy (TRANSPOSE, SLICE, STRIDED_SLICE) plans it once (0 and
 * nothing planned: a parameter is not constant). The float kernel and the integer executor run it. */
struct pdq_k_box;
typedef int (*pdq_box_plan_fn)(const pdq_graph *g, const pdq_op *op, struct pdq_k_box *b);

/* Whether two ops of this type have the same options. */
typedef int (*pdq_opt_same_fn)(const pdq_op *a, const pdq_op *b);
/* The op's default options (pdq_graph_op without options), on zeroed ones. */
typedef void (*pdq_opt_default_fn)(pdq_op *op);

typedef struct {
    const char *name;     /* the Circle/TFLite name: "FULLY_CONNECTED", ... */
    pdq_op_kind kind;
    pdq_grid_rule grid;
    int params_at;        /* operands from this index on are int32 shape parameters (MEAN's axes),
                             not values; 0: every operand is a value (data moves: any dtype) */
    pdq_infer_fn infer;
    pdq_f32_kernel f32;
    pdq_qx_kernel qx;     /* {NULL, NULL}: integer mode has none (MEAN) */
    pdq_box_plan_fn box;  /* NULL: not one strided copy */
    pdq_opt_same_fn opt_same;     /* NULL: no options */
    pdq_opt_default_fn opt_default; /* NULL: zeroed options are the defaults */
} pdq_op_def;

/* The row of t, or NULL when t is not an op type. */
const pdq_op_def *pdq_op_def_of(pdq_op_type t);
static inline int pdq_op_is_data_move(pdq_op_type t) {
    const pdq_op_def *d = pdq_op_def_of(t);
    return d && d->kind == PDQ_OPK_DATA_MOVE;
}

/* How many of op's operands are values (before its int32 shape parameters). */
static inline int pdq_op_n_values(const pdq_op_def *d, const pdq_op *op) {
    return d->params_at && d->params_at < op->n_in ? d->params_at : op->n_in;
}

/* Each op's row, defined in its file. */
extern const pdq_op_def pdq_op_fully_connected, pdq_op_batch_matmul, pdq_op_add, pdq_op_sub, pdq_op_mul, pdq_op_div,
    pdq_op_mean, pdq_op_rsqrt, pdq_op_neg, pdq_op_logistic, pdq_op_tanh, pdq_op_gelu, pdq_op_rms_norm, pdq_op_softmax, pdq_op_reshape,
    pdq_op_transpose, pdq_op_concatenation, pdq_op_strided_slice, pdq_op_slice, pdq_op_gather;

#endif
