/* Four consecutive rows of a packed matrix, as the 4-row GEMVs walk them. Rows past the end
 * (k >= nr) repeat the last one: the kernels compute them and do not store them. */
#ifndef PDQ_KERNELS_ROWS4_H
#define PDQ_KERNELS_ROWS4_H

#include "kernels/qmatmul.h"

/* Rows r..r+nrows-1's compact (f16 / bf16) scales (contiguous: [rows, ngroups]) widened to
 * float32 into out[nrows * ngroups]: F16C or AVX-512 conversions where the CPU has them, else
 * the portable one (the same values: widening is exact). */
void qk_widen_scales(const pdq_qmatrix *w, int r, int nrows, float *out);
/* The same at a given level (cpu_features.h; SCALAR portable, AVX2 F16C, AVX512 AVX-512F, any
 * other its fallback's; at most qk_widen_level(), the CPU's), for tests that run each. */
void qk_widen_scales_at(const pdq_qmatrix *w, int r, int nrows, float *out, pdq_level level);
int qk_widen_level(void); /* a pdq_level */

typedef struct {
    const uint8_t *row[4], *zero[4];
    const float *scale[4];      /* the matrix's float32 scales, or sbuf's widened ones */
    float sbuf[4 * PDQ_QMATRIX_MAX_COMPACT_GROUPS];
    size_t step; /* bytes from one 64-byte chunk of a row to its next (pdq_qmatrix chunk_step) */
    size_t pf; /* bytes ahead to prefetch codes from these rows: 0 when that would leave the task */
} qk_rows4;

/* The prefetch distance of a 4-row block at r in a task ending at r1, for a kernel that
 * prefetches pf bytes (whole rows of row_bytes) ahead: pf, or 0 (the lines being read, a no-op)
 * once that would reach past r1. Past r1 lie rows another thread reads, and fetching them into
 * this core's cache too sends them over the memory bus twice (at 2 threads on TinyLlama shapes
 * that cost a sixth of decode speed). */
static inline size_t qk_prefetch_in_task(int r, int r1, size_t pf, size_t row_bytes) {
    return (size_t)r + 4 + pf / row_bytes <= (size_t)r1 ? pf : 0;
}

/* The block of rows r.. of a GEMV task over [.., r1) whose kernel prefetches pf bytes ahead,
 * its codes and zero points only (a kernel that reads the scales itself); returns how many rows
 * it has. */
static inline int qk_rows4_codes(const pdq_qmatrix *w, int r, int r1, size_t pf, qk_rows4 *p) {
    int nr = r1 - r < 4 ? r1 - r : 4;
    p->step = w->chunk_step;
    p->pf = qk_prefetch_in_task(r, r1, pf, w->row_bytes);
    for (int k = 0; k < 4; k++) {
        int rk = r + (k < nr ? k : nr - 1);
        p->row[k] = pdq_qmatrix_row(w, rk);
        p->zero[k] = w->zeros + (size_t)rk * w->zero_stride;
    }
    return nr;
}

/* The same with its scales as float32 (compact ones widened into sbuf). */
static inline int qk_rows4_init(const pdq_qmatrix *w, int r, int r1, size_t pf, qk_rows4 *p) {
    int nr = qk_rows4_codes(w, r, r1, pf, p);
    if (w->scales16) qk_widen_scales(w, r, nr, p->sbuf); /* the block's rows in one run */
    for (int k = 0; k < 4; k++) {
        int rk = r + (k < nr ? k : nr - 1);
        p->scale[k] = w->scales16 ? p->sbuf + (size_t)(rk - r) * w->ngroups : w->scales + (size_t)rk * w->ngroups;
    }
    return nr;
}

/* Byte j of row k of the block (the reads at it stay inside its 64-byte chunk). */
static inline const uint8_t *qk_rows4_at(const qk_rows4 *p, int k, size_t j) {
    return p->row[k] + (j >> 6) * p->step + (j & 63);
}

/* Output rows per GEMV task of the float-activation GEMVs and the integer executor's FCs: two
 * contiguous shares per thread (the second evens out a thread that started late), a multiple of
 * the 4-row block. Decode streams weights from DRAM: long runs keep each core's prefetch on its
 * own rows (chunks of 32 rows claimed in turn made the two threads fetch each other's rows). One
 * task when there is one thread. The integer path's GEMV splits finer at the end, with a
 * prefetch bound apart from the claim (row_shares.h). */
static inline int qk_gemv_rows_per_task(int rows, int threads) {
    int t = threads > 1 ? 2 * threads : 1;
    return ((rows + t - 1) / t + 3) / 4 * 4;
}

#endif
