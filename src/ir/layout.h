/* The layout arithmetic the kernels share (layout.c). Internal. */
#ifndef PDQ_IR_LAYOUT_H
#define PDQ_IR_LAYOUT_H

#include <stddef.h>

#include "pdq/graph.h"

/* A shape padded on the left to 6 dims. */
void pdq_k_shape6(const pdq_tensor *t, int *shape6);
/* Row-major strides (elements) of t padded to 6 dims; broadcast dims get 0 when the tensor's own
 * extent is 1 and the output's is larger. */
void pdq_k_strides6(const pdq_tensor *t, const int *out_shape6, long *strides6);
/* Row-major strides of a dense 6-d shape. */
void pdq_k_dense_strides6(const int *shape6, long *strides6);

/* A strided copy planned once: the source offset and the dims left after merging (innermost
 * first), tr when the two innermost are a transpose. */
typedef struct pdq_k_box {
    size_t n[PDQ_G_MAX_DIMS];
    long s[PDQ_G_MAX_DIMS];
    int nd, tr;
    long off;
    size_t esz;
} pdq_k_box;
/* Plans the copy of a 6-d box of shape box6 (the destination, dense) from a source at offset off
 * with strides sstr6: dims of size 1 drop out and a dim that steps exactly over the next inner
 * one merges with it, so a slice of whole rows is one long copy. */
void pdq_k_box_strided(const int *box6, const long *sstr6, long off, size_t esz, pdq_k_box *b);
void pdq_k_box_copy(const pdq_k_box *b, void *dst, const void *src);

#endif
