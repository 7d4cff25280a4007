/* 16-bit 2-D transpose for ir/layout.c (SIMD stays under kernels/). */
#ifndef PDQ_KERNELS_TRANSPOSE16_H
#define PDQ_KERNELS_TRANSPOSE16_H

#include <stddef.h>
#include <stdint.h>

void pdq_k_transpose_u16(uint16_t *d, const uint16_t *sp, size_t rows, size_t cols, long cstride);

#endif
