/* Qwen3 (Qwen3ForCausalLM): Llama plus an RMSNorm over head_dim on every q and k head before
 * RoPE (q_norm, k_norm), head_dim from the config (not hidden / heads), and attention_bias on
 * q, k, v and o_proj alike. Sliding layers (use_sliding_window) are refused. */
#include "family/families.h"
#include "family/roles_hf.h"
#include "io/config_common.h"

static pdq_code read_config(const void *json, const char *file, pdq_config *cfg, pdq_status *st) {
    const cJSON *root = json;
    int attn = 0;
    cfg->qk_norm = 1;
    pdq_code c = pdq_config_flag(root, "attention_bias", 0, file, &attn, st);
    if (!c) c = pdq_config_require_false(root, "use_sliding_window", file, st);
    if (attn) cfg->bias_mask |= PDQ_BIAS_QKV | PDQ_BIAS_O;
    return c;
}

static const pdq_tensor_role k_roles[] = {
    PDQ_ROLES_HF_LLAMA,
    {PDQ_ROLE_Q_NORM, -1, -1, PDQ_HF_LAYER "self_attn.q_norm.weight"},
    {PDQ_ROLE_K_NORM, -1, -1, PDQ_HF_LAYER "self_attn.k_norm.weight"},
};
static const char *const k_types[] = {"qwen3", NULL};

const pdq_family pdq_family_qwen3 = {
    .name = "qwen3",
    .hf_class = "Qwen3ForCausalLM",
    .model_types = k_types,
    .read_config = read_config,
    .roles = PDQ_FAMILY_ROLES(k_roles),
    .block = PDQ_BLOCK_PRENORM,
};
