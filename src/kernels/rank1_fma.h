/* GPTQ's rank-1 updates of one column's rows, w[r] += a * e[r], each rounded as OpenBLAS's saxpy
 * (inside sger) rounds it on this project's reference machine (the Haswell kernel): one fused
 * multiply-add for every row below the global fma_end (a multiple of 32 in the global row
 * numbering: the kernel's vector part), a rounded product then a rounded sum at and above it (its
 * scalar tail). Every level gives the same bits (the scalar one through fmaf). */
#ifndef PDQ_KERNELS_RANK1_FMA_H
#define PDQ_KERNELS_RANK1_FMA_H

#include <stddef.h>

#include "kernels/cpu_features.h"

/* n updates of rows [0, rows) of one column in order, w[r] += a[t] * e[t * es + r] for
 * t = 0..n-1, fused for r < fused (the rows below the global fma_end), a rounded product then a
 * rounded sum at and above it; w's rows stay in registers across the n updates (GPTQ's in-block
 * loop applies a column's pending updates at once). */
void pdq_rank1_fma_seq(pdq_level level, float *w, const float *e, size_t es, const float *a, int n, int rows,
                       int fused);

#endif
