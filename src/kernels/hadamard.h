/* SIMD kernels of the randomized Hadamard rotation (the scalar reference and the rotation are
 * src/transform/: hadamard.h there, orthogonal.c). Every version computes the reference's bits:
 * each output is made by the same IEEE multiplications and butterflies (a + b, a - b) as the plain
 * stage-by-stage transform (pdq_fwht); a butterfly only reads the previous stage's outputs at its
 * two indices, so any schedule that keeps the stages in order per element (blocking, vector
 * lanes, fused passes) gives identical results. */
#ifndef PDQ_KERNELS_HADAMARD_H
#define PDQ_KERNELS_HADAMARD_H

#include <stddef.h>

#include "kernels/cpu_features.h"

/* The kernels of one level (cpu_features.h). rows: each of `rows` rows v of x (leading dimension
 * ld), n a power of two of at least 8: v[i] *= pre[i], v <- v H_n (pdq_fwht), v[i] *= post. cols: the same
 * transform down the columns of a strip s [n, w] (leading dimension lds, w a multiple of 8): row
 * i *= pre[i], then s <- H_n s. */
typedef struct {
    void (*rows)(float *x, int rows, size_t ld, int n, const float *pre, float post);
    void (*cols)(float *s, int n, int w, size_t lds, const float *pre);
} pdq_had_kernels;

/* The SIMD kernels at `level` or its first fallback that has them (AVX2 here); both NULL where
 * none does (the caller runs the scalar reference). */
pdq_had_kernels pdq_had_kernels_at(pdq_level level);

#if defined(__x86_64__) || defined(__i386__)
void pdq_had_rows_avx2(float *x, int rows, size_t ld, int n, const float *pre, float post);
void pdq_had_cols_avx2(float *s, int n, int w, size_t lds, const float *pre);
#endif

#endif
