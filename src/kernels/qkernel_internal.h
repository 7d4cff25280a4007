/* What the kernel files share: the per-type traits table (in the spirit of ggml's
 * type_traits_cpu), the prepared-activation layout and the generic block decoder. Internal to
 * src/kernels/. */
#ifndef PDQ_KERNELS_QKERNEL_INTERNAL_H
#define PDQ_KERNELS_QKERNEL_INTERNAL_H

#include <math.h>

#include "kernels/qmatmul.h"

/* Rows [r0, r1) of y = W · x for one prepared row xt (see qk_prepare_x); y is indexed by row. */
typedef void (*qk_gemv_fn)(const pdq_qmatrix *w, const float *xt, int r0, int r1, float *y);

typedef struct {
    const char *name;        /* "uint4", "uint8" */
    int block;               /* columns per block: 16 (two nibbles per lane) or 8 */
    qk_gemv_fn gemv_scalar;
    qk_gemv_fn gemv_avx2;    /* NULL where the compiler cannot target AVX2 */
    qk_gemv_fn gemv_avx512;  /* two rows per register; NULL where unavailable */
} qk_type_traits;

const qk_type_traits *qk_traits(pdq_qtype t);

void qk_gemv_u4_scalar(const pdq_qmatrix *w, const float *xt, int r0, int r1, float *y);
void qk_gemv_u8_scalar(const pdq_qmatrix *w, const float *xt, int r0, int r1, float *y);
/* y[k] (k < nr) = prepared row xt · decoded panel rows wf[k * xt_len ...] (rows r..r+nr-1), in
 * the GEMV's order. */
void qk_panel_scalar(const pdq_qmatrix *w, const float *xt, const float *wf, int r, int nr, float *y);
#if defined(__x86_64__) || defined(__i386__)
#define PDQ_QK_HAVE_AVX2 1
void qk_gemv_u4_avx2(const pdq_qmatrix *w, const float *xt, int r0, int r1, float *y);
void qk_gemv_u8_avx2(const pdq_qmatrix *w, const float *xt, int r0, int r1, float *y);
void qk_tile_avx2(const pdq_qmatrix *w, const float *const xr[3], int ni, const float *wf, int r, int nr, float *y,
                  size_t ystride);
void qk_decode_row_avx2(const pdq_qmatrix *w, int r, float *wf);
void qk_gemv_u4_avx512(const pdq_qmatrix *w, const float *xt, int r0, int r1, float *y);
void qk_gemv_u8_avx512(const pdq_qmatrix *w, const float *xt, int r0, int r1, float *y);
void qk_tile_avx512(const pdq_qmatrix *w, const float *const xr[6], int ni, const float *wf, int r, int nr, float *y,
                    size_t ystride);
#endif

static inline int qk_block(const pdq_qmatrix *w) { return w->type == PDQ_QT_U4 ? 16 : 8; }
/* Floats per group in a prepared row / decoded panel row: the group padded to whole blocks. */
static inline int qk_group_stride(const pdq_qmatrix *w) {
    int b = qk_block(w);
    return (w->group + b - 1) / b * b;
}
static inline int qk_xt_len(const pdq_qmatrix *w) { return w->ngroups * qk_group_stride(w); }
/* A prepared row: the slots (qk_xt_len floats), then the sum of x over each group. */
static inline int qk_xt_stride(const pdq_qmatrix *w) { return qk_xt_len(w) + (w->ngroups + 7) / 8 * 8; }
static inline int qk_group_len(const pdq_qmatrix *w, int g) {
    int c0 = g * w->group, rest = w->cols - c0;
    return rest < w->group ? rest : w->group;
}

static inline int qk_code(const pdq_qmatrix *w, const uint8_t *row, int c) {
    return w->type == PDQ_QT_U4 ? (row[c >> 1] >> ((c & 1) * 4)) & 0xF : row[c];
}

/* Column of lane slot j (0 <= j < block) of the block starting at column c: uint4 slots 0..7 take
 * columns c, c+2, ..., slots 8..15 columns c+1, c+3, ...; uint8 slot j takes c+j. */
static inline int qk_slot_col(int block, int c, int j) {
    return block == 16 ? c + (j < 8 ? 2 * j : 2 * (j - 8) + 1) : c + j;
}

/* The code of every slot of the block at column c of group end c1 (0 past c1). */
static inline void qk_decode_block(const pdq_qmatrix *w, const uint8_t *row, int c, int c1, int32_t *v) {
    int b = qk_block(w);
    for (int j = 0; j < b; j++) {
        int col = qk_slot_col(b, c, j);
        v[j] = col < c1 ? qk_code(w, row, col) : 0;
    }
}

/* The prepared row: per group, blocks of x in slot order (x[perm[col]] with a permutation),
 * zeros past the group's end, then each group's sum of x (in slot order). qk_xt_stride floats. */
static inline void qk_prepare_x(const pdq_qmatrix *w, const float *x, float *xt) {
    int b = qk_block(w), gs = qk_group_stride(w);
    for (int g = 0; g < w->ngroups; g++) {
        int c0 = g * w->group, c1 = c0 + qk_group_len(w, g);
        float *o = xt + (size_t)g * gs;
        for (int k = 0; k < gs; k += b)
            for (int j = 0; j < b; j++) {
                int col = qk_slot_col(b, c0 + k, j);
                o[k + j] = col < c1 ? x[w->perm ? w->perm[col] : col] : 0.0f;
            }
        float sum = 0.0f;
        for (int k = 0; k < gs; k++) sum += o[k];
        xt[qk_xt_len(w) + g] = sum;
    }
}

/* The zero points' share of row r: sum over groups of scale * zero * (sum of x over the group),
 * accumulated in group order; the kernels return (lane sums of scale * x * code) minus this. */
static inline float qk_zero_term(const pdq_qmatrix *w, int r, const float *xt) {
    const float *xs = xt + qk_xt_len(w);
    const float *s = w->scales + (size_t)r * w->ngroups;
    const uint8_t *z = w->zeros + (size_t)r * w->ngroups;
    float t = 0.0f;
    for (int g = 0; g < w->ngroups; g++) t = fmaf(s[g] * (float)z[g], xs[g], t);
    return t;
}

/* Decoded panel row: (float)code in the prepared layout (exact: small integers). */
static inline void qk_decode_row(const pdq_qmatrix *w, int r, float *wf) {
    int b = qk_block(w), gs = qk_group_stride(w);
    const uint8_t *row = w->codes + (size_t)r * w->row_bytes;
    int32_t v[16];
    for (int g = 0; g < w->ngroups; g++) {
        int c0 = g * w->group, c1 = c0 + qk_group_len(w, g);
        for (int k = 0; k < gs; k += b) {
            qk_decode_block(w, row, c0 + k, c1, v);
            for (int j = 0; j < b; j++) wf[(size_t)g * gs + k + j] = (float)v[j];
        }
    }
}

/* The fixed final reduction of the 8 lane accumulators. */
static inline float qk_hsum8(const float *a) {
    return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
}

#endif
