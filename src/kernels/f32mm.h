/* The float32 dense matmul of the reference forward: y[n, out] = x[n, in] · W[out, in]ᵀ, both
 * operands row-major along `in` (the layout of an HF linear's weight), on pdq's pool.
 *
 * Summation order (every level keeps it, so the AVX-512, AVX2 and scalar paths agree bit for
 * bit): per output element, 16 float lanes acc[j] = fmaf(x[k], w[k], acc[j]) for k = 16 b + j
 * over b = 0, 1, ... (a short last block reads zeros for both operands), then the halving tree
 * acc[l] += acc[l + 8] (l < 8), acc[l] += acc[l + 4] (l < 4), acc[l] += acc[l + 2] (l < 2),
 * y = acc[0] + acc[1]. Every output element is computed whole by one task in this order, so the
 * result does not depend on the thread count, the tiling, or whether the row came through the
 * GEMV (n = 1) or the GEMM (n > 1). It differs from OpenBLAS's sgemm/sgemv in the low bits only
 * (another order of the same float sums). */
#ifndef PDQ_KERNELS_F32MM_H
#define PDQ_KERNELS_F32MM_H

#include "kernels/cpu_features.h"
#include "pdq/threadpool.h"

/* The level the f32 matmul runs at for `allowed` (pdq_level_allowed): SCALAR, AVX2 or AVX512. */
pdq_level pdq_f32mm_level(pdq_level allowed);
/* y[n, out] = x[n, in] · W[out, in]ᵀ at `level` (its kernels, or its fallback's), the tasks on
 * `pool` (NULL: the caller alone). y must not overlap x or w. */
void pdq_f32mm(pdq_pool *pool, pdq_level level, float *y, const float *x, const float *w, int n, int out,
               int in);

#endif
