/* The ids that end a generated reply: every EOS a model lists. config.json's eos_token_id is read
 * with the config (pdq/config.h); generation_config.json often lists more (Qwen3: <|im_end|> and
 * <|endoftext|>; Llama-3.2-Instruct: three ids; Phi-3.5: <|end|>, <|assistant|>, <|endoftext|>). */
#ifndef PDQ_STOP_IDS_H
#define PDQ_STOP_IDS_H

#include "pdq/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PDQ_MAX_STOP_IDS 32

typedef struct {
    int ids[PDQ_MAX_STOP_IDS];
    int n;
} pdq_stop_ids;

/* Adds id once (ids < 0 are ignored); PDQ_ERR_LIMIT past PDQ_MAX_STOP_IDS distinct ids. */
pdq_code pdq_stop_ids_add(pdq_stop_ids *s, int id, pdq_status *st);
/* Adds DIR/generation_config.json's eos_token_id (an integer or a list); an absent file adds
 * nothing. Malformed JSON or ids outside [0, vocab_size) are errors naming the file. */
pdq_code pdq_stop_ids_add_generation_config(pdq_stop_ids *s, const char *dir, int vocab_size, pdq_status *st);
int pdq_stop_ids_has(const pdq_stop_ids *s, int id);

#ifdef __cplusplus
}
#endif
#endif
