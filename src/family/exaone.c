/* EXAONE 3.0 / 3.5 (ExaoneForCausalLM, LG AI Research): Llama's pre-norm block (RMSNorm, RoPE
 * with llama3 rope_scaling, GQA, a SiLU-gated MLP) under GPT-2-style names: transformer.wte,
 * transformer.h.{i}.ln_1 / ln_2, attn.attention.{q,k,v,out}_proj, mlp.c_fc_0 (the gate),
 * mlp.c_fc_1 (the up projection), mlp.c_proj, transformer.ln_f. Its config.json says num_layers,
 * layer_norm_epsilon and activation_function where Llama's says num_hidden_layers, rms_norm_eps
 * and hidden_act; tie_word_embeddings defaults to true (ExaoneConfig leaves PretrainedConfig's
 * default), and the released configs state it. No biases. */
#include "family/families.h"
#include "family/roles_hf.h"
#include "io/config_common.h"

static pdq_code read_config(const void *json, const char *file, pdq_config *cfg, pdq_status *st) {
    return pdq_config_flag(json, "tie_word_embeddings", 1, file, &cfg->tie_word_embeddings, st);
}

#define EXAONE_LAYER "transformer.h.%d."

static const pdq_tensor_role k_roles[] = {
    {PDQ_ROLE_EMBED, -1, -1, "transformer.wte.weight"},
    {PDQ_ROLE_LM_HEAD, -1, -1, "lm_head.weight"},
    {PDQ_ROLE_FINAL_NORM, -1, -1, "transformer.ln_f.weight"},
    {PDQ_ROLE_ATTN_NORM, -1, -1, EXAONE_LAYER "ln_1.weight"},
    {PDQ_ROLE_FFN_NORM, -1, -1, EXAONE_LAYER "ln_2.weight"},
    {PDQ_ROLE_WEIGHT, PDQ_LIN_Q, PDQ_LIN_Q, EXAONE_LAYER "attn.attention.q_proj.weight"},
    {PDQ_ROLE_WEIGHT, PDQ_LIN_K, PDQ_LIN_K, EXAONE_LAYER "attn.attention.k_proj.weight"},
    {PDQ_ROLE_WEIGHT, PDQ_LIN_V, PDQ_LIN_V, EXAONE_LAYER "attn.attention.v_proj.weight"},
    {PDQ_ROLE_WEIGHT, PDQ_LIN_O, PDQ_LIN_O, EXAONE_LAYER "attn.attention.out_proj.weight"},
    {PDQ_ROLE_WEIGHT, PDQ_LIN_GATE, PDQ_LIN_GATE, EXAONE_LAYER "mlp.c_fc_0.weight"},
    {PDQ_ROLE_WEIGHT, PDQ_LIN_UP, PDQ_LIN_UP, EXAONE_LAYER "mlp.c_fc_1.weight"},
    {PDQ_ROLE_WEIGHT, PDQ_LIN_DOWN, PDQ_LIN_DOWN, EXAONE_LAYER "mlp.c_proj.weight"},
};
static const char *const k_types[] = {"exaone", NULL};

const pdq_family pdq_family_exaone = {
    .name = "exaone",
    .hf_class = "ExaoneForCausalLM",
    .model_types = k_types,
    .read_config = read_config,
    .roles = PDQ_FAMILY_ROLES(k_roles),
    .block = PDQ_BLOCK_PRENORM,
    .fields = {.n_layers = "num_layers", .norm_eps = "layer_norm_epsilon", .act = "activation_function"},
};
