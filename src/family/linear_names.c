/* Names and shapes of the seven decoder linears (HF module names). */
#include <stdio.h>
#include <string.h>

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

/* The part a linear is of a stacked tensor, after the stacked module's name. */
static const char *const k_parts[PDQ_LIN_COUNT] = {"q", "k", "v", "o", "gate", "up", "down"};

void pdq_linear_module(const pdq_config *cfg, int layer, pdq_linear_id id, char *buf, size_t cap) {
    const pdq_family *f = pdq_family_of(cfg);
    buf[0] = '\0';
    for (int i = 0; i < f->n_roles; i++) {
        const pdq_tensor_role *r = &f->roles[i];
        int stacked = r->kind == PDQ_ROLE_FUSED_WEIGHT;
        if (!(r->kind == PDQ_ROLE_WEIGHT || stacked) || (int)id < r->lin || (int)id > r->lin_last) continue;
        char name[256];
        pdq_role_name(r, layer, name, sizeof name);
        size_t n = strlen(name);
        if (n > 7 && strcmp(name + n - 7, ".weight") == 0) name[n - 7] = '\0';
        /* Phi-3's q cut from qkv_proj: "qkv_proj.q", the HF tensor it comes from and its rows */
        if (stacked) snprintf(buf, cap, "%s.%s", name, k_parts[id]);
        else snprintf(buf, cap, "%s", name);
        return;
    }
}
