/* Each op's shape rule (graph_infer.c), named for the op table (op_table.c): checks the op's
 * operands (counts, ranks, constant operands) and gives the output's shape. Internal. */
#ifndef PDQ_IR_INFER_RULES_H
#define PDQ_IR_INFER_RULES_H

#include "pdq/graph.h"

pdq_code pdq_infer_fc(const pdq_graph *g, const pdq_op *op, int *nd, int *sh, pdq_status *st);
pdq_code pdq_infer_bmm(const pdq_graph *g, const pdq_op *op, int *nd, int *sh, pdq_status *st);
pdq_code pdq_infer_mean(const pdq_graph *g, const pdq_op *op, int *nd, int *sh, pdq_status *st);
pdq_code pdq_infer_reshape(const pdq_graph *g, const pdq_op *op, int *nd, int *sh, pdq_status *st);
pdq_code pdq_infer_transpose(const pdq_graph *g, const pdq_op *op, int *nd, int *sh, pdq_status *st);
pdq_code pdq_infer_concat(const pdq_graph *g, const pdq_op *op, int *nd, int *sh, pdq_status *st);
pdq_code pdq_infer_gather(const pdq_graph *g, const pdq_op *op, int *nd, int *sh, pdq_status *st);
pdq_code pdq_infer_binary(const pdq_graph *g, const pdq_op *op, int *nd, int *sh, pdq_status *st);
pdq_code pdq_infer_unary(const pdq_graph *g, const pdq_op *op, int *nd, int *sh, pdq_status *st);
pdq_code pdq_infer_softmax(const pdq_graph *g, const pdq_op *op, int *nd, int *sh, pdq_status *st);
pdq_code pdq_infer_rms_norm(const pdq_graph *g, const pdq_op *op, int *nd, int *sh, pdq_status *st);
pdq_code pdq_infer_strided_slice(const pdq_graph *g, const pdq_op *op, int *nd, int *sh, pdq_status *st);
pdq_code pdq_infer_plain_slice(const pdq_graph *g, const pdq_op *op, int *nd, int *sh, pdq_status *st);

#endif
