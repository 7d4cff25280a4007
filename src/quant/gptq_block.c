/* GPTQ's in-block column loop (gptq_block.h), row tile by row tile, left-looking.
 *
 * A row's errors, grids and codes depend on that row alone (err[r] = (w[r] - q(w[r])) / d and the
 * update w[k][r] -= hinv[j][k] err[r]), so a tile of rows can go through all the block's columns
 * before the next tile starts, and tiles can run at once. Inside a tile, a column receives the
 * updates of the columns before it just before it is read (quantized, or a group's grid found
 * from it), all pending ones at once with its rows in registers (pdq_rank1_fma_seq), instead of
 * each column updating every later one as soon as it is quantized. Each element still sees the
 * same updates in the same order (j ascending), each rounded as the BLAS rank-1 update (sger)
 * of the column-at-a-time loop rounded it, so the codes are the same bits. */
#include "gptq_block.h"

#include <stdlib.h>
#include <string.h>

#include "kernels/rank1_fma.h"
#include "pdq/threadpool.h"

enum { ROW_TILE = 128 }; /* a tile of a 128-column block: 64 KiB of weights, as much error */

/* Column k (of the block) brought up to date through block column upto - 1: its pending updates
 * Wt[k] -= Hinv[j][k] * e[j], j = applied[k - i1] .. upto - 1, in order. hb[k - i1] holds
 * -Hinv[i1..i2-1][k] (sger's alpha -1 times Hinv[j][k]) contiguously, et the tile's errors
 * [i2 - i1][r1 - r0] (the block's err rows are rows floats apart: 8 KiB at 2048 rows, every one
 * in the same L1 sets). */
static void bring(const gptq_cols *g, const float *hb, const float *et, int i1, int i2, int k, int upto, int *applied,
                  int r0, int r1) {
    int j0 = applied[k - i1], n = upto - j0, nr = r1 - r0;
    if (n <= 0) return;
    pdq_rank1_fma_seq(g->level, g->wt + (size_t)k * g->rows + r0, et + (size_t)(j0 - i1) * nr, (size_t)nr,
                      hb + (size_t)(k - i1) * (i2 - i1) + (j0 - i1), n, nr, (g->rows & -32) - r0);
    applied[k - i1] = upto;
}

/* Rows r0..r1-1 through columns i1..i2-1. Touches only those rows of every array (and g_idx from
 * the first tile), so tiles may run at once. */
static pdq_code block_tile(const gptq_cols *g, const float *hb, int i1, int i2, int r0, int r1, pdq_status *st) {
    const pdq_qscheme *s = g->s;
    int rows = g->rows, cols = g->cols, gs = g->gs, ng = g->ng, maxq = g->maxq, nr = r1 - r0;
    int *applied = malloc(sizeof(int) * (size_t)(i2 - i1));
    float *et = malloc(sizeof(float) * (size_t)(i2 - i1) * nr);
    if (!applied || !et) {
        free(applied);
        free(et);
        return pdq_fail(st, PDQ_ERR_NOMEM, "%s: GPTQ row tile", g->name);
    }
    for (int k = i1; k < i2; k++) applied[k - i1] = i1;
    pdq_code rc = PDQ_OK;
    for (int j = i1; j < i2 && !rc; j++) {
        int c = g->perm[j];
        float *wc = g->wt + (size_t)j * rows;
        float *sc = g->sc, *ze = g->ze;
        if (s->group > 0) {
            if (g->static_groups) {
                int gi = c / gs;
                for (int rr = r0; rr < r1; rr++) {
                    sc[rr] = g->ssc[(size_t)rr * ng + gi];
                    ze[rr] = g->sze[(size_t)rr * ng + gi];
                }
            } else {
                if (j % gs == 0) {
                    /* group j/gs: columns j..j+gs-1 of the current (updated) weights */
                    int gi = j / gs;
                    int width = cols - j < gs ? cols - j : gs;
                    if (g->ref_groups) {
                        /* the reference reads W[:, j:j+gs], where the block's own updates are
                         * not yet applied (they live in its W1 copy): block-start values for
                         * columns inside the block, current (= block-start) values after it */
                        for (int k = 0; k < width; k++)
                            memcpy(g->gbuf + (size_t)k * rows + r0,
                                   (j + k < i2 ? g->snap + (size_t)(j + k - i1) * rows : g->wt + (size_t)(j + k) * rows) + r0,
                                   (size_t)nr * sizeof(float));
                        pdq_qparams_find(s, g->gbuf + r0, nr, width, 1, rows, sc + r0, ze + r0);
                    } else {
                        /* as they stand after columns i1..j-1 (past i2: the block leaves them) */
                        for (int k = j; k < j + width && k < i2; k++) bring(g, hb, et, i1, i2, k, j, applied, r0, r1);
                        pdq_qparams_find(s, wc + r0, nr, width, 1, rows, sc + r0, ze + r0);
                    }
                    if ((rc = pdq_qscale_check_range(s, sc, (size_t)r0, (size_t)r1, g->name, st))) break;
                    for (int rr = r0; rr < r1; rr++) {
                        g->r->scale[(size_t)rr * ng + gi] = sc[rr];
                        g->r->zero[(size_t)rr * ng + gi] = ze[rr];
                    }
                }
                if (g->r->g_idx && r0 == 0) g->r->g_idx[c] = j / gs;
            }
        }
        bring(g, hb, et, i1, i2, j, j, applied, r0, r1);
        float d = g->hinv[(size_t)j * cols + j];
        float *e = g->err + (size_t)(j - i1) * rows;
        uint8_t *ct = g->ct + (size_t)j * rows;
        float *dt = g->dt + (size_t)j * rows, *ej = et + (size_t)(j - i1) * nr;
        for (int rr = r0; rr < r1; rr++) {
            int q = pdq_qcode(wc[rr], sc[rr], ze[rr], maxq);
            float qv = sc[rr] * ((float)q - ze[rr]);
            ct[rr] = (uint8_t)q;
            dt[rr] = qv;
            e[rr] = ej[rr - r0] = (wc[rr] - qv) / d;
        }
    }
    free(applied);
    free(et);
    return rc;
}

typedef struct {
    const gptq_cols *g;
    const float *hb;
    int i1, i2;
    pdq_code *rc;     /* [tiles] */
    pdq_status *st;   /* [tiles] */
} block_job;

static void tile_task(void *ctx, int t, int thread) {
    (void)thread;
    block_job *b = ctx;
    int r0 = t * ROW_TILE, r1 = r0 + ROW_TILE < b->g->rows ? r0 + ROW_TILE : b->g->rows;
    b->rc[t] = block_tile(b->g, b->hb, b->i1, b->i2, r0, r1, &b->st[t]);
}

pdq_code gptq_block(const gptq_cols *g, int i1, int i2, double *flops, pdq_status *st) {
    int rows = g->rows, tiles = (rows + ROW_TILE - 1) / ROW_TILE, nb = i2 - i1;
    for (int j = i1; j < i2; j++)
        if (i2 - j - 1 > 0) *flops += 2.0 * rows * (i2 - j - 1);
    /* hb[k][j] = -Hinv[j][k] over the block: a column's coefficients in a row (Hinv's column k
     * is a stride of cols floats, a cache and TLB miss each at n = 5632) */
    float *hb = malloc(sizeof(float) * (size_t)nb * nb);
    if (!hb) return pdq_fail(st, PDQ_ERR_NOMEM, "%s: GPTQ block of %d columns", g->name, nb);
    for (int j = i1; j < i2; j++) {
        const float *hrow = g->hinv + (size_t)j * g->cols;
        for (int k = j + 1; k < i2; k++) hb[(size_t)(k - i1) * nb + (j - i1)] = -hrow[k];
    }
    pdq_code out = PDQ_OK;
    if (!g->pool || pdq_pool_threads(g->pool) < 2 || tiles < 2) {
        for (int r0 = 0; r0 < rows && !out; r0 += ROW_TILE)
            out = block_tile(g, hb, i1, i2, r0, r0 + ROW_TILE < rows ? r0 + ROW_TILE : rows, st);
        free(hb);
        return out;
    }
    pdq_code *rc = calloc((size_t)tiles, sizeof *rc);
    pdq_status *sts = calloc((size_t)tiles, sizeof *sts);
    if (!rc || !sts) {
        free(rc);
        free(sts);
        free(hb);
        return pdq_fail(st, PDQ_ERR_NOMEM, "%s: GPTQ row tiles", g->name);
    }
    block_job b = {g, hb, i1, i2, rc, sts};
    pdq_pool_run(g->pool, tiles, tile_task, &b);
    for (int t = 0; t < tiles && !out; t++) /* the first failing tile's error, as one thread meets it */
        if ((out = rc[t]) && st) *st = sts[t];
    free(rc);
    free(sts);
    free(hb);
    return out;
}
