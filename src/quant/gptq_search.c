/* GPTQ-aware per-row grid search: the plain MSE search (--mse) picks a row's range shrink by the
 * rounding error of that row alone, but GPTQ then changes the row while compensating, so the
 * shrink that is best before GPTQ need not be best after it. Here each candidate shrink runs
 * GPTQ and the error is measured on its result, tr(dw H dw^T) per row. GPTQ's compensation never
 * crosses rows (row r's updates depend only on row r's errors), so keeping each row from the
 * candidate that was best for it is exactly GPTQ with those per-row grids. */
#include <cblas.h>
#include <stdlib.h>
#include <string.h>

#include "pdq/quant.h"

/* Per-row tr(dw H dw^T) of dW = w - deq. */
static pdq_code row_losses(const float *w, const float *deq, int rows, int cols, const float *H, double *out,
                           pdq_status *st) {
    size_t n = (size_t)rows * cols;
    float *d = malloc(n * sizeof(float)), *m = malloc(n * sizeof(float));
    if (!d || !m) { free(d); free(m); return pdq_fail(st, PDQ_ERR_NOMEM, "out of memory"); }
    for (size_t i = 0; i < n; i++) d[i] = w[i] - deq[i];
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, cols, cols, 1.0f, d, cols, H, cols, 0.0f, m, cols);
    for (int r = 0; r < rows; r++) {
        double s = 0;
        for (int c = 0; c < cols; c++) s += (double)d[(size_t)r * cols + c] * m[(size_t)r * cols + c];
        out[r] = s;
    }
    free(d);
    free(m);
    return PDQ_OK;
}

pdq_code pdq_gptq_grid_search(const pdq_gptq_opts *o, const float *w, int rows, int cols, const float *H,
                              const char *name, pdq_qresult *r, pdq_status *st) {
    const pdq_qscheme *s = &o->scheme;
    if (s->group != 0 || s->per_tensor)
        return pdq_fail(st, PDQ_ERR_ARG, "%s: the GPTQ-aware grid search is per output row (no --group, no --per-tensor)", name);
    if (o->mse_gptq_steps < 1 || o->mse_gptq_steps > 1000 || !(o->mse_gptq_range > 0.0f && o->mse_gptq_range < 1.0f))
        return pdq_fail(st, PDQ_ERR_ARG, "%s: GPTQ-aware grid search needs 1..1000 steps and a range in (0, 1) (got %d, %g)",
                        name, o->mse_gptq_steps, (double)o->mse_gptq_range);
    pdq_qscheme base = *s;
    base.mse = 0;
    pdq_gptq_opts go = *o;
    go.mse_gptq = 0;
    go.scheme = base;
    pdq_gptq_hcache local = {0}; /* every step on the same H: one factor */
    if (!go.hcache) go.hcache = &local;
    float *sc0 = malloc((size_t)rows * sizeof(float)), *ze0 = malloc((size_t)rows * sizeof(float));
    float *sc = malloc((size_t)rows * sizeof(float));
    double *loss = malloc((size_t)rows * sizeof(double)), *best = malloc((size_t)rows * sizeof(double));
    pdq_code rc = sc0 && ze0 && sc && loss && best ? PDQ_OK : pdq_fail(st, PDQ_ERR_NOMEM, "%s: out of memory", name);
    if (rc) goto done;
    pdq_qparams_find(&base, w, rows, cols, cols, 1, sc0, ze0);
    memset(r, 0, sizeof *r);
    for (int k = 0; !rc && k <= o->mse_gptq_steps; k++) {
        /* shrinking [xmin, xmax] by p scales the step by p and keeps the zero point */
        float p = 1.0f - (float)k * o->mse_gptq_range / (float)o->mse_gptq_steps;
        for (int i = 0; i < rows; i++) sc[i] = sc0[i] * p;
        pdq_qresult c;
        if ((rc = pdq_gptq_fixed_grid(&go, w, rows, cols, H, name, sc, ze0, &c, st))) break;
        if ((rc = row_losses(w, c.deq, rows, cols, H, loss, st))) { pdq_qresult_free(&c); break; }
        if (k == 0) {
            *r = c;
            memcpy(best, loss, (size_t)rows * sizeof(double));
            continue;
        }
        for (int i = 0; i < rows; i++)
            if (loss[i] < best[i]) {
                best[i] = loss[i];
                memcpy(r->codes + (size_t)i * cols, c.codes + (size_t)i * cols, (size_t)cols);
                memcpy(r->deq + (size_t)i * cols, c.deq + (size_t)i * cols, (size_t)cols * sizeof(float));
                r->scale[i] = c.scale[i];
                r->zero[i] = c.zero[i];
            }
        pdq_qresult_free(&c);
    }
    if (!rc) {
        r->loss = pdq_quant_loss(w, r->deq, rows, cols, H);
        pdq_qresult rt;
        if (!(rc = pdq_rtn_result(s, w, rows, cols, H, name, &rt, st))) {
            r->rtn_loss = rt.loss;
            pdq_qresult_free(&rt);
        }
    }
    if (rc) pdq_qresult_free(r);
done:
    free(sc0); free(ze0); free(sc); free(loss); free(best);
    pdq_gptq_hcache_free(&local);
    return rc;
}
