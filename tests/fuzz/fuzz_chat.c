/* libFuzzer target for the chat-template readers (run from the repository root). First byte:
 *   0: the rest is a conversation file (JSON list of {role, content}); if it reads, it is rendered
 *      with every built-in template and encoded, and its last content fed as a next chat turn;
 *   1: the rest is a tokenizer_config.json: the template is loaded and detected;
 *   2: the rest is a generation_config.json: its EOS ids are read;
 *   3: the rest is chat_template text: its format is detected. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pdq/chat_template.h"
#include "pdq/stop_ids.h"

static pdq_tokenizer *g_tok; /* the Llama-2 fixture, loaded once */

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    pdq_status st = {0};
    if (pdq_tokenizer_load("tests/fixtures/tokenizers/llama2", &g_tok, &st) != PDQ_OK) {
        fprintf(stderr, "fuzz_chat: %s (run from the repository root)\n", st.msg);
        abort();
    }
    return 0;
}

static void conversation(const char *s, size_t n) {
    pdq_status st = {0};
    pdq_chat_msg *m = NULL;
    size_t k = 0;
    if (pdq_chat_read_json(s, n, "fuzz.json", &m, &k, &st) != PDQ_OK) return;
    for (int kind = PDQ_CHAT_CHATML; kind <= PDQ_CHAT_MISTRAL; kind++) {
        pdq_chat_template t = {.kind = (pdq_chat_kind)kind, .bos = "<s>", .eos = "</s>", .reply_close = "</s> ",
                               .default_system = "You are a test.", .date = "26 Jul 2024"};
        char *text = NULL;
        if (pdq_chat_render(&t, m, k, kind & 1, &text, &st) == PDQ_OK) free(text);
        int32_t *ids = NULL;
        size_t ni = 0;
        if (pdq_chat_encode(g_tok, &t, m, k, &ids, &ni, &st) == PDQ_OK) free(ids);
        ids = NULL;
        if (pdq_chat_next_ids(g_tok, &t, kind == PDQ_CHAT_PHI3 ? 2 : -1, m[k - 1].content, &ids, &ni, &st) == PDQ_OK) free(ids);
    }
    pdq_chat_msgs_free(m, k);
}

static void in_file(const char *file, const char *s, size_t n, int mode) {
    char dir[] = "/tmp/pdq-fuzz-chat-XXXXXX", path[96];
    if (!mkdtemp(dir)) return;
    snprintf(path, sizeof path, "%s/%s", dir, file);
    FILE *f = fopen(path, "wb");
    if (f) {
        fwrite(s, 1, n, f);
        fclose(f);
        pdq_status st = {0};
        if (mode == 1) {
            pdq_chat_template t;
            (void)pdq_chat_template_load(dir, NULL, &t, &st);
        } else {
            pdq_stop_ids ids = {.n = 0};
            (void)pdq_stop_ids_add_generation_config(&ids, dir, 1000, &st);
        }
        remove(path);
    }
    rmdir(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    const char *rest = (const char *)data + 1;
    size_t n = size - 1;
    switch (data[0] % 4) {
    case 0: conversation(rest, n); break;
    case 1: in_file("tokenizer_config.json", rest, n, 1); break;
    case 2: in_file("generation_config.json", rest, n, 2); break;
    default: {
        char *s = malloc(n + 1);
        if (!s) return 0;
        memcpy(s, rest, n);
        s[n] = '\0';
        (void)pdq_chat_template_detect(s);
        free(s);
    }
    }
    return 0;
}
