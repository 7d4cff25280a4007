/* What the Gemma families share in config.json (src/family/gemma3.c). */
#ifndef PDQ_GEMMA_COMMON_H
#define PDQ_GEMMA_COMMON_H

#include <cjson/cJSON.h>

#include "pdq/config.h"

/* hidden_activation (gelu_pytorch_tanh only), (1 + w) norms, the sqrt(hidden) embedding scale,
 * query_pre_attn_scalar, final_logit_softcapping, attention_bias, tie_word_embeddings (absent:
 * true), sliding_window (absent: 4096) and the layer types: layer_types, else
 * sliding_window_pattern (absent: default_pattern; layer i is full when (i + 1) % pattern == 0). */
pdq_code pdq_gemma_common(const cJSON *root, const char *file, int default_pattern, pdq_config *cfg,
                          pdq_status *st);

#endif
