/* Qwen2 / Qwen2.5 (Qwen2ForCausalLM): Llama with biases on q, k and v (never on o_proj). Its
 * sliding window applies only with use_sliding_window, per layer from max_window_layers; pdq
 * refuses that (no released Qwen2.5 turns it on). */
#include "family/families.h"
#include "family/roles_hf.h"
#include "io/config_common.h"

static pdq_code read_config(const void *json, const char *file, pdq_config *cfg, pdq_status *st) {
    const cJSON *root = json;
    cfg->bias_mask = PDQ_BIAS_QKV;
    return pdq_config_require_false(root, "use_sliding_window", file, st);
}

static const pdq_tensor_role k_roles[] = {PDQ_ROLES_HF_LLAMA};
static const char *const k_types[] = {"qwen2", NULL};

const pdq_family pdq_family_qwen2 = {
    .name = "qwen2",
    .hf_class = "Qwen2ForCausalLM",
    .model_types = k_types,
    .read_config = read_config,
    .roles = PDQ_FAMILY_ROLES(k_roles),
    .block = PDQ_BLOCK_PRENORM,
};
