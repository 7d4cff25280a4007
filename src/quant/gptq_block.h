/* GPTQ's columns inside one lazy-update block (gptq.c): quantize each column, feed its error
 * into the block's later columns. */
#ifndef PDQ_QUANT_GPTQ_BLOCK_H
#define PDQ_QUANT_GPTQ_BLOCK_H

#include <stdint.h>

#include "kernels/cpu_features.h"
#include "pdq/quant.h"

typedef struct {
    const pdq_qscheme *s;
    int rows, cols, ng, gs, maxq;
    int static_groups, ref_groups;
    pdq_level level;       /* the rank-1 update's SIMD level */
    const int *perm;       /* column j of the working order is column perm[j] of W */
    const float *hinv;     /* [cols][cols] upper Cholesky factor of inv(H), permuted */
    float *wt;             /* [cols][rows] the weights, updated in place */
    float *err;            /* [bs][rows] the block's scaled errors (the lazy update's input) */
    float *dt;             /* [cols][rows] quantized values */
    uint8_t *ct;           /* [cols][rows] codes */
    float *sc, *ze;        /* [rows] the current column's grid */
    const float *ssc, *sze; /* static groups: [rows*ng] */
    const float *snap;     /* reference groups: the block's columns at its start [bs][rows] */
    float *gbuf;           /* reference groups: one group's columns [gs][rows] */
    pdq_qresult *r;        /* scale, zero, g_idx written as groups begin */
    const char *name;
    struct pdq_pool *pool; /* NULL, or workers for the row tiles (the same bits on any count) */
} gptq_cols;

/* Columns i1..i2-1 (one block), rows in tiles; *flops += the rank-1 updates' FLOPs. */
pdq_code gptq_block(const gptq_cols *g, int i1, int i2, double *flops, pdq_status *st);

#endif
