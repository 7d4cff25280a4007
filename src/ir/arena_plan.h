/* The one liveness plan of a graph's working memory, shared by the float interpreter and the
 * integer executor (private). */
#ifndef PDQ_IR_ARENA_PLAN_H
#define PDQ_IR_ARENA_PLAN_H

#include <stddef.h>

#include "pdq/graph.h"

#define PDQ_ARENA_ALIGN 64

/* First-fit offsets of every non-constant tensor into one arena: graph inputs and outputs live
 * for the whole run (callers read and write them around it), an intermediate from its producer
 * to its last reader. alias_reshape: a RESHAPE whose intermediate input of the same dtype dies at
 * it takes over the input's block (an executor that reshapes without copying; an element-wise
 * requantizing move between two grids of one dtype stays correct in place). Fills offset[n_tensors] and
 * *bytes (at least PDQ_ARENA_ALIGN). On error (no memory) st is filled and nothing is set. */
pdq_code pdq_arena_plan(const pdq_graph *g, int alias_reshape, size_t *offset, size_t *bytes, pdq_status *st);
/* The same for an executor that runs the ops in order (n_ops indices, topological) and the ops of
 * one step (step[op], equal along runs of order) at the same time: every output of a step is
 * placed before any block its ops read is freed, so no two ops of a step share a block they write.
 * order and step NULL: graph order, one op a step (pdq_arena_plan). */
pdq_code pdq_arena_plan_steps(const pdq_graph *g, int alias_reshape, const int *order, const int *step, size_t *offset,
                              size_t *bytes, pdq_status *st);

#endif
