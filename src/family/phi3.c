/* Phi-3 / Phi-4-mini (Phi3ForCausalLM): q, k, v stacked in one qkv_proj and gate, up in one
 * gate_up_proj; partial RoPE (partial_rotary_factor) and longrope scaling come through the
 * common RoPE fields. pdq splits the stacked tensors at load into the seven linears every path
 * knows: the split is exact (row ranges), and GPTQ, PTQ and the static graphs then treat q/k/v
 * and gate/up as they do for Llama (they share one Hessian either way). Its sliding_window is
 * applied as newer transformers do (a key is seen by the window's queries). */
#include "family/families.h"
#include "family/roles_hf.h"
#include "io/config_common.h"

static pdq_code read_config(const void *json, const char *file, pdq_config *cfg, pdq_status *st) {
    cfg->fused_qkv = cfg->fused_gate_up = 1;
    return pdq_config_window(json, file, cfg, st);
}

static const pdq_tensor_role k_roles[] = {
    PDQ_ROLES_HF_BASE,
    {PDQ_ROLE_FUSED_WEIGHT, PDQ_LIN_Q, PDQ_LIN_V, PDQ_HF_LAYER "self_attn.qkv_proj.weight"},
    PDQ_ROLE_HF_LINEAR(PDQ_ROLE_WEIGHT, PDQ_LIN_O, "self_attn.o_proj", "weight"),
    {PDQ_ROLE_FUSED_WEIGHT, PDQ_LIN_GATE, PDQ_LIN_UP, PDQ_HF_LAYER "mlp.gate_up_proj.weight"},
    PDQ_ROLE_HF_LINEAR(PDQ_ROLE_WEIGHT, PDQ_LIN_DOWN, "mlp.down_proj", "weight"),
};
static const char *const k_types[] = {"phi3", NULL};

const pdq_family pdq_family_phi3 = {
    .name = "phi3",
    .hf_class = "Phi3ForCausalLM",
    .model_types = k_types,
    .read_config = read_config,
    .roles = PDQ_FAMILY_ROLES(k_roles),
    .block = PDQ_BLOCK_PRENORM,
};
