/* make bench section "gptq": Hessian accumulation GFLOP/s (SYRK, 512-row batches), GPTQ time for
 * one decoder layer of the given checkpoint's shape (random weights, Hessian of random correlated
 * inputs; 1 and 2 threads), and the time and peak RSS of a whole-model GPTQ quantization of that
 * checkpoint with 8 x 512 calibration windows (random ids; lazily loaded model as pdq quantize
 * uses; run in a child process so its peak RSS is its own). Prints one JSON object.
 * usage: bench_section_gptq MODEL_DIR BIG_MODEL_DIR   (the last only with env PDQ_BENCH_GPTQ_WHOLE=1) */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pdq/config.h"
#include "pdq/progress.h"
#include "pdq/quant.h"

static uint64_t rng(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static float frand(uint64_t *s) { return (float)((double)(rng(s) >> 11) / 9007199254740992.0 * 2.0 - 1.0); }

/* Random inputs with a common component so H is well conditioned but not diagonal. */
static void fill_x(float *x, int rows, int n, uint64_t *s) {
    for (int r = 0; r < rows; r++) {
        float common = frand(s);
        for (int c = 0; c < n; c++) x[(size_t)r * n + c] = frand(s) + 0.3f * common;
    }
}

static double hessian_gflops(int n, int threads) {
    openblas_set_num_threads(threads);
    int rows = 512, batches = n > 4096 ? 2 : 6;
    uint64_t s = 1;
    float *x = malloc((size_t)rows * n * sizeof(float));
    pdq_hessian h;
    if (!x || pdq_hessian_init(&h, n, NULL)) { free(x); return 0; }
    fill_x(x, rows, n, &s);
    double t0 = pdq_now();
    for (int b = 0; b < batches; b++) pdq_hessian_add(&h, x, rows, NULL);
    double t = pdq_now() - t0;
    pdq_hessian_free(&h);
    free(x);
    return (double)batches * rows * n * (n + 1.0) / t * 1e-9; /* SYRK: rows*n*(n+1) flops */
}

/* GPTQ of the seven linears of one layer; returns seconds (-1 on error). */
static double gptq_layer(const pdq_config *c, int threads, int bits) {
    openblas_set_num_threads(threads);
    uint64_t s = 2;
    double total = 0;
    for (int id = 0; id < PDQ_LIN_COUNT; id++) {
        int out, in;
        pdq_linear_shape(c, (pdq_linear_id)id, &out, &in);
        float *w = malloc((size_t)out * in * sizeof(float)), *x = malloc((size_t)512 * in * sizeof(float));
        float *H = malloc((size_t)in * in * sizeof(float));
        pdq_hessian h;
        if (!w || !x || !H || pdq_hessian_init(&h, in, NULL)) return -1;
        for (size_t i = 0; i < (size_t)out * in; i++) w[i] = 0.02f * frand(&s);
        fill_x(x, 512, in, &s);
        pdq_hessian_add(&h, x, 512, NULL);
        pdq_hessian_get(&h, H);
        pdq_hessian_free(&h);
        pdq_gptq_opts o;
        pdq_gptq_opts_default(&o, bits);
        pdq_qresult r;
        double t0 = pdq_now();
        pdq_code rc = pdq_gptq(&o, w, out, in, H, "bench", &r, NULL);
        total += pdq_now() - t0;
        if (!rc) pdq_qresult_free(&r);
        free(w); free(x); free(H);
        if (rc) return -1;
    }
    return total;
}

/* Whole-model GPTQ (w4, 8 x 512) in a child; fills seconds and peak RSS (MiB). */
static int whole_model(const char *dir, int threads, double *secs, double *rss_mb) {
    double t0 = pdq_now();
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        pdq_status st = {0};
        pdq_model *m;
        /* lazy: as pdq quantize does, one layer's f32 weights in memory at a time */
        if (pdq_model_load_lazy(dir, &m, &st)) { fprintf(stderr, "bench gptq: %s\n", st.msg); _exit(1); }
        pdq_set_threads(m, threads);
        int ns = 8, T = 512 < m->cfg.max_position_embeddings ? 512 : m->cfg.max_position_embeddings;
        int32_t *ids = malloc((size_t)ns * T * sizeof(int32_t));
        uint64_t s = 3;
        for (int i = 0; i < ns * T; i++) ids[i] = (int32_t)(rng(&s) % (uint64_t)m->cfg.vocab_size);
        pdq_quant_opts o;
        pdq_quant_opts_default(&o, 4);
        o.quiet = 1;
        pdq_qmodel q;
        if (pdq_quantize_model(m, &o, ids, ns, T, &q, &st)) { fprintf(stderr, "bench gptq: %s\n", st.msg); _exit(1); }
        pdq_qmodel_free(&q);
        free(ids);
        pdq_model_free(m);
        _exit(0);
    }
    int status;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) || WEXITSTATUS(status)) return -1;
    *secs = pdq_now() - t0;
    *rss_mb = (double)ru.ru_maxrss / 1024.0;
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: bench_section_gptq MODEL_DIR BIG_MODEL_DIR\n");
        return 2;
    }
    pdq_config c;
    pdq_status st = {0};
    if (pdq_config_load(argv[2], &c, &st)) { fprintf(stderr, "bench gptq: %s\n", st.msg); return 1; }
    int D = c.hidden_size, Im = c.intermediate_size;
    double h1 = hessian_gflops(D, 1), h2 = hessian_gflops(D, 2), hi1 = hessian_gflops(Im, 1), hi2 = hessian_gflops(Im, 2);
    fprintf(stderr, "bench: gptq one layer [D %d, I %d], 1 thread\n", D, Im);
    double l1 = gptq_layer(&c, 1, 4);
    fprintf(stderr, "bench: gptq one layer, 2 threads\n");
    double l2 = gptq_layer(&c, 2, 4);
    printf("{\"hessian_gflops\": {\"n_%d\": {\"threads_1\": %.1f, \"threads_2\": %.1f}, \"n_%d\": {\"threads_1\": %.1f, "
           "\"threads_2\": %.1f}}, \"gptq_layer_s\": {\"shape\": \"D %d, I %d\", \"threads_1\": %.2f, \"threads_2\": %.2f}",
           D, h1, h2, Im, hi1, hi2, D, Im, l1, l2);
    /* about 40 minutes on 2 cores: only when asked (make bench GPTQ_WHOLE=1) */
    const char *env = getenv("PDQ_BENCH_GPTQ_WHOLE");
    if (!env || atoi(env) == 0) {
        fprintf(stderr, "bench: whole-model GPTQ skipped (make bench GPTQ_WHOLE=1 runs it, about 40 min on 2 cores)\n");
        printf(", \"whole_model_8x512\": {\"skipped\": \"make bench GPTQ_WHOLE=1\"}");
    } else {
        fprintf(stderr, "bench: whole-model GPTQ w4 of %s with 8 x 512 windows (2 threads)\n", argv[2]);
        double secs = 0, rss = 0;
        if (whole_model(argv[2], 2, &secs, &rss) == 0)
            printf(", \"whole_model_8x512\": {\"threads\": 2, \"seconds\": %.1f, \"peak_rss_mib\": %.0f}", secs, rss);
        else
            printf(", \"whole_model_8x512\": null");
    }
    printf("}\n");
    (void)argv[1];
    return 0;
}
