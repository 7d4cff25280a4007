/* The integer executor's kernels (the ops' integer kernels, src/ops/, call them): exact int64 sums of int16 activations
 * against uint8 codes (FULLY_CONNECTED's tiles, BATCH_MATMUL's rows) and int16 stores by the one
 * requantization rule. Every variant gives the scalar rule's integers or bits; the overflow
 * argument of each is at its definition (qx_fc_i16_*.c, qx_ops_avx2.c). */
#ifndef PDQ_KERNELS_QX_KERNELS_H
#define PDQ_KERNELS_QX_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/cpu_features.h"

/* An output grid as the int16 stores read it: code = round-half-even(y / s) + zp, NaN -> zp,
 * clamped to [lo, hi] (include/pdq/requant.h). */
typedef struct {
    double s;
    int64_t zp, lo, hi;
} pdq_qx_grid;

/* The element-wise ops the int16 store pdq_qx_bin_i16_avx2 computes. */
typedef enum { PDQ_QX_ADD, PDQ_QX_SUB, PDQ_QX_MUL } pdq_qx_binop;

/* One term of the grouped rule (include/pdq/qexec.h): the exact sum a over a group's columns less
 * the zero point's share, times sx * the group's float32 scale, in double. Every grouped path
 * computes exactly this value; the vector ones lane by lane. */
static inline double qx_group_term(int64_t a, int zw, int64_t sumx, float sw, double sx) {
    return (double)(a - (int64_t)zw * sumx) * (sx * (double)sw);
}

/* ---------------------------------------------------------------- FULLY_CONNECTED (qx_fc_i16_*.c) */

/* Exact dot products of int16 activations with byte codes (sum x[k] * w[k]). */
int64_t pdq_qx_dot_u8_scalar(const int16_t *x, const uint8_t *w, int n);
int64_t pdq_qx_dot_u8_avx2(const int16_t *x, const uint8_t *w, int n);
void pdq_qx_dot4_u8_vnni(const int16_t *x, const uint8_t *w, size_t ldw, int K, int64_t *out);
void pdq_qx_tile4x2_u8_vnni(const int16_t *x, size_t ldx, const uint8_t *w, size_t ldw, int K, int64_t *out);
/* out[m * 4 + r]: 4 activation rows x 4 weight rows (16 accumulators fit AVX-512's 32 registers). */
void pdq_qx_tile4x4_u8_vnni(const int16_t *x, size_t ldx, const uint8_t *w, size_t ldw, int K, int64_t *out);
/* v[m * 4 + r] += the grouped rule's terms of 4 activation rows x 4 weight rows over every group
 * of G columns (zw, sw at weight row 0, sumx at activation row 0, each [rows][ngroups]; a term's
 * multiplier sx * sw); needs G * max code * 32768 < 2^31 (qx_prep.group_i32). */
void pdq_qx_tile4x4_groups_vnni(const int16_t *x, size_t ldx, const uint8_t *w, size_t ldw, int in, int G,
                                const uint8_t *zw, const int64_t *sumx, const float *sw, double sx, double *v);
/* v[r] = the grouped rule of one activation row (sums of x per group: sumx) against n weight rows
 * from their exact sums per group (s, zw, sw: [n][ng]; a term's multiplier sx * sw), each row's
 * terms summed in group order from 0.0, as the scalar loop sums them (decode). */
void pdq_qx_group_rows_vnni(const int64_t *s, int ng, int n, const uint8_t *zw, const int64_t *sumx, const float *sw,
                            double sx, double *v);
void pdq_qx_group_rows_avx2(const int64_t *s, int ng, int n, const uint8_t *zw, const int64_t *sumx, const float *sw,
                            double sx, double *v);
/* The same for 4 activation rows x 2 weight rows in AVX2: v[m * 2 + r] (same condition). */
void pdq_qx_tile4x2_groups_avx2(const int16_t *x, size_t ldx, const uint8_t *w, size_t ldw, int in, int G,
                                const uint8_t *zw, const int64_t *sumx, const float *sw, double sx, double *v);
/* out[r] = sum_k x[k] * w[r][k] for 4 weight rows (decode GEMV: one activation load, 4 rows). */
void pdq_qx_dot4_u8_avx2(const int16_t *x, const uint8_t *w, size_t ldw, int K, int64_t *out);
/* out[m * 2 + r] = sum_k x[m][k] * w[r][k] for 4 activation rows (stride ldx) and 2 weight rows. */
void pdq_qx_tile4x2_u8_avx2(const int16_t *x, size_t ldx, const uint8_t *w, size_t ldw, int K, int64_t *out);

/* ---------------------------------------------------------------- BATCH_MATMUL */

/* acc[j] += a * b[j] for int16 b, exact in int64 (BATCH_MATMUL rows). */
void pdq_qx_axpy_i16_avx2(int64_t *acc, int32_t a, const int16_t *b, int n);
void pdq_qx_axpy_i16_scalar(int64_t *acc, int32_t a, const int16_t *b, int n);
/* acc[j] += sum_k av[k] * b[k * ldb + j] (j < N) for |av[k]|, |b| <= 32768, exact: int32 lanes
 * flushed to the int64 acc before they could overflow (BATCH_MATMUL's decode rows). */
void pdq_qx_bmm_acc_i16_avx2(int64_t *acc, const int32_t *av, int K, const int16_t *b, long ldb, int N);

/* ---------------------------------------------------------------- int16 stores (qx_ops_avx2.c) */

/* Each gives the scalar rule's bits for the first 4k elements of a row; it returns that count and
 * the caller finishes the row. y = code(a (op) b) for int16 codes on grids aq, bq (value (code -
 * zp) * s), strides sa, sb of 0 (a broadcast) or 1: */
int pdq_qx_bin_i16_avx2(pdq_qx_binop t, const pdq_qx_grid *aq, const int16_t *a, int sa, const pdq_qx_grid *bq,
                        const int16_t *b, int sb, const pdq_qx_grid *yq, int16_t *y, int n);
/* y = code((double)acc[i] * mult[per_elem ? i : 0] (+ (double)bias[i])) (the exact sums of
 * FULLY_CONNECTED and BATCH_MATMUL); stops early at a sum of 2^51 or more in magnitude: */
int pdq_qx_sums_i16_avx2(const int64_t *acc, const double *mult, int per_elem, const float *bias,
                         const pdq_qx_grid *yq, int16_t *y, int n);
/* y = code(v[i]) (grouped FULLY_CONNECTED's values): */
int pdq_qx_codes_i16_avx2(const double *v, const pdq_qx_grid *yq, int16_t *y, int n);
/* y = code(v[i] / d) (SOFTMAX's terms over their sum): */
int pdq_qx_div_i16_avx2(const double *v, double d, const pdq_qx_grid *yq, int16_t *y, int n);
/* y = code(value(x[i]) * inv * gamma[gn == 1 ? 0 : i]) (RMS_NORM's scaling): */
int pdq_qx_scale_i16_avx2(const pdq_qx_grid *xq, const int16_t *x, double inv, const double *gamma, int gn,
                          const pdq_qx_grid *yq, int16_t *y, int n);

/* ---------------------------------------------------------------- the table (qx_traits.c) */

/* The integer executor's kernels at one level (cpu_features.h), in the manner of ggml's
 * type_traits_cpu. NULL: none at this level. pdq_qx_traits_at fills each NULL entry from the
 * level's fallbacks; what is still NULL then the SCALAR level lacks too, and the caller's own
 * scalar loop runs (FULLY_CONNECTED's path choice reads which tiles there are: ops/fully_connected_int.c). A
 * level with tile4x4 has tile4x4_groups; one with tile4x2 has tile4x2_groups; one with
 * bmm_acc_i16 has sums_i16. */
typedef struct {
    /* FULLY_CONNECTED: 1 x 1 (SCALAR has it), 1 x 4 (decode), 4 x 2 and 4 x 4 (prefill) tiles */
    int64_t (*dot)(const int16_t *x, const uint8_t *w, int n);
    void (*dot4)(const int16_t *x, const uint8_t *w, size_t ldw, int K, int64_t *out);
    void (*tile4x2)(const int16_t *x, size_t ldx, const uint8_t *w, size_t ldw, int K, int64_t *out);
    void (*tile4x4)(const int16_t *x, size_t ldx, const uint8_t *w, size_t ldw, int K, int64_t *out);
    /* grouped weights: the tiles' every group in one call; one activation row's rows of groups */
    void (*tile4x2_groups)(const int16_t *x, size_t ldx, const uint8_t *w, size_t ldw, int in, int G,
                           const uint8_t *zw, const int64_t *sumx, const float *sw, double sx, double *v);
    void (*tile4x4_groups)(const int16_t *x, size_t ldx, const uint8_t *w, size_t ldw, int in, int G,
                           const uint8_t *zw, const int64_t *sumx, const float *sw, double sx, double *v);
    void (*group_rows)(const int64_t *s, int ng, int n, const uint8_t *zw, const int64_t *sumx, const float *sw,
                       double sx, double *v);
    /* BATCH_MATMUL rows (axpy_i16: SCALAR has it) */
    void (*axpy_i16)(int64_t *acc, int32_t a, const int16_t *b, int n);
    void (*bmm_acc_i16)(int64_t *acc, const int32_t *av, int K, const int16_t *b, long ldb, int N);
    /* int16 stores */
    int (*bin_i16)(pdq_qx_binop t, const pdq_qx_grid *aq, const int16_t *a, int sa, const pdq_qx_grid *bq,
                   const int16_t *b, int sb, const pdq_qx_grid *yq, int16_t *y, int n);
    int (*sums_i16)(const int64_t *acc, const double *mult, int per_elem, const float *bias, const pdq_qx_grid *yq,
                    int16_t *y, int n);
    int (*codes_i16)(const double *v, const pdq_qx_grid *yq, int16_t *y, int n);
    int (*div_i16)(const double *v, double d, const pdq_qx_grid *yq, int16_t *y, int n);
    int (*scale_i16)(const pdq_qx_grid *xq, const int16_t *x, double inv, const double *gamma, int gn,
                     const pdq_qx_grid *yq, int16_t *y, int n);
} pdq_qx_traits;

/* The kernels of the level the switches allow on this CPU (pdq_level_allowed): *k with every
 * entry filled from that level or its fallbacks; returns the highest level any entry came from
 * (the executor's SIMD level). */
pdq_level pdq_qx_traits_at(pdq_level level, pdq_qx_traits *k);

#endif
