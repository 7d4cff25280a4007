/* make bench section "grouped": the packed kernels on grouped weights against per-channel ones
 * (issue 27: grouped decode and prefill should reach the per-channel path's bytes per second).
 * TinyLlama-1.1B linear shapes, uint4 and uint8, groups of 32 (and 128 for uint4) with f16
 * scales and one shared row of zero points (what a symmetric checkpoint loads to) in the 4-row
 * layout, against the same shape per channel (float32 scale, zero byte per row). GEMV (n = 1,
 * from cache) and GEMM (n = 128), one thread; the two matrices alternate within each timed
 * round and each keeps its best round, so the ratios hold on a machine whose speed drifts.
 * Prints one JSON object: per case, bytes/s of both and grouped / per-channel.
 * usage: bench_section_grouped [ignored...] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/qmatmul.h"
#include "pdq/quant.h"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t); /* this thread's time: other processes' load does not count */
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

typedef struct {
    pdq_qmatrix w;
    uint8_t *codes, *zeros;
    void *scales;
} mat;

/* A rows x cols matrix of pseudo-random codes; group 0: per channel, float32 scales and a zero
 * byte per row; else f16 scales and one shared row of zero points. */
static int mat_make(mat *m, pdq_qtype t, int rows, int cols, int group, pdq_status *st) {
    size_t rb = t == PDQ_QT_U4 ? (size_t)cols / 2 : (size_t)cols;
    int ng = group ? cols / group : 1;
    m->codes = malloc((size_t)rows * rb);
    m->zeros = malloc((size_t)rows * ng);
    m->scales = malloc(sizeof(float) * (size_t)rows * ng);
    if (!m->codes || !m->zeros || !m->scales) return 1;
    for (size_t i = 0; i < (size_t)rows * rb; i++) m->codes[i] = (uint8_t)(i * 2654435761u >> 13);
    pdq_qscale_type stype = group ? PDQ_QSCALE_F16 : PDQ_QSCALE_F32;
    for (size_t i = 0; i < (size_t)rows * ng; i++) {
        m->zeros[i] = t == PDQ_QT_U4 ? 8 : 128;
        pdq_qscale_put(m->scales, stype, i, pdq_qscale_round(0.01f + 1e-5f * (float)(i % 7), stype));
    }
    if (pdq_qmatrix_init_grids(&m->w, t, rows, cols, group ? group : cols, m->codes, m->scales, stype, m->zeros,
                               group ? 0 : (size_t)ng, NULL, "bench", st))
        return 1;
    return pdq_qmatrix_pack_rows4(&m->w, st) != PDQ_OK;
}

static void mat_free(mat *m) {
    pdq_qmatrix_free(&m->w);
    free(m->codes);
    free(m->zeros);
    free(m->scales);
}

int main(void) {
    pdq_status st = {0};
    pdq_qctx ctx = {0};
    static const int shapes[][2] = {{2048, 2048}, {5632, 2048}, {2048, 5632}};
    static const struct { pdq_qtype t; int group; } kinds[] = {{PDQ_QT_U4, 32}, {PDQ_QT_U4, 128}, {PDQ_QT_U8, 32}};
    enum { N = 128 };
    printf("{\"kernel\": \"%s\", \"threads\": 1, \"cases\": [", pdq_qmatmul_path(&ctx));
    int first = 1;
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            int rows = shapes[s][0], cols = shapes[s][1];
            mat a, b;
            if (mat_make(&a, kinds[k].t, rows, cols, 0, &st) || mat_make(&b, kinds[k].t, rows, cols, kinds[k].group, &st)) {
                fprintf(stderr, "bench_section_grouped: %s\n", st.msg[0] ? st.msg : "out of memory");
                return 1;
            }
            float *x = malloc(sizeof(float) * (size_t)cols * N), *y = malloc(sizeof(float) * (size_t)rows * N);
            if (!x || !y) return 1;
            for (size_t i = 0; i < (size_t)cols * N; i++) x[i] = (float)((int)(i % 97) - 48) / 48.0f;
            double best[2][2] = {{1e9, 1e9}, {1e9, 1e9}}; /* [gemv, gemm][per-channel, grouped] */
            int reps = (int)(4e8 / ((double)rows * cols)) + 1;
            for (int r = 0; r < 7; r++)
                for (int n = 0; n < 2; n++)
                    for (int g = 0; g < 2; g++) {
                        const pdq_qmatrix *w = g ? &b.w : &a.w;
                        int calls = n ? 1 : reps;
                        double t0 = now();
                        for (int c = 0; c < calls; c++) pdq_qmatmul(&ctx, w, x, n ? N : 1, y, &st);
                        double dt = (now() - t0) / calls;
                        if (dt < best[n][g]) best[n][g] = dt;
                    }
            double ba = (double)pdq_qmatrix_bytes(&a.w), bb = (double)pdq_qmatrix_bytes(&b.w);
            for (int n = 0; n < 2; n++)
                printf("%s\n {\"type\": \"%s\", \"group\": %d, \"rows\": %d, \"cols\": %d, \"n\": %d, "
                       "\"per_channel_gbps\": %.2f, \"grouped_gbps\": %.2f, \"grouped_over_per_channel\": %.3f, "
                       "\"bits_per_weight\": [%.3f, %.3f]}",
                       first ? "" : ",", kinds[k].t == PDQ_QT_U4 ? "u4" : "u8", kinds[k].group, rows, cols, n ? N : 1,
                       ba / best[n][0] / 1e9, bb / best[n][1] / 1e9, (bb / best[n][1]) / (ba / best[n][0]),
                       8.0 * ba / ((double)rows * cols), 8.0 * bb / ((double)rows * cols)),
                    first = 0;
            free(x);
            free(y);
            mat_free(&a);
            mat_free(&b);
        }
    printf("\n]}\n");
    return 0;
}
