/* What a row of a family's tensor table means for one config: present or not, shape, name. */
#include <stdio.h>
#include <string.h>

#include "pdq/family.h"

static long linear_rows(const pdq_config *c, int lin) {
    int out, in;
    pdq_linear_shape(c, (pdq_linear_id)lin, &out, &in);
    return out;
}

static long linear_cols(const pdq_config *c, int lin) {
    int out, in;
    pdq_linear_shape(c, (pdq_linear_id)lin, &out, &in);
    return in;
}

int pdq_role_present(const pdq_config *cfg, const pdq_tensor_role *r) {
    switch (r->kind) {
    case PDQ_ROLE_LM_HEAD: return !cfg->tie_word_embeddings;
    case PDQ_ROLE_Q_NORM:
    case PDQ_ROLE_K_NORM: return cfg->qk_norm;
    case PDQ_ROLE_BIAS: return (int)(cfg->bias_mask >> r->lin & 1u);
    default: return 1;
    }
}

int pdq_role_per_layer(const pdq_tensor_role *r) {
    return !(r->kind == PDQ_ROLE_EMBED || r->kind == PDQ_ROLE_LM_HEAD || r->kind == PDQ_ROLE_FINAL_NORM);
}

void pdq_role_shape(const pdq_config *c, const pdq_tensor_role *r, long *rows, long *cols) {
    *cols = 0;
    switch (r->kind) {
    case PDQ_ROLE_EMBED:
    case PDQ_ROLE_LM_HEAD:
        *rows = c->vocab_size;
        *cols = c->hidden_size;
        break;
    case PDQ_ROLE_Q_NORM:
    case PDQ_ROLE_K_NORM: *rows = c->head_dim; break;
    case PDQ_ROLE_WEIGHT:
        *rows = linear_rows(c, r->lin);
        *cols = linear_cols(c, r->lin);
        break;
    case PDQ_ROLE_BIAS: *rows = linear_rows(c, r->lin); break;
    case PDQ_ROLE_FUSED_WEIGHT:
        *rows = 0;
        for (int i = r->lin; i <= r->lin_last; i++) *rows += linear_rows(c, i);
        *cols = linear_cols(c, r->lin);
        break;
    default: *rows = c->hidden_size; break;
    }
}

long long pdq_family_param_count(const pdq_config *c) {
    const pdq_family *f = pdq_family_of(c);
    long long n = 0;
    for (int i = 0; i < f->n_roles; i++) {
        const pdq_tensor_role *r = &f->roles[i];
        if (!pdq_role_present(c, r)) continue;
        long rows, cols;
        pdq_role_shape(c, r, &rows, &cols);
        n += (long long)rows * (cols ? cols : 1) * (pdq_role_per_layer(r) ? c->n_layers : 1);
    }
    return n;
}

void pdq_family_role_name(const pdq_config *cfg, pdq_role_kind kind, int l, char *buf, size_t cap) {
    const pdq_family *f = pdq_family_of(cfg);
    buf[0] = '\0';
    for (int i = 0; i < f->n_roles; i++)
        if (f->roles[i].kind == kind) {
            pdq_role_name(&f->roles[i], l, buf, cap);
            return;
        }
}

void pdq_role_name(const pdq_tensor_role *r, int layer, char *buf, size_t cap) {
    snprintf(buf, cap, r->hf, layer);
}

void pdq_family_role_module(const pdq_config *cfg, pdq_role_kind kind, int l, char *buf, size_t cap) {
    pdq_family_role_name(cfg, kind, l, buf, cap);
    size_t n = strlen(buf);
    if (n > 7 && strcmp(buf + n - 7, ".weight") == 0) buf[n - 7] = '\0';
}

void pdq_family_layer_prefix(const pdq_config *cfg, int l, char *buf, size_t cap) {
    const pdq_family *f = pdq_family_of(cfg);
    buf[0] = '\0';
    for (int i = 0; i < f->n_roles; i++) {
        const char *t = f->roles[i].hf, *d = strstr(t, "%d.");
        if (f->roles[i].kind != PDQ_ROLE_ATTN_NORM || !d) continue;
        char fmt[256];
        snprintf(fmt, sizeof fmt, "%.*s", (int)(d - t + 3), t);
        snprintf(buf, cap, fmt, l);
        return;
    }
}
