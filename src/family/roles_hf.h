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

/* The seven separate projections under layer prefix `layer` ("model.layers.%d."), and a bias row
 * for each (present when the config says so). */
#define PDQ_ROLES_HF_LINEARS_AT(layer, kind, leaf)                             \
    {kind, PDQ_LIN_Q, PDQ_LIN_Q, layer "self_attn.q_proj." leaf},              \
    {kind, PDQ_LIN_K, PDQ_LIN_K, layer "self_attn.k_proj." leaf},              \
    {kind, PDQ_LIN_V, PDQ_LIN_V, layer "self_attn.v_proj." leaf},              \
    {kind, PDQ_LIN_O, PDQ_LIN_O, layer "self_attn.o_proj." leaf},              \
    {kind, PDQ_LIN_GATE, PDQ_LIN_GATE, layer "mlp.gate_proj." leaf},           \
    {kind, PDQ_LIN_UP, PDQ_LIN_UP, layer "mlp.up_proj." leaf},                 \
    {kind, PDQ_LIN_DOWN, PDQ_LIN_DOWN, layer "mlp.down_proj." leaf}
#define PDQ_ROLES_HF_LINEARS(kind, leaf) PDQ_ROLES_HF_LINEARS_AT(PDQ_HF_LAYER, kind, leaf)

/* Gemma's sandwich block under prefix P ("" for the text model, "language_model." for its copy
 * inside a multimodal checkpoint): four norms per layer, q/k norms, the linears (and their
 * optional biases). */
#define PDQ_ROLES_HF_GEMMA(P)                                                            \
    {PDQ_ROLE_EMBED, -1, -1, P "model.embed_tokens.weight"},                             \
    {PDQ_ROLE_LM_HEAD, -1, -1, P "lm_head.weight"},                                      \
    {PDQ_ROLE_FINAL_NORM, -1, -1, P "model.norm.weight"},                                \
    {PDQ_ROLE_ATTN_NORM, -1, -1, P PDQ_HF_LAYER "input_layernorm.weight"},               \
    {PDQ_ROLE_POST_ATTN_NORM, -1, -1, P PDQ_HF_LAYER "post_attention_layernorm.weight"}, \
    {PDQ_ROLE_FFN_NORM, -1, -1, P PDQ_HF_LAYER "pre_feedforward_layernorm.weight"},      \
    {PDQ_ROLE_POST_FFN_NORM, -1, -1, P PDQ_HF_LAYER "post_feedforward_layernorm.weight"}, \
    PDQ_ROLES_HF_LINEARS_AT(P PDQ_HF_LAYER, PDQ_ROLE_WEIGHT, "weight"),                  \
    PDQ_ROLES_HF_LINEARS_AT(P PDQ_HF_LAYER, PDQ_ROLE_BIAS, "bias"),                      \
    {PDQ_ROLE_Q_NORM, -1, -1, P PDQ_HF_LAYER "self_attn.q_norm.weight"},                 \
    {PDQ_ROLE_K_NORM, -1, -1, P PDQ_HF_LAYER "self_attn.k_norm.weight"}

#define PDQ_ROLES_HF_LLAMA                                \
    PDQ_ROLES_HF_BASE,                                    \
    PDQ_ROLES_HF_LINEARS(PDQ_ROLE_WEIGHT, "weight"),      \
    PDQ_ROLES_HF_LINEARS(PDQ_ROLE_BIAS, "bias")

#define PDQ_FAMILY_ROLES(table) (table), (int)(sizeof(table) / sizeof((table)[0]))

#endif
