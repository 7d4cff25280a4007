/* Packed-weight matrices and their f32-activation kernels: y[n, out] = x[n, in] · Wᵀ with
 * W = scale * (code - zero), pdq's quantizer semantics (include/pdq/quant.h), computed from the
 * packed codes without an f32 copy of W.
 *
 * Layout (what pdq's quantized checkpoint stores): codes row-major [rows, row_bytes], uint4 two
 * per byte low nibble first (row_bytes = ceil(cols/2)) or uint8 (row_bytes = cols). In memory
 * the codes may instead be in the 4-row layout (PDQ_QL_ROWS4, pdq_qmatrix_pack_rows4): rows in
 * blocks of four, each block's rows cut into 64-byte chunks stored chunk by chunk (chunk j of
 * rows 4b..4b+3, then chunk j + 1), so a GEMV walking four rows reads one contiguous stream;
 * scales
 * (float32, or compact f16 / bf16: pdq/qscale.h) and uint8 zero points [rows, ngroups], one grid
 * per `group` consecutive input columns (group == cols: per-channel); a symmetric grid may keep
 * one row of zero points for every row (zero_stride 0), so w4 g32 sym takes 4.5 bits a weight.
 * A compact scale is widened to float32 (exact) where it is read: the AVX-512 GEMV of groups of
 * 32 converts four groups of four rows in registers (one 32-byte load when the scales are in
 * 4-row blocks), the other SIMD kernels convert a 4-row block's scales with F16C / AVX-512 into
 * a small buffer, the scalar ones one at a time;
 * the values, hence the results, are those of float32 scales holding the same numbers. An optional column permutation (GPTQ act-order with groups) makes
 * column c of the stored codes multiply x[perm[c]].
 *
 * Summation order (the contract every code path keeps, so AVX-512, AVX2 and scalar agree bit for
 * bit): per output element and group, 16 float lanes d[j] accumulate fmaf(x, (float)code, d[j])
 * over blocks of 16 bytes (uint4: 32 columns, lane j takes column 2j then 2j+1 of the block, i.e.
 * the low then the high nibble of byte j; uint8: 16 columns, lane j takes column j; a short last
 * block reads zeros), then acc[j] = fmaf(scale, d[j], acc[j]); the zero points enter once per row
 * as zt = fmaf(scale * zero, sum of the group's x, zt) in group order (group sums are taken once
 * per row of x, which saves a per-weight subtraction); the result is, with t[l] = acc[l] +
 * acc[l+8], ((t0+t1)+(t2+t3))+((t4+t5)+(t6+t7)) - zt. Every output element is computed by one
 * task in this order, so results do not depend on the thread count, the row blocking, or whether
 * the row came through GEMV (n = 1) or GEMM (n > 1).
 *
 * The integer path (uint4 and uint8 weights whose grid fits the block rule below, one rule for
 * both; everything else takes the f32 path above). Each prepared row of x (after the column permutation) is split into
 * blocks of B columns: B = 128, or B = group for groups of 32 and 64; a larger group must be a
 * multiple of 128, and per-channel rows (group == cols) end in a partial block. Other groups take
 * the f32 path. Per block: m = max|x|, xs = m / 32767 (float division), xq = x / xs rounded half
 * to even and clamped to [-32767, 32767]; m == 0 (or an xs that underflows to 0) gives xs = 0 and
 * xq = 0; a non-finite x in the block makes xs NaN, so every output it feeds is NaN. Per output
 * row r and block b the integer S = sum (code - zero) * xq is exact in int32 (|S| <= 15 * 32767 *
 * 128 < 2^26 for uint4, <= 255 * 32767 * 128 < 2^30 for uint8: B = 128 keeps uint8 in int32,
 * B = 256 would sit 0.4 % below 2^31). The float epilogue has one order for every path: per group, t = 0, then for each
 * of its blocks in order t = fmaf(xs_b, (float)S_rb, t); then y_r = fmaf(scale_rg, t, y_r) over
 * the groups in order, y_r starting at 0. SIMD kernels reduce their lanes to S in integers before
 * converting, so the scalar, AVX2 (with or without VNNI) and AVX-512 VNNI kernels, the GEMV and
 * the GEMM, and any thread count give the same bits. (uint8 GEMVs run one AVX2 kernel at every
 * SIMD level, except groups of 32 over whole 128-column steps, which have an AVX-512 one; its
 * GEMM uses each level's tile on the same int16 panels as uint4.) The error against the exact product is that
 * of rounding x to 16 bits per block: |y - y_exact| <= sum over blocks of xs_b / 2 * sum |w|
 * (plus float rounding of the epilogue). */
#ifndef PDQ_KERNELS_QMATMUL_H
#define PDQ_KERNELS_QMATMUL_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/cpu_features.h"
#include "pdq/qscale.h"
#include "pdq/status.h"
#include "pdq/threadpool.h"
#include "util/scratch.h"

typedef enum { PDQ_QT_U4 = 0, PDQ_QT_U8 = 1, PDQ_QT_COUNT } pdq_qtype;

typedef enum {
    PDQ_QL_ROWS = 0, /* row-major: row r at codes + r * row_bytes */
    PDQ_QL_ROWS4 = 1 /* 4-row blocks of interleaved 64-byte chunks (see the top of this file) */
} pdq_qlayout;

typedef struct pdq_qmatrix {
    pdq_qtype type;
    int rows, cols;           /* W is [rows = out, cols = in] */
    int group;                /* columns per grid; == cols for per-channel */
    int ngroups;              /* ceil(cols / group) */
    size_t row_bytes;         /* bytes of codes per row */
    pdq_qlayout layout;
    /* Where byte j of row r lies, for either layout (pdq_qmatrix_row, pdq_qmatrix_at):
     * codes + (r / 4) * 4 * row_bytes + (r % 4) * row_step + (j / 64) * chunk_step + j % 64;
     * ROWS: row_step = row_bytes, chunk_step = 64; ROWS4: 64 and 256. */
    size_t row_step, chunk_step;
    const uint8_t *codes;     /* in `layout`; any alignment */
    const float *scales;      /* [rows * ngroups], float-aligned, when scale_type is F32; else NULL */
    const uint16_t *scales16; /* [rows * ngroups] f16 or bf16 (scale_type), 2-byte aligned; else NULL */
    pdq_qscale_type scale_type;
    /* 1: scales16 in 4-row blocks as the 4-row codes (pdq_qmatrix_pack_rows4, rows a multiple of
     * 4): scale (r, g) at (r / 4) * 4 * ngroups + 4 g + r % 4, so a kernel converts four groups of
     * four rows with one 32-byte load. Read scales through pdq_qmatrix_scale_index. */
    int scales_rows4;
    const uint8_t *zeros;     /* row r's zero points at zeros + r * zero_stride */
    size_t zero_stride;       /* ngroups, or 0: one row of zero points shared by every row */
    const int32_t *perm;      /* NULL, or [cols]: stored column c multiplies x[perm[c]] */
    void *owned;              /* freed with the matrix (one block holding what it owns) */
    void *owned_codes;        /* the codes when the matrix holds its own copy (freed with it) */
} pdq_qmatrix;

/* Row r's codes: byte j of the row lies at pdq_qmatrix_at(w, row, j). */
static inline const uint8_t *pdq_qmatrix_row(const pdq_qmatrix *w, int r) {
    return w->codes + (size_t)(r >> 2) * 4 * w->row_bytes + (size_t)(r & 3) * w->row_step;
}
static inline const uint8_t *pdq_qmatrix_at(const pdq_qmatrix *w, const uint8_t *row, size_t j) {
    return row + (j >> 6) * w->chunk_step + (j & 63);
}

/* Where scale (r, g) lies in scales / scales16. */
static inline size_t pdq_qmatrix_scale_index(const pdq_qmatrix *w, int r, int g) {
    return w->scales_rows4 ? (size_t)(r >> 2) * 4 * (size_t)w->ngroups + 4 * (size_t)g + (size_t)(r & 3)
                           : (size_t)r * (size_t)w->ngroups + (size_t)g;
}

/* Describes a matrix over caller memory (nothing copied; the caller keeps it alive). Checks
 * type, shape, group and that every zero point fits the type; errors name `name`. */
pdq_code pdq_qmatrix_init(pdq_qmatrix *w, pdq_qtype type, int rows, int cols, int group, const uint8_t *codes,
                          const float *scales, const uint8_t *zeros, const int32_t *perm, const char *name,
                          pdq_status *st);
/* Most groups a matrix with compact scales may have (the 4-row kernels widen a block's scales
 * on the stack); a caller with more widens them to float32 first. */
#define PDQ_QMATRIX_MAX_COMPACT_GROUPS 512
/* The same with scales of any type (F32: float-aligned; F16 / BF16: 2-byte aligned, at most
 * PDQ_QMATRIX_MAX_COMPACT_GROUPS groups) and zero points [rows * zero_stride] (zero_stride
 * ngroups, or 0 for one shared row of ngroups). */
pdq_code pdq_qmatrix_init_grids(pdq_qmatrix *w, pdq_qtype type, int rows, int cols, int group, const uint8_t *codes,
                                const void *scales, pdq_qscale_type scale_type, const uint8_t *zeros,
                                size_t zero_stride, const int32_t *perm, const char *name, pdq_status *st);
void pdq_qmatrix_free(pdq_qmatrix *w);
/* 1 when W can take the 4-row layout: rows of whole 64-byte chunks, groups of whole 16-byte
 * runs (the kernels read at most 16 bytes at a time inside a group, 64 at a 64-byte offset, so
 * no read crosses a chunk). */
int pdq_qmatrix_rows4_ok(const pdq_qmatrix *w);
/* Bytes of codes the 4-row layout takes: rows rounded up to a whole block (padding zero). */
size_t pdq_qmatrix_rows4_bytes(const pdq_qmatrix *w);
/* Copies W's codes into the 4-row layout, owned by W, where pdq_qmatrix_rows4_ok (else nothing
 * happens): decode reads four rows as one stream, which the hardware prefetchers follow (at 2
 * threads on TinyLlama shapes from DRAM, a third faster than four row-major streams). Results
 * are bit for bit those of the row-major codes. The old codes are no longer read (a previous
 * owned copy is freed). Compact scales in groups of 32 of a matrix whose columns are a multiple
 * of 128 and rows a multiple of 4 take the 4-row layout too (scales_rows4): in place when W owns
 * them at the start of `owned` (the packed loader's block), else as a copy after the codes. On
 * error W is unchanged. */
pdq_code pdq_qmatrix_pack_rows4(pdq_qmatrix *w, pdq_status *st);
/* Bytes of codes, scales, zeros (and perm) a GEMV over W reads, as stored. */
size_t pdq_qmatrix_bytes(const pdq_qmatrix *w);
/* Dequantizes row r into out[cols] (in input order): scale * ((float)code - (float)zero),
 * the expression the dequantizing loader uses, so an embedding row matches it exactly. */
void pdq_qmatrix_dequant_row(const pdq_qmatrix *w, int r, float *out);

/* How kernels run: a pool (NULL: on the caller) and switches to narrower paths (the paths give
 * identical results; the switches exist so tests can run each). */
typedef struct {
    pdq_pool *pool;
    int force_scalar;         /* 1: the scalar path even where SIMD is available */
    int no_avx512;            /* 1: AVX2 even where AVX-512 is available */
    int no_vnni;              /* 1: the integer path without VNNI dot products (AVX2 vpmaddubsw) */
    int no_int;               /* 1: the f32 path even where the integer path applies (A/B only:
                                 the two paths differ in the last bits) */
    pdq_scratch *work;        /* the prepared rows and GEMM panels, kept across calls (grown as
                                 needed; one call at a time); NULL: allocated per call */
} pdq_qctx;
/* The level ctx allows on this CPU (pdq_level_allowed of its switches; NULL: the CPU's). */
pdq_level pdq_qctx_level(const pdq_qctx *ctx);

/* Exact integer sums for the integer executor (int16 activations, the a16 graphs' decode):
 * s[r - r0] = sum over columns c of code(r, c) * xq[c] for rows [r0, r1) of a per-channel uint4
 * or uint8 matrix, raw codes (zero points and scales are the caller's), exact in int64 for any int16 xq
 * (each 128-column step is exact in int32; uint4 steps add in int32 lanes flushed to int64 every
 * 32, uint8 steps go to int64 each).
 * The same kernels and 4-row layout as the weight-only GEMV; every path gives the same integers.
 * pdq_qexact_ok: W is one (per channel, no permutation). Per row of x, once:
 * pdq_qexact_prepare into pdq_qexact_bytes(w) bytes, 64-byte aligned; then any row ranges from
 * any thread, rend >= r1 being the end of the caller's rows (the kernel prefetches up to it,
 * not past: past it lie another task's). */
int pdq_qexact_ok(const pdq_qmatrix *w);
size_t pdq_qexact_bytes(const pdq_qmatrix *w);
void pdq_qexact_prepare(const pdq_qmatrix *w, const int16_t *xq, uint8_t *buf);
void pdq_qexact_rows(const pdq_qctx *ctx, const pdq_qmatrix *w, const uint8_t *buf, int r0, int r1, int rend,
                     int64_t *s);
/* The same per group of G columns (the last one may be shorter), for grouped weights held as a
 * per-channel matrix of raw codes: s[(r - r0) * ng + g] over columns [g G, (g + 1) G), ng =
 * ceil(cols / G). pdq_qexact_groups_fast: this context and CPU have a SIMD kernel for it (uint4, G
 * a multiple of 32, AVX2 or AVX-512 VNNI); otherwise pdq_qexact_groups runs the scalar reference. */
int pdq_qexact_groups_fast(const pdq_qctx *ctx, pdq_qtype type, int G);
void pdq_qexact_groups(const pdq_qctx *ctx, const pdq_qmatrix *w, const uint8_t *buf, int G, int r0, int r1, int rend,
                       int64_t *s);

/* n compact (f16 / bf16) scales widened to float32, exactly: F16C or AVX-512 where the CPU has
 * them, else one at a time (the same values). */
void pdq_qscale_widen(const uint16_t *h, pdq_qscale_type t, size_t n, float *out);

/* The path pdq_qmatmul takes with this context for a per-channel uint4 or uint8 matrix: "avx512-vnni",
 * "avx2-vnni", "avx2-int", "scalar-int" (integer path) or, with no_int, "avx512", "avx2",
 * "scalar" (f32 path). */
const char *pdq_qmatmul_path(const pdq_qctx *ctx);

/* y[n, rows] = x[n, cols] · Wᵀ (x, y row-major, not aliased). n == 1 is the GEMV (decode),
 * n > 1 the GEMM that decodes each weight block once for many rows of x. Scratch comes from
 * ctx->work (else it is allocated per call); only PDQ_ERR_NOMEM can fail. */
pdq_code pdq_qmatmul(const pdq_qctx *ctx, const pdq_qmatrix *w, const float *x, int n, float *y, pdq_status *st);
/* ys[i] = x · ws[i]ᵀ for nw <= PDQ_QMATMUL_MANY matrices of one input (a layer's q, k and v, or
 * gate and up): the same bytes as nw calls of pdq_qmatmul, x rounded once on the integer path
 * for matrices that read it alike (at 2 threads decode, rounding is a serial 2 % of a token). */
#define PDQ_QMATMUL_MANY 4
pdq_code pdq_qmatmul_many(const pdq_qctx *ctx, int nw, const pdq_qmatrix *const *ws, const float *x, int n,
                          float *const *ys, pdq_status *st);

#endif
