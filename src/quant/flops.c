/* The quantizer's phases by time and FLOPs (pdq_qprof in pdq/quant.h) and the sgemm and dgemm
 * rates they are measured against. FLOPs are counted as the code computes, one multiply-add = 2:
 *   layer forward, T tokens: 2 T sum(out * in) over its 7 linears + 4 T^2 hd H for attention
 *     (QK^T and PV over the full T x T square: the causal mask is applied after the GEMM, so
 *     nothing is halved); norms, RoPE, softmax, SiLU and residuals are not counted
 *   Hessian add of `rows` rows of n inputs: ssyrk, rows n (n + 1)
 *   Cholesky factor of inv(H), n x n: dpotrf n^3/3 + dtrtri n^3/3 (gptq_hinv.c's reversal trick),
 *     once per Hessian: k, v and up reuse the factor of q's and gate's
 *   column loop, W [rows, n], blocks of bs: 2 rows (i2 - j - 1) per column j (its rank-1 update
 *     inside the block) + 2 rows count (n - i2) per block (the lazy sgemm); quantizing itself not counted
 *   loss tr(dW H dW^T): 2 rows n^2 (one sgemm), for GPTQ's result and for its RTN reference. */
#include <cblas.h>
#include <stdlib.h>

#include "pdq/family.h"
#include "pdq/progress.h"
#include "pdq/quant.h"

static const char *const k_names[PDQ_QP_COUNT] = {"forward", "hessian", "gptq_prepare", "cholesky_inverse",
                                                  "column_loop", "loss", "rtn"};

const char *pdq_qphase_name(pdq_qphase p) { return p >= 0 && p < PDQ_QP_COUNT ? k_names[p] : "?"; }

void pdq_qprof_add(pdq_qprof *prof, pdq_qphase p, double seconds, double flops) {
    if (!prof || p < 0 || p >= PDQ_QP_COUNT) return;
    prof->seconds[p] += seconds;
    prof->flops[p] += flops;
}

static double linear_flops(const pdq_config *c, pdq_linear_id id, int T) {
    int out, in;
    pdq_linear_shape(c, id, &out, &in);
    return 2.0 * T * (double)out * in;
}

double pdq_layer_forward_flops(const pdq_config *c, int T, pdq_linear_id stop) {
    if (stop == PDQ_LIN_Q) return 0; /* the input of q/k/v is the first norm's output */
    double f = linear_flops(c, PDQ_LIN_Q, T) + linear_flops(c, PDQ_LIN_K, T) + linear_flops(c, PDQ_LIN_V, T) +
               4.0 * (double)T * T * c->head_dim * c->n_heads;
    if (stop == PDQ_LIN_O) return f;
    f += linear_flops(c, PDQ_LIN_O, T);
    if (stop == PDQ_LIN_GATE) return f;
    f += linear_flops(c, PDQ_LIN_GATE, T) + linear_flops(c, PDQ_LIN_UP, T);
    if (stop == PDQ_LIN_DOWN) return f;
    return f + linear_flops(c, PDQ_LIN_DOWN, T);
}

/* One n x n x n GEMM of gemm_probe's in float or double. */
static void probe_call(int n, int dbl, const void *a, const void *b, void *c) {
    if (dbl)
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, a, n, b, n, 0.0, c, n);
    else
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
}

static pdq_code gemm_probe(int n, int dbl, double seconds, double *gflops, pdq_status *st) {
    const char *what = dbl ? "dgemm" : "sgemm";
    *gflops = 0;
    if (n <= 0) return pdq_fail(st, PDQ_ERR_ARG, "%s probe: size %d", what, n);
    size_t nn = (size_t)n * n, es = dbl ? sizeof(double) : sizeof(float);
    void *a = malloc(nn * es), *b = malloc(nn * es), *c = malloc(nn * es);
    if (!a || !b || !c) {
        free(a); free(b); free(c);
        return pdq_fail(st, PDQ_ERR_NOMEM, "%s probe: out of memory for %d x %d", what, n, n);
    }
    for (size_t i = 0; i < nn; i++) { /* small values: no denormals, no overflow */
        double va = (double)((i * 7 + 3) % 17) * 0.01, vb = (double)((i * 5 + 1) % 13) * 0.01;
        if (dbl) {
            ((double *)a)[i] = va;
            ((double *)b)[i] = vb;
        } else {
            ((float *)a)[i] = (float)va;
            ((float *)b)[i] = (float)vb;
        }
    }
    /* one call to warm the caches and the BLAS threads, then the mean rate over the window */
    probe_call(n, dbl, a, b, c);
    double t0 = pdq_now(), t = 0;
    long reps = 0;
    do {
        probe_call(n, dbl, a, b, c);
        reps++;
        t = pdq_now() - t0;
    } while (t < seconds);
    *gflops = 2.0 * n * (double)nn * reps / t / 1e9;
    free(a); free(b); free(c);
    return PDQ_OK;
}

pdq_code pdq_sgemm_probe(int n, double seconds, double *gflops, pdq_status *st) {
    return gemm_probe(n, 0, seconds, gflops, st);
}

pdq_code pdq_dgemm_probe(int n, double seconds, double *gflops, pdq_status *st) {
    return gemm_probe(n, 1, seconds, gflops, st);
}
