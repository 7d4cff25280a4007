/* generate --json output (see gen_json.h). */
#include "gen_json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void add_ids(cJSON *o, const char *key, const int32_t *ids, int n) {
    cJSON *a = cJSON_AddArrayToObject(o, key);
    for (int i = 0; i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber(ids[i]));
}

static void add_text(cJSON *o, const char *key, const pdq_tokenizer *tok, const int32_t *ids, int n) {
    char *s = NULL;
    pdq_status st = {0};
    if (pdq_tokenizer_decode(tok, ids, (size_t)n, 1, &s, &st) == PDQ_OK) cJSON_AddStringToObject(o, key, s);
    free(s);
}

void gen_json_row(cJSON *o, const pdq_tokenizer *tok, const int32_t *prompt, int n, const int32_t *out, int n_out) {
    add_ids(o, "prompt_ids", prompt, n);
    add_ids(o, "ids", out, n_out);
    if (!tok) return;
    add_text(o, "prompt", tok, prompt, n);
    add_text(o, "text", tok, out, n_out);
    int32_t *all = malloc(sizeof(int32_t) * (size_t)(n + n_out + 1));
    if (!all) return;
    memcpy(all, prompt, sizeof(int32_t) * (size_t)n);
    memcpy(all + n, out, sizeof(int32_t) * (size_t)n_out);
    add_text(o, "full_text", tok, all, n + n_out);
    free(all);
}

void gen_json_timing(cJSON *o, double load, double prefill, long n_prefill, double decode, long n_decode, long n_new) {
    cJSON *s = cJSON_AddObjectToObject(o, "seconds");
    cJSON_AddNumberToObject(s, "load", load);
    cJSON_AddNumberToObject(s, "prefill", prefill);
    cJSON_AddNumberToObject(s, "decode", decode);
    cJSON_AddNumberToObject(o, "new_tokens", (double)n_new);
    cJSON_AddNumberToObject(o, "prefill_tokens_per_second", prefill > 0 ? (double)n_prefill / prefill : 0);
    cJSON_AddNumberToObject(o, "decode_tokens_per_second", decode > 0 ? (double)n_decode / decode : 0);
}

void gen_json_print(cJSON *o) {
    char *s = cJSON_PrintUnformatted(o);
    if (s) printf("%s\n", s);
    free(s);
    cJSON_Delete(o);
}
