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

#endif
