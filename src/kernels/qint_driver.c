/* The integer path's driver: rounds x once per call (qi_prepare_x), then runs the GEMV (n == 1)
 * or the panel GEMM over chunks of output rows on the pool. Every output element is computed by
 * one task with the exact block sums and the fixed epilogue of qmatmul.h, so neither the thread
 * count, the chunking nor GEMV vs GEMM changes a bit. */
#include <stdlib.h>

#include "kernels/qint_internal.h"
#include "kernels/qkernel_internal.h"

pdq_level qi_level(const pdq_qctx *ctx) {
#if defined(__x86_64__) || defined(__i386__)
    unsigned have = 1u << PDQ_LEVEL_AVX2 | 1u << PDQ_LEVEL_AVX2_VNNI | 1u << PDQ_LEVEL_AVX512_VNNI;
#else
    unsigned have = 0;
#endif
    return pdq_level_pick(pdq_qctx_level(ctx), have);
}

#define GEMM_CHUNK (QI_PANEL * QI_TILE_P) /* weight rows per GEMM task: the panels of one tile */

typedef struct {
    const pdq_qmatrix *w;
    const qi_plan *p;
    const uint8_t *xt;     /* [n] prepared rows of p->stride bytes */
    float *y;              /* [n, rows] */
    int32_t *panels;       /* [threads] GEMM scratch: QI_TILE_P panels and their scales */
    size_t scratch_words;  /* int32 words of one thread's scratch */
    pdq_level level;
    int n, chunk; /* chunk: output rows per GEMV task */
    qi_gemv_fn gemv;
} qi_run;

static void gemv_task(void *arg, int task, int thread) {
    (void)thread;
    const qi_run *c = arg;
    int r0 = task * c->chunk, r1 = r0 + c->chunk < c->w->rows ? r0 + c->chunk : c->w->rows;
    for (int i = 0; i < c->n; i++) c->gemv(c->w, c->p, c->xt + (size_t)i * c->p->stride, r0, r1, c->y + (size_t)i * c->w->rows);
}

#if defined(__x86_64__) || defined(__i386__)
/* The task's weight rows are decoded once into panels (codes minus zero as int16, scales
 * transposed), then every row of x passes over them in register tiles. */
static void gemm_task(void *arg, int task, int thread) {
    const qi_run *c = arg;
    const pdq_qmatrix *w = c->w;
    int r0 = task * GEMM_CHUNK, nrows = w->rows - r0 < GEMM_CHUNK ? w->rows - r0 : GEMM_CHUNK;
    int np = (nrows + QI_PANEL - 1) / QI_PANEL;
    size_t pw = qi_panel_words(c->p), sw = (size_t)w->ngroups * QI_PANEL * 2;
    int32_t *base = c->panels + (size_t)thread * c->scratch_words;
    const int32_t *panels[QI_TILE_P];
    const float *pscales[QI_TILE_P];
    for (int k = 0; k < np; k++) {
        int32_t *pk = base + (size_t)k * (pw + sw);
        int left = nrows - k * QI_PANEL;
        int nr = left < QI_PANEL ? left : QI_PANEL;
        int32_t *zt = pk + pw + sw / 2;
        if (c->level == PDQ_LEVEL_AVX512_VNNI && w->type == PDQ_QT_U4)
            qi_panel_decode_avx512(w, c->p, r0 + k * QI_PANEL, nr, pk, (float *)(pk + pw), zt);
        else qi_panel_decode_avx2(w, c->p, r0 + k * QI_PANEL, nr, pk, (float *)(pk + pw), zt);
        panels[k] = pk;
        pscales[k] = (const float *)(pk + pw);
    }
    qi_tile_fn tile = c->level == PDQ_LEVEL_AVX512_VNNI ? qi_tile_avx512 : c->level == PDQ_LEVEL_AVX2_VNNI ? qi_tile_avx2_vnni : qi_tile_avx2;
    for (int i = 0; i < c->n; i += QI_TILE_X) {
        int ni = c->n - i < QI_TILE_X ? c->n - i : QI_TILE_X;
        const uint8_t *xr[QI_TILE_X];
        for (int k = 0; k < ni; k++) xr[k] = c->xt + (size_t)(i + k) * c->p->stride;
        tile(w, c->p, xr, ni, panels, pscales, np, nrows, c->y + (size_t)i * w->rows + r0, (size_t)w->rows);
    }
}
#endif

static void *alloc64(size_t bytes) {
    bytes = (bytes + 63) / 64 * 64;
    return aligned_alloc(64, bytes ? bytes : 64);
}

pdq_code qi_matmul(const pdq_qctx *ctx, const pdq_qmatrix *w, const qi_plan *p, const float *x, int n, float *y,
                   pdq_status *st) {
    pdq_pool *pool = ctx ? ctx->pool : NULL;
    qi_run c = {.w = w, .p = p, .y = y, .n = n, .level = qi_level(ctx)};
    int gemm = n > 1 && c.level != PDQ_LEVEL_SCALAR;
    uint8_t *xt = alloc64((size_t)n * p->stride);
    if (!xt) return pdq_fail(st, PDQ_ERR_NOMEM, "packed matmul: %d prepared rows of %zu bytes", n, p->stride);
    for (int i = 0; i < n; i++) {
        const float *xi = x + (size_t)i * w->cols;
        uint8_t *o = xt + (size_t)i * p->stride;
        int planes = !gemm && c.level != PDQ_LEVEL_SCALAR && w->type == PDQ_QT_U4;
#if defined(__x86_64__) || defined(__i386__)
        if (c.level == PDQ_LEVEL_AVX512_VNNI) { qi_prepare_x_avx512(w, p, xi, o, planes); continue; }
        if (c.level != PDQ_LEVEL_SCALAR) { qi_prepare_x_avx2(w, p, xi, o, planes); continue; }
#endif
        qi_prepare_x(w, p, xi, o, planes);
    }
    c.xt = xt;
    pdq_code rc = PDQ_OK;
    if (!gemm) {
#if defined(__x86_64__) || defined(__i386__)
        c.gemv = c.level == PDQ_LEVEL_SCALAR ? qi_gemv_scalar
                 : w->type == PDQ_QT_U8 ? (c.level == PDQ_LEVEL_AVX512_VNNI ? qi_gemv_u8_avx512 : qi_gemv_u8_avx2)
                 : c.level == PDQ_LEVEL_AVX512_VNNI ? qi_gemv_avx512 : c.level == PDQ_LEVEL_AVX2_VNNI ? qi_gemv_avx2_vnni
                 : qi_gemv_avx2;
#else
        c.gemv = qi_gemv_scalar;
#endif
        c.chunk = qk_gemv_rows_per_task(w->rows, pdq_pool_threads(pool));
        pdq_pool_run(pool, (w->rows + c.chunk - 1) / c.chunk, gemv_task, &c);
    } else {
#if defined(__x86_64__) || defined(__i386__)
        int threads = pdq_pool_threads(pool);
        c.scratch_words = (qi_panel_words(p) + (size_t)w->ngroups * QI_PANEL * 2) * QI_TILE_P;
        c.scratch_words = (c.scratch_words + 15) / 16 * 16;
        c.panels = alloc64((size_t)threads * c.scratch_words * sizeof(int32_t));
        if (!c.panels) rc = pdq_fail(st, PDQ_ERR_NOMEM, "packed matmul: panel scratch for %d threads", threads);
        else pdq_pool_run(pool, (w->rows + GEMM_CHUNK - 1) / GEMM_CHUNK, gemm_task, &c);
        free(c.panels);
#endif
    }
    free(xt);
    return rc;
}
