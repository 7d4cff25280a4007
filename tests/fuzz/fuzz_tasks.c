/* libFuzzer target for the task readers (pdq_task_load) and the request split. The first byte
 * picks the task (and for mmlu the shots); the rest is written as that task's file under a
 * scratch folder: piqa's input is split at the first 0x01 byte into data and labels, mmlu's into
 * a test and a dev CSV of the first subject. Loaded items are then encoded with the Llama-2
 * fixture tokenizer, exercising the context/continuation split on arbitrary text. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pdq/tasks.h"

static char g_dir[64];
static pdq_tokenizer *g_tok;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    pdq_status st = {0};
    snprintf(g_dir, sizeof g_dir, "/tmp/fuzz_tasks.XXXXXX");
    if (!mkdtemp(g_dir) || pdq_tokenizer_load("tests/fixtures/tokenizers/llama2", &g_tok, &st) != PDQ_OK) {
        fprintf(stderr, "fuzz_tasks: %s (run from the repository root)\n", st.msg);
        abort();
    }
    char p[128];
    snprintf(p, sizeof p, "%s/mmlu", g_dir);
    mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/mmlu/test", g_dir);
    mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/mmlu/dev", g_dir);
    mkdir(p, 0755);
    return 0;
}

static void put(const char *name, const uint8_t *d, size_t n) {
    char p[160];
    snprintf(p, sizeof p, "%s/%s", g_dir, name);
    FILE *f = fopen(p, "wb");
    if (!f) abort();
    if (n) fwrite(d, 1, n, f);
    fclose(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const char *const files[] = {"ARC-Easy-Dev.jsonl", "valid.jsonl", "hellaswag_val_full.txt", "h.jsonl",
                                        "winogrande.jsonl", "lambada_test.jsonl", "mmlu", "boolq.jsonl",
                                        "openbook_qa.jsonl", "m.jsonl"};
    static const char *const tasks[] = {"arc_easy", "piqa", "hellaswag", "hellaswag", "winogrande",
                                        "lambada_openai", "mmlu", "boolq", "openbookqa", "mmlu"};
    if (size < 1) return 0;
    int k = data[0] % 10, shots = (data[0] / 10) % 3;
    const uint8_t *d = data + 1;
    size_t n = size - 1;
    const uint8_t *cut = memchr(d, 1, n);
    size_t head = cut ? (size_t)(cut - d) : n;
    if (k == 1) {
        put("valid.jsonl", d, head);
        put("valid-labels.lst", cut ? cut + 1 : d, cut ? n - head - 1 : 0);
    } else if (k == 6) {
        put("mmlu/test/abstract_algebra_test.csv", d, head);
        put("mmlu/dev/abstract_algebra_dev.csv", cut ? cut + 1 : d, cut ? n - head - 1 : 0);
    } else {
        put(files[k], d, n);
    }
    char path[160];
    snprintf(path, sizeof path, "%s/%s", g_dir, files[k]);
    pdq_task *t = NULL;
    pdq_status st = {0};
    if (pdq_task_load(tasks[k], k == 6 ? g_dir : path, 4, k == 6 ? shots : 0, &t, &st) == PDQ_OK) {
        for (int i = 0; i < t->n_items; i++)
            for (int j = 0; j < t->items[i].n; j++) {
                pdq_ll_request r;
                if (pdq_ll_encode(g_tok, t->items[i].ctx[j], t->items[i].cont[j], j & 1, &r, &st) == PDQ_OK)
                    pdq_ll_request_free(&r);
                (void)pdq_utf8_chars(t->items[i].choice[j]);
            }
        pdq_task_free(t);
    }
    return 0;
}
