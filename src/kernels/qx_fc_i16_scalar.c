/* The integer executor's FULLY_CONNECTED and BATCH_MATMUL sums, scalar: the reference every
 * SIMD variant (qx_fc_i16_avx2.c, qx_fc_i16_avx512.c) equals.
 * Overflow: |x| <= 32768 and w <= 255, so a product is at most 8,355,840 in magnitude and a block
 * of 256 products (the scalar int32 partial sum) at most 2,139,095,040 < 2^31; blocks flush to an
 * int64 total. */
#include "kernels/qx_kernels.h"

#define SCALAR_BLOCK 256
#define GROUP_ROWS 64   /* weight rows per call of the grouped exact sums (decode) */
#define AVX2_BLOCK 2048

void pdq_qx_axpy_i16_scalar(int64_t *acc, int32_t a, const int16_t *b, int n) {
    for (int j = 0; j < n; j++) acc[j] += (int64_t)(a * (int32_t)b[j]);
}

int64_t pdq_qx_dot_u8_scalar(const int16_t *x, const uint8_t *w, int n) {
    int64_t tot = 0;
    for (int k0 = 0; k0 < n; k0 += SCALAR_BLOCK) {
        int e = n - k0 < SCALAR_BLOCK ? n : k0 + SCALAR_BLOCK;
        int32_t s = 0;
        for (int k = k0; k < e; k++) s += (int32_t)x[k] * (int32_t)w[k];
        tot += s;
    }
    return tot;
}
