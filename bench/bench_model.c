/* Reference-model speed: load time, prefill tokens/s, decode tokens/s and the bytes of f32
 * weights a decode step must read (to compare with memory bandwidth). Prints one JSON object.
 * usage: bench_model MODEL_DIR THREADS [PREFILL_TOKENS] [DECODE_STEPS] [BANDWIDTH_GBPS]
 * With the machine's measured bandwidth it also prints decode's achieved fraction of it. */
#include <stdio.h>
#include <stdlib.h>

#include "pdq/model.h"
#include "pdq/progress.h"

/* Weight bytes one decode step streams: every layer matrix, the norms and lm_head. */
static double decode_weight_bytes(const pdq_config *c) {
    double per_layer = 0;
    for (int id = 0; id < PDQ_LIN_COUNT; id++) {
        int out, in;
        pdq_linear_shape(c, (pdq_linear_id)id, &out, &in);
        per_layer += (double)out * in;
    }
    per_layer += 2.0 * c->hidden_size;
    return 4.0 * (per_layer * c->n_layers + (double)c->vocab_size * c->hidden_size + c->hidden_size);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: bench_model MODEL_DIR THREADS [PREFILL_TOKENS] [DECODE_STEPS]\n");
        return 2;
    }
    int threads = atoi(argv[2]);
    int n_prefill = argc > 3 ? atoi(argv[3]) : 128, n_decode = argc > 4 ? atoi(argv[4]) : 32;
    pdq_status st = {0};
    pdq_model *m = NULL;
    double t0 = pdq_now();
    if (pdq_model_load(argv[1], &m, &st) != PDQ_OK) {
        fprintf(stderr, "bench_model: %s\n", st.msg);
        return 1;
    }
    double load_s = pdq_now() - t0;
    pdq_set_threads(m, threads);
    if (n_prefill > m->cfg.max_position_embeddings - n_decode) n_prefill = m->cfg.max_position_embeddings - n_decode;
    int V = m->cfg.vocab_size;
    int32_t *ids = malloc((size_t)n_prefill * sizeof *ids);
    for (int i = 0; i < n_prefill; i++) ids[i] = 1 + (i * 7919) % (V - 1);
    float *logits = malloc((size_t)V * sizeof *logits);
    pdq_kvcache kv;
    if (pdq_kvcache_init(&kv, &m->cfg, 1, n_prefill + n_decode + 1, &st) != PDQ_OK) return 1;
    /* Prefill: all prompt tokens at once, logits of the last only (as generation does). */
    t0 = pdq_now();
    if (pdq_model_forward(m, &kv, 1, n_prefill, ids, NULL, NULL, logits, 1, &st) != PDQ_OK) {
        fprintf(stderr, "bench_model: %s\n", st.msg);
        return 1;
    }
    double prefill_s = pdq_now() - t0;
    /* One untimed decode step warms the GEMV path, then the timed steps. */
    int32_t tok = 1;
    pdq_model_forward(m, &kv, 1, 1, &tok, NULL, NULL, logits, 1, &st);
    t0 = pdq_now();
    for (int i = 0; i < n_decode - 1; i++) {
        tok = 1 + (tok * 31) % (V - 1);
        if (pdq_model_forward(m, &kv, 1, 1, &tok, NULL, NULL, logits, 1, &st) != PDQ_OK) {
            fprintf(stderr, "bench_model: %s\n", st.msg);
            return 1;
        }
    }
    double decode_s = (pdq_now() - t0) / (n_decode - 1);
    double bytes = decode_weight_bytes(&m->cfg);
    double bw = argc > 5 ? atof(argv[5]) : 0;
    printf("{\"threads\": %d, \"params\": %lld, \"load_s\": %.3f, \"prefill_tokens\": %d, "
           "\"prefill_tok_s\": %.1f, \"decode_tok_s\": %.2f, \"decode_weight_bytes\": %.0f, "
           "\"decode_gbps\": %.2f, \"decode_bandwidth_fraction\": %.3f}\n",
           threads, pdq_config_param_count(&m->cfg), load_s, n_prefill, n_prefill / prefill_s,
           1.0 / decode_s, bytes, bytes / decode_s / 1e9,
           bw > 0 ? bytes / decode_s / 1e9 / bw : 0.0);
    pdq_kvcache_free(&kv);
    free(ids);
    free(logits);
    pdq_model_free(m);
    return 0;
}
