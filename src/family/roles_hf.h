/* Rows of the tensor tables that several families share, spelled once: HF's Llama-style names. */
#ifndef PDQ_ROLES_HF_H
#define PDQ_ROLES_HF_H

#include "pdq/family.h"

#define PDQ_HF_LAYER "model.layers.%d."

/* Embedding, untied lm_head, final norm and the two pre-norms of each layer. */
#define PDQ_ROLES_HF_BASE                                                        \
    {PDQ_ROLE_EMBED, -1, -1, "model.embed_tokens.weight"},                       \
    {PDQ_ROLE_LM_HEAD, -1, -1, "lm_head.weight"},                                \
    {PDQ_ROLE_FINAL_NORM, -1, -1, "model.norm.weight"},                          \
    {PDQ_ROLE_ATTN_NORM, -1, -1, PDQ_HF_LAYER "input_layernorm.weight"},         \
    {PDQ_ROLE_FFN_NORM, -1, -1, PDQ_HF_LAYER "post_attention_layernorm.weight"}

#define PDQ_ROLE_HF_LINEAR(kind, id, module, leaf) {kind, id, id, PDQ_HF_LAYER module "." leaf}

/* The seven separate projections, and a bias row for each (present when the config says so). */
#define PDQ_ROLES_HF_LINEARS(kind, leaf)                                       \
    PDQ_ROLE_HF_LINEAR(kind, PDQ_LIN_Q, "self_attn.q_proj", leaf),             \
    PDQ_ROLE_HF_LINEAR(kind, PDQ_LIN_K, "self_attn.k_proj", leaf),             \
    PDQ_ROLE_HF_LINEAR(kind, PDQ_LIN_V, "self_attn.v_proj", leaf),             \
    PDQ_ROLE_HF_LINEAR(kind, PDQ_LIN_O, "self_attn.o_proj", leaf),             \
    PDQ_ROLE_HF_LINEAR(kind, PDQ_LIN_GATE, "mlp.gate_proj", leaf),             \
    PDQ_ROLE_HF_LINEAR(kind, PDQ_LIN_UP, "mlp.up_proj", leaf),                 \
    PDQ_ROLE_HF_LINEAR(kind, PDQ_LIN_DOWN, "mlp.down_proj", leaf)

/* Gemma's sandwich block: four norms per layer, the linears (and their optional biases). */
#define PDQ_ROLES_HF_GEMMA                                                       \
    {PDQ_ROLE_EMBED, -1, -1, "model.embed_tokens.weight"},                       \
    {PDQ_ROLE_LM_HEAD, -1, -1, "lm_head.weight"},                                \
    {PDQ_ROLE_FINAL_NORM, -1, -1, "model.norm.weight"},                          \
    {PDQ_ROLE_ATTN_NORM, -1, -1, PDQ_HF_LAYER "input_layernorm.weight"},         \
    {PDQ_ROLE_POST_ATTN_NORM, -1, -1, PDQ_HF_LAYER "post_attention_layernorm.weight"}, \
    {PDQ_ROLE_FFN_NORM, -1, -1, PDQ_HF_LAYER "pre_feedforward_layernorm.weight"}, \
    {PDQ_ROLE_POST_FFN_NORM, -1, -1, PDQ_HF_LAYER "post_feedforward_layernorm.weight"}, \
    PDQ_ROLES_HF_LINEARS(PDQ_ROLE_WEIGHT, "weight"),                             \
    PDQ_ROLES_HF_LINEARS(PDQ_ROLE_BIAS, "bias")

#define PDQ_ROLES_HF_LLAMA                                \
    PDQ_ROLES_HF_BASE,                                    \
    PDQ_ROLES_HF_LINEARS(PDQ_ROLE_WEIGHT, "weight"),      \
    PDQ_ROLES_HF_LINEARS(PDQ_ROLE_BIAS, "bias")

#define PDQ_FAMILY_ROLES(table) (table), (int)(sizeof(table) / sizeof((table)[0]))

#endif
