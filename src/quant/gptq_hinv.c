/* What GPTQ derives from the Hessian alone (gptq_hinv.h): the act-order permutation and the upper
 * Cholesky factor U of inv(H) (inv(H) = U^T U), in double.
 *
 * The reference computes chol(inv(H)) as potrf, potri, potrf (5/3 n^3). The same factor comes
 * from one Cholesky of the reversed matrix: with J the reversal, J H J = L L^T gives
 * inv(H) = (J L^-1 J)^T (J L^-1 J) and J L^-1 J is upper triangular with a positive diagonal, so
 * it is U (2/3 n^3: potrf + trtri). The permuted H is gathered in float (the caller's hinv
 * buffer), the reversed lower triangle laid out column-major in double for LAPACK in one tiled
 * pass, and U read back into float in another: no n x n double copy besides LAPACK's. */
#include "gptq_hinv.h"

#include <lapacke.h>
#include <stdlib.h>
#include <string.h>

#include "pdq/progress.h"

enum { TILE = 32 };

/* Stable order of columns by descending diag(H): insertion into an index array via merge sort. */
static void argsort_desc(const double *key, int *idx, int *tmp, int n) {
    if (n < 2) return;
    int h = n / 2;
    argsort_desc(key, idx, tmp, h);
    argsort_desc(key, idx + h, tmp, n - h);
    int i = 0, j = h, k = 0;
    while (i < h && j < n) tmp[k++] = key[idx[j]] > key[idx[i]] ? idx[j++] : idx[i++];
    while (i < h) tmp[k++] = idx[i++];
    while (j < n) tmp[k++] = idx[j++];
    memcpy(idx, tmp, (size_t)n * sizeof(int));
}

void pdq_gptq_hcache_free(pdq_gptq_hcache *c) {
    free(c->perm);
    free(c->hinv);
    memset(c, 0, sizeof *c);
}

/* p: the permuted H [n][n] (row-major float), damp on its diagonal in double. t (column-major):
 * lower triangle of J P J; on success p is overwritten by U (zeros below the diagonal). */
static int factor(float *p, double *t, int n, double damp) {
    for (int jb = 0; jb < n; jb += TILE)
        for (int ib = jb; ib < n; ib += TILE) {
            int je = jb + TILE < n ? jb + TILE : n, ie = ib + TILE < n ? ib + TILE : n;
            for (int j = jb; j < je; j++) { /* (J P J)[i][j] = P[n-1-i][n-1-j] */
                double *tc = t + (size_t)j * n;
                for (int i = ib > j ? ib : j; i < ie; i++) tc[i] = (double)p[(size_t)(n - 1 - i) * n + (n - 1 - j)];
                if (j >= ib && j < ie) tc[j] += damp;
            }
        }
    int info = LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', n, t, n);
    if (!info) info = LAPACKE_dtrtri(LAPACK_COL_MAJOR, 'L', 'N', n, t, n);
    if (info) return info;
    /* U[a][b] = L^-1[n-1-a][n-1-b] (b >= a) */
    for (int ab = 0; ab < n; ab += TILE)
        for (int bb = 0; bb < n; bb += TILE) {
            int ae = ab + TILE < n ? ab + TILE : n, be = bb + TILE < n ? bb + TILE : n;
            for (int a = ab; a < ae; a++) {
                float *ur = p + (size_t)a * n;
                for (int b = bb; b < be; b++) ur[b] = b >= a ? (float)t[(size_t)(n - 1 - a) + (size_t)(n - 1 - b) * n] : 0.0f;
            }
        }
    return 0;
}

pdq_code gptq_hinv(pdq_gptq_hcache *c, const float *H, int cols, int actorder, float percdamp, pdq_qprof *pf,
                   const char *name, pdq_status *st) {
    if (c->hinv && c->H == H && c->cols == cols && c->actorder == actorder && c->percdamp == percdamp)
        return PDQ_OK;
    double tp = pdq_now();
    pdq_gptq_hcache_free(c);
    size_t nh = (size_t)cols * cols;
    c->perm = malloc((size_t)cols * sizeof(int));
    c->hinv = malloc(nh * sizeof(float));
    int *ptmp = malloc((size_t)cols * sizeof(int));
    double *diag = malloc((size_t)cols * sizeof(double));
    double *t = malloc(nh * sizeof(double));
    pdq_code rc = PDQ_OK;
    if (!c->perm || !c->hinv || !ptmp || !diag || !t) {
        rc = pdq_fail(st, PDQ_ERR_NOMEM, "%s: out of memory for GPTQ's inverse Hessian [%d, %d]", name, cols, cols);
        goto done;
    }
    /* dead inputs (zero diagonal): never active, H made invertible there by a 1 */
    for (int k = 0; k < cols; k++) {
        diag[k] = H[(size_t)k * cols + k] == 0.0f ? 1.0 : (double)H[(size_t)k * cols + k];
        c->perm[k] = k;
    }
    if (actorder) argsort_desc(diag, c->perm, ptmp, cols);
    /* P = H[perm][perm], a row of H at a time (a column-wise gather would miss on every element) */
    float *p = c->hinv;
    for (int j = 0; j < cols; j++) {
        int k0 = c->perm[j];
        const float *hr = H + (size_t)k0 * cols;
        float *pr = p + (size_t)j * cols;
        for (int k = 0; k < cols; k++) pr[k] = hr[c->perm[k]];
        if (hr[k0] == 0.0f) pr[j] = 1.0f;
    }
    double mean = 0.0;
    for (int k = 0; k < cols; k++) mean += diag[k];
    double damp = (double)percdamp * mean / cols;
    double tq = pdq_now();
    pdq_qprof_add(pf, PDQ_QP_PREPARE, tq - tp, 0);
    int info = factor(p, t, cols, damp);
    if (info) {
        rc = pdq_fail(st, PDQ_ERR_NUMERIC,
                      "%s: Hessian not positive definite after dampening (LAPACK info %d; raise --percdamp)",
                      name, info);
        goto done;
    }
    pdq_qprof_add(pf, PDQ_QP_CHOLESKY, pdq_now() - tq, 2.0 / 3.0 * (double)cols * cols * cols);
    c->H = H;
    c->cols = cols;
    c->actorder = actorder;
    c->percdamp = percdamp;
done:
    free(ptmp);
    free(diag);
    free(t);
    if (rc) pdq_gptq_hcache_free(c);
    return rc;
}
