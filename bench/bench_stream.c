/* STREAM-like triad a = b + s*c over arrays far larger than the caches; reports the best
 * bandwidth (GB/s, 3 arrays' bytes per pass) over several passes, for 1..N threads, as JSON. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pdq/progress.h"

typedef struct {
    float *a, *b, *c;
    size_t from, to;
} slice;

static void *triad(void *p) {
    slice *s = p;
    const float k = 3.0f;
    for (size_t i = s->from; i < s->to; i++) s->a[i] = s->b[i] + k * s->c[i];
    return NULL;
}

static double run(float *a, float *b, float *c, size_t n, int threads) {
    pthread_t tid[64];
    slice sl[64];
    double t0 = pdq_now();
    for (int t = 0; t < threads; t++) {
        sl[t] = (slice){a, b, c, n * (size_t)t / (size_t)threads, n * (size_t)(t + 1) / (size_t)threads};
        pthread_create(&tid[t], NULL, triad, &sl[t]);
    }
    for (int t = 0; t < threads; t++) pthread_join(tid[t], NULL);
    return pdq_now() - t0;
}

int main(int argc, char **argv) {
    size_t mb = argc > 1 ? (size_t)atol(argv[1]) : 256; /* per array */
    int max_threads = argc > 2 ? atoi(argv[2]) : 2;
    if (max_threads < 1 || max_threads > 64) max_threads = 2;
    size_t n = mb * 1024 * 1024 / sizeof(float);
    float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b), *c = malloc(n * sizeof *c);
    if (!a || !b || !c) {
        fprintf(stderr, "bench_stream: cannot allocate 3 x %zu MB\n", mb);
        return 1;
    }
    for (size_t i = 0; i < n; i++) { a[i] = 0; b[i] = 1; c[i] = 2; }
    printf("{\"array_mb\": %zu, \"triad_gbps\": {", mb);
    for (int th = 1; th <= max_threads; th++) {
        double best = 1e30;
        for (int rep = 0; rep < 5; rep++) {
            double t = run(a, b, c, n, th);
            if (t < best) best = t;
        }
        printf("%s\"%d\": %.2f", th > 1 ? ", " : "", th, 3.0 * (double)n * sizeof(float) / best / 1e9);
    }
    printf("}}\n");
    free(a); free(b); free(c);
    return 0;
}
