/* Next-token choice: greedy (temperature 0) or temperature + nucleus (top-p) sampling. */
#ifndef PDQ_SAMPLING_H
#define PDQ_SAMPLING_H

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    double temperature; /* 0: greedy */
    double top_p;       /* 1: no truncation */
    unsigned long long rng;
} pdq_sampler;

void pdq_sampler_init(pdq_sampler *s, double temperature, double top_p, unsigned long long seed);
/* Chooses a token from logits[vocab]; deterministic for a given seed. */
int pdq_sample(pdq_sampler *s, const float *logits, int vocab);

#ifdef __cplusplus
}
#endif
#endif
