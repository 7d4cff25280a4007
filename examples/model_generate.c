/* Embedding example: greedy text from a model directory held in memory. An HF checkpoint runs
 * the FP32 reference model with its KV cache; a `pdq quantize` output directory (one with
 * ptq.json) runs the static prefill/decode graphs with its weights and int16 fake-quantized
 * activations, the numbers its exported Circle pair computes.
 *
 *   cc model_generate.c $(pkg-config --cflags --libs pdq) -o model_generate
 *   ./model_generate ../shared/models/stories260K "Once upon a time" 32 [MAX_SEQ]   */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pdq/eval.h>
#include <pdq/model.h>
#include <pdq/ptq.h>
#include <pdq/runtime.h>
#include <pdq/tokenizer.h>

/* One sequence through either path: start(prompt) then step(token), each giving next logits. */
typedef struct {
    pdq_model *m;
    pdq_kvcache kv; /* FP32 path */
    pdq_rt *rt;     /* quantized path */
    pdq_ptq *ptq;
} runner;

static pdq_code start(runner *r, const int32_t *ids, int n, float *logits, pdq_status *st) {
    if (r->rt) return pdq_rt_prefill(r->rt, 1, n, ids, NULL, PDQ_PAD_RIGHT, logits, NULL, st);
    return pdq_model_forward(r->m, &r->kv, 1, n, ids, NULL, NULL, logits, 1, st);
}

static pdq_code step(runner *r, int32_t id, float *logits, pdq_status *st) {
    if (r->rt) return pdq_rt_decode(r->rt, 1, &id, logits, st);
    return pdq_model_forward(r->m, &r->kv, 1, 1, &id, NULL, NULL, logits, 1, st);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s MODEL_DIR PROMPT [MAX_NEW] [MAX_SEQ of a quantized dir]\n", argv[0]);
        return 2;
    }
    const char *dir = argv[1], *prompt = argv[2];
    int max_new = argc > 3 ? atoi(argv[3]) : 32, max_seq = argc > 4 ? atoi(argv[4]) : 0;
    pdq_status st = {0};
    runner r = {0};
    pdq_tokenizer *tok = NULL;
    int32_t *ids = NULL, *all = NULL;
    float *logits = NULL;
    char *text = NULL;
    size_t n = 0;
    int rc = 1, cap;
    if (pdq_tokenizer_load(dir, &tok, &st) != PDQ_OK ||
        pdq_tokenizer_encode(tok, prompt, strlen(prompt), 1, &ids, &n, &st) != PDQ_OK ||
        pdq_model_load(dir, &r.m, &st) != PDQ_OK)
        goto done;
    if (pdq_ptq_in_dir(dir)) {
        if (pdq_ptq_open_runtime(r.m, dir, 1, max_seq, NULL, &r.rt, &r.ptq, &st) != PDQ_OK) goto done;
        cap = pdq_rt_max_seq(r.rt);
    } else {
        cap = (int)n + max_new;
        if (pdq_kvcache_init(&r.kv, &r.m->cfg, 1, cap, &st) != PDQ_OK) goto done;
    }
    int V = r.m->cfg.vocab_size, eos = pdq_tokenizer_eos_id(tok);
    logits = malloc(sizeof *logits * (size_t)V);
    all = malloc(sizeof *all * (n + (size_t)max_new));
    if (!logits || !all) { pdq_fail(&st, PDQ_ERR_NOMEM, "out of memory"); goto done; }
    memcpy(all, ids, sizeof *ids * n);
    size_t len = n;
    if (start(&r, ids, (int)n, logits, &st) != PDQ_OK) goto done;
    for (int i = 0; i < max_new; i++) {
        int32_t next = pdq_argmax(logits, V);
        all[len++] = next;
        if (next == eos || i + 1 == max_new || (int)len >= cap) break;
        if (step(&r, next, logits, &st) != PDQ_OK) goto done;
    }
    if (pdq_tokenizer_decode(tok, all, len, 1, &text, &st) != PDQ_OK) goto done;
    printf("%s\n", text);
    rc = 0;
done:
    if (rc) fprintf(stderr, "%s: %s\n", argv[0], st.msg);
    free(text);
    free(all);
    free(logits);
    free(ids);
    pdq_rt_free(r.rt);
    pdq_ptq_free(r.ptq);
    pdq_kvcache_free(&r.kv);
    pdq_model_free(r.m);
    pdq_tokenizer_free(tok);
    return rc;
}
