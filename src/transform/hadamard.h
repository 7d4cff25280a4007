/* The scalar reference kernels of the randomized Hadamard rotation; the SIMD versions, which give
 * the same bits, are src/kernels/hadamard.h's. */
#ifndef PDQ_TRANSFORM_HADAMARD_H
#define PDQ_TRANSFORM_HADAMARD_H

#include <stddef.h>

/* Each of `rows` rows v of x (leading dimension ld), n a power of two:
 * v[i] *= pre[i], v <- v H_n (pdq_fwht), v[i] *= post. */
void pdq_had_rows_scalar(float *x, int rows, size_t ld, int n, const float *pre, float post);

/* The same transform down the columns of a strip s [n, w] (leading dimension lds): row i *=
 * pre[i], then s <- H_n s. */
void pdq_had_cols_scalar(float *s, int n, int w, size_t lds, const float *pre);

#endif
