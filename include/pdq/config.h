/* A Hugging Face config.json: every field that changes the math, for every family pdq reads
 * (pdq/family.h says which family reads which field). */
#ifndef PDQ_CONFIG_H
#define PDQ_CONFIG_H

#include <stddef.h>

#include "pdq/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PDQ_MAX_EOS 8
/* num_hidden_layers at most (the per-layer attention types below are sized by it) */
#define PDQ_MAX_LAYERS 1024
/* rotary_dim / 2 at most (head_dim is at most 1024): the longrope factor lists' length bound */
#define PDQ_MAX_ROPE_PAIRS 512

typedef enum { PDQ_ROPE_DEFAULT = 0, PDQ_ROPE_LLAMA3 = 1, PDQ_ROPE_LONGROPE = 2, PDQ_ROPE_LINEAR = 3 } pdq_rope_type;

/* The MLP's gate activation: SiLU (hidden_act "silu") or GELU with the tanh approximation
 * (Gemma's hidden_activation "gelu_pytorch_tanh"). */
typedef enum { PDQ_ACT_SILU = 0, PDQ_ACT_GELU_TANH = 1 } pdq_act;

struct pdq_family;

/* The config.json names of common fields a family spells its own way (EXAONE's num_layers);
 * NULL: Llama's name (num_hidden_layers, rms_norm_eps, hidden_act). */
typedef struct {
    const char *n_layers, *norm_eps, *act;
} pdq_config_fields;

/* The field names of `f`, Llama's where it has none (f NULL: Llama's). */
const char *pdq_config_field_n_layers(const pdq_config_fields *f);
const char *pdq_config_field_norm_eps(const pdq_config_fields *f);
const char *pdq_config_field_act(const pdq_config_fields *f);

typedef struct pdq_config {
    const struct pdq_family *family; /* the description model_type chose (pdq/family.h) */
    int hidden_size;        /* D */
    int intermediate_size;  /* I */
    int n_layers;
    int n_heads;
    int n_kv_heads;         /* GQA: n_heads % n_kv_heads == 0 */
    int head_dim;           /* config head_dim, else hidden_size / n_heads */
    float rms_norm_eps;
    double rope_theta;
    pdq_rope_type rope_type;
    double rope_factor;              /* llama3 and linear (inv_freq / factor) */
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
    /* Switches other families turn on; all zero for a plain Llama. */
    unsigned bias_mask;              /* bit i: decoder linear i (pdq_linear_id) has a bias */
    int qk_norm;                     /* RMSNorm over head_dim on every q and k head before RoPE */
    int fused_qkv, fused_gate_up;    /* the checkpoint stacks these projections in one tensor */
    int rotary_dim;                  /* leading dims of a head that RoPE turns (partial_rotary_factor) */
    int sliding_window;              /* 0: full attention; else a key is seen by the W queries from it */
    /* Per-layer attention type: 1 = this layer attends to the last sliding_window keys (and turns
     * RoPE with rope_local_theta when that is set), 0 = full attention with rope_theta. The
     * family fills it; a family with one window on every layer sets every entry. */
    unsigned char layer_sliding[PDQ_MAX_LAYERS];
    double rope_local_theta;         /* 0: sliding layers use rope_theta too (Gemma 3 sets it) */
    /* Gemma (all zero otherwise): every RMSNorm multiplies by (norm_offset + w) in float32 (1 for
     * Gemma's (1 + w)); the embedding rows are multiplied by embed_scale (sqrt(hidden_size) as a
     * float32, 0: none); scores are scaled by attn_scale instead of head_dim^-0.5 (0: that);
     * softcaps (0: none) turn x into cap * tanh(x / cap) on attention scores / final logits. */
    pdq_act act;
    float norm_offset;
    float embed_scale;
    float attn_scale;
    float attn_softcap, final_softcap;
    /* longrope (Phi-3): inv_freq is divided by short factors, or by long ones once a sequence
     * reaches rope_original_max_pos; cos and sin are multiplied by rope_attn_factor (1 otherwise) */
    float rope_attn_factor;
    float rope_short[PDQ_MAX_ROPE_PAIRS], rope_long[PDQ_MAX_ROPE_PAIRS];
} pdq_config;

/* Reads DIR/config.json through the family its model_type names (src/family/). An unknown
 * model_type, or a field the family does not compute (non-silu act, an unsupported rope type,
 * ...) -> PDQ_ERR_UNSUPPORTED naming the field and its value. */
pdq_code pdq_config_load(const char *model_dir, pdq_config *cfg, pdq_status *st);
/* Parses config JSON text; `name` is used in error messages. */
pdq_code pdq_config_parse(const char *json, size_t len, const char *name, pdq_config *cfg, pdq_status *st);

/* RoPE inverse frequencies, rotary_dim/2 values, with llama3 scaling applied when configured
 * (HF _compute_llama3_parameters semantics); longrope: long = 0 the short factors' frequencies,
 * 1 the long factors' (HF _compute_longrope_parameters). */
void pdq_rope_inv_freq(const pdq_config *cfg, float *inv_freq);
void pdq_rope_inv_freq_longrope(const pdq_config *cfg, int long_factors, float *inv_freq);
/* The local table of sliding layers when rope_local_theta is set: the default formula with that
 * base and no scaling (HF Gemma3's rotary_emb_local). */
void pdq_rope_inv_freq_local(const pdq_config *cfg, float *inv_freq);
/* Whether sliding layers turn RoPE by another table than the global one (Gemma 3: a local base,
 * and the global table's scaling): then a layer type is (window, table) in the static contract. */
int pdq_rope_local_differs(const pdq_config *cfg);

/* The dims RoPE turns (a config built in code may leave rotary_dim 0: all of head_dim). */
static inline int pdq_cfg_rotary_dim(const pdq_config *c) { return c->rotary_dim ? c->rotary_dim : c->head_dim; }

/* Layer l's window: 0 for a full-attention layer, else sliding_window. */
static inline int pdq_cfg_layer_window(const pdq_config *c, int l) {
    return c->sliding_window && c->layer_sliding[l] ? c->sliding_window : 0;
}
/* 1 when any layer is sliding and any is full (the contract then has two attention types). */
int pdq_cfg_mixed_attention(const pdq_config *c);

/* Parameter count of the model (embed + layers + norm + lm_head unless tied). */
long long pdq_config_param_count(const pdq_config *cfg);

#ifdef __cplusplus
}
#endif
#endif
