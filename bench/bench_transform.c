/* bench_transform: CPU time of R1's randomized Hadamard on TinyLlama-1.1B-shaped tensors (hidden
 * 2048, intermediate 5632, GQA 32/4, vocab 32000, 22 layers), single thread, extrapolated from
 * one layer plus the embedding and lm_head, for the kernel path the CPU takes and for the scalar
 * one. Process CPU time, so the figure holds on a loaded machine. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "pdq/transform.h"

static double cpu_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(void) {
    const int D = 2048, I = 5632, KV = 256, V = 32000, L = 22;
    size_t in_rows = (size_t)D + 2 * KV + 2 * I; /* q, k, v, gate, up: W -> W Q */
    float *a = malloc(sizeof(float) * in_rows * D), *b = malloc(sizeof(float) * (size_t)D * I);
    float *e = malloc(sizeof(float) * (size_t)V * D);
    if (!a || !b || !e) { fprintf(stderr, "bench_transform: out of memory\n"); return 1; }
    for (size_t i = 0; i < in_rows * D; i++) a[i] = (float)(i % 97) * 0.01f;
    for (size_t i = 0; i < (size_t)D * I; i++) b[i] = (float)(i % 89) * 0.01f;
    for (size_t i = 0; i < (size_t)V * D; i++) e[i] = (float)(i % 83) * 0.01f;
    pdq_orth q;
    pdq_status st = {0};
    if (pdq_orth_make(&q, D, PDQ_ROT_HADAMARD, 1, &st)) { fprintf(stderr, "bench_transform: %s\n", st.msg); return 1; }
    for (int scalar = 0; scalar < 2; scalar++) {
        q.force_scalar = scalar;
        double t0 = cpu_now();
        pdq_orth_right(&q, a, (int)in_rows, (size_t)D, &st);
        pdq_orth_left_t(&q, b, I, (size_t)I, &st);      /* down_proj [D, I] */
        pdq_orth_left_t(&q, b, D, (size_t)I, &st);      /* o_proj-sized [D, D] strip of the same buffer */
        double layer = cpu_now() - t0;
        t0 = cpu_now();
        pdq_orth_right(&q, e, V, (size_t)D, &st);
        double table = cpu_now() - t0;
        printf("%s\"%s\": {\"layer_s\": %.3f, \"table_s\": %.3f, \"model_r1_s\": %.2f}", scalar ? ", " : "{",
               scalar ? "scalar" : "simd", layer, table, L * layer + 2 * table);
    }
    printf("}\n");
    pdq_orth_free(&q);
    free(a); free(b); free(e);
    return 0;
}
