/* The model's tensors by role: every loader walks the family's table, so no HF name is spelled
 * here. Stacked projections (Phi-3's qkv_proj, gate_up_proj) are split by rows into the linears
 * every path knows; the split copies values, so it is exact. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/load_roles.h"
#include "model/work.h"

static float **small_slot(pdq_model *m, const pdq_tensor_role *r, int l) {
    pdq_layer *L = l >= 0 ? &m->layers[l] : NULL;
    switch (r->kind) {
    case PDQ_ROLE_FINAL_NORM: return &m->norm;
    case PDQ_ROLE_ATTN_NORM: return &L->attn_norm;
    case PDQ_ROLE_FFN_NORM: return &L->ffn_norm;
    case PDQ_ROLE_POST_ATTN_NORM: return &L->post_attn_norm;
    case PDQ_ROLE_POST_FFN_NORM: return &L->post_ffn_norm;
    case PDQ_ROLE_Q_NORM: return &L->q_norm;
    case PDQ_ROLE_K_NORM: return &L->k_norm;
    case PDQ_ROLE_BIAS: return &L->bias[r->lin];
    default: return NULL;
    }
}

/* Calls fn for every present small role of every layer it belongs to. */
typedef pdq_code (*small_fn)(pdq_model *m, const pdq_tensor_role *r, int l, float **slot, void *ctx,
                             pdq_status *st);

static pdq_code each_small(pdq_model *m, small_fn fn, void *ctx, pdq_status *st) {
    const pdq_family *f = pdq_family_of(&m->cfg);
    for (int i = 0; i < f->n_roles; i++) {
        const pdq_tensor_role *r = &f->roles[i];
        if (!pdq_role_present(&m->cfg, r) || !small_slot(m, r, 0)) continue;
        int per_layer = pdq_role_per_layer(r), n = per_layer ? m->cfg.n_layers : 1;
        for (int l = 0; l < n; l++) {
            pdq_code rc = fn(m, r, per_layer ? l : -1, small_slot(m, r, per_layer ? l : -1), ctx, st);
            if (rc) return rc;
        }
    }
    return PDQ_OK;
}

static pdq_code alloc_one(pdq_model *m, const pdq_tensor_role *r, int l, float **slot, void *ctx, pdq_status *st) {
    (void)l;
    (void)ctx;
    long rows, cols;
    pdq_role_shape(&m->cfg, r, &rows, &cols);
    if (!*slot && !(*slot = calloc((size_t)rows, sizeof(float))))
        return pdq_fail(st, PDQ_ERR_NOMEM, "out of memory allocating the model");
    return PDQ_OK;
}

pdq_code pdq_model_alloc_small(pdq_model *m, pdq_status *st) {
    pdq_code rc = each_small(m, alloc_one, NULL, st);
    if (rc) return rc;
    if (!m->work && !(m->work = pdq_fwd_work_new())) return pdq_fail(st, PDQ_ERR_NOMEM, "out of memory allocating the model");
    size_t pairs = (size_t)pdq_cfg_rotary_dim(&m->cfg) / 2;
    int longrope = m->cfg.rope_type == PDQ_ROPE_LONGROPE;
    if (!(m->inv_freq = calloc(pairs + 1, sizeof(float))) ||
        (longrope && !(m->inv_freq_long = calloc(pairs + 1, sizeof(float)))))
        return pdq_fail(st, PDQ_ERR_NOMEM, "out of memory allocating the model");
    if (longrope) {
        pdq_rope_inv_freq_longrope(&m->cfg, 0, m->inv_freq);
        pdq_rope_inv_freq_longrope(&m->cfg, 1, m->inv_freq_long);
    } else {
        pdq_rope_inv_freq(&m->cfg, m->inv_freq);
    }
    if (m->cfg.rope_local_theta > 0) {
        if (!(m->inv_freq_local = calloc(pairs + 1, sizeof(float))))
            return pdq_fail(st, PDQ_ERR_NOMEM, "out of memory allocating the model");
        pdq_rope_inv_freq_local(&m->cfg, m->inv_freq_local);
    }
    return PDQ_OK;
}

static pdq_code read_one(pdq_model *m, const pdq_tensor_role *r, int l, float **slot, void *ctx, pdq_status *st) {
    const pdq_safetensors *s = ctx;
    char name[192];
    long rows, cols;
    pdq_role_shape(&m->cfg, r, &rows, &cols);
    pdq_role_name(r, l, name, sizeof name);
    int64_t shape[1] = {rows};
    return pdq_st_read_f32(s, name, 1, shape, *slot, st);
}

pdq_code pdq_model_read_small(const pdq_safetensors *s, pdq_model *m, pdq_status *st) {
    return each_small(m, read_one, (void *)s, st);
}

void pdq_model_role_name(const pdq_config *cfg, pdq_role_kind kind, int l, char *buf, size_t cap) {
    pdq_family_role_name(cfg, kind, l, buf, cap);
}

void pdq_model_role_module(const pdq_config *cfg, pdq_role_kind kind, int l, char *buf, size_t cap) {
    pdq_family_role_module(cfg, kind, l, buf, cap);
}

/* Weight roles of a layer: separate linears and stacked ones. */
static int is_weight(const pdq_tensor_role *r) {
    return r->kind == PDQ_ROLE_WEIGHT || r->kind == PDQ_ROLE_FUSED_WEIGHT;
}

pdq_code pdq_model_check_linears(const pdq_safetensors *s, const pdq_config *cfg, int l, pdq_status *st) {
    const pdq_family *f = pdq_family_of(cfg);
    for (int i = 0; i < f->n_roles; i++) {
        const pdq_tensor_role *r = &f->roles[i];
        if (!is_weight(r)) continue;
        char name[192];
        long rows, cols;
        pdq_role_shape(cfg, r, &rows, &cols);
        pdq_role_name(r, l, name, sizeof name);
        const pdq_st_tensor *t = pdq_st_find(s, name);
        if (!t) return pdq_fail(st, PDQ_ERR_MISSING, "%s: tensor %s is missing", pdq_st_file_of(s, NULL), name);
        if (t->ndim != 2 || t->shape[0] != rows || t->shape[1] != cols)
            return pdq_fail(st, PDQ_ERR_SHAPE, "%s: tensor %s should be [%ld, %ld]", pdq_st_file_of(s, t), name, rows,
                            cols);
    }
    return PDQ_OK;
}

pdq_code pdq_model_read_linears(const pdq_safetensors *s, pdq_model *m, int l, int drop, pdq_status *st) {
    const pdq_family *f = pdq_family_of(&m->cfg);
    pdq_layer *L = &m->layers[l];
    for (int i = 0; i < PDQ_LIN_COUNT; i++) {
        int o, in;
        pdq_linear_shape(&m->cfg, (pdq_linear_id)i, &o, &in);
        if (!L->w[i] && !(L->w[i] = malloc((size_t)o * (size_t)in * sizeof(float))))
            return pdq_fail(st, PDQ_ERR_NOMEM, "out of memory materializing layer %d", l);
    }
    pdq_code rc = PDQ_OK;
    for (int i = 0; !rc && i < f->n_roles; i++) {
        const pdq_tensor_role *r = &f->roles[i];
        if (!is_weight(r)) continue;
        char name[192];
        long rows, cols;
        pdq_role_shape(&m->cfg, r, &rows, &cols);
        pdq_role_name(r, l, name, sizeof name);
        int64_t shape[2] = {rows, cols};
        if (r->kind == PDQ_ROLE_WEIGHT) {
            rc = pdq_st_read_f32(s, name, 2, shape, L->w[r->lin], st);
        } else {
            float *all = malloc((size_t)rows * (size_t)cols * sizeof(float));
            if (!all) return pdq_fail(st, PDQ_ERR_NOMEM, "out of memory reading %s", name);
            rc = pdq_st_read_f32(s, name, 2, shape, all, st);
            size_t at = 0;
            for (int k = r->lin; !rc && k <= r->lin_last; k++) {
                int o, in;
                pdq_linear_shape(&m->cfg, (pdq_linear_id)k, &o, &in);
                memcpy(L->w[k], all + at, (size_t)o * (size_t)in * sizeof(float));
                at += (size_t)o * (size_t)in;
            }
            free(all);
        }
        if (drop) pdq_st_drop_pages(s, name);
    }
    return rc;
}
