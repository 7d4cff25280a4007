/* Model allocation and loading: config.json + safetensors (any float dtype, sharded or not)
 * -> f32 arrays in HF layout. */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "pdq/file.h"
#include "model/check_tensors.h"
#include "model/load_roles.h"
#include "pdq/model.h"
#include "pdq/safetensors.h"
#include "pdq/threadpool.h"
#include "model/packed_internal.h"
#include "model/work.h"

int pdq_default_threads(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

void pdq_set_threads(pdq_model *m, int n) {
    if (n <= 0) n = pdq_default_threads();
    if (m) m->n_threads = n;
    /* A packed model's linears run on its own pool; BLAS is left only the attention products,
     * which then run head by head on the pool too (forward.c): a second set of spinning BLAS
     * threads would compete with the pool. */
    openblas_set_num_threads(m && m->packed ? 1 : n);
    /* resize the pool (serial if that fails); an f32 model's linears run on it too */
    if (m && pdq_pool_threads(m->pool) != n) {
        pdq_status st = {0};
        pdq_pool_free(m->pool);
        m->pool = pdq_pool_create(n, &st);
    }
}

void pdq_model_blas_serial(const pdq_model *m, int serial) {
    int n = m->n_threads > 0 ? m->n_threads : pdq_default_threads();
    openblas_set_num_threads(serial || m->packed ? 1 : n);
}

void pdq_model_free(pdq_model *m) {
    if (!m) return;
    if (m->layers)
        for (int l = 0; l < m->cfg.n_layers; l++) {
            pdq_layer *L = &m->layers[l];
            free(L->attn_norm);
            free(L->ffn_norm);
            free(L->post_attn_norm);
            free(L->post_ffn_norm);
            free(L->wk_scale);
            free(L->q_norm);
            free(L->k_norm);
            for (int i = 0; i < PDQ_LIN_COUNT; i++) {
                free(L->w[i]);
                free(L->bias[i]);
            }
        }
    free(m->layers);
    if (m->lm_head != m->embed) free(m->lm_head);
    free(m->embed);
    free(m->norm);
    free(m->inv_freq);
    free(m->inv_freq_long);
    free(m->inv_freq_local);
    free(m->dir);
    pdq_st_close(m->lazy_src);
    pdq_pool_free(m->pool);
    pdq_packed_free(m->packed);
    pdq_fwd_work_free(m->work);
    free(m);
}

static float *zalloc(size_t n, int *ok) {
    float *p = calloc(n ? n : 1, sizeof *p);
    if (!p) *ok = 0;
    return p;
}

/* The model struct with its layer array and small buffers for cfg. */
static pdq_code model_new(const pdq_config *cfg, pdq_model **out, pdq_status *st) {
    pdq_model *m = calloc(1, sizeof *m);
    *out = m;
    if (!m) return pdq_fail(st, PDQ_ERR_NOMEM, "out of memory allocating the model");
    m->cfg = *cfg;
    m->n_threads = pdq_default_threads();
    if (!(m->layers = calloc((size_t)cfg->n_layers, sizeof *m->layers))) {
        m->cfg.n_layers = 0; /* free() below walks layers only when the array exists */
        return pdq_fail(st, PDQ_ERR_NOMEM, "out of memory allocating the model");
    }
    return pdq_model_alloc_small(m, st);
}

pdq_code pdq_model_alloc(const pdq_config *cfg, pdq_model **out, pdq_status *st) {
    *out = NULL;
    pdq_model *m;
    pdq_code rc = model_new(cfg, &m, st);
    size_t D = (size_t)cfg->hidden_size, V = (size_t)cfg->vocab_size;
    int ok = rc == PDQ_OK;
    if (ok) {
        m->embed = zalloc(V * D, &ok);
        m->lm_head = cfg->tie_word_embeddings ? m->embed : zalloc(V * D, &ok);
    }
    for (int l = 0; ok && l < cfg->n_layers; l++) {
        pdq_layer *L = &m->layers[l];
        for (int i = 0; i < PDQ_LIN_COUNT; i++) {
            int o, in;
            pdq_linear_shape(cfg, (pdq_linear_id)i, &o, &in);
            L->w[i] = zalloc((size_t)o * (size_t)in, &ok);
        }
    }
    if (!ok) {
        pdq_model_free(m);
        return pdq_fail(st, PDQ_ERR_NOMEM, "out of memory allocating the model (%lld parameters)",
                        pdq_family_param_count(cfg));
    }
    *out = m;
    return PDQ_OK;
}

static pdq_code read2(const pdq_safetensors *s, const char *name, int64_t a, int64_t b, float *dst,
                      pdq_status *st) {
    int64_t shape[2] = {a, b};
    return pdq_st_read_f32(s, name, b ? 2 : 1, shape, dst, st);
}

/* The embedding or lm_head table ([V, D]) into dst. */
static pdq_code read_table(const pdq_safetensors *s, pdq_model *m, pdq_role_kind kind, float *dst, pdq_status *st) {
    char name[192];
    pdq_family_role_name(&m->cfg, kind, -1, name, sizeof name);
    return read2(s, name, m->cfg.vocab_size, m->cfg.hidden_size, dst, st);
}

/* Tied: lm_head shares the embedding; a stored lm_head.weight is ignored, as HF does. */
static pdq_code load_weights(const pdq_safetensors *s, pdq_model *m, pdq_status *st) {
    pdq_code rc = read_table(s, m, PDQ_ROLE_EMBED, m->embed, st);
    if (!rc) rc = pdq_model_read_small(s, m, st);
    if (!rc && !m->cfg.tie_word_embeddings) rc = read_table(s, m, PDQ_ROLE_LM_HEAD, m->lm_head, st);
    for (int l = 0; !rc && l < m->cfg.n_layers; l++) rc = pdq_model_read_linears(s, m, l, 0, st);
    return rc;
}

/* Config sizes against the tensors present, before anything is allocated from them. */
static pdq_code check_sizes_from_data(const char *dir, const pdq_config *cfg, int quantized, pdq_status *st) {
    char path[4200], cfg_file[4200];
    snprintf(path, sizeof path, quantized ? "%s/model.q.safetensors" : "%s", dir);
    snprintf(cfg_file, sizeof cfg_file, "%s/config.json", dir);
    pdq_safetensors *s = NULL;
    pdq_code rc = pdq_st_open(path, &s, st);
    if (!rc) rc = pdq_check_tensors(cfg, s, quantized, cfg_file, st);
    pdq_st_close(s);
    return rc;
}

pdq_code pdq_model_load(const char *dir, pdq_model **out, pdq_status *st) {
    *out = NULL;
    if (!pdq_dir_exists(dir)) return pdq_fail(st, PDQ_ERR_IO, "%s: not a model directory", dir);
    pdq_config cfg;
    pdq_code rc = pdq_config_load(dir, &cfg, st);
    if (rc) return rc;

    /* A pdq quantized checkpoint (pdq_quant.json + model.q.safetensors): dequantized on load. */
    if (pdq_quant_is_checkpoint(dir)) {
        pdq_model *qm;
        if ((rc = check_sizes_from_data(dir, &cfg, 1, st))) return rc;
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
    char cfg_file[4200];
    snprintf(cfg_file, sizeof cfg_file, "%s/config.json", dir);
    pdq_model *m;
    if ((rc = pdq_check_tensors(&cfg, s, 0, cfg_file, st)) || (rc = pdq_model_alloc(&cfg, &m, st))) {
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

/* --- lazy loading --- */

pdq_code pdq_model_load_lazy(const char *dir, pdq_model **out, pdq_status *st) {
    *out = NULL;
    if (!pdq_dir_exists(dir)) return pdq_fail(st, PDQ_ERR_IO, "%s: not a model directory", dir);
    if (pdq_quant_is_checkpoint(dir)) return pdq_model_load(dir, out, st);
    pdq_config cfg;
    pdq_code rc = pdq_config_load(dir, &cfg, st);
    if (rc) return rc;
    if ((rc = check_sizes_from_data(dir, &cfg, 0, st))) return rc;
    pdq_model *m;
    rc = model_new(&cfg, &m, st);
    if (!rc) rc = pdq_st_open(dir, &m->lazy_src, st);
    if (!rc) rc = pdq_model_read_small(m->lazy_src, m, st);
    /* every big tensor's name and shape is checked now, so later acquires fail only on memory */
    for (int l = 0; !rc && l < cfg.n_layers; l++) rc = pdq_model_check_linears(m->lazy_src, &cfg, l, st);
    if (!rc && !(m->dir = strdup(dir))) rc = pdq_fail(st, PDQ_ERR_NOMEM, "out of memory");
    if (rc) {
        pdq_model_free(m);
        return rc;
    }
    *out = m;
    return PDQ_OK;
}

pdq_code pdq_model_layer_acquire(pdq_model *m, int l, pdq_status *st) {
    if (!m->lazy_src || m->layers[l].w[0]) return PDQ_OK;
    pdq_code rc = pdq_model_read_linears(m->lazy_src, m, l, 1, st);
    if (!rc && m->on_acquire) rc = m->on_acquire(m->on_acquire_ctx, m, l, st);
    if (rc) pdq_model_layer_release(m, l);
    return rc;
}

void pdq_model_layer_release(pdq_model *m, int l) {
    if (!m->lazy_src) return;
    for (int i = 0; i < PDQ_LIN_COUNT; i++) {
        free(m->layers[l].w[i]);
        m->layers[l].w[i] = NULL;
    }
}

static pdq_code acquire_table(pdq_model *m, float **dst, int embed, pdq_status *st) {
    if (*dst) return PDQ_OK;
    *dst = malloc((size_t)m->cfg.vocab_size * (size_t)m->cfg.hidden_size * sizeof(float));
    if (!*dst) return pdq_fail(st, PDQ_ERR_NOMEM, "out of memory materializing %s", embed ? "the embedding" : "lm_head");
    int of_embed = embed || m->lm_head_of_embed; /* the embedding tensor fills the buffer */
    pdq_role_kind kind = of_embed ? PDQ_ROLE_EMBED : PDQ_ROLE_LM_HEAD;
    char name[192];
    pdq_family_role_name(&m->cfg, kind, -1, name, sizeof name);
    pdq_code rc = read_table(m->lazy_src, m, kind, *dst, st);
    pdq_st_drop_pages(m->lazy_src, name);
    if (!rc && m->on_acquire) rc = m->on_acquire(m->on_acquire_ctx, m, embed ? PDQ_ACQ_EMBED : PDQ_ACQ_LM_HEAD, st);
    if (rc) {
        free(*dst);
        *dst = NULL;
    }
    return rc;
}

pdq_code pdq_model_embed_acquire(pdq_model *m, pdq_status *st) {
    if (!m->lazy_src) return PDQ_OK;
    pdq_code rc = acquire_table(m, &m->embed, 1, st);
    if (!rc && m->cfg.tie_word_embeddings) m->lm_head = m->embed;
    return rc;
}

void pdq_model_embed_release(pdq_model *m) {
    if (!m->lazy_src) return;
    if (m->lm_head == m->embed) m->lm_head = NULL;
    free(m->embed);
    m->embed = NULL;
}

pdq_code pdq_model_lm_head_acquire(pdq_model *m, pdq_status *st) {
    if (!m->lazy_src) return PDQ_OK;
    if (m->cfg.tie_word_embeddings) return pdq_model_embed_acquire(m, st);
    return acquire_table(m, &m->lm_head, 0, st);
}

void pdq_model_lm_head_release(pdq_model *m) {
    if (!m->lazy_src) return;
    if (m->cfg.tie_word_embeddings) {
        pdq_model_embed_release(m);
        return;
    }
    free(m->lm_head);
    m->lm_head = NULL;
}
