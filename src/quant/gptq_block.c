/* GPTQ's in-block column loop (gptq_block.h), row tile by row tile.
 *
 * A row's errors, grids and codes depend on that row alone (err[r] = (w[r] - q(w[r])) / d and the
 * update w[k][r] -= hinv[j][k] err[r]), so a tile of rows can go through all the block's columns
 * before the next tile starts: each element sees the same operations in the same order as the
 * column-at-a-time loop with one BLAS rank-1 update (sger) per column, while the tile's
 * columns stay in cache instead of the whole block streaming through memory once per column.
 * pdq_rank1_fma rounds as the sger it replaces did, so the codes are the same bits. */
#include "gptq_block.h"

#include <string.h>

#include "kernels/rank1_fma.h"

enum { ROW_TILE = 128 }; /* a tile of a 128-column block: 64 KiB of weights, as much error */

pdq_code gptq_block(const gptq_cols *g, int i1, int i2, double *flops, pdq_status *st) {
    const pdq_qscheme *s = g->s;
    int rows = g->rows, cols = g->cols, gs = g->gs, ng = g->ng, maxq = g->maxq;
    int fma_end = rows & -32;
    for (int j = i1; j < i2; j++)
        if (i2 - j - 1 > 0) *flops += 2.0 * rows * (i2 - j - 1);
    for (int r0 = 0; r0 < rows; r0 += ROW_TILE) {
        int r1 = r0 + ROW_TILE < rows ? r0 + ROW_TILE : rows, nr = r1 - r0;
        for (int j = i1; j < i2; j++) {
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
                            pdq_qparams_find(s, wc + r0, nr, width, 1, rows, sc + r0, ze + r0);
                        }
                        /* rows before the tile: finite, checked before (the index names the row) */
                        pdq_code rc = pdq_qscale_check(s, sc, (size_t)r1, g->name, st);
                        if (rc) return rc;
                        for (int rr = r0; rr < r1; rr++) {
                            g->r->scale[(size_t)rr * ng + gi] = sc[rr];
                            g->r->zero[(size_t)rr * ng + gi] = ze[rr];
                        }
                    }
                    if (g->r->g_idx && r0 == 0) g->r->g_idx[c] = j / gs;
                }
            }
            float d = g->hinv[(size_t)j * cols + j];
            float *e = g->err + (size_t)(j - i1) * rows;
            uint8_t *ct = g->ct + (size_t)j * rows;
            float *dt = g->dt + (size_t)j * rows;
            for (int rr = r0; rr < r1; rr++) {
                int q = pdq_qcode(wc[rr], sc[rr], ze[rr], maxq);
                float qv = sc[rr] * ((float)q - ze[rr]);
                ct[rr] = (uint8_t)q;
                dt[rr] = qv;
                e[rr] = (wc[rr] - qv) / d;
            }
            /* the rest of the block: Wt[k] -= Hinv[j][k] * e (sger's alpha -1 times Hinv[j][k]) */
            const float *hrow = g->hinv + (size_t)j * cols;
            for (int k = j + 1; k < i2; k++)
                pdq_rank1_fma(g->level, g->wt + (size_t)k * rows, e, -hrow[k], r0, r1, fma_end);
        }
    }
    return PDQ_OK;
}
