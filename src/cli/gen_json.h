/* generate --json: ids, the text and the timings, for every generate path. */
#ifndef PDQ_CLI_GEN_JSON_H
#define PDQ_CLI_GEN_JSON_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "pdq/tokenizer.h"

/* "prompt_ids", "ids" and, with a tokenizer, "prompt" (decoded prompt ids), "text" (the generated
 * tokens' text) and "full_text" (prompt and continuation decoded together). Added to o. */
void gen_json_row(cJSON *o, const pdq_tokenizer *tok, const int32_t *prompt, int n, const int32_t *out, int n_out);
/* "seconds": {load, prefill, decode}, tokens per second of each, "new_tokens". */
void gen_json_timing(cJSON *o, double load, double prefill, long n_prefill, double decode, long n_decode, long n_new);
/* Prints o on one line and frees it. */
void gen_json_print(cJSON *o);

#endif
