/* Hugging Face tokenizer.json BPE: Llama-2 (Metaspace + byte fallback) and Llama-3 (ByteLevel). */
#ifndef PDQ_TOKENIZER_H
#define PDQ_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "pdq/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pdq_tokenizer pdq_tokenizer;

/* Loads DIR/tokenizer.json and, when present, DIR/tokenizer_config.json (add_bos_token,
 * add_eos_token, bos/eos tokens). */
pdq_code pdq_tokenizer_load(const char *dir, pdq_tokenizer **out, pdq_status *st);
void pdq_tokenizer_free(pdq_tokenizer *t);

/* Encodes UTF-8 text. add_special: as HF add_special_tokens=True (BOS/EOS per the
 * post-processor and tokenizer_config.json). *ids is malloc'd; caller frees. */
pdq_code pdq_tokenizer_encode(const pdq_tokenizer *t, const char *text, size_t len, int add_special,
                              int32_t **ids, size_t *n_ids, pdq_status *st);
/* Decodes ids to UTF-8 text (HF decode semantics); *text is malloc'd, NUL-terminated. */
pdq_code pdq_tokenizer_decode(const pdq_tokenizer *t, const int32_t *ids, size_t n_ids, int skip_special,
                              char **text, pdq_status *st);

int pdq_tokenizer_vocab_size(const pdq_tokenizer *t);
int pdq_tokenizer_bos_id(const pdq_tokenizer *t); /* -1 if none */
int pdq_tokenizer_eos_id(const pdq_tokenizer *t); /* -1 if none */
/* "llama2-bpe" (Metaspace/byte-fallback) or "llama3-bpe" (ByteLevel). */
const char *pdq_tokenizer_family(const pdq_tokenizer *t);

#ifdef __cplusplus
}
#endif
#endif
