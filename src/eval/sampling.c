#include "pdq/sampling.h"

#include <math.h>
#include <stdlib.h>

#include "pdq/eval.h"

void pdq_sampler_init(pdq_sampler *s, double temperature, double top_p, unsigned long long seed) {
    s->temperature = temperature;
    s->top_p = top_p;
    s->rng = seed * 0x9E3779B97F4A7C15ull + 1;
}

static double next_uniform(pdq_sampler *s) {
    unsigned long long x = (s->rng += 0x9E3779B97F4A7C15ull);
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    x ^= x >> 31;
    return (double)(x >> 11) * (1.0 / 9007199254740992.0);
}

typedef struct { double p; int id; } prob;

static int by_prob_desc(const void *a, const void *b) {
    const prob *x = a, *y = b;
    if (x->p != y->p) return x->p < y->p ? 1 : -1;
    return x->id - y->id;
}

int pdq_sample(pdq_sampler *s, const float *logits, int vocab) {
    if (s->temperature <= 0) return pdq_argmax(logits, vocab);
    prob *p = malloc((size_t)vocab * sizeof *p);
    if (!p) return pdq_argmax(logits, vocab);
    float mx = logits[pdq_argmax(logits, vocab)];
    double sum = 0;
    for (int i = 0; i < vocab; i++) {
        p[i].p = exp(((double)logits[i] - mx) / s->temperature);
        p[i].id = i;
        sum += p[i].p;
    }
    qsort(p, (size_t)vocab, sizeof *p, by_prob_desc);
    /* Keep the smallest prefix whose mass reaches top_p (always at least one token). */
    double kept = 0;
    int k = 0;
    while (k < vocab && (k == 0 || kept < s->top_p * sum)) kept += p[k++].p;
    double r = next_uniform(s) * kept, acc = 0;
    int choice = p[k - 1].id;
    for (int i = 0; i < k; i++) {
        acc += p[i].p;
        if (r < acc) { choice = p[i].id; break; }
    }
    free(p);
    return choice;
}
