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
    int block;               /* columns per block: 32 (two nibbles per lane) or 16 */
    /* the GEMV of each level (cpu_features.h); NULL: the level's fallback's. SCALAR always; AVX2
     * and AVX512 (two rows per register) where the compiler can target them. */
    qk_gemv_fn gemv[PDQ_LEVEL_COUNT];
} qk_type_traits;


void qk_gemv_u4_scalar(const pdq_qmatrix *w, const float *xt, int r0, int r1, float *y);
void qk_gemv_u8_scalar(const pdq_qmatrix *w, const float *xt, int r0, int r1, float *y);
/* y[k] (k < nr) = prepared row xt · decoded panel rows wf[k * xt_len ...] (rows r..r+nr-1), in
 * the GEMV's order. */
void qk_panel_scalar(const pdq_qmatrix *w, const float *xt, const float *wf, int r, int nr, float *y);
#if defined(__x86_64__) || defined(__i386__)
#define PDQ_QK_HAVE_AVX2 1
void qk_gemv_u4_avx2(const pdq_qmatrix *w, const float *xt, int r0, int r1, float *y);
void qk_gemv_u8_avx2(const pdq_qmatrix *w, const float *xt, int r0, int r1, float *y);
/* Tiles: prepared rows xr[0..ni) (ni <= QK_TILE_X) against decoded panel rows r..r+nr-1
 * (nr <= QK_TILE_W, panel row k at wf + k * qk_xt_stride); y[i * ystride + k]. */
#define QK_TILE2_X 3
#define QK_TILE2_W 2
#define QK_TILE5_X 4
#define QK_TILE5_W 4
void qk_tile_avx2(const pdq_qmatrix *w, const float *const *xr, int ni, const float *wf, int r, int nr, float *y,
                  size_t ystride);
void qk_decode_row_avx2(const pdq_qmatrix *w, int r, float *wf);
void qk_gemv_u4_avx512(const pdq_qmatrix *w, const float *xt, int r0, int r1, float *y);
void qk_gemv_u8_avx512(const pdq_qmatrix *w, const float *xt, int r0, int r1, float *y);
void qk_tile_avx512(const pdq_qmatrix *w, const float *const *xr, int ni, const float *wf, int r, int nr, float *y,
                    size_t ystride);
#endif

/* Columns per block: 16 lanes, each taking two nibble columns (uint4) or one column (uint8). */
/* The GEMVs prefetch the codes this many rows ahead: rows are short (1 KiB for 2048 uint4
 * columns), too short for the hardware stream prefetcher to ramp up on its own. */
#define QK_PREFETCH_ROWS 8

static inline int qk_block(const pdq_qmatrix *w) { return w->type == PDQ_QT_U4 ? 32 : 16; }
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

/* The scale of row r's group g as float32 (a compact one widened, exactly), and row r's zero
 * points (one shared row when zero_stride is 0). */
static inline float qk_scale(const pdq_qmatrix *w, int r, int g) {
    size_t i = pdq_qmatrix_scale_index(w, r, g);
    if (!w->scales16) return w->scales[i];
    return w->scale_type == PDQ_QSCALE_F16 ? pdq_f16_to_f32(w->scales16[i]) : pdq_bf16_to_f32(w->scales16[i]);
}
static inline const uint8_t *qk_zeros(const pdq_qmatrix *w, int r) { return w->zeros + (size_t)r * w->zero_stride; }

/* The code of column c of a row (pdq_qmatrix_row), in either layout. */
static inline int qk_code(const pdq_qmatrix *w, const uint8_t *row, int c) {
    return w->type == PDQ_QT_U4 ? (*pdq_qmatrix_at(w, row, (size_t)c >> 1) >> ((c & 1) * 4)) & 0xF
                                : *pdq_qmatrix_at(w, row, (size_t)c);
}

/* Column of slot j (0 <= j < block) of the block starting at column c: uint4 slots 0..15 take
 * columns c, c+2, ... (low nibbles of bytes 0..15), slots 16..31 columns c+1, c+3, ... (high
 * nibbles); uint8 slot j takes c+j. Slot j feeds lane j % 16. */
static inline int qk_slot_col(int block, int c, int j) {
    return block == 32 ? c + (j < 16 ? 2 * j : 2 * (j - 16) + 1) : c + j;
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
    const uint8_t *z = qk_zeros(w, r);
    float t = 0.0f;
    for (int g = 0; g < w->ngroups; g++) t = fmaf(qk_scale(w, r, g) * (float)z[g], xs[g], t);
    return t;
}
/* The same with row r's scales already as float32 (a 4-row block's, qk_rows4). */
static inline float qk_zero_term_s(const pdq_qmatrix *w, int r, const float *s, const float *xt) {
    const float *xs = xt + qk_xt_len(w);
    const uint8_t *z = qk_zeros(w, r);
    float t = 0.0f;
    for (int g = 0; g < w->ngroups; g++) t = fmaf(s[g] * (float)z[g], xs[g], t);
    return t;
}

/* Decoded panel row: (float)code in the prepared layout (exact: small integers). */
static inline void qk_decode_row(const pdq_qmatrix *w, int r, float *wf) {
    int b = qk_block(w), gs = qk_group_stride(w);
    const uint8_t *row = pdq_qmatrix_row(w, r);
    int32_t v[32];
    for (int g = 0; g < w->ngroups; g++) {
        int c0 = g * w->group, c1 = c0 + qk_group_len(w, g);
        for (int k = 0; k < gs; k += b) {
            qk_decode_block(w, row, c0 + k, c1, v);
            for (int j = 0; j < b; j++) wf[(size_t)g * gs + k + j] = (float)v[j];
        }
    }
}

/* The fixed final reduction of the 16 lane accumulators: halves added lane-wise, then a tree. */
static inline float qk_hsum16(const float *a) {
    float t[8];
    for (int l = 0; l < 8; l++) t[l] = a[l] + a[l + 8];
    return ((t[0] + t[1]) + (t[2] + t[3])) + ((t[4] + t[5]) + (t[6] + t[7]));
}

#endif
