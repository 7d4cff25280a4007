/* Names and shapes of the seven decoder linears (HF module names). */
#include <stdio.h>

#include "pdq/family.h"

static const char *const k_names[PDQ_LIN_COUNT] = {"q_proj", "k_proj", "v_proj", "o_proj",
                                                   "gate_proj", "up_proj", "down_proj"};

const char *pdq_linear_name(pdq_linear_id id) {
    return (int)id >= 0 && id < PDQ_LIN_COUNT ? k_names[id] : "?";
}

const char *pdq_linear_parent(pdq_linear_id id) {
    return id <= PDQ_LIN_O ? "self_attn" : "mlp";
}

void pdq_linear_shape(const pdq_config *c, pdq_linear_id id, int *out, int *in) {
    int D = c->hidden_size, q = c->n_heads * c->head_dim, kv = c->n_kv_heads * c->head_dim;
    switch (id) {
    case PDQ_LIN_Q: *out = q; *in = D; break;
    case PDQ_LIN_K:
    case PDQ_LIN_V: *out = kv; *in = D; break;
    case PDQ_LIN_O: *out = D; *in = q; break;
    case PDQ_LIN_GATE:
    case PDQ_LIN_UP: *out = c->intermediate_size; *in = D; break;
    default: *out = D; *in = c->intermediate_size; break;
    }
}

void pdq_linear_module(int layer, pdq_linear_id id, char *buf, size_t cap) {
    snprintf(buf, cap, "model.layers.%d.%s.%s", layer, pdq_linear_parent(id), pdq_linear_name(id));
}
