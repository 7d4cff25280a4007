/* Model allocation and loading: config.json + safetensors (any float dtype, sharded or not)
 * -> f32 arrays in HF layout. */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pdq/model.h"
#include "pdq/quant.h"
#include "pdq/safetensors.h"

int pdq_default_threads(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

void pdq_set_threads(pdq_model *m, int n) {
    if (n <= 0) n = pdq_default_threads();
    if (m) m->n_threads = n;
    openblas_set_num_threads(n);
}

void pdq_model_free(pdq_model *m) {
    if (!m) return;
    if (m->layers)
        for (int l = 0; l < m->cfg.n_layers; l++) {
            pdq_layer *L = &m->layers[l];
            free(L->attn_norm);
            free(L->ffn_norm);
            free(L->wk_scale);
            for (int i = 0; i < PDQ_LIN_COUNT; i++) free(L->w[i]);
        }
    free(m->layers);
    if (m->lm_head != m->embed) free(m->lm_head);
    free(m->embed);
    free(m->norm);
    free(m->inv_freq);
    free(m->dir);
    free(m);
}

static float *zalloc(size_t n, int *ok) {
    float *p = calloc(n ? n : 1, sizeof *p);
    if (!p) *ok = 0;
    return p;
}

pdq_code pdq_model_alloc(const pdq_config *cfg, pdq_model **out, pdq_status *st) {
    *out = NULL;
    pdq_model *m = calloc(1, sizeof *m);
    if (!m) return pdq_fail(st, PDQ_ERR_NOMEM, "out of memory allocating the model");
    m->cfg = *cfg;
    m->n_threads = pdq_default_threads();
    size_t D = (size_t)cfg->hidden_size, V = (size_t)cfg->vocab_size;
    int ok = 1;
    m->embed = zalloc(V * D, &ok);
    m->norm = zalloc(D, &ok);
    m->lm_head = cfg->tie_word_embeddings ? m->embed : zalloc(V * D, &ok);
    m->inv_freq = zalloc((size_t)cfg->head_dim / 2, &ok);
    m->layers = calloc((size_t)cfg->n_layers, sizeof *m->layers);
    if (!m->layers) {
        /* free() below walks layers only when the array exists */
        m->cfg.n_layers = 0;
        ok = 0;
    }
    for (int l = 0; ok && l < cfg->n_layers; l++) {
        pdq_layer *L = &m->layers[l];
        L->attn_norm = zalloc(D, &ok);
        L->ffn_norm = zalloc(D, &ok);
        for (int i = 0; i < PDQ_LIN_COUNT; i++) {
            int o, in;
            pdq_linear_shape(cfg, (pdq_linear_id)i, &o, &in);
            L->w[i] = zalloc((size_t)o * (size_t)in, &ok);
        }
    }
    if (!ok) {
        pdq_model_free(m);
        return pdq_fail(st, PDQ_ERR_NOMEM, "out of memory allocating the model (%lld parameters)",
                        pdq_config_param_count(cfg));
    }
    pdq_rope_inv_freq(cfg, m->inv_freq);
    *out = m;
    return PDQ_OK;
}

static pdq_code read2(const pdq_safetensors *s, const char *name, int64_t a, int64_t b, float *dst,
                      pdq_status *st) {
    int64_t shape[2] = {a, b};
    return pdq_st_read_f32(s, name, b ? 2 : 1, shape, dst, st);
}

static pdq_code load_weights(const pdq_safetensors *s, pdq_model *m, pdq_status *st) {
    const pdq_config *c = &m->cfg;
    int64_t D = c->hidden_size, V = c->vocab_size;
    pdq_code rc;
    if ((rc = read2(s, "model.embed_tokens.weight", V, D, m->embed, st))) return rc;
    if ((rc = read2(s, "model.norm.weight", D, 0, m->norm, st))) return rc;
    /* Tied: lm_head shares the embedding; a stored lm_head.weight is ignored, as HF does. */
    if (!c->tie_word_embeddings) {
        if (!pdq_st_find(s, "lm_head.weight"))
            return pdq_fail(st, PDQ_ERR_MISSING,
                            "%s: tensor lm_head.weight is missing and tie_word_embeddings is false",
                            pdq_st_file_of(s, NULL));
        if ((rc = read2(s, "lm_head.weight", V, D, m->lm_head, st))) return rc;
    }
    char name[160];
    for (int l = 0; l < c->n_layers; l++) {
        pdq_layer *L = &m->layers[l];
        snprintf(name, sizeof name, "model.layers.%d.input_layernorm.weight", l);
        if ((rc = read2(s, name, D, 0, L->attn_norm, st))) return rc;
        snprintf(name, sizeof name, "model.layers.%d.post_attention_layernorm.weight", l);
        if ((rc = read2(s, name, D, 0, L->ffn_norm, st))) return rc;
        for (int i = 0; i < PDQ_LIN_COUNT; i++) {
            int o, in;
            pdq_linear_shape(c, (pdq_linear_id)i, &o, &in);
            snprintf(name, sizeof name, "model.layers.%d.%s.%s.weight", l, pdq_linear_parent((pdq_linear_id)i),
                     pdq_linear_name((pdq_linear_id)i));
            if ((rc = read2(s, name, o, in, L->w[i], st))) return rc;
        }
    }
    return PDQ_OK;
}

pdq_code pdq_model_load(const char *dir, pdq_model **out, pdq_status *st) {
    *out = NULL;
    struct stat sb;
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return pdq_fail(st, PDQ_ERR_IO, "%s: not a model directory", dir);
    pdq_config cfg;
    pdq_code rc = pdq_config_load(dir, &cfg, st);
    if (rc) return rc;

    /* A pdq quantized checkpoint (pdq_quant.json + model.q.safetensors): dequantized on load. */
    if (pdq_quant_is_checkpoint(dir)) {
        pdq_model *qm;
        if ((rc = pdq_model_alloc(&cfg, &qm, st))) return rc;
        rc = pdq_quant_load(dir, qm, st);
        if (rc == PDQ_OK && !(qm->dir = strdup(dir))) rc = pdq_fail(st, PDQ_ERR_NOMEM, "out of memory");
        if (rc) {
            pdq_model_free(qm);
            return rc;
        }
        *out = qm;
        return PDQ_OK;
    }

    pdq_safetensors *s;
    if ((rc = pdq_st_open(dir, &s, st))) return rc;
    pdq_model *m;
    if ((rc = pdq_model_alloc(&cfg, &m, st))) {
        pdq_st_close(s);
        return rc;
    }
    rc = load_weights(s, m, st);
    pdq_st_close(s);
    if (rc == PDQ_OK && !(m->dir = strdup(dir))) rc = pdq_fail(st, PDQ_ERR_NOMEM, "out of memory");
    if (rc) {
        pdq_model_free(m);
        return rc;
    }
    *out = m;
    return PDQ_OK;
}
