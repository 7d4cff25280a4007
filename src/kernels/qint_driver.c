/* The integer path's driver: rounds x once per call, or once for a run of matrices that read it
 * alike (qi_prepare_x), then runs the GEMV (n == 1) over each thread's share of output rows
 * (row_shares.h) or the panel GEMM over chunks of them on the pool. Every output element is
 * computed by one task with the exact block sums and the fixed epilogue of qmatmul.h, so neither
 * the thread count, the split nor GEMV vs GEMM changes a bit. */
#include <stdlib.h>
#include <string.h>

#include "kernels/qint_internal.h"
#include "kernels/qkernel_internal.h"
#include "kernels/row_shares.h"

/* The table: each level's own kernels; the rest come from its fallbacks (cpu_features.h). */
static const qi_traits k_qi[PDQ_LEVEL_COUNT] = {
    [PDQ_LEVEL_SCALAR] = {.prepare_x = qi_prepare_x, .gemv = {qi_gemv_scalar, qi_gemv_scalar}},
#if defined(__x86_64__) || defined(__i386__)
    [PDQ_LEVEL_AVX2] = {.prepare_x = qi_prepare_x_avx2,
                        .gemv = {[PDQ_QT_U4] = qi_gemv_avx2, [PDQ_QT_U8] = qi_gemv_u8_avx2},
                        .panel_decode = {qi_panel_decode_avx2, qi_panel_decode_avx2},
                        .tile = qi_tile_avx2,
                        .exact = {[PDQ_QT_U4] = qi_exact_avx2, [PDQ_QT_U8] = qi_exact_u8_avx2},
                        .exact_groups = qi_exact_groups_avx2},
    [PDQ_LEVEL_AVX2_VNNI] = {.gemv = {[PDQ_QT_U4] = qi_gemv_avx2_vnni},
                             .tile = qi_tile_avx2_vnni,
                             .exact = {[PDQ_QT_U4] = qi_exact_avx2_vnni},
                             .exact_groups = qi_exact_groups_avx2_vnni},
    /* AVX512: AVX2's */
    [PDQ_LEVEL_AVX512_VNNI] = {.prepare_x = qi_prepare_x_avx512,
                               .gemv = {[PDQ_QT_U4] = qi_gemv_avx512, [PDQ_QT_U8] = qi_gemv_u8_avx512},
                               .panel_decode = {[PDQ_QT_U4] = qi_panel_decode_avx512},
                               .tile = qi_tile_avx512,
                               .exact = {[PDQ_QT_U4] = qi_exact_avx512},
                               .exact_groups = qi_exact_groups_avx512},
#endif
};

/* The levels with a row above (asked per call: a constant, not a walk over the table). */
#if defined(__x86_64__) || defined(__i386__)
#define QI_HAVE (1u << PDQ_LEVEL_SCALAR | 1u << PDQ_LEVEL_AVX2 | 1u << PDQ_LEVEL_AVX2_VNNI | 1u << PDQ_LEVEL_AVX512_VNNI)
#else
#define QI_HAVE (1u << PDQ_LEVEL_SCALAR)
#endif

/* Each entry once: X(member) for the single ones, XT(member) for those by weight type. */
#define QI_ENTRIES(X, XT) X(prepare_x) XT(gemv) XT(panel_decode) X(tile) XT(exact) X(exact_groups)

pdq_level qi_level(const pdq_qctx *ctx) { return pdq_level_pick(pdq_qctx_level(ctx), QI_HAVE); }

pdq_level qi_kernels_at(const pdq_qctx *ctx, qi_traits *k) {
    pdq_level level = qi_level(ctx);
    *k = k_qi[level];
    for (pdq_level l = level; l != PDQ_LEVEL_SCALAR;) {
        l = pdq_level_fallback(l);
#define X(m) if (!k->m) k->m = k_qi[l].m;
#define XT(m) for (int t = 0; t < PDQ_QT_COUNT; t++) if (!k->m[t]) k->m[t] = k_qi[l].m[t];
        QI_ENTRIES(X, XT)
#undef X
#undef XT
    }
    return level;
}

#define GEMM_CHUNK (QI_PANEL * QI_TILE_P) /* weight rows per GEMM task: the panels of one tile */

typedef struct {
    const pdq_qmatrix *w;
    const qi_plan *p;
    const float *x;        /* [n, cols] */
    uint8_t *xt;           /* [n] prepared rows of p->stride bytes */
    float *y;              /* [n, rows] */
    int32_t *panels;       /* [threads] GEMM scratch: QI_TILE_P panels and their scales */
    qk_share *shares;      /* [threads] GEMV: each thread's rows */
    size_t scratch_words;  /* int32 words of one thread's scratch */
    pdq_level level;
    qi_traits k;
    int n, chunk; /* chunk: rows of x per prepare task */
    int nshares;
    int planes;   /* prepare_x writes the byte planes (see qi_matmul) */
    qi_gemv_fn gemv;
} qi_run;

static void prepare_task(void *arg, int task, int thread) {
    (void)thread;
    const qi_run *c = arg;
    int i1 = (task + 1) * c->chunk < c->n ? (task + 1) * c->chunk : c->n;
    for (int i = task * c->chunk; i < i1; i++)
        c->k.prepare_x(c->w, c->p, c->x + (size_t)i * c->w->cols, c->xt + (size_t)i * c->p->stride, c->planes);
}

static void gemv_rows(const qi_run *c, int r0, int r1, int rend) {
    for (int i = 0; i < c->n; i++)
        c->gemv(c->w, c->p, c->xt + (size_t)i * c->p->stride, r0, r1, rend, c->y + (size_t)i * c->w->rows);
}

/* Share `task` from the front, then rows from the back of the others until none is left. */
static void gemv_task(void *arg, int task, int thread) {
    (void)thread;
    const qi_run *c = arg;
    int r0, r1, rend, v;
    while (qk_share_front(&c->shares[task], &r0, &r1, &rend)) gemv_rows(c, r0, r1, rend);
    while ((v = qk_share_fullest(c->shares, c->nshares)) >= 0)
        if (qk_share_back(&c->shares[v], &r0, &r1)) gemv_rows(c, r0, r1, r1);
}

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
        c->k.panel_decode[w->type](w, c->p, r0 + k * QI_PANEL, nr, pk, (float *)(pk + pw), zt);
        panels[k] = pk;
        pscales[k] = (const float *)(pk + pw);
    }
    qi_tile_fn tile = c->k.tile;
    for (int i = 0; i < c->n; i += QI_TILE_X) {
        int ni = c->n - i < QI_TILE_X ? c->n - i : QI_TILE_X;
        const uint8_t *xr[QI_TILE_X];
        for (int k = 0; k < ni; k++) xr[k] = c->xt + (size_t)(i + k) * c->p->stride;
        tile(w, c->p, xr, ni, panels, pscales, np, nrows, c->y + (size_t)i * w->rows + r0, (size_t)w->rows);
    }
}

/* The call's scratch: the prepared rows, then (GEMM) each thread's panels, from ctx->work when
 * the caller keeps one (no allocation in a steady state), else from one block freed by the
 * caller (*own). */
static uint8_t *scratch_get(const pdq_qctx *ctx, size_t bytes, void **own) {
    *own = NULL;
    if (ctx && ctx->work) return pdq_scratch_get(ctx->work, bytes);
    return *own = aligned_alloc(64, pdq_scratch_size(bytes ? bytes : 64));
}

/* x rounded for one matrix serves another with the same plan, weight type (the byte planes) and
 * column order: q, k and v of a layer, or gate and up. */
static int same_prepared(const pdq_qmatrix *a, const qi_plan *pa, const pdq_qmatrix *b, const qi_plan *pb) {
    if (a->type != b->type || a->cols != b->cols || pa->B != pb->B || pa->bpg != pb->bpg || pa->stride != pb->stride)
        return 0;
    if (!a->perm || !b->perm) return a->perm == b->perm;
    return a->perm == b->perm || memcmp(a->perm, b->perm, sizeof *a->perm * (size_t)a->cols) == 0;
}

pdq_code qi_matmul_many(const pdq_qctx *ctx, int nw, const pdq_qmatrix *const *ws, const qi_plan *plans,
                        const float *x, int n, float *const *ys, pdq_status *st) {
    pdq_pool *pool = ctx ? ctx->pool : NULL;
    qi_traits k;
    pdq_level level = qi_kernels_at(ctx, &k);
    int gemm = n > 1 && k.tile; /* the scalar level's GEMM is its GEMV row by row */
    int threads = pdq_pool_threads(pool);
    size_t xbytes = 0, pbytes = (size_t)threads * sizeof(qk_share), words = 0;
    for (int i = 0; i < nw; i++) {
        size_t xb = pdq_scratch_size((size_t)n * plans[i].stride);
        xbytes = xb > xbytes ? xb : xbytes;
        if (!gemm) continue;
        size_t wd = (qi_panel_words(&plans[i]) + (size_t)ws[i]->ngroups * QI_PANEL * 2) * QI_TILE_P;
        wd = (wd + 15) / 16 * 16;
        words = wd > words ? wd : words;
    }
    if (gemm) pbytes = (size_t)threads * words * sizeof(int32_t);
    void *own;
    uint8_t *xt = scratch_get(ctx, xbytes + pbytes, &own);
    if (!xt)
        return pdq_fail(st, PDQ_ERR_NOMEM, "packed matmul: %d prepared rows of %zu bytes and panels for %d threads", n,
                        xbytes / (size_t)n, threads);
    for (int i = 0; i < nw; i++) {
        const pdq_qmatrix *w = ws[i];
        qi_run c = {.w = w, .p = &plans[i], .x = x, .xt = xt, .y = ys[i], .n = n, .level = level, .k = k};
        /* the planes' readers: the SIMD uint4 GEMVs, the AVX-512 uint8 GEMV */
        c.planes = !gemm && (w->type == PDQ_QT_U4 ? level != PDQ_LEVEL_SCALAR : level == PDQ_LEVEL_AVX512_VNNI);
        if (i == 0 || !same_prepared(ws[i - 1], &plans[i - 1], w, &plans[i])) {
            /* the rows of x are rounded on the pool too (each row on its own: the same bytes) */
            if (n == 1 || threads == 1) {
                c.chunk = n;
                prepare_task(&c, 0, 0);
            } else {
                c.chunk = (n + 4 * threads - 1) / (4 * threads);
                pdq_pool_run(pool, (n + c.chunk - 1) / c.chunk, prepare_task, &c);
            }
        }
        if (!gemm) {
            c.gemv = k.gemv[w->type];
            c.nshares = threads;
            c.shares = (qk_share *)(xt + xbytes);
            qk_shares_init(c.shares, threads, w->rows);
            pdq_pool_run(pool, threads, gemv_task, &c);
        } else {
            c.scratch_words = words;
            c.panels = (int32_t *)(xt + xbytes);
            pdq_pool_run(pool, (w->rows + GEMM_CHUNK - 1) / GEMM_CHUNK, gemm_task, &c);
        }
    }
    free(own);
    return PDQ_OK;
}

pdq_code qi_matmul(const pdq_qctx *ctx, const pdq_qmatrix *w, const qi_plan *p, const float *x, int n, float *y,
                   pdq_status *st) {
    return qi_matmul_many(ctx, 1, &w, p, x, n, &y, st);
}
