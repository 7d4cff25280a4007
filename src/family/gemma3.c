/* Gemma 3 text (Gemma3ForCausalLM, model_type gemma3_text): the sandwich block
 *   h = x + post_attention_layernorm(attn(input_layernorm(x)))
 *   y = h + post_feedforward_layernorm(mlp(pre_feedforward_layernorm(h)))
 * where every RMSNorm multiplies by (1 + w) in float32, the embedding is scaled by sqrt(hidden),
 * q_norm / k_norm act on each head, scores are scaled by query_pre_attn_scalar^-0.5, the MLP gate
 * is GELU-tanh, and layers alternate between a sliding window with RoPE base
 * rope_local_base_freq and full attention with rope_theta and its scaling (layer_types, or
 * sliding_window_pattern in older configs). Defaults are Gemma3TextConfig's (tie true, window
 * 4096, pattern 6, scalar 256). final_logit_softcapping caps the logits; HF's Gemma 3 attention
 * never applies attn_logit_softcapping, so it is read and not applied here either. The text part
 * of a Gemma3ForConditionalGeneration checkpoint is the same family read from text_config and
 * language_model.* tensors. */
#include "family/families.h"
#include "family/gemma_common.h"
#include "family/roles_hf.h"
#include "io/config_common.h"
#include "io/json_field.h"

static pdq_code read_config(const void *json, const char *file, pdq_config *cfg, pdq_status *st) {
    const cJSON *root = json;
    pdq_jctx jc = {file, ""};
    cfg->qk_norm = 1;
    cfg->rope_local_theta = 10000.0;
    /* Gemma3TextConfig's defaults where the common reader took LlamaConfig's */
    if (!cJSON_GetObjectItemCaseSensitive(root, "rope_theta")) cfg->rope_theta = 1e6;
    if (!cJSON_GetObjectItemCaseSensitive(root, "max_position_embeddings")) cfg->max_position_embeddings = 131072;
    pdq_code c = pdq_gemma_common(root, file, 6, cfg, st);
    if (!c) c = pdq_jf_num(&jc, root, "rope_local_base_freq", PDQ_JF_OPTIONAL, 1e-3, 1e15, &cfg->rope_local_theta, st);
    /* read for its type only: Gemma3Attention does not pass it to the attention */
    double unused = 0;
    if (!c) c = pdq_jf_num(&jc, root, "attn_logit_softcapping", PDQ_JF_OPTIONAL, 1e-6, 1e6, &unused, st);
    return c;
}

static const pdq_tensor_role k_roles[] = {PDQ_ROLES_HF_GEMMA("")};
static const char *const k_types[] = {"gemma3_text", NULL};

const pdq_family pdq_family_gemma3 = {
    .name = "gemma3",
    .hf_class = "Gemma3ForCausalLM",
    .model_types = k_types,
    .read_config = read_config,
    .roles = PDQ_FAMILY_ROLES(k_roles),
    .block = PDQ_BLOCK_SANDWICH,
};

/* The text model inside a Gemma3ForConditionalGeneration checkpoint (model_type gemma3): its
 * fields under text_config, its tensors under language_model. (as the released checkpoints
 * store them); the vision tower is not read. */
static const pdq_tensor_role k_mm_roles[] = {PDQ_ROLES_HF_GEMMA("language_model.")};
static const char *const k_mm_types[] = {"gemma3", NULL};

const pdq_family pdq_family_gemma3_mm = {
    .name = "gemma3",
    .hf_class = "Gemma3ForConditionalGeneration",
    .model_types = k_mm_types,
    .config_object = "text_config",
    .read_config = read_config,
    .roles = PDQ_FAMILY_ROLES(k_mm_roles),
    .block = PDQ_BLOCK_SANDWICH,
};
