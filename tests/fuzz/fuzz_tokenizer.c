/* libFuzzer target for the tokenizer (run from the repository root). First byte picks the mode:
 *   0/1: encode the rest as text with the Llama-2 / Llama-3 fixture tokenizer, then decode it;
 *   2/3: decode the rest as little-endian int32 ids (mod vocab) with Llama-2 / Llama-3;
 *   4:   load the rest as a tokenizer.json and, if it loads, encode/decode a short text. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pdq/tokenizer.h"

static pdq_tokenizer *fixture(int which) {
    static pdq_tokenizer *t[2]; /* loaded once per process: Llama-3 takes ~1 s */
    static const char *const dirs[2] = {"tests/fixtures/tokenizers/llama2", "tests/fixtures/tokenizers/llama3"};
    if (!t[which]) {
        pdq_status st = {0};
        if (pdq_tokenizer_load(dirs[which], &t[which], &st) != PDQ_OK) {
            fprintf(stderr, "fuzz_tokenizer: %s (run from the repository root)\n", st.msg);
            abort();
        }
    }
    return t[which];
}

static void roundtrip(const pdq_tokenizer *t, const char *text, size_t len) {
    pdq_status st = {0};
    int32_t *ids = NULL;
    size_t n = 0;
    for (int sp = 0; sp < 2; sp++) {
        if (pdq_tokenizer_encode(t, text, len, sp, &ids, &n, &st) == PDQ_OK) {
            char *back = NULL;
            if (pdq_tokenizer_decode(t, ids, n, sp, &back, &st) == PDQ_OK) free(back);
        }
        free(ids);
        ids = NULL;
    }
}

/* Loads both fixtures before the first unit runs, so libFuzzer's per-unit time limit measures
 * the code under test, not the one-off fixture load (seconds under ASan on a busy machine). */
int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    fixture(0);
    fixture(1);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    int mode = data[0] % 5;
    const char *rest = (const char *)data + 1;
    size_t n = size - 1;
    if (mode <= 1) {
        roundtrip(fixture(mode), rest, n);
    } else if (mode <= 3) {
        const pdq_tokenizer *t = fixture(mode - 2);
        size_t k = n / 4;
        int32_t *ids = malloc((k + 1) * sizeof *ids);
        for (size_t i = 0; i < k; i++) {
            uint32_t v;
            memcpy(&v, rest + 4 * i, 4);
            ids[i] = (int32_t)(v % (uint32_t)pdq_tokenizer_vocab_size(t));
        }
        pdq_status st = {0};
        for (int skip = 0; skip < 2; skip++) {
            char *text = NULL;
            if (pdq_tokenizer_decode(t, ids, k, skip, &text, &st) == PDQ_OK) free(text);
        }
        free(ids);
    } else {
        char dir[] = "/tmp/pdq-fuzz-tok-XXXXXX", path[64];
        if (!mkdtemp(dir)) return 0;
        snprintf(path, sizeof path, "%s/tokenizer.json", dir);
        FILE *f = fopen(path, "wb");
        if (f) {
            fwrite(rest, 1, n, f);
            fclose(f);
            pdq_tokenizer *t = NULL;
            pdq_status st = {0};
            if (pdq_tokenizer_load(dir, &t, &st) == PDQ_OK) {
                roundtrip(t, "Hello, world! <s> 123  \n", 24);
                pdq_tokenizer_free(t);
            }
            remove(path);
        }
        rmdir(dir);
    }
    return 0;
}
