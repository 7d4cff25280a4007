/* Float32 kernels of the graph interpreter (private). ptrs[tid] is each tensor's data. */
#ifndef PDQ_IR_OPS_H
#define PDQ_IR_OPS_H

#include "pdq/graph.h"

pdq_code pdq_k_linalg(const pdq_graph *g, const pdq_op *op, void *const *ptrs, pdq_status *st);
pdq_code pdq_k_elementwise(const pdq_graph *g, const pdq_op *op, void *const *ptrs, pdq_status *st);
pdq_code pdq_k_shape(const pdq_graph *g, const pdq_op *op, void *const *ptrs, pdq_status *st);

/* Row-major strides (elements) of a shape padded on the left to 6 dims; broadcast dims get 0
 * when the tensor's own extent is 1 and the output's is larger. */
void pdq_k_strides6(const pdq_tensor *t, const int *out_shape6, long *strides6);
void pdq_k_shape6(const pdq_tensor *t, int *shape6);

/* The strided copy of a TRANSPOSE, SLICE or STRIDED_SLICE, planned once: the source offset and
 * the dims left after merging (innermost first), tr when the two innermost are a transpose.
 * pdq_k_box_plan returns 0 (and plans nothing) for any other op or a non-constant parameter. */
typedef struct {
    size_t n[PDQ_G_MAX_DIMS];
    long s[PDQ_G_MAX_DIMS];
    int nd, tr;
    long off;
    size_t esz;
} pdq_k_box;
int pdq_k_box_plan(const pdq_graph *g, const pdq_op *op, pdq_k_box *b);
void pdq_k_box_copy(const pdq_k_box *b, void *dst, const void *src);

#endif
