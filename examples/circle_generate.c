/* Embedding example: greedy text from an exported Circle pair (model_prefill / model_decode and
 * manifest.json, as `pdq export` or `pdq quantize --export circle-full` writes them).
 *
 *   cc circle_generate.c $(pkg-config --cflags --libs pdq) -o circle_generate
 *   ./circle_generate OUT/circle "Once upon a time" 32
 *
 * The exported directory carries the tokenizer, so it is all a device-side program needs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pdq/circle_export.h>
#include <pdq/eval.h>
#include <pdq/tokenizer.h>

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s CIRCLE_DIR PROMPT [MAX_NEW]\n", argv[0]);
        return 2;
    }
    const char *dir = argv[1], *prompt = argv[2];
    int max_new = argc > 3 ? atoi(argv[3]) : 32;
    pdq_status st = {0};
    pdq_tokenizer *tok = NULL;
    pdq_crt *rt = NULL;
    int32_t *ids = NULL, *all = NULL;
    float *logits = NULL;
    char *text = NULL;
    size_t n = 0;
    int rc = 1;
    if (pdq_tokenizer_load(dir, &tok, &st) != PDQ_OK ||
        pdq_tokenizer_encode(tok, prompt, strlen(prompt), 1, &ids, &n, &st) != PDQ_OK ||
        pdq_crt_open(dir, 1 /* whole-model files */, &rt, &st) != PDQ_OK)
        goto done;
    int V = pdq_crt_vocab(rt), S = pdq_crt_max_seq(rt), eos = pdq_tokenizer_eos_id(tok);
    logits = malloc(sizeof *logits * (size_t)V);
    all = malloc(sizeof *all * (n + (size_t)max_new));
    if (!logits || !all) { pdq_fail(&st, PDQ_ERR_NOMEM, "out of memory"); goto done; }
    memcpy(all, ids, sizeof *ids * n);
    size_t len = n;
    /* The KV cache lives in the runtime: prefill once, then one decode call per new token. */
    if (pdq_crt_prefill(rt, ids, (int)n, logits, &st) != PDQ_OK) goto done;
    for (int i = 0; i < max_new; i++) {
        int32_t next = pdq_argmax(logits, V);
        all[len++] = next;
        if (next == eos || i + 1 == max_new || (int)len >= S) break;
        if (pdq_crt_decode(rt, next, logits, &st) != PDQ_OK) goto done;
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
    pdq_crt_free(rt);
    pdq_tokenizer_free(tok);
    return rc;
}
