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

#endif
