/* The model's tensors in a writer's order, from the family's role table (see tensor_list.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/tensor_list.h"

#define LINEARS PDQ_ROLE_COUNT /* a slot for WEIGHT and FUSED_WEIGHT rows together */

/* Slots of each order: whole-model tensors before the layers, per layer, after the layers. */
typedef struct {
    int pre[4], layer[10], post[4]; /* role kinds (or LINEARS), -1 terminated */
} order_slots;

static const order_slots k_orders[] = {
    [PDQ_TORDER_QUANT] = {{PDQ_ROLE_EMBED, -1},
                          {PDQ_ROLE_ATTN_NORM, LINEARS, PDQ_ROLE_BIAS, PDQ_ROLE_Q_NORM, PDQ_ROLE_K_NORM,
                           PDQ_ROLE_POST_ATTN_NORM, PDQ_ROLE_FFN_NORM, PDQ_ROLE_POST_FFN_NORM, -1},
                          {PDQ_ROLE_FINAL_NORM, PDQ_ROLE_LM_HEAD, -1}},
    [PDQ_TORDER_TRANSFORM] = {{PDQ_ROLE_EMBED, PDQ_ROLE_LM_HEAD, PDQ_ROLE_FINAL_NORM, -1},
                              {PDQ_ROLE_ATTN_NORM, PDQ_ROLE_FFN_NORM, LINEARS, PDQ_ROLE_BIAS, PDQ_ROLE_Q_NORM,
                               PDQ_ROLE_K_NORM, PDQ_ROLE_POST_ATTN_NORM, PDQ_ROLE_POST_FFN_NORM, -1},
                              {-1}},
};

static int in_slot(const pdq_tensor_role *r, int slot) {
    if (slot == LINEARS) return r->kind == PDQ_ROLE_WEIGHT || r->kind == PDQ_ROLE_FUSED_WEIGHT;
    return (int)r->kind == slot;
}

typedef struct {
    const pdq_config *c;
    int tied, stacked, n, max;
    pdq_tensor_entry *out;
} lister;

/* Keeps e when there is room; counts it either way. */
static void put(lister *ls, const pdq_tensor_entry *e) {
    if (ls->n < ls->max) ls->out[ls->n] = *e;
    ls->n++;
}

static void add_role(lister *ls, const pdq_tensor_role *r, int layer) {
    const pdq_config *c = ls->c;
    /* lm_head by the caller's tied (a transform may untie a tied config), the rest by the config */
    if (r->kind == PDQ_ROLE_LM_HEAD ? ls->tied : !pdq_role_present(c, r)) return;
    int fused = r->kind == PDQ_ROLE_FUSED_WEIGHT, linear = fused || r->kind == PDQ_ROLE_WEIGHT;
    if (linear && !ls->stacked) { /* each linear under pdq's module name */
        for (int k = r->lin; k <= r->lin_last; k++) {
            pdq_tensor_entry e = {.suffix = ".weight", .kind = PDQ_ROLE_WEIGHT, .layer = layer, .lin = k, .lin_last = k};
            pdq_linear_module(c, layer, (pdq_linear_id)k, e.name, sizeof e.name);
            int o, in;
            pdq_linear_shape(c, (pdq_linear_id)k, &o, &in);
            e.rows = o;
            e.cols = in;
            put(ls, &e);
        }
        return;
    }
    pdq_tensor_entry e = {.kind = r->kind, .layer = layer, .lin = r->lin, .lin_last = r->lin_last};
    pdq_role_name(r, layer, e.name, sizeof e.name);
    char *dot = strrchr(e.name, '.');
    e.suffix = dot && !strcmp(dot, ".bias") ? ".bias" : ".weight";
    if (dot) *dot = '\0';
    pdq_role_shape(c, r, &e.rows, &e.cols);
    put(ls, &e);
}

/* The rows of one slot: linears and biases in linear order, whatever order the table has. */
static void add_slot(lister *ls, const pdq_family *f, int slot, int layer) {
    int by_lin = slot == LINEARS || slot == PDQ_ROLE_BIAS;
    for (int k = 0; k < (by_lin ? PDQ_LIN_COUNT : 1); k++)
        for (int i = 0; i < f->n_roles; i++) {
            const pdq_tensor_role *r = &f->roles[i];
            if (in_slot(r, slot) && (!by_lin || r->lin == k) && (layer >= 0) == pdq_role_per_layer(r))
                add_role(ls, r, layer);
        }
}

int pdq_tensor_list(const pdq_config *c, int tied, pdq_tensor_order order, int stacked, pdq_tensor_entry *out,
                    int max) {
    const pdq_family *f = pdq_family_of(c);
    const order_slots *o = &k_orders[order];
    lister ls = {c, tied, stacked, 0, max, out};
    for (int s = 0; o->pre[s] >= 0; s++) add_slot(&ls, f, o->pre[s], -1);
    for (int l = 0; l < c->n_layers; l++)
        for (int s = 0; o->layer[s] >= 0; s++) add_slot(&ls, f, o->layer[s], l);
    for (int s = 0; o->post[s] >= 0; s++) add_slot(&ls, f, o->post[s], -1);
    return ls.n;
}

int pdq_tensor_entry_pieces(const pdq_tensor_entry *e) {
    return e->kind == PDQ_ROLE_FUSED_WEIGHT ? e->lin_last - e->lin + 1 : 1;
}

float *pdq_tensor_entry_piece(const pdq_model *m, const pdq_tensor_entry *e, int k, long *rows, long *cols,
                              char *name, size_t cap) {
    const pdq_layer *L = e->layer >= 0 ? &m->layers[e->layer] : NULL;
    if (name && cap) name[0] = '\0';
    *rows = e->rows;
    *cols = e->cols;
    switch (e->kind) {
    case PDQ_ROLE_EMBED: return m->embed;
    case PDQ_ROLE_LM_HEAD: return m->lm_head;
    case PDQ_ROLE_FINAL_NORM: return m->norm;
    case PDQ_ROLE_ATTN_NORM: return L->attn_norm;
    case PDQ_ROLE_FFN_NORM: return L->ffn_norm;
    case PDQ_ROLE_Q_NORM: return L->q_norm;
    case PDQ_ROLE_K_NORM: return L->k_norm;
    case PDQ_ROLE_POST_ATTN_NORM: return L->post_attn_norm;
    case PDQ_ROLE_POST_FFN_NORM: return L->post_ffn_norm;
    case PDQ_ROLE_BIAS: return L->bias[e->lin];
    case PDQ_ROLE_WEIGHT:
    case PDQ_ROLE_FUSED_WEIGHT: {
        int lin = e->lin + k, o, in;
        pdq_linear_shape(&m->cfg, (pdq_linear_id)lin, &o, &in);
        *rows = o;
        *cols = in;
        if (name) pdq_linear_module(&m->cfg, e->layer, (pdq_linear_id)lin, name, cap);
        return L->w[lin];
    }
    default: return NULL;
    }
}

pdq_code pdq_tensor_list_new(const pdq_model *m, pdq_tensor_order order, int stacked, int max, pdq_tensor_entry **out,
                             int *n, pdq_status *st) {
    int tied = m->cfg.tie_word_embeddings;
    *out = NULL;
    *n = pdq_tensor_list(&m->cfg, tied, order, stacked, NULL, 0);
    if (*n > max) return pdq_fail(st, PDQ_ERR_LIMIT, "model has %d tensors, more than %d", *n, max);
    if (!(*out = calloc((size_t)*n + 1, sizeof **out))) return pdq_fail(st, PDQ_ERR_NOMEM, "out of memory");
    pdq_tensor_list(&m->cfg, tied, order, stacked, *out, *n);
    return PDQ_OK;
}
