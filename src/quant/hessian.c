/* H = 2/N sum x x^T of a linear's inputs, streamed batch by batch: each batch's x^T x in float by
 * BLAS (the O(rows n^2) work), summed into a double accumulator so long streams keep their
 * precision. The upper triangle is cut into BANDS bands of rows of equal area, each a SYRK of its
 * diagonal block and a GEMM of the block right of it, then its rows' double sums: the bands run
 * on the caller's pool (BLAS single-threaded) or one after the other, with the same values,
 * since the cut does not depend on the threads. */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pdq/progress.h"
#include "pdq/quant.h"
#include "pdq/threadpool.h"

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

enum { BANDS = 8, BAND_ALIGN = 16 };

/* First row of band k: rows [0, r) of the upper triangle hold k / BANDS of its area
 * (r n - r^2 / 2 = k / BANDS * n^2 / 2), rounded to BAND_ALIGN. */
static int band_start(int n, int k) {
    if (k >= BANDS) return n;
    int r = (int)((double)n * (1.0 - sqrt(1.0 - (double)k / BANDS)) + 0.5);
    r = r / BAND_ALIGN * BAND_ALIGN;
    return r < n ? r : n;
}

typedef struct {
    pdq_hessian *h;
    const float *x;
    int rows;
} band_job;

static void band_task(void *ctx, int k, int thread) {
    (void)thread;
    band_job *b = ctx;
    int n = b->h->n, r0 = band_start(n, k), r1 = band_start(n, k + 1), nb = r1 - r0;
    if (nb <= 0) return;
    float *t = b->h->tmp;
    /* tmp (upper, row-major) = x^T x: the diagonal block, then the rows' block right of it */
    cblas_ssyrk(CblasRowMajor, CblasUpper, CblasTrans, nb, b->rows, 1.0f, b->x + r0, n, 0.0f, t + (size_t)r0 * n + r0, n);
    if (r1 < n)
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, nb, n - r1, b->rows, 1.0f, b->x + r0, n, b->x + r1, n, 0.0f,
                    t + (size_t)r0 * n + r1, n);
    for (int i = r0; i < r1; i++) {
        double *a = b->h->acc + (size_t)i * n;
        const float *ti = t + (size_t)i * n;
        for (int j = i; j < n; j++) a[j] += (double)ti[j];
    }
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
    band_job b = {h, x, rows};
    if (h->pool && pdq_pool_threads(h->pool) > 1) pdq_pool_run(h->pool, BANDS, band_task, &b);
    else
        for (int k = 0; k < BANDS; k++) band_task(&b, k, 0);
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
