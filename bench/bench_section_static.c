/* make bench section "static": the static prefill/decode runtime next to the reference path,
 * same process, same prompt: prefill tokens/s (a full max_seq graph per prefill, as a device
 * runs it) and decode tokens/s. usage: bench_section_static MODEL_DIR [TINYLLAMA_DIR] */
#include <stdio.h>
#include <stdlib.h>

#include "pdq/model.h"
#include "pdq/progress.h"
#include "pdq/runtime.h"

typedef struct { double ref_prefill, ref_decode, st_prefill, st_decode; } speeds;

static int measure(const char *dir, int threads, int max_seq, int prompt, int steps, speeds *out) {
    pdq_status st = {0};
    pdq_model *m = NULL;
    if (pdq_model_load(dir, &m, &st) != PDQ_OK) { fprintf(stderr, "bench static: %s\n", st.msg); return 1; }
    pdq_set_threads(m, threads);
    int V = m->cfg.vocab_size;
    int32_t *ids = malloc((size_t)prompt * sizeof *ids);
    for (int i = 0; i < prompt; i++) ids[i] = 1 + (i * 7919) % (V - 1);
    float *logits = malloc((size_t)V * sizeof *logits);
    int rc = 1;

    /* Reference: dynamic cache. */
    pdq_kvcache kv;
    if (pdq_kvcache_init(&kv, &m->cfg, 1, prompt + steps + 1, &st) != PDQ_OK) goto done;
    double t0 = pdq_now();
    if (pdq_model_forward(m, &kv, 1, prompt, ids, NULL, NULL, logits, 1, &st) != PDQ_OK) goto done;
    out->ref_prefill = prompt / (pdq_now() - t0);
    int32_t tok = 1;
    t0 = pdq_now();
    for (int i = 0; i < steps; i++) {
        tok = 1 + (tok * 31) % (V - 1);
        if (pdq_model_forward(m, &kv, 1, 1, &tok, NULL, NULL, logits, 1, &st) != PDQ_OK) goto done;
    }
    out->ref_decode = steps / (pdq_now() - t0);
    pdq_kvcache_free(&kv);

    /* Static: NPU profile graphs, external cache. */
    pdq_static_opts o;
    pdq_static_opts_default(&o);
    pdq_rt *rt = NULL;
    if (pdq_rt_create(m, 1, max_seq, &o, &rt, &st) != PDQ_OK) goto done;
    const int32_t *rows[1] = {ids};
    int lens[1] = {prompt};
    t0 = pdq_now();
    if (pdq_rt_prefill_rows(rt, 1, rows, lens, PDQ_PAD_LEFT, logits, &st) != PDQ_OK) { pdq_rt_free(rt); goto done; }
    out->st_prefill = prompt / (pdq_now() - t0);
    tok = 1;
    t0 = pdq_now();
    for (int i = 0; i < steps; i++) {
        tok = 1 + (tok * 31) % (V - 1);
        if (pdq_rt_decode(rt, 1, &tok, logits, &st) != PDQ_OK) { pdq_rt_free(rt); goto done; }
    }
    out->st_decode = steps / (pdq_now() - t0);
    pdq_rt_free(rt);
    rc = 0;
done:
    if (rc) fprintf(stderr, "bench static: %s\n", st.msg);
    free(ids);
    free(logits);
    pdq_model_free(m);
    return rc;
}

static void print(const char *name, int max_seq, int prompt, const speeds *s) {
    printf("\"%s\": {\"max_seq\": %d, \"prompt_tokens\": %d, \"reference_prefill_tok_s\": %.1f, "
           "\"static_prefill_tok_s\": %.1f, \"reference_decode_tok_s\": %.2f, \"static_decode_tok_s\": %.2f, "
           "\"static_over_reference_decode\": %.3f}",
           name, max_seq, prompt, s->ref_prefill, s->st_prefill, s->ref_decode, s->st_decode,
           s->st_decode / s->ref_decode);
}

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: bench_section_static MODEL_DIR [TINYLLAMA_DIR]\n"); return 2; }
    speeds a, b;
    if (measure(argv[1], 2, 256, 128, 64, &a)) return 1;
    printf("{");
    print("bundled", 256, 128, &a);
    if (argc > 2) {
        if (measure(argv[2], 2, 128, 64, 8, &b)) return 1;
        printf(", ");
        print("tinyllama_1_1b_shape", 128, 64, &b);
    }
    printf(", \"threads\": 2}\n");
    return 0;
}
