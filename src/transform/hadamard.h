/* Kernels of the randomized Hadamard rotation, one scalar and one AVX2 version of each. Every
 * version computes the same bits: each output is made by the same IEEE multiplications and
 * butterflies (a + b, a - b) as the plain stage-by-stage transform (pdq_fwht); a butterfly only
 * reads the previous stage's outputs at its two indices, so any schedule that keeps the stages in
 * order per element (blocking, vector lanes, fused passes) gives identical results. */
#ifndef PDQ_TRANSFORM_HADAMARD_H
#define PDQ_TRANSFORM_HADAMARD_H

#include <stddef.h>

/* Each of `rows` rows v of x (leading dimension ld), n a power of two:
 * v[i] *= pre[i], v <- v H_n (pdq_fwht), v[i] *= post. */
void pdq_had_rows_scalar(float *x, int rows, size_t ld, int n, const float *pre, float post);
void pdq_had_rows_avx2(float *x, int rows, size_t ld, int n, const float *pre, float post);

/* The same transform down the columns of a strip s [n, w] (leading dimension lds, w a multiple
 * of 8 for the AVX2 version): row i *= pre[i], then s <- H_n s. */
void pdq_had_cols_scalar(float *s, int n, int w, size_t lds, const float *pre);
void pdq_had_cols_avx2(float *s, int n, int w, size_t lds, const float *pre);

#endif
