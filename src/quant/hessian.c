/* H = 2/N sum x x^T of a linear's inputs, streamed batch by batch: each batch is one float SYRK
 * (BLAS does the O(rows n^2) work), summed into a double accumulator so long streams keep their
 * precision. */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pdq/progress.h"
#include "pdq/quant.h"

pdq_code pdq_hessian_init(pdq_hessian *h, int n, pdq_status *st) {
    memset(h, 0, sizeof *h);
    if (n <= 0) return pdq_fail(st, PDQ_ERR_ARG, "hessian: bad size %d", n);
    h->n = n;
    h->acc = calloc((size_t)n * n, sizeof(double));
    h->tmp = malloc((size_t)n * n * sizeof(float));
    if (!h->acc || !h->tmp) {
        pdq_hessian_free(h);
        return pdq_fail(st, PDQ_ERR_NOMEM, "hessian: out of memory for %d x %d", n, n);
    }
    return PDQ_OK;
}

pdq_code pdq_hessian_add(pdq_hessian *h, const float *x, int rows, pdq_status *st) {
    size_t cnt = (size_t)rows * h->n;
    for (size_t i = 0; i < cnt; i++)
        if (!isfinite(x[i]))
            return pdq_fail(st, PDQ_ERR_NUMERIC, "hessian: NaN or Inf in the activations (row %zu, column %zu)",
                            i / h->n, i % h->n);
    if (rows <= 0) return PDQ_OK;
    int n = h->n;
    double t0 = h->prof ? pdq_now() : 0;
    /* tmp (upper, row-major) = x^T x */
    cblas_ssyrk(CblasRowMajor, CblasUpper, CblasTrans, n, rows, 1.0f, x, n, 0.0f, h->tmp, n);
    for (int i = 0; i < n; i++) {
        double *a = h->acc + (size_t)i * n;
        const float *t = h->tmp + (size_t)i * n;
        for (int j = i; j < n; j++) a[j] += (double)t[j];
    }
    h->rows += rows;
    if (h->prof) pdq_qprof_add(h->prof, PDQ_QP_HESSIAN, pdq_now() - t0, (double)rows * n * (n + 1.0));
    return PDQ_OK;
}

/* 32 x 32 tiles: the mirrored writes go down columns, which one row at a time would miss the
 * cache and the TLB on every element */
void pdq_hessian_get(const pdq_hessian *h, float *out) {
    enum { T = 32 };
    int n = h->n;
    double f = h->rows > 0 ? 2.0 / (double)h->rows : 0.0;
    for (int ib = 0; ib < n; ib += T)
        for (int jb = ib; jb < n; jb += T) {
            int ie = ib + T < n ? ib + T : n, je = jb + T < n ? jb + T : n;
            for (int i = ib; i < ie; i++)
                for (int j = jb > i ? jb : i; j < je; j++) {
                    float v = (float)(h->acc[(size_t)i * n + j] * f);
                    out[(size_t)i * n + j] = v;
                    out[(size_t)j * n + i] = v;
                }
        }
}

void pdq_hessian_reset(pdq_hessian *h) {
    if (h->acc) memset(h->acc, 0, (size_t)h->n * h->n * sizeof(double));
    h->rows = 0;
}

void pdq_hessian_free(pdq_hessian *h) {
    free(h->acc);
    free(h->tmp);
    h->acc = NULL;
    h->tmp = NULL;
}
