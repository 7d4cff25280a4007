/* One row of GPTQ's rank-1 update, w[r] += a * e[r], rounded as OpenBLAS's saxpy rounds it on
 * this project's reference machine (the Haswell kernel): one fused multiply-add for every
 * r < fma_end (a multiple of 32 in the global row numbering: the kernel's vector part), a
 * rounded product then a rounded sum at and above it (its scalar tail). Both paths give the same
 * bits (the scalar one through fmaf). */
#ifndef PDQ_KERNELS_RANK1_FMA_H
#define PDQ_KERNELS_RANK1_FMA_H

#include "kernels/cpu_features.h"

/* w, e: the rows [r0, r1) of the column and of the error (indices are global). */
void pdq_rank1_fma(pdq_level level, float *w, const float *e, float a, int r0, int r1, int fma_end);

#endif
