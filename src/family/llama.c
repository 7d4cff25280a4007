/* Llama (LlamaForCausalLM): the pre-norm decoder every other description here starts from.
 * attention_bias puts a bias on q, k, v and o_proj; mlp_bias on gate, up and down_proj. */
#include "family/families.h"
#include "family/roles_hf.h"
#include "io/config_common.h"

static pdq_code read_config(const void *json, const char *file, pdq_config *cfg, pdq_status *st) {
    const cJSON *root = json;
    int attn = 0, mlp = 0;
    pdq_code c = pdq_config_flag(root, "attention_bias", 0, file, &attn, st);
    if (!c) c = pdq_config_flag(root, "mlp_bias", 0, file, &mlp, st);
    if (attn) cfg->bias_mask |= PDQ_BIAS_QKV | PDQ_BIAS_O;
    if (mlp) cfg->bias_mask |= PDQ_BIAS_MLP;
    return c;
}

static const pdq_tensor_role k_roles[] = {PDQ_ROLES_HF_LLAMA};
static const char *const k_types[] = {"llama", NULL};

const pdq_family pdq_family_llama = {
    .name = "llama",
    .hf_class = "LlamaForCausalLM",
    .model_types = k_types,
    .read_config = read_config,
    .roles = PDQ_FAMILY_ROLES(k_roles),
    .block = PDQ_BLOCK_PRENORM,
};
