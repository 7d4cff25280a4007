/* Every tensor config.json implies, checked by name and shape against the safetensors headers
 * (already validated against the file size when opened), before any allocation. */
#include "model/check_tensors.h"

#include <stdio.h>
#include <string.h>

#include "pdq/model.h"

/* What the family's per-layer names start with before the layer's number: "model.layers." */
static void layer_stem(const pdq_config *cfg, char *buf, size_t cap) {
    pdq_family_layer_prefix(cfg, 0, buf, cap);
    size_t n = strlen(buf);
    if (n >= 2) buf[n - 2] = '\0'; /* "model.layers.0." -> "model.layers." */
}

/* The layer a name of the family's per-layer roles is in ("<stem>N."), or -1. */
static long layer_of(const char *stem, const char *name) {
    size_t n = strlen(stem);
    if (!n || strncmp(name, stem, n) != 0) return -1;
    long l;
    int end = 0;
    return sscanf(name + n, "%ld.%n", &l, &end) == 1 && end > 0 ? l : -1;
}

/* Layers the file holds: 1 + the highest N in "<stem>N." (0 if none). */
static long layers_in_file(const pdq_config *cfg, const pdq_safetensors *s) {
    char stem[160];
    layer_stem(cfg, stem, sizeof stem);
    long top = -1;
    for (int i = 0; i < pdq_st_count(s); i++) {
        long l = layer_of(stem, pdq_st_at(s, i)->name);
        if (l > top) top = l;
    }
    return top + 1;
}

static pdq_code missing(const pdq_config *cfg, const pdq_safetensors *s, const char *name, const char *what,
                        const char *cfg_file, pdq_status *st) {
    char stem[160], head[192];
    layer_stem(cfg, stem, sizeof stem);
    pdq_family_role_name(cfg, PDQ_ROLE_LM_HEAD, -1, head, sizeof head);
    long l = layer_of(stem, name), held = layers_in_file(cfg, s);
    if (l >= 0 && l < held)
        return pdq_fail(st, PDQ_ERR_MISSING, "%s: tensor %s is missing: %s model_type %s asks for it (%s)",
                        pdq_st_file_of(s, NULL), name, cfg_file, pdq_family_of(cfg)->model_types[0], what);
    if (l >= 0)
        return pdq_fail(st, PDQ_ERR_MISSING,
                        "%s: tensor %s is missing: %s %s = %d, the file holds %ld layer(s)",
                        pdq_st_file_of(s, NULL), name, cfg_file, pdq_config_field_n_layers(&pdq_family_of(cfg)->fields),
                        cfg->n_layers, held);
    if (strcmp(name, head) == 0)
        return pdq_fail(st, PDQ_ERR_MISSING, "%s: tensor %s is missing and tie_word_embeddings is false in %s",
                        pdq_st_file_of(s, NULL), name, cfg_file);
    return pdq_fail(st, PDQ_ERR_MISSING, "%s: tensor %s is missing (needed by %s)", pdq_st_file_of(s, NULL), name,
                    cfg_file);
}

static void dims(const pdq_st_tensor *t, char *buf, size_t cap) {
    size_t n = (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < t->ndim && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%lld", i ? ", " : "", (long long)t->shape[i]);
    if (n < cap) snprintf(buf + n, cap - n, "]");
}

/* name [rows, cols] (cols 0: 1-D [rows]); in a quantized checkpoint a matrix NAME.weight may be
 * stored as NAME.qweight [rows, cols or ceil(cols/2)]. */
static pdq_code want(const pdq_config *cfg, const pdq_safetensors *s, const char *name, long rows, long cols,
                     const char *what, int quantized, const char *cfg_file, pdq_status *st) {
    char qname[200], got[96];
    const pdq_st_tensor *t = pdq_st_find(s, name);
    size_t n = strlen(name);
    if (!t && quantized && cols && n > 7 && strcmp(name + n - 7, ".weight") == 0) {
        snprintf(qname, sizeof qname, "%.*s.qweight", (int)(n - 7), name);
        const pdq_st_tensor *q = pdq_st_find(s, qname);
        if (q && q->ndim == 2 && q->shape[0] == rows && (q->shape[1] == cols || q->shape[1] == (cols + 1) / 2))
            return PDQ_OK;
        if (q) {
            t = q;
            name = qname;
        }
    }
    if (!t) return missing(cfg, s, name, what, cfg_file, st);
    int ok = cols ? t->ndim == 2 && t->shape[0] == rows && t->shape[1] == cols : t->ndim == 1 && t->shape[0] == rows;
    if (ok) return PDQ_OK;
    dims(t, got, sizeof got);
    if (cols)
        return pdq_fail(st, PDQ_ERR_SHAPE, "%s: tensor %s has shape %s, expected [%ld, %ld] from %s (%s)",
                        pdq_st_file_of(s, t), name, got, rows, cols, cfg_file, what);
    return pdq_fail(st, PDQ_ERR_SHAPE, "%s: tensor %s has shape %s, expected [%ld] from %s (%s)", pdq_st_file_of(s, t),
                    name, got, rows, cfg_file, what);
}

/* The config fields a role's shape comes from, for messages. */
static void role_what(const pdq_config *c, const pdq_tensor_role *r, char *buf, size_t cap) {
    switch (r->kind) {
    case PDQ_ROLE_EMBED:
    case PDQ_ROLE_LM_HEAD:
        snprintf(buf, cap, "vocab_size = %d, hidden_size = %d", c->vocab_size, c->hidden_size);
        break;
    case PDQ_ROLE_Q_NORM:
    case PDQ_ROLE_K_NORM: snprintf(buf, cap, "head_dim = %d", c->head_dim); break;
    case PDQ_ROLE_WEIGHT:
    case PDQ_ROLE_BIAS:
    case PDQ_ROLE_FUSED_WEIGHT:
        snprintf(buf, cap, "hidden_size %d, heads %d/%d, head_dim %d, intermediate_size %d", c->hidden_size,
                 c->n_heads, c->n_kv_heads, c->head_dim, c->intermediate_size);
        break;
    default: snprintf(buf, cap, "hidden_size = %d", c->hidden_size); break;
    }
}

/* One role of layer l (l < 0: a model-wide role). A quantized pdq checkpoint keeps stacked
 * projections split (as the pipeline quantizes them), so its weights are checked per linear. */
static pdq_code check_role(const pdq_config *cfg, const pdq_safetensors *s, const pdq_tensor_role *r, int l,
                           int quantized, const char *cfg_file, pdq_status *st) {
    char name[192], what[160];
    long rows, cols;
    role_what(cfg, r, what, sizeof what);
    if (quantized && r->kind == PDQ_ROLE_FUSED_WEIGHT) {
        for (int k = r->lin; k <= r->lin_last; k++) {
            int o, in;
            pdq_linear_shape(cfg, (pdq_linear_id)k, &o, &in);
            pdq_linear_module(cfg, l, (pdq_linear_id)k, name, sizeof name);
            strncat(name, ".weight", sizeof name - strlen(name) - 1);
            pdq_code rc = want(cfg, s, name, o, in, what, quantized, cfg_file, st);
            if (rc) return rc;
        }
        return PDQ_OK;
    }
    pdq_role_shape(cfg, r, &rows, &cols);
    pdq_role_name(r, l, name, sizeof name);
    return want(cfg, s, name, rows, cols, what, quantized, cfg_file, st);
}

pdq_code pdq_check_tensors(const pdq_config *cfg, const pdq_safetensors *s, int quantized, const char *cfg_file,
                           pdq_status *st) {
    const pdq_family *f = pdq_family_of(cfg);
    /* model-wide roles first, then layer by layer, role by role: the first missing tensor of a
     * short file names its layer */
    for (int i = 0; i < f->n_roles; i++) {
        const pdq_tensor_role *r = &f->roles[i];
        if (pdq_role_per_layer(r) || !pdq_role_present(cfg, r)) continue;
        pdq_code rc = check_role(cfg, s, r, -1, quantized, cfg_file, st);
        if (rc) return rc;
    }
    for (int l = 0; l < cfg->n_layers; l++)
        for (int i = 0; i < f->n_roles; i++) {
            const pdq_tensor_role *r = &f->roles[i];
            if (!pdq_role_per_layer(r) || !pdq_role_present(cfg, r)) continue;
            pdq_code rc = check_role(cfg, s, r, l, quantized, cfg_file, st);
            if (rc) return rc;
        }
    return PDQ_OK;
}
