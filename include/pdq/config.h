/* Hugging Face LlamaConfig: every field that changes the math. */
#ifndef PDQ_CONFIG_H
#define PDQ_CONFIG_H

#include <stddef.h>

#include "pdq/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PDQ_MAX_EOS 8

typedef enum { PDQ_ROPE_DEFAULT = 0, PDQ_ROPE_LLAMA3 = 1 } pdq_rope_type;

typedef struct pdq_config {
    int hidden_size;        /* D */
    int intermediate_size;  /* I */
    int n_layers;
    int n_heads;
    int n_kv_heads;         /* GQA: n_heads % n_kv_heads == 0 */
    int head_dim;           /* config head_dim, else hidden_size / n_heads */
    float rms_norm_eps;
    double rope_theta;
    pdq_rope_type rope_type;
    double rope_factor;              /* llama3 only */
    double rope_low_freq_factor;     /* llama3 only */
    double rope_high_freq_factor;    /* llama3 only */
    int rope_original_max_pos;       /* llama3 only */
    int max_position_embeddings;
    int vocab_size;
    int tie_word_embeddings;
    int bos_token_id;                /* -1 when absent */
    int eos_token_ids[PDQ_MAX_EOS];  /* eos_token_id may be an int or a list */
    int n_eos;
    int pad_token_id;                /* -1 when absent/null */
    char torch_dtype[16];            /* "bfloat16", "float16", "float32" or "" */
} pdq_config;

/* Reads DIR/config.json. Unknown model_type, attention/mlp bias, non-silu act -> PDQ_ERR_UNSUPPORTED. */
pdq_code pdq_config_load(const char *model_dir, pdq_config *cfg, pdq_status *st);
/* Parses config JSON text; `name` is used in error messages. */
pdq_code pdq_config_parse(const char *json, size_t len, const char *name, pdq_config *cfg, pdq_status *st);

/* RoPE inverse frequencies, head_dim/2 values, with llama3 scaling applied when configured
 * (HF _compute_llama3_parameters semantics). */
void pdq_rope_inv_freq(const pdq_config *cfg, float *inv_freq);

/* Parameter count of the model (embed + layers + norm + lm_head unless tied). */
long long pdq_config_param_count(const pdq_config *cfg);

#ifdef __cplusplus
}
#endif
#endif
