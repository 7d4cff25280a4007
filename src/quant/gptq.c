/* GPTQ (Frantar et al. 2022) on one weight matrix: columns quantized one at a time in (optionally
 * act-) order, each column's rounding error fed back into the not-yet-quantized columns through the
 * upper Cholesky factor of H^-1; updates inside a block are immediate, the rest lazy (one GEMM
 * per block).
 *
 * Working layout: the weight is kept transposed (Wt [cols][rows]) so a column is contiguous.
 * Group grids (non-static) are computed at a group's first column from the current, error-updated
 * weights; the block size is rounded up to a multiple of the group so a group never straddles a
 * lazy update (the IST-DASLab reference reads the group from stale columns when the group is
 * smaller than the block; this implementation follows the paper's math instead). */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gptq_block.h"
#include "gptq_hinv.h"
#include "kernels/transpose_map.h"
#include "pdq/progress.h"
#include "pdq/quant.h"

void pdq_gptq_opts_default(pdq_gptq_opts *o, int bits) {
    memset(o, 0, sizeof *o);
    pdq_qscheme_default(&o->scheme, bits);
    o->actorder = 1;
    o->percdamp = 0.01f;
    o->blocksize = 128;
    o->mse_gptq_steps = 10;
    o->mse_gptq_range = 0.25f;
}

void pdq_qresult_free(pdq_qresult *r) {
    free(r->codes);
    free(r->deq);
    free(r->scale);
    free(r->zero);
    free(r->g_idx);
    memset(r, 0, sizeof *r);
}

/* with_deq 0: r->deq is left NULL for the caller to hand a buffer it already has */
static pdq_code result_alloc(pdq_qresult *r, int rows, int cols, int ng, int with_deq, const char *name,
                             pdq_status *st) {
    memset(r, 0, sizeof *r);
    r->rows = rows;
    r->cols = cols;
    r->ngroups = ng;
    size_t n = (size_t)rows * cols;
    r->codes = malloc(n);
    if (with_deq) r->deq = malloc(n * sizeof(float));
    r->scale = malloc((size_t)rows * ng * sizeof(float));
    r->zero = malloc((size_t)rows * ng * sizeof(float));
    if (ng > 1) r->g_idx = malloc((size_t)cols * sizeof(int32_t));
    if (!r->codes || (with_deq && !r->deq) || !r->scale || !r->zero || (ng > 1 && !r->g_idx)) {
        pdq_qresult_free(r);
        return pdq_fail(st, PDQ_ERR_NOMEM, "%s: out of memory for [%d, %d]", name, rows, cols);
    }
    return PDQ_OK;
}

enum { LOSS_BAND = 256 }; /* rows per GEMM of the loss: its product needs no rows x cols buffer */

static size_t loss_band_floats(int rows, int cols) {
    return (size_t)(rows < LOSS_BAND ? rows : LOSS_BAND) * cols;
}

/* tr((a - b) H (a - b)^T) with caller scratch d [rows*cols] (may be b: overwritten) and
 * m [loss_band_floats]: float GEMM (the O(rows cols^2) part) a band of rows at a time, double
 * reduction in element order: a metric, ~1e-6 relative. */
static double loss_into(const float *a, const float *b, int rows, int cols, const float *H, float *d, float *m) {
    double loss = 0.0;
    for (int r0 = 0; r0 < rows; r0 += LOSS_BAND) {
        int nr = rows - r0 < LOSS_BAND ? rows - r0 : LOSS_BAND;
        size_t o = (size_t)r0 * cols, n = (size_t)nr * cols;
        for (size_t i = o; i < o + n; i++) d[i] = a[i] - b[i];
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, nr, cols, cols, 1.0f, d + o, cols, H, cols, 0.0f, m,
                    cols);
        for (size_t i = 0; i < n; i++) loss += (double)d[o + i] * m[i];
    }
    return loss;
}

double pdq_quant_loss(const float *a, const float *b, int rows, int cols, const float *H) {
    float *d = malloc((size_t)rows * cols * sizeof(float)), *m = malloc(loss_band_floats(rows, cols) * sizeof(float));
    double loss = d && m ? loss_into(a, b, rows, cols, H, d, m) : NAN;
    free(d);
    free(m);
    return loss;
}

static int finite_all(const float *x, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i])) return 0;
    return 1;
}

pdq_code pdq_rtn_result(const pdq_qscheme *s, const float *w, int rows, int cols, const float *H,
                        const char *name, pdq_qresult *r, pdq_status *st) {
    if (!name) name = "weight";
    pdq_code rc = pdq_qscheme_check(s, rows, cols, name, st);
    if (rc) return rc;
    int ng = pdq_qscheme_ngroups(s, cols);
    if ((rc = result_alloc(r, rows, cols, ng, 1, name, st))) return rc;
    rc = pdq_quant_rtn(s, w, rows, cols, r->codes, r->deq, r->scale, r->zero, name, st);
    if (rc) { pdq_qresult_free(r); return rc; }
    if (r->g_idx)
        for (int c = 0; c < cols; c++) r->g_idx[c] = c / s->group;
    if (H) {
        if (!finite_all(H, (size_t)cols * cols)) {
            pdq_qresult_free(r);
            return pdq_fail(st, PDQ_ERR_NUMERIC, "%s: NaN or Inf in the Hessian", name);
        }
        r->loss = r->rtn_loss = pdq_quant_loss(w, r->deq, rows, cols, H);
    }
    return PDQ_OK;
}

/* fixed_scale/fixed_zero: per-channel grids given by the caller (GPTQ-aware grid search), else
 * NULL. */
static pdq_code gptq_run(const pdq_gptq_opts *o, const float *w, int rows, int cols, const float *H,
                         const char *name, const float *fixed_scale, const float *fixed_zero, int with_rtn,
                         pdq_qresult *r, pdq_status *st) {
    const pdq_qscheme *s = &o->scheme;
    pdq_qprof *pf = o->prof;
    double tp = pdq_now();
    pdq_code rc = pdq_qscheme_check(s, rows, cols, name, st);
    if (rc) return rc;
    if (o->blocksize <= 0) return pdq_fail(st, PDQ_ERR_ARG, "%s: block size %d must be positive", name, o->blocksize);
    if (!(o->percdamp >= 0.0f)) return pdq_fail(st, PDQ_ERR_ARG, "%s: percdamp %g must be >= 0", name, (double)o->percdamp);
    if (!finite_all(w, (size_t)rows * cols)) return pdq_fail(st, PDQ_ERR_NUMERIC, "%s: NaN or Inf in the weight", name);
    if (!finite_all(H, (size_t)cols * cols)) return pdq_fail(st, PDQ_ERR_NUMERIC, "%s: NaN or Inf in the Hessian", name);
    int ng = pdq_qscheme_ngroups(s, cols), gs = s->group > 0 ? s->group : cols, maxq = (1 << s->bits) - 1;
    int static_groups = s->group > 0 && o->static_groups;
    int ref_groups = s->group > 0 && !static_groups && o->ref_groups;
    if ((rc = result_alloc(r, rows, cols, ng, 0, name, st))) return rc;
    pdq_gptq_hcache local = {0}, *hc = o->hcache ? o->hcache : &local;

    size_t nw = (size_t)rows * cols;
    float *wt = malloc(nw * sizeof(float));          /* [cols][rows], permuted columns */
    float *wd = malloc(nw * sizeof(float));          /* dead-zeroed W, row-major, for up-front grids */
    float *dt = wd;                                  /* then the values [cols][rows] as quantized */
    uint8_t *ct = malloc(nw);                        /* the codes [cols][rows] as quantized */
    float *sc = malloc((size_t)rows * sizeof(float)), *ze = malloc((size_t)rows * sizeof(float));
    float *err = NULL, *lm = malloc(loss_band_floats(rows, cols) * sizeof(float));
    int *inv = malloc((size_t)cols * sizeof(int));
    float *ssc = NULL, *sze = NULL; /* static group grids [rows*ng] */
    float *snap = NULL, *gbuf = NULL; /* reference groups: block-start columns, one group's columns */
    int bs = o->blocksize;
    if (s->group > 0 && !static_groups && !ref_groups) bs = (bs + gs - 1) / gs * gs;
    if (bs > cols) bs = cols;
    err = malloc((size_t)bs * rows * sizeof(float));
    if (ref_groups) {
        snap = malloc((size_t)bs * rows * sizeof(float));
        gbuf = malloc((size_t)gs * rows * sizeof(float));
        if (!snap || !gbuf) err = (free(err), NULL);
    }
    if (static_groups) { ssc = malloc((size_t)rows * ng * sizeof(float)); sze = malloc((size_t)rows * ng * sizeof(float)); }
    if (!wt || !wd || !ct || !sc || !ze || !err || !lm || !inv ||
        (static_groups && (!ssc || !sze))) {
        rc = pdq_fail(st, PDQ_ERR_NOMEM, "%s: out of memory for GPTQ on [%d, %d]", name, rows, cols);
        goto done;
    }

    /* Dead inputs (zero diagonal): never active, so any value is free; zero the weight (H gets a 1
     * there in gptq_hinv). */
    memcpy(wd, w, nw * sizeof(float));
    for (int c = 0; c < cols; c++)
        if (H[(size_t)c * cols + c] == 0.0f)
            for (int rr = 0; rr < rows; rr++) wd[(size_t)rr * cols + c] = 0.0f;
    /* Grids fixed up front: per-channel/per-tensor from the whole original row (as the reference,
     * before dead columns are zeroed), static groups per group of the dead-zeroed weight. */
    if (s->per_tensor) {
        pdq_qparams_find(s, w, 1, rows * cols, 0, 1, &sc[0], &ze[0]);
        for (int rr = 1; rr < rows; rr++) { sc[rr] = sc[0]; ze[rr] = ze[0]; }
    } else if (s->group == 0 && fixed_scale) {
        memcpy(sc, fixed_scale, (size_t)rows * sizeof(float));
        memcpy(ze, fixed_zero, (size_t)rows * sizeof(float));
    } else if (s->group == 0) {
        pdq_qparams_find(s, w, rows, cols, cols, 1, sc, ze);
    } else if (static_groups) {
        pdq_qresult tmp;
        rc = pdq_rtn_result(s, wd, rows, cols, NULL, name, &tmp, st);
        if (rc) goto done;
        memcpy(ssc, tmp.scale, (size_t)rows * ng * sizeof(float));
        memcpy(sze, tmp.zero, (size_t)rows * ng * sizeof(float));
        pdq_qresult_free(&tmp);
        memcpy(r->scale, ssc, (size_t)rows * ng * sizeof(float));
        memcpy(r->zero, sze, (size_t)rows * ng * sizeof(float));
        if (r->g_idx)
            for (int c = 0; c < cols; c++) r->g_idx[c] = c / gs;
    }
    if (s->group == 0)
        for (int rr = 0; rr < rows; rr++) { r->scale[rr] = sc[rr]; r->zero[rr] = ze[rr]; }

    double tq = pdq_now();
    pdq_qprof_add(pf, PDQ_QP_PREPARE, tq - tp, 0);
    if ((rc = gptq_hinv(hc, H, cols, o->actorder, o->percdamp, pf, name, st))) goto done;
    tp = pdq_now();
    const int *perm = hc->perm;
    const float *hinv = hc->hinv;
    pdq_level level = pdq_cpu_has_level(PDQ_LEVEL_AVX2) ? PDQ_LEVEL_AVX2 : PDQ_LEVEL_SCALAR;
    for (int j = 0; j < cols; j++) inv[perm[j]] = j;
    pdq_k_transpose_scatter_f32(level, wt, wd, (size_t)rows, (size_t)cols, inv); /* Wt = W[:, perm]^T */
    tq = pdq_now();
    pdq_qprof_add(pf, PDQ_QP_PREPARE, tq - tp, 0);
    tp = tq;
    double col_flops = 0; /* as the BLAS calls below are made */
    gptq_cols gc = {s, rows, cols, ng, gs, maxq, static_groups, ref_groups,
                    level, perm, hinv, wt, err, dt, ct,
                    sc, ze, ssc, sze, snap, gbuf, r, name, o->pool};

    for (int i1 = 0; i1 < cols; i1 += bs) {
        int i2 = i1 + bs < cols ? i1 + bs : cols, count = i2 - i1;
        if (ref_groups) memcpy(snap, wt + (size_t)i1 * rows, (size_t)count * rows * sizeof(float));
        if ((rc = gptq_block(&gc, i1, i2, &col_flops, st))) goto done;
        /* lazy update of the columns after the block: Wt[i2:] -= Hinv[i1:i2, i2:]^T Err */
        if (i2 < cols) col_flops += 2.0 * rows * count * (cols - i2);
        if (i2 < cols)
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, cols - i2, rows, count, -1.0f,
                        hinv + (size_t)i1 * cols + i2, cols, err, rows, 1.0f, wt + (size_t)i2 * rows, rows);
        if (!finite_all(wt + (size_t)i1 * rows, (size_t)count * rows)) {
            rc = pdq_fail(st, PDQ_ERR_NUMERIC, "%s: GPTQ produced NaN/Inf (columns %d..%d)", name, i1, i2 - 1);
            goto done;
        }
    }
    /* codes and values back to [rows, cols] in the original column order; wt, free now, takes the
     * values and becomes r->deq (a fresh rows x cols buffer cost more in first-touch page faults
     * than the copy itself) */
    pdq_k_transpose_gather_u8(r->codes, ct, (size_t)rows, (size_t)cols, inv);
    pdq_k_transpose_gather_f32(level, wt, dt, (size_t)rows, (size_t)cols, inv);
    r->deq = wt;
    wt = NULL;
    tq = pdq_now();
    pdq_qprof_add(pf, PDQ_QP_COLUMNS, tq - tp, col_flops);
    tp = tq;
    /* wd is free now: the losses' differences (no fresh pages for them) */
    r->loss = loss_into(w, r->deq, rows, cols, H, wd, lm);
    double loss_flops = 2.0 * rows * (double)cols * cols;
    if (with_rtn) { /* RTN's values as pdq_rtn_result makes them, into wd */
        float *rsc = malloc((size_t)rows * ng * sizeof(float)), *rze = malloc((size_t)rows * ng * sizeof(float));
        rc = rsc && rze ? pdq_quant_rtn(s, w, rows, cols, NULL, wd, rsc, rze, name, st)
                        : pdq_fail(st, PDQ_ERR_NOMEM, "%s: out of memory", name);
        free(rsc);
        free(rze);
        if (rc) goto done;
        r->rtn_loss = loss_into(w, wd, rows, cols, H, wd, lm);
        loss_flops *= 2;
    }
    pdq_qprof_add(pf, PDQ_QP_LOSS, pdq_now() - tp, loss_flops);
    rc = PDQ_OK;
done:
    free(wt); free(wd); free(ct); 
    free(sc); free(ze); free(err); free(lm); free(inv);
    pdq_gptq_hcache_free(&local); free(ssc); free(sze); free(snap); free(gbuf);
    if (rc) pdq_qresult_free(r);
    return rc;
}

pdq_code pdq_gptq(const pdq_gptq_opts *o, const float *w, int rows, int cols, const float *H,
                  const char *name, pdq_qresult *r, pdq_status *st) {
    if (!name) name = "weight";
    if (o->mse_gptq) return pdq_gptq_grid_search(o, w, rows, cols, H, name, r, st);
    return gptq_run(o, w, rows, cols, H, name, NULL, NULL, 1, r, st);
}

pdq_code pdq_gptq_fixed_grid(const pdq_gptq_opts *o, const float *w, int rows, int cols, const float *H,
                             const char *name, const float *scale, const float *zero, pdq_qresult *r,
                             pdq_status *st) {
    if (!name) name = "weight";
    if (o->scheme.group != 0 || o->scheme.per_tensor)
        return pdq_fail(st, PDQ_ERR_ARG, "%s: fixed grids are per output row (no --group, no --per-tensor)", name);
    return gptq_run(o, w, rows, cols, H, name, scale, zero, 0, r, st);
}
