/* The per-type kernel table and the driver: prepares x once per call, then runs the GEMV or
 * GEMM over chunks of output rows on the pool. Each output element is computed by one task in
 * the fixed order of qmatmul.h, so the thread count never changes a result. */
#include <stdlib.h>
#include <string.h>

#include "kernels/qint_internal.h"
#include "kernels/qkernel_internal.h"

static const qk_type_traits k_traits[PDQ_QT_COUNT] = {
#ifdef PDQ_QK_HAVE_AVX2
    [PDQ_QT_U4] = {"uint4", 32,
                   {[PDQ_LEVEL_SCALAR] = qk_gemv_u4_scalar, [PDQ_LEVEL_AVX2] = qk_gemv_u4_avx2,
                    [PDQ_LEVEL_AVX512] = qk_gemv_u4_avx512}},
    [PDQ_QT_U8] = {"uint8", 16,
                   {[PDQ_LEVEL_SCALAR] = qk_gemv_u8_scalar, [PDQ_LEVEL_AVX2] = qk_gemv_u8_avx2,
                    [PDQ_LEVEL_AVX512] = qk_gemv_u8_avx512}},
#else
    [PDQ_QT_U4] = {"uint4", 32, {[PDQ_LEVEL_SCALAR] = qk_gemv_u4_scalar}},
    [PDQ_QT_U8] = {"uint8", 16, {[PDQ_LEVEL_SCALAR] = qk_gemv_u8_scalar}},
#endif
};

/* The GEMM's per-level kernels (a row used whole: its tile's shape goes with it): the weight row
 * decoder, and the register tile of tile_x rows of x by tile_w rows of W (NULL: row by row). */
#define QK_TILE_X_MAX 8
typedef struct {
    void (*decode_row)(const pdq_qmatrix *w, int r, float *wf);
    void (*tile)(const pdq_qmatrix *w, const float *const *xr, int ni, const float *wf, int r, int nr, float *y,
                 size_t ystride);
    int tile_x, tile_w;
} qk_gemm_traits;

static const qk_gemm_traits k_gemm[PDQ_LEVEL_COUNT] = {
    [PDQ_LEVEL_SCALAR] = {qk_decode_row, NULL, 0, 0},
#ifdef PDQ_QK_HAVE_AVX2
    [PDQ_LEVEL_AVX2] = {qk_decode_row_avx2, qk_tile_avx2, QK_TILE2_X, QK_TILE2_W},
    [PDQ_LEVEL_AVX512] = {qk_decode_row_avx2, qk_tile_avx512, QK_TILE5_X, QK_TILE5_W},
#endif
};
_Static_assert(QK_TILE5_X <= QK_TILE_X_MAX && QK_TILE2_X <= QK_TILE_X_MAX, "xr holds a tile's rows of x");

/* The f32 path's level for w's type: the context's, or its first fallback with a GEMV (SCALAR,
 * AVX2 or AVX512 here; all compute the same bits). */
static pdq_level simd_level(const pdq_qctx *ctx, const pdq_qmatrix *w) {
    unsigned have = 0;
    for (int l = 0; l < PDQ_LEVEL_COUNT; l++) have |= (k_traits[w->type].gemv[l] != NULL) << l;
    return pdq_level_pick(pdq_qctx_level(ctx), have);
}

const char *pdq_qmatmul_path(const pdq_qctx *ctx) {
    pdq_qmatrix probe = {.type = PDQ_QT_U4};
    static const char *const int_names[PDQ_LEVEL_COUNT] = {
        [PDQ_LEVEL_SCALAR] = "scalar-int", [PDQ_LEVEL_AVX2] = "avx2-int", [PDQ_LEVEL_AVX2_VNNI] = "avx2-vnni",
        [PDQ_LEVEL_AVX512_VNNI] = "avx512-vnni"};
    if (!(ctx && ctx->no_int)) return int_names[qi_level(ctx)];
    return pdq_level_name(simd_level(ctx, &probe));
}

#define GEMM_CHUNK 16   /* weight rows decoded per task (a multiple of the tiles' 2 and 4) */

typedef struct {
    const pdq_qmatrix *w;
    const float *xt;       /* [n, xt_len] prepared rows (qk_xt_stride floats each) */
    float *y;              /* [n, rows] */
    float *wf;             /* [threads, 4, xt_len] panel scratch (GEMM) */
    int n, xt_len, chunk;
    const qk_gemm_traits *gm; /* the GEMM's kernels at the GEMV's level, or its first fallback with them */
    qk_gemv_fn gemv;
} run_ctx;

static void gemv_task(void *p, int task, int thread) {
    (void)thread;
    const run_ctx *c = p;
    int r0 = task * c->chunk, r1 = r0 + c->chunk;
    if (r1 > c->w->rows) r1 = c->w->rows;
    for (int i = 0; i < c->n; i++)
        c->gemv(c->w, c->xt + (size_t)i * c->xt_len, r0, r1, c->y + (size_t)i * c->w->rows);
}

/* The chunk's weight rows are decoded once into the thread's scratch, then every row of x
 * passes over them: the level's register tiles (3 x 2 AVX2, 4 x 4 AVX-512) rows of x and W, or
 * row by row (scalar); both give each element the GEMV's value. */
static void gemm_task(void *p, int task, int thread) {
    const run_ctx *c = p;
    const pdq_qmatrix *w = c->w;
    int r0 = task * c->chunk, r1 = r0 + c->chunk;
    if (r1 > w->rows) r1 = w->rows;
    float *wf = c->wf + (size_t)thread * c->chunk * c->xt_len;
    for (int r = r0; r < r1; r++) c->gm->decode_row(w, r, wf + (size_t)(r - r0) * c->xt_len);
    if (c->gm->tile) {
        int tx = c->gm->tile_x, tw = c->gm->tile_w;
        for (int i = 0; i < c->n; i += tx) {
            int ni = c->n - i < tx ? c->n - i : tx;
            const float *xr[QK_TILE_X_MAX];
            for (int k = 0; k < ni; k++) xr[k] = c->xt + (size_t)(i + k) * c->xt_len;
            for (int r = r0; r < r1; r += tw) {
                int nr = r1 - r < tw ? r1 - r : tw;
                c->gm->tile(w, xr, ni, wf + (size_t)(r - r0) * c->xt_len, r, nr, c->y + (size_t)i * w->rows + r,
                            (size_t)w->rows);
            }
        }
        return;
    }
    for (int i = 0; i < c->n; i++)
        for (int r = r0; r < r1; r += 4) {
            int nr = r1 - r < 4 ? r1 - r : 4;
            qk_panel_scalar(w, c->xt + (size_t)i * c->xt_len, wf + (size_t)(r - r0) * c->xt_len, r, nr,
                            c->y + (size_t)i * w->rows + r);
        }
}

pdq_code pdq_qmatmul(const pdq_qctx *ctx, const pdq_qmatrix *w, const float *x, int n, float *y, pdq_status *st) {
    if (n <= 0) return PDQ_OK;
    qi_plan plan;
    if (!(ctx && ctx->no_int) && qi_plan_make(w, &plan)) return qi_matmul(ctx, w, &plan, x, n, y, st);
    pdq_pool *pool = ctx ? ctx->pool : NULL;
    pdq_level simd = simd_level(ctx, w);
    unsigned have_gemm = 0;
    for (int l = 0; l < PDQ_LEVEL_COUNT; l++) have_gemm |= (unsigned)(k_gemm[l].decode_row != NULL) << l;
    run_ctx c = {.w = w, .y = y, .n = n, .xt_len = qk_xt_stride(w), .gm = &k_gemm[pdq_level_pick(simd, have_gemm)]};
    int threads = pdq_pool_threads(pool);
    /* one block: the prepared rows, then (GEMM) each thread's decoded rows; from ctx->work when
     * the caller keeps one */
    size_t xbytes = pdq_scratch_size((size_t)n * c.xt_len * sizeof(float));
    size_t bytes = xbytes + (n > 1 ? (size_t)threads * GEMM_CHUNK * c.xt_len * sizeof(float) : 0);
    void *own = NULL;
    float *xt = ctx && ctx->work ? pdq_scratch_get(ctx->work, bytes) : (own = aligned_alloc(64, pdq_scratch_size(bytes)));
    if (!xt) return pdq_fail(st, PDQ_ERR_NOMEM, "packed matmul: %d prepared rows of %d and panels for %d threads", n,
                             c.xt_len, threads);
    for (int i = 0; i < n; i++) qk_prepare_x(w, x + (size_t)i * w->cols, xt + (size_t)i * c.xt_len);
    c.xt = xt;
    if (n == 1) {
        c.chunk = qk_gemv_rows_per_task(w->rows, threads);
        c.gemv = k_traits[w->type].gemv[simd];
        pdq_pool_run(pool, (w->rows + c.chunk - 1) / c.chunk, gemv_task, &c);
    } else {
        c.chunk = GEMM_CHUNK;
        c.wf = (float *)((char *)xt + xbytes);
        pdq_pool_run(pool, (w->rows + c.chunk - 1) / c.chunk, gemm_task, &c);
    }
    free(own);
    return PDQ_OK;
}

pdq_code pdq_qmatmul_many(const pdq_qctx *ctx, int nw, const pdq_qmatrix *const *ws, const float *x, int n,
                          float *const *ys, pdq_status *st) {
    qi_plan plans[PDQ_QMATMUL_MANY];
    int all = n > 0 && nw <= PDQ_QMATMUL_MANY && !(ctx && ctx->no_int);
    for (int i = 0; all && i < nw; i++) all = qi_plan_make(ws[i], &plans[i]);
    if (all) return qi_matmul_many(ctx, nw, ws, plans, x, n, ys, st);
    for (int i = 0; i < nw; i++) {
        pdq_code rc = pdq_qmatmul(ctx, ws[i], x, n, ys[i], st);
        if (rc) return rc;
    }
    return PDQ_OK;
}
