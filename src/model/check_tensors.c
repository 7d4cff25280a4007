/* Every tensor config.json implies, checked by name and shape against the safetensors headers
 * (already validated against the file size when opened), before any allocation. */
#include "model/check_tensors.h"

#include <stdio.h>
#include <string.h>

#include "pdq/model.h"

/* Layers the file holds: 1 + the highest N in "model.layers.N." (0 if none). */
static long layers_in_file(const pdq_safetensors *s) {
    long top = -1;
    for (int i = 0; i < pdq_st_count(s); i++) {
        long l;
        int end = 0;
        if (sscanf(pdq_st_at(s, i)->name, "model.layers.%ld.%n", &l, &end) == 1 && end > 0 && l > top) top = l;
    }
    return top + 1;
}

static pdq_code missing(const pdq_config *cfg, const pdq_safetensors *s, const char *name, const char *cfg_file,
                        pdq_status *st) {
    int l;
    if (sscanf(name, "model.layers.%d.", &l) == 1)
        return pdq_fail(st, PDQ_ERR_MISSING,
                        "%s: tensor %s is missing: %s num_hidden_layers = %d, the file holds %ld layer(s)",
                        pdq_st_file_of(s, NULL), name, cfg_file, cfg->n_layers, layers_in_file(s));
    if (strncmp(name, "lm_head.", 8) == 0)
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

/* base.weight [rows, cols] (cols 0: 1-D [rows]); quantized matrices may be base.qweight. */
static pdq_code want(const pdq_config *cfg, const pdq_safetensors *s, const char *base, long rows, long cols,
                     const char *what, int quantized, const char *cfg_file, pdq_status *st) {
    char name[192], got[96];
    snprintf(name, sizeof name, "%s.weight", base);
    const pdq_st_tensor *t = pdq_st_find(s, name);
    if (!t && quantized && cols) {
        snprintf(name, sizeof name, "%s.qweight", base);
        t = pdq_st_find(s, name);
        if (t && t->ndim == 2 && t->shape[0] == rows && (t->shape[1] == cols || t->shape[1] == (cols + 1) / 2))
            return PDQ_OK;
        if (!t) snprintf(name, sizeof name, "%s.weight", base);
    }
    if (!t) return missing(cfg, s, name, cfg_file, st);
    int ok = cols ? t->ndim == 2 && t->shape[0] == rows && t->shape[1] == cols : t->ndim == 1 && t->shape[0] == rows;
    if (ok) return PDQ_OK;
    dims(t, got, sizeof got);
    if (cols)
        return pdq_fail(st, PDQ_ERR_SHAPE, "%s: tensor %s has shape %s, expected [%ld, %ld] from %s (%s)",
                        pdq_st_file_of(s, t), name, got, rows, cols, cfg_file, what);
    return pdq_fail(st, PDQ_ERR_SHAPE, "%s: tensor %s has shape %s, expected [%ld] from %s (%s)", pdq_st_file_of(s, t),
                    name, got, rows, cfg_file, what);
}

pdq_code pdq_check_tensors(const pdq_config *cfg, const pdq_safetensors *s, int quantized, const char *cfg_file,
                           pdq_status *st) {
    long V = cfg->vocab_size, D = cfg->hidden_size;
    char what[160], base[160];
    snprintf(what, sizeof what, "vocab_size = %ld, hidden_size = %ld", V, D);
    pdq_code rc = want(cfg, s, "model.embed_tokens", V, D, what, quantized, cfg_file, st);
    if (!rc && !cfg->tie_word_embeddings) rc = want(cfg, s, "lm_head", V, D, what, quantized, cfg_file, st);
    snprintf(what, sizeof what, "hidden_size = %ld", D);
    if (!rc) rc = want(cfg, s, "model.norm", D, 0, what, quantized, cfg_file, st);
    for (int l = 0; !rc && l < cfg->n_layers; l++) {
        snprintf(base, sizeof base, "model.layers.%d.input_layernorm", l);
        rc = want(cfg, s, base, D, 0, what, quantized, cfg_file, st);
        snprintf(base, sizeof base, "model.layers.%d.post_attention_layernorm", l);
        if (!rc) rc = want(cfg, s, base, D, 0, what, quantized, cfg_file, st);
        for (int i = 0; !rc && i < PDQ_LIN_COUNT; i++) {
            int o, in;
            pdq_linear_shape(cfg, (pdq_linear_id)i, &o, &in);
            snprintf(base, sizeof base, "model.layers.%d.%s.%s", l, pdq_linear_parent((pdq_linear_id)i),
                     pdq_linear_name((pdq_linear_id)i));
            snprintf(what, sizeof what, "hidden_size %ld, heads %d/%d, head_dim %d, intermediate_size %d", D,
                     cfg->n_heads, cfg->n_kv_heads, cfg->head_dim, cfg->intermediate_size);
            rc = want(cfg, s, base, o, in, what, quantized, cfg_file, st);
            snprintf(what, sizeof what, "hidden_size = %ld", D);
        }
    }
    return rc;
}
