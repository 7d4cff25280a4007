/* Orthogonal matrices for the rotations: randomized Hadamard (random signs, then a fast
 * Walsh-Hadamard transform: n log n per vector instead of n^2, what makes R1 cheap on 4096-wide
 * models) and dense Haar-random orthogonal matrices for sizes that are not powers of two. */
#include <cblas.h>
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hadamard.h"
#include "kernels/hadamard.h"
#include "pdq/threadpool.h"
#include "pdq/transform.h"

int pdq_is_pow2(int n) { return n > 0 && (n & (n - 1)) == 0; }

void pdq_fwht(float *x, int n) {
    for (int h = 1; h < n; h *= 2)
        for (int i = 0; i < n; i += 2 * h)
            for (int j = i; j < i + h; j++) {
                float a = x[j], b = x[j + h];
                x[j] = a + b;
                x[j + h] = a - b;
            }
}

/* splitmix64: seedable and platform independent, so a seed names the same matrix everywhere. */
static uint64_t splitmix(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double uniform01(uint64_t *s) { return ((double)(splitmix(s) >> 11) + 0.5) / 9007199254740992.0; }

void pdq_orth_free(pdq_orth *q) {
    free(q->signs);
    free(q->scaled);
    free(q->q);
    memset(q, 0, sizeof *q);
}

/* Haar orthogonal: QR of a Gaussian matrix in double, columns of Q times sign(diag R). */
static pdq_code make_random(pdq_orth *q, int n, uint64_t *s, pdq_status *st) {
    size_t nn = (size_t)n * n;
    double *a = malloc(nn * sizeof(double)), *tau = malloc((size_t)n * sizeof(double));
    double *rdiag = malloc((size_t)n * sizeof(double));
    q->q = malloc(nn * sizeof(float));
    pdq_code rc = a && tau && rdiag && q->q ? PDQ_OK : pdq_fail(st, PDQ_ERR_NOMEM, "out of memory for a %dx%d rotation", n, n);
    for (size_t i = 0; !rc && i < nn; i += 2) {
        double u1 = uniform01(s), u2 = uniform01(s), r = sqrt(-2.0 * log(u1));
        a[i] = r * cos(6.283185307179586 * u2);
        if (i + 1 < nn) a[i + 1] = r * sin(6.283185307179586 * u2);
    }
    if (!rc && LAPACKE_dgeqrf(LAPACK_ROW_MAJOR, n, n, a, n, tau) != 0)
        rc = pdq_fail(st, PDQ_ERR_NUMERIC, "QR of the %dx%d random matrix failed", n, n);
    for (int i = 0; !rc && i < n; i++) rdiag[i] = a[(size_t)i * n + i] < 0 ? -1.0 : 1.0;
    if (!rc && LAPACKE_dorgqr(LAPACK_ROW_MAJOR, n, n, n, a, n, tau) != 0)
        rc = pdq_fail(st, PDQ_ERR_NUMERIC, "forming the %dx%d random orthogonal matrix failed", n, n);
    for (size_t i = 0; !rc && i < nn; i++) q->q[i] = (float)(a[i] * rdiag[i % (size_t)n]);
    free(a);
    free(tau);
    free(rdiag);
    return rc;
}

pdq_code pdq_orth_make(pdq_orth *q, int n, pdq_rot_kind kind, uint64_t seed, pdq_status *st) {
    memset(q, 0, sizeof *q);
    if (n <= 0) return pdq_fail(st, PDQ_ERR_ARG, "rotation size %d must be positive", n);
    if (kind == PDQ_ROT_HADAMARD && !pdq_is_pow2(n))
        return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "Hadamard rotation of size %d: only powers of two (use random)", n);
    q->n = n;
    uint64_t s = seed * 0x2545F4914F6CDD1Dull + (uint64_t)n;
    pdq_code rc;
    if (kind != PDQ_ROT_RANDOM && pdq_is_pow2(n)) {
        q->hadamard = 1;
        q->signs = malloc((size_t)n * sizeof(float));
        q->scaled = malloc((size_t)n * sizeof(float));
        if (!q->signs || !q->scaled) {
            pdq_orth_free(q);
            return pdq_fail(st, PDQ_ERR_NOMEM, "out of memory");
        }
        float norm = 1.0f / sqrtf((float)n);
        for (int i = 0; i < n; i++) {
            q->signs[i] = (splitmix(&s) >> 63) ? -1.0f : 1.0f;
            q->scaled[i] = q->signs[i] * norm;
        }
        rc = PDQ_OK;
    } else {
        rc = make_random(q, n, &s, st);
    }
    if (rc) pdq_orth_free(q);
    return rc;
}

/* --- applying a Hadamard matrix: row blocks / column strips as pool tasks. Each task computes
 * its rows or columns the same way whichever thread runs it, so results do not depend on the
 * thread count; the SIMD and scalar kernels agree bit for bit (kernels/hadamard.h). --- */

#define ROWS_PER_TASK 32
#define STRIP 32        /* columns per left_t task */
#define STRIP_LD 40     /* scratch row stride: not a power of two, so the strided high stages do
                           not all fall into one cache set */

typedef struct {
    const pdq_orth *q;
    float *x;
    int rows, cols;
    size_t ld;
    float norm;
    float *scratch;     /* [threads][n * STRIP_LD] (left_t) */
    pdq_had_kernels k;  /* the SIMD kernels, or NULL: the scalar reference */
} had_job;

static void right_task(void *ctx, int task, int thread) {
    (void)thread;
    had_job *j = ctx;
    int r0 = task * ROWS_PER_TASK, nr = j->rows - r0 < ROWS_PER_TASK ? j->rows - r0 : ROWS_PER_TASK;
    float *x = j->x + (size_t)r0 * j->ld;
    if (j->k.rows && j->q->n >= 8) j->k.rows(x, nr, j->ld, j->q->n, j->q->signs, j->norm);
    else pdq_had_rows_scalar(x, nr, j->ld, j->q->n, j->q->signs, j->norm);
}

/* One strip of columns: gathered into contiguous scratch (zero padded to a multiple of 8), the
 * transform down its columns, scattered back. */
static void left_task(void *ctx, int task, int thread) {
    had_job *j = ctx;
    int n = j->q->n, c0 = task * STRIP, nc = j->cols - c0 < STRIP ? j->cols - c0 : STRIP, w = (nc + 7) & ~7;
    float *s = j->scratch + (size_t)thread * n * STRIP_LD;
    for (int i = 0; i < n; i++) {
        float *d = s + (size_t)i * STRIP_LD;
        memcpy(d, j->x + (size_t)i * j->ld + c0, (size_t)nc * sizeof(float));
        for (int c = nc; c < w; c++) d[c] = 0.0f;
    }
    if (j->k.cols) j->k.cols(s, n, w, STRIP_LD, j->q->scaled);
    else pdq_had_cols_scalar(s, n, w, STRIP_LD, j->q->scaled);
    for (int i = 0; i < n; i++) memcpy(j->x + (size_t)i * j->ld + c0, s + (size_t)i * STRIP_LD, (size_t)nc * sizeof(float));
}

static pdq_had_kernels simd_kernels(const pdq_orth *q) { return pdq_had_kernels_at(pdq_level_allowed(q->force_scalar, 0, 0)); }

pdq_code pdq_orth_right(const pdq_orth *q, float *x, int rows, size_t ld, pdq_status *st) {
    int n = q->n;
    if (q->hadamard) {
        had_job j = {q, x, rows, n, ld, 1.0f / sqrtf((float)n), NULL, simd_kernels(q)};
        pdq_pool_run(q->pool, (rows + ROWS_PER_TASK - 1) / ROWS_PER_TASK, right_task, &j);
        return PDQ_OK;
    }
    /* dense: in chunks of rows so the scratch stays small */
    const int chunk = 256;
    float *tmp = malloc((size_t)chunk * n * sizeof(float));
    if (!tmp) return pdq_fail(st, PDQ_ERR_NOMEM, "out of memory");
    for (int r0 = 0; r0 < rows; r0 += chunk) {
        int nr = rows - r0 < chunk ? rows - r0 : chunk;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, nr, n, n, 1.0f, x + (size_t)r0 * ld, (int)ld, q->q, n,
                    0.0f, tmp, n);
        for (int r = 0; r < nr; r++) memcpy(x + (size_t)(r0 + r) * ld, tmp + (size_t)r * n, (size_t)n * sizeof(float));
    }
    free(tmp);
    return PDQ_OK;
}

pdq_code pdq_orth_left_t(const pdq_orth *q, float *w, int cols, size_t ld, pdq_status *st) {
    int n = q->n;
    if (q->hadamard) {
        /* Q^T w = H diag(s) w / sqrt(n): each row times s_i / sqrt(n), then the transform down
         * the columns */
        int threads = pdq_pool_threads(q->pool);
        had_job j = {q, w, n, cols, ld, 0.0f, malloc(sizeof(float) * (size_t)threads * n * STRIP_LD), simd_kernels(q)};
        if (!j.scratch) return pdq_fail(st, PDQ_ERR_NOMEM, "out of memory for the rotation's scratch");
        pdq_pool_run(q->pool, (cols + STRIP - 1) / STRIP, left_task, &j);
        free(j.scratch);
        return PDQ_OK;
    }
    const int chunk = 256;
    float *tmp = malloc((size_t)n * chunk * sizeof(float));
    if (!tmp) return pdq_fail(st, PDQ_ERR_NOMEM, "out of memory");
    for (int c0 = 0; c0 < cols; c0 += chunk) {
        int nc = cols - c0 < chunk ? cols - c0 : chunk;
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, n, nc, n, 1.0f, q->q, n, w + c0, (int)ld, 0.0f, tmp, nc);
        for (int i = 0; i < n; i++) memcpy(w + (size_t)i * ld + c0, tmp + (size_t)i * nc, (size_t)nc * sizeof(float));
    }
    free(tmp);
    return PDQ_OK;
}
