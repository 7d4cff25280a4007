/* Packed-kernel micro benchmark: GEMV bandwidth and GEMM throughput on TinyLlama-1.1B linear
 * shapes. build/bench_qmatmul [threads] [n_gemm] [kernel] [group]; kernel: auto, scalar, avx2,
 * avx2-int (no VNNI) or f32 (the float kernels, not the integer path); group 0: per-channel. Prints one line
 * per case (best of 5). Codes take the 4-row layout where it applies (as the packed loader
 * does), row-major with BENCH_ROWS=1. BENCH_DRAM=MB: the GEMV also cycles over copies of the
 * matrix filling MB, so it streams from memory as decode does (GB/s of packed bytes).
 * BENCH_COMPACT=f16|bf16: grouped grids as a symmetric checkpoint keeps them (two-byte scales,
 * one shared row of zero points) instead of float32 scales and a zero byte per group. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cblas.h>

#include "kernels/qmatmul.h"
#include "pdq/quant.h"

static double now(void) {
    struct timespec t;
    clock_gettime(getenv("BENCH_CPUTIME") ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 1, ngemm = argc > 2 ? atoi(argv[2]) : 128;
    const char *kern = argc > 3 ? argv[3] : "auto";
    int group = argc > 4 ? atoi(argv[4]) : 0;
    if (threads < 1 || ngemm < 1 || group < 0) { /* the GEMV uses the first of the GEMM's rows */
        fprintf(stderr, "usage: bench_qmatmul [threads >= 1] [n_gemm >= 1] [kernel] [group >= 0]\n");
        return 2;
    }
    pdq_status st = {0};
    pdq_pool *pool = pdq_pool_create(threads, &st);
    pdq_qctx ctx = {.pool = pool, .force_scalar = strcmp(kern, "scalar") == 0,
                    .no_avx512 = strcmp(kern, "avx2") == 0 || strcmp(kern, "avx2-int") == 0,
                    .no_vnni = strcmp(kern, "avx2-int") == 0, .no_int = strcmp(kern, "f32") == 0};
    printf("kernel %s, group %d, %d threads\n", pdq_qmatmul_path(&ctx), group, threads);
    static const int shapes[][2] = {{2048, 2048}, {5632, 2048}, {2048, 5632}, {32000, 2048}};
    for (int t = 0; t < 2; t++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            int rows = shapes[s][0], cols = shapes[s][1];
            size_t rb = t == 0 ? (size_t)(cols + 1) / 2 : (size_t)cols;
            int gr = group > 0 && group < cols ? group : cols, ng = (cols + gr - 1) / gr;
            uint8_t *codes = malloc((size_t)rows * rb), *zeros = malloc((size_t)rows * ng);
            float *scales = malloc(sizeof(float) * (size_t)rows * ng);
            for (size_t i = 0; i < (size_t)rows * rb; i++) codes[i] = (uint8_t)(i * 2654435761u >> 13);
            for (int i = 0; i < rows * ng; i++) { zeros[i] = t == 0 ? 8 : 128; scales[i] = 0.01f; }
            const char *cmp = getenv("BENCH_COMPACT");
            pdq_qscale_type stype = !cmp ? PDQ_QSCALE_F32 : !strcmp(cmp, "bf16") ? PDQ_QSCALE_BF16 : PDQ_QSCALE_F16;
            if (stype != PDQ_QSCALE_F32) /* the two-byte scales in place of the float ones */
                for (int i = 0; i < rows * ng; i++) pdq_qscale_put(scales, stype, (size_t)i, pdq_qscale_round(0.01f, stype));
            pdq_qmatrix w;
            if (pdq_qmatrix_init_grids(&w, t == 0 ? PDQ_QT_U4 : PDQ_QT_U8, rows, cols, group, codes, scales, stype, zeros,
                                       stype != PDQ_QSCALE_F32 ? 0 : (size_t)ng, NULL, "b", &st)) return 1;
            int rows4 = !getenv("BENCH_ROWS");
            if (rows4 && pdq_qmatrix_pack_rows4(&w, &st)) return 1;
            int ncopy = getenv("BENCH_DRAM") ? (int)(atof(getenv("BENCH_DRAM")) * 1e6 / (double)pdq_qmatrix_bytes(&w)) + 1 : 0;
            pdq_qmatrix *copies = ncopy ? calloc((size_t)ncopy, sizeof *copies) : NULL;
            for (int i = 0; i < ncopy; i++) {
                copies[i] = w;
                copies[i].owned = copies[i].owned_codes = NULL;
                uint8_t *cc = malloc(rows4 ? pdq_qmatrix_rows4_bytes(&w) : (size_t)rows * rb);
                memcpy(cc, w.codes, rows4 ? pdq_qmatrix_rows4_bytes(&w) : (size_t)rows * rb);
                copies[i].codes = cc;
                copies[i].owned_codes = cc;
            }
            float *x = malloc(sizeof(float) * (size_t)cols * ngemm), *y = malloc(sizeof(float) * (size_t)rows * ngemm);
            for (size_t i = 0; i < (size_t)cols * ngemm; i++) x[i] = (float)((i % 97) - 48) / 48.0f;
            double best1 = 1e9, bestn = 1e9;
            for (int r = 0; r < 5; r++) {
                double t0 = now();
                for (int k = 0; k < 10; k++) pdq_qmatmul(&ctx, &w, x, 1, y, &st);
                double t1 = now();
                if ((t1 - t0) / 10 < best1) best1 = (t1 - t0) / 10;
            }
            for (int r = 0; r < 3; r++) {
                double t0 = now();
                pdq_qmatmul(&ctx, &w, x, ngemm, y, &st);
                double t1 = now();
                if (t1 - t0 < bestn) bestn = t1 - t0;
            }
            double bestd = 1e9;
            for (int r = 0; ncopy && r < 3; r++) {
                double t0 = now();
                for (int k = 0; k < ncopy; k++) pdq_qmatmul(&ctx, &copies[k], x, 1, y, &st);
                double t1 = now();
                if ((t1 - t0) / ncopy < bestd) bestd = (t1 - t0) / ncopy;
            }
            for (int i = 0; i < ncopy; i++) free(copies[i].owned_codes);
            free(copies);
            if (ncopy) printf("%s %5d x %5d  %s gemv from DRAM (%d copies) %.3f ms %.1f GB/s\n", t ? "u8" : "u4", rows, cols,
                              rows4 ? "rows4" : "rows", ncopy, bestd * 1e3, (double)pdq_qmatrix_bytes(&w) / bestd / 1e9);
            double bestb = 1e9;
            if (t == 0 && getenv("BENCH_BLAS")) {
                float *wf = malloc(sizeof(float) * (size_t)rows * cols);
                for (size_t i = 0; i < (size_t)rows * cols; i++) wf[i] = (float)(i % 13) * 0.01f;
                openblas_set_num_threads(threads);
                for (int r = 0; r < 3; r++) {
                    double t0 = now();
                    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, ngemm, rows, cols, 1.0f, x, cols, wf, cols, 0.0f, y, rows);
                    double t1 = now();
                    if (t1 - t0 < bestb) bestb = t1 - t0;
                }
                free(wf);
                printf("f32 openblas sgemm n=%d %.1f GFLOP/s\n", ngemm, 2.0 * rows * cols * ngemm / bestb / 1e9);
            }
            printf("%s %5d x %5d  gemv %.3f ms %.1f GB/s   gemm n=%d %.1f ms %.1f GFLOP/s\n", t ? "u8" : "u4", rows, cols,
                   best1 * 1e3, (double)pdq_qmatrix_bytes(&w) / best1 / 1e9, ngemm, bestn * 1e3,
                   2.0 * rows * cols * ngemm / bestn / 1e9);
            pdq_qmatrix_free(&w); /* its 4-row copy (the arrays below are the caller's) */
            free(codes); free(zeros); free(scales); free(x); free(y);
        }
    pdq_pool_free(pool);
    return 0;
}
