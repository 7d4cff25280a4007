/* What the integer-path kernels share (the rule is in qmatmul.h): the block plan of a matrix,
 * the prepared-activation layout and the per-block epilogue. Internal to src/kernels/. */
#ifndef PDQ_KERNELS_QINT_INTERNAL_H
#define PDQ_KERNELS_QINT_INTERNAL_H

#include <math.h>
#include <stdint.h>

#include "kernels/qmatmul.h"
#include "kernels/rows4.h"

#define QI_STEP 128       /* columns per SIMD step: 64 bytes of uint4 codes */
#define QI_PANEL 16       /* weight rows per GEMM panel (one 512-bit register of int32 lanes) */

typedef struct {
    int B;                /* columns per activation block: 32, 64 or 128 */
    int nblocks;          /* ceil(cols / B) */
    int nsteps;           /* ceil(cols / QI_STEP) */
    int ncolp;            /* nsteps * QI_STEP: columns of a prepared row, zeros past cols */
    int bpg;              /* blocks per group (per-channel: nblocks) */
    /* byte offsets inside one prepared row, and its size (a multiple of 64) */
    size_t off_planes, off_xs, off_sx, stride;
} qi_plan;

/* The level of the integer kernels this context and CPU allow: the context's level
 * (pdq_qctx_level), or its first fallback with kernels here (SCALAR, AVX2, AVX2_VNNI, AVX512_VNNI;
 * the AVX512 level has none of its own and runs AVX2's). qi_kernels_at: that level's table
 * (qint_driver.c). */
pdq_level qi_level(const pdq_qctx *ctx);
typedef struct qi_traits qi_traits;
pdq_level qi_kernels_at(const pdq_qctx *ctx, qi_traits *k);
/* y[n, rows] = x · Wᵀ on the integer path (W has a plan). */
pdq_code qi_matmul(const pdq_qctx *ctx, const pdq_qmatrix *w, const qi_plan *p, const float *x, int n, float *y,
                   pdq_status *st);
/* ys[i] = x · ws[i]ᵀ for nw matrices (each with its plan), x rounded once for a run of them that
 * read it alike: the same bytes as nw calls of qi_matmul. */
pdq_code qi_matmul_many(const pdq_qctx *ctx, int nw, const pdq_qmatrix *const *ws, const qi_plan *plans,
                        const float *x, int n, float *const *ys, pdq_status *st);

/* 1 and the plan when W takes the integer path (uint4 or uint8, a group the block rule allows). */
int qi_plan_make(const pdq_qmatrix *w, qi_plan *p);

/* A prepared row, at byte offset 0 of its `stride` bytes:
 *   int16 xq[ncolp]                  the rounded x in column order (zeros past cols)
 *   planes, per step s, 4 x 64 bytes: xh of columns 128s + 2j (j < 64), xh of 128s + 2j + 1,
 *                                     xl of 128s + 2j, xl of 128s + 2j + 1, where
 *                                     xq = 256 * xh + xl, xh signed, xl unsigned (the layout
 *                                     of a byte dot product against 64 bytes of packed codes)
 *   float xs[nblocks]                the block scales
 *   int32 sx[nblocks]                the block sums of xq (the zero points' share)
 * For uint8 the planes of step s are xh of columns 128s.. 128s + 127, then their xl, in column
 * order (64 codes of a row are the unsigned operand of one byte dot product against xh; xl is
 * the unsigned operand against code - 128). Planes are written only when `planes` is set (the
 * SIMD uint4 GEMVs and the AVX-512 uint8 GEMVs read them). */
void qi_prepare_x(const pdq_qmatrix *w, const qi_plan *p, const float *x, uint8_t *out, int planes);
/* The planes of a prepared row from its xq, uint4 and uint8 layouts. */
void qi_prepare_planes(const qi_plan *p, uint8_t *out);
void qi_prepare_planes_u8(const qi_plan *p, uint8_t *out);

static inline const int16_t *qi_xq(const qi_plan *p, const uint8_t *xt) { (void)p; return (const int16_t *)xt; }
static inline const int8_t *qi_planes(const qi_plan *p, const uint8_t *xt) { return (const int8_t *)(xt + p->off_planes); }
static inline const float *qi_xs(const qi_plan *p, const uint8_t *xt) { return (const float *)(xt + p->off_xs); }
static inline const int32_t *qi_sx(const qi_plan *p, const uint8_t *xt) { return (const int32_t *)(xt + p->off_sx); }
static inline int qi_last_in_group(const qi_plan *p, int b) { return (b + 1) % p->bpg == 0 || b + 1 == p->nblocks; }

/* How far ahead the GEMVs prefetch codes (into L2): whole rows, about 20 KiB. Rows are short (1 KiB
 * for 2048 columns) and four are read at once, too short for the hardware streamer on its own;
 * measured on TinyLlama shapes from DRAM, 20 KiB to L2 beat 8 rows to L1 by 10-30 %. */
static inline size_t qi_prefetch_bytes(size_t rb) { return (20480 + rb - 1) / rb * rb; }
/* The same for a GEMV that walks two 4-row blocks at once (A at rows r.., B at r + 4..), both
 * prefetching pf ahead in the 4-row layout's one stream: whole pairs of blocks, so that A's
 * prefetch lands on the next A and B's on the next B. With pf one block (u8 rows of 5632
 * columns: 4 x 5632 = 22528 bytes), A's prefetch hit B's current lines and half the stream was
 * fetched on demand (11 against 19.5 GB/s from DRAM). */
static inline size_t qi_prefetch_bytes_pair(size_t rb) { return (20480 + 8 * rb - 1) / (8 * rb) * (8 * rb); }
/* The scales and zero points of row r + ahead, the same distance ahead as the codes: grouped
 * rows carry their grids in one or two more streams (a quarter of the GEMV's time went to
 * waiting on them with groups of 32 before). A shared row of zero points stays cached. */
static inline void qi_prefetch_grid(const pdq_qmatrix *w, int r, int ahead) {
    size_t i = (size_t)(r + ahead) * w->ngroups;
    int ssz = (int)pdq_qscale_size(w->scale_type);
    const char *s = w->scales16 ? (const char *)(w->scales16 + i) : (const char *)(w->scales + i);
    for (int o = 0; o < w->ngroups * ssz; o += 64) __builtin_prefetch(s + o, 0, 2);
    if (!w->zero_stride) return;
    const char *z = (const char *)(w->zeros + i);
    for (int o = 0; o < w->ngroups; o += 64) __builtin_prefetch(z + o, 0, 2);
}

/* The start of a GEMV's block of four rows at r of rows [.., r1) whose prefetch may reach rows
 * [.., rend) (rend >= r1: the rest of the thread's share, qk_prefetch_in_task): their row
 * pointers in p, their grids prefetched as far ahead as the codes; returns how many rows it has. */
static inline int qi_rows4_begin(const pdq_qmatrix *w, int r, int r1, int rend, size_t pf, qk_rows4 *p) {
    int nr = qk_rows4_init(w, r, r1, pf, p);
    p->pf = qk_prefetch_in_task(r, rend, pf, w->row_bytes);
    if (p->pf)
        for (int k = 0; k < 4; k++) qi_prefetch_grid(w, r + k, (int)(pf / w->row_bytes));
    return nr;
}
/* The same for a kernel that reads the block's scales as stored (qk_rows4_codes: p->scale unset). */
static inline int qi_rows4_begin_codes(const pdq_qmatrix *w, int r, int r1, int rend, size_t pf, qk_rows4 *p) {
    int nr = qk_rows4_codes(w, r, r1, pf, p);
    p->pf = qk_prefetch_in_task(r, rend, pf, w->row_bytes);
    if (p->pf)
        for (int k = 0; k < 4; k++) qi_prefetch_grid(w, r + k, (int)(pf / w->row_bytes));
    return nr;
}

/* Rows [r0, r1) of y for one prepared row (GEMV); rend >= r1: how far its prefetch may reach. */
typedef void (*qi_gemv_fn)(const pdq_qmatrix *w, const qi_plan *p, const uint8_t *xt, int r0, int r1, int rend,
                           float *y);

/* The reference of the rule; the GEMM on the scalar path is this GEMV row by row. */
void qi_gemv_scalar(const pdq_qmatrix *w, const qi_plan *p, const uint8_t *xt, int r0, int r1, int rend, float *y);

/* A GEMM panel: QI_PANEL weight rows r..r+nr-1 (missing rows zero), int32 words per column pair j
 * and row l at panel[j * QI_PANEL + l] = (code(r+l, 2j) - zero) | (code(r+l, 2j+1) - zero) << 16
 * (int16 halves, the layout of a 16-bit dot product against the pair xq[2j], xq[2j+1]), then the
 * scales transposed, float [ngroups][QI_PANEL], and the zero points the same way as int16 pairs
 * zt[g][l] = zero * 0x10001. qi_panel_words(p) int32 words for the codes. */
static inline size_t qi_panel_words(const qi_plan *p) { return (size_t)p->ncolp / 2 * QI_PANEL; }
/* That panel from column pair j0 on, portably (the scales and zero table in full; the SIMD
 * decoders fill the pairs before j0). */
void qi_panel_decode_tail(const pdq_qmatrix *w, const qi_plan *p, int r, int nr, int32_t *panel, float *pscale,
                          int32_t *zt, int j0);

typedef void (*qi_prepare_fn)(const pdq_qmatrix *w, const qi_plan *p, const float *x, uint8_t *out, int planes);
typedef void (*qi_panel_fn)(const pdq_qmatrix *w, const qi_plan *p, int r, int nr, int32_t *panel, float *pscale,
                            int32_t *zt);
typedef void (*qi_tile_fn)(const pdq_qmatrix *w, const qi_plan *p, const uint8_t *const *xr, int ni,
                           const int32_t *const *panels, const float *const *pscales, int np, int nrows, float *y,
                           size_t ystride);
typedef void (*qi_exact_fn)(const pdq_qmatrix *w, const qi_plan *p, const uint8_t *xt, int r0, int r1, int rend,
                            int64_t *s);
typedef void (*qi_exact_groups_fn)(const pdq_qmatrix *w, const qi_plan *p, const uint8_t *xt, int G, int r0, int r1,
                                   int rend, int64_t *s);

/* The integer path's kernels at one level, by weight type where they differ (NULL: the level's
 * fallback's; after qi_kernels_at, NULL: none at any level below, and the caller's reference loop
 * runs). A level with a tile has a panel decoder for each type (the GEMM: n > 1). */
struct qi_traits {
    qi_prepare_fn prepare_x;          /* SCALAR: qi_prepare_x */
    qi_gemv_fn gemv[PDQ_QT_COUNT];    /* SCALAR: qi_gemv_scalar */
    qi_panel_fn panel_decode[PDQ_QT_COUNT];
    qi_tile_fn tile;
    qi_exact_fn exact[PDQ_QT_COUNT];  /* pdq_qexact_rows */
    qi_exact_groups_fn exact_groups;  /* pdq_qexact_groups, uint4, G a multiple of 32 */
};

#if defined(__x86_64__) || defined(__i386__)
void qi_gemv_avx512(const pdq_qmatrix *w, const qi_plan *p, const uint8_t *xt, int r0, int r1, int rend, float *y);
void qi_gemv_avx2(const pdq_qmatrix *w, const qi_plan *p, const uint8_t *xt, int r0, int r1, int rend, float *y);
void qi_gemv_avx2_vnni(const pdq_qmatrix *w, const qi_plan *p, const uint8_t *xt, int r0, int r1, int rend, float *y);
/* The exact sums of pdq_qexact_rows of uint4 matrices: AVX-512 VNNI, AVX2 with or without
 * AVX-VNNI. At one thread the integer executor's decode is bound by these dot products (int16
 * activations take two byte products per code), not by memory. */
void qi_exact_avx512(const pdq_qmatrix *w, const qi_plan *p, const uint8_t *xt, int r0, int r1, int rend, int64_t *s);
/* The same per group of G columns (G a multiple of 32), uint4: pdq_qexact_groups. */
void qi_exact_groups_avx512(const pdq_qmatrix *w, const qi_plan *p, const uint8_t *xt, int G, int r0, int r1, int rend,
                            int64_t *s);
void qi_exact_avx2(const pdq_qmatrix *w, const qi_plan *p, const uint8_t *xt, int r0, int r1, int rend, int64_t *s);
void qi_exact_groups_avx2(const pdq_qmatrix *w, const qi_plan *p, const uint8_t *xt, int G, int r0, int r1, int rend,
                          int64_t *s);
void qi_exact_groups_avx2_vnni(const pdq_qmatrix *w, const qi_plan *p, const uint8_t *xt, int G, int r0, int r1,
                               int rend, int64_t *s);
void qi_exact_avx2_vnni(const pdq_qmatrix *w, const qi_plan *p, const uint8_t *xt, int r0, int r1, int rend,
                        int64_t *s);
void qi_exact_u8_avx2(const pdq_qmatrix *w, const qi_plan *p, const uint8_t *xt, int r0, int r1, int rend,
                      int64_t *s);
/* uint8 weights: the GEMV (AVX2; at the AVX-512 VNNI level, the shapes qi_gemv_u8_avx512 leaves). */
void qi_gemv_u8_avx2(const pdq_qmatrix *w, const qi_plan *p, const uint8_t *xt, int r0, int r1, int rend, float *y);
/* The same at the AVX-512 VNNI level on the uint8 byte planes (groups of 32 and blocks of 128 over
 * columns a multiple of 128; the rest on the AVX2 one). */
void qi_gemv_u8_avx512(const pdq_qmatrix *w, const qi_plan *p, const uint8_t *xt, int r0, int r1, int rend, float *y);
/* The GEMM's panel decoder for both types (AVX2; uint4 on AVX-512 takes qi_panel_decode_avx512). */
void qi_panel_decode_avx2(const pdq_qmatrix *w, const qi_plan *p, int r, int nr, int32_t *panel, float *pscale,
                          int32_t *zt);
/* ni prepared rows xr[] (ni <= QI_TILE_X) against np panels (np <= QI_TILE_P) of rows r..: y[i *
 * ystride + k] for the first nrows rows. */
#define QI_TILE_X 4
#define QI_TILE_P 4
void qi_prepare_x_avx512(const pdq_qmatrix *w, const qi_plan *p, const float *x, uint8_t *out, int planes);
void qi_prepare_x_avx2(const pdq_qmatrix *w, const qi_plan *p, const float *x, uint8_t *out, int planes);
void qi_panel_decode_avx512(const pdq_qmatrix *w, const qi_plan *p, int r, int nr, int32_t *panel, float *pscale,
                            int32_t *zt);
void qi_tile_avx512(const pdq_qmatrix *w, const qi_plan *p, const uint8_t *const *xr, int ni,
                    const int32_t *const *panels, const float *const *pscales, int np, int nrows, float *y,
                    size_t ystride);
void qi_tile_avx2(const pdq_qmatrix *w, const qi_plan *p, const uint8_t *const *xr, int ni,
                  const int32_t *const *panels, const float *const *pscales, int np, int nrows, float *y,
                  size_t ystride);
void qi_tile_avx2_vnni(const pdq_qmatrix *w, const qi_plan *p, const uint8_t *const *xr, int ni,
                       const int32_t *const *panels, const float *const *pscales, int np, int nrows, float *y,
                       size_t ystride);
#endif

#endif
