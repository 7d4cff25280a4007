/* 2-D transposes with a permutation on the transposed side, for GPTQ's working layout (a weight
 * [rows][cols] held as its permuted columns [cols][rows]). A copy: every level gives the same
 * values. */
#ifndef PDQ_KERNELS_TRANSPOSE_MAP_H
#define PDQ_KERNELS_TRANSPOSE_MAP_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/cpu_features.h"

/* dst [rows][cols] from src [cols][rows]: dst[r][c] = src[map[c]][r]. */
void pdq_k_transpose_gather_f32(pdq_level level, float *dst, const float *src, size_t rows, size_t cols,
                                const int *map);
void pdq_k_transpose_gather_u8(uint8_t *dst, const uint8_t *src, size_t rows, size_t cols, const int *map);

/* dst [cols][rows] from src [rows][cols]: dst[map[c]][r] = src[r][c]. */
void pdq_k_transpose_scatter_f32(pdq_level level, float *dst, const float *src, size_t rows, size_t cols,
                                 const int *map);

#endif
