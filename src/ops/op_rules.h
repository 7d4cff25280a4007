/* The checks shape rules share (op_rules.c). A shape rule treats its operands as hostile (every
 * graph goes through it: the builders, pdq_graph_validate, the Circle importer): operand counts,
 * ranks, constant operands, axes and ranges are checked, and an output dim is computed in int64
 * and held to PDQ_G_MAX_ELEMS before it is stored in an int. Each fails with a message that names
 * the op and the tensor. Internal. */
#ifndef PDQ_OPS_OP_RULES_H
#define PDQ_OPS_OP_RULES_H

#include <stdint.h>
#include <string.h>

#include "pdq/graph.h"

/* Operand i of op in g (a shape rule's g and op). */
#define OPERAND(i) (&g->tensors[op->in[i]])

pdq_code pdq_rule_inputs(const pdq_op *op, int lo, int hi, pdq_status *st);
/* Operand k is an int32 constant vector (of n entries; n < 0: any). role names it. */
pdq_code pdq_rule_const_i32(const pdq_graph *g, const pdq_op *op, int k, const char *role, int n, pdq_status *st);
pdq_code pdq_rule_rank(const pdq_op *op, const pdq_tensor *t, int lo, pdq_status *st);
/* sh[d] = v once v is a positive, bounded int. */
pdq_code pdq_rule_put_dim(const pdq_op *op, int *sh, int d, int64_t v, pdq_status *st);
/* Numpy/TFLite broadcasting of two shapes (right-aligned). */
pdq_code pdq_rule_broadcast(const pdq_op *op, const pdq_tensor *a, const pdq_tensor *b, int *nd, int *sh,
                            pdq_status *st);

static inline void pdq_rule_same_shape(const pdq_tensor *t, int *nd, int *sh) {
    *nd = t->ndim;
    memcpy(sh, t->shape, sizeof(int) * (size_t)t->ndim);
}

static inline int pdq_rule_axis(int axis, int nd) { return axis < 0 ? axis + nd : axis; }

#endif
