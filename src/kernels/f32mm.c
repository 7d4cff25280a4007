/* The f32 matmul's driver and scalar path: tasks are chunks of W's rows (each reads its chunk
 * once from memory and keeps it in L2 while every row of x passes), run on the pool. */
#include <math.h>

#include "kernels/f32mm.h"
#include "kernels/f32mm_internal.h"

static const f32mm_block_fn k_block[PDQ_LEVEL_COUNT] = {
    [PDQ_LEVEL_SCALAR] = f32mm_block_scalar,
#ifdef PDQ_F32MM_HAVE_X86
    [PDQ_LEVEL_AVX2] = f32mm_block_avx2,
    [PDQ_LEVEL_AVX512] = f32mm_block_avx512,
#endif
};

pdq_level pdq_f32mm_level(pdq_level allowed) {
    unsigned have = 0;
    for (int l = 0; l < PDQ_LEVEL_COUNT; l++) have |= (unsigned)(k_block[l] != NULL) << l;
    return pdq_level_pick(allowed, have);
}

/* One output element in f32mm.h's order. */
static float dot16(const float *x, const float *w, int in) {
    float acc[16] = {0};
    for (int k0 = 0; k0 < in; k0 += 16)
        for (int j = 0; j < 16; j++) {
            int k = k0 + j;
            acc[j] = k < in ? fmaf(x[k], w[k], acc[j]) : fmaf(0.0f, 0.0f, acc[j]);
        }
    for (int l = 0; l < 8; l++) acc[l] += acc[l + 8];
    for (int l = 0; l < 4; l++) acc[l] += acc[l + 4];
    for (int l = 0; l < 2; l++) acc[l] += acc[l + 2];
    return acc[0] + acc[1];
}

void f32mm_block_scalar(const float *x, int nx, const float *w, int nw, int in, float *y, size_t ldy) {
    for (int i = 0; i < nx; i++)
        for (int j = 0; j < nw; j++) y[(size_t)i * ldy + j] = dot16(x + (size_t)i * in, w + (size_t)j * in, in);
}

typedef struct {
    f32mm_block_fn block;
    float *y;
    const float *x, *w;
    int n, out, in, chunk;
} job;

static void run_task(void *ctx, int task, int thread) {
    (void)thread;
    const job *j = ctx;
    int r0 = task * j->chunk, r1 = r0 + j->chunk < j->out ? r0 + j->chunk : j->out;
    j->block(j->x, j->n, j->w + (size_t)r0 * j->in, r1 - r0, j->in, j->y + r0, (size_t)j->out);
}

/* Rows of W per task: a multiple of 8 (the tiles' widths) whose rows fit half of a 1 MiB L2,
 * at most 64, and small enough to give each thread several tasks. */
static int chunk_rows(int out, int in, int threads) {
    int c = (int)((512u * 1024u) / ((unsigned)in * sizeof(float)));
    if (c > 64) c = 64;
    int per = out / (4 * threads);
    if (threads > 1 && per < c) c = per;
    c &= ~7;
    return c < 8 ? 8 : c;
}

void pdq_f32mm(pdq_pool *pool, pdq_level level, float *y, const float *x, const float *w, int n, int out,
               int in) {
    if (n <= 0 || out <= 0) return;
    job j = {k_block[pdq_f32mm_level(level)], y, x, w, n, out, in, chunk_rows(out, in, pdq_pool_threads(pool))};
    int tasks = (out + j.chunk - 1) / j.chunk;
    pdq_pool_run(pool, tasks, run_task, &j);
}
