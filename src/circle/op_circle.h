/* How each IR op is spelled in a Circle file: its BuiltinOperator code, its options table, the
 * operand a file may leave out, and the functions that move its options between pdq_op and the
 * options table. The op table (ops/op_def.h) knows no file format; this is the Circle half,
 * keyed by pdq_op_type, and a second export format would be a file like this one. Internal. */
#ifndef PDQ_CIRCLE_OP_CIRCLE_H
#define PDQ_CIRCLE_OP_CIRCLE_H

#include "pdq/circle.h"
#include "pdq/graph.h"

/* Circle export: the op's options table (o arrives zeroed) from op's options; may fail on an
 * option the schema cannot carry. */
typedef pdq_code (*pdq_circle_put_fn)(const pdq_graph *g, const pdq_op *op, pdq_circle_options *o, pdq_status *st);
/* Circle import: op's options from o, or the schema's defaults when the operator carries no
 * options table of the op's type (has 0); refuses an option pdq would silently ignore (a fused
 * activation, a mask). Errors name operator oi. */
typedef pdq_code (*pdq_circle_get_fn)(const pdq_circle_options *o, int has, pdq_op *op, int oi, pdq_status *st);

typedef struct {
    int code;         /* Circle BuiltinOperator */
    int options;      /* its BuiltinOptions table type (CIRCLE_OPT_NONE: it has none) */
    int optional_in;  /* the operand a Circle file may leave out (-1 in its list; FC's bias), or 0 */
    pdq_circle_put_fn put; /* NULL: no options to write */
    pdq_circle_get_fn get; /* NULL: no options to read */
} pdq_circle_spelling;

/* The Circle spelling of op type t, or NULL when t is not an op type. */
const pdq_circle_spelling *pdq_circle_spelling_of(pdq_op_type t);
/* The op type exported as Circle builtin `code`, or -1 when none is. */
int pdq_op_of_circle(int code);

#endif
