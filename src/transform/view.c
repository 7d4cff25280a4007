/* A lazily loaded model seen through a transform set: each acquire (a layer, the embedding,
 * lm_head) reads its tensors from the source and rewrites them with the same pieces the streamed
 * run uses (run.h), so quantization reads transformed weights without a transformed checkpoint
 * being written and read back (4.4 GB of f32 on the TinyLlama-1.1B shape, most of the transforms'
 * cost before). Only SmoothQuant needs a pass of its own: its ranges come from running the
 * transformed float model over the calibration windows, layer after layer. */
#include <stdlib.h>
#include <string.h>

#include "pdq/progress.h"
#include "run.h"

struct pdq_transform_view {
    pdq_transform_opts *o;    /* the caller's: its seconds grow with every acquire */
    pdq_orth q;               /* R1 */
    float *norm0;             /* [(1 + 2 * n_layers) * D] the norms as loaded: final, then attn/ffn of each layer */
    pdq_layer_ranges *ranges; /* [n_layers] SmoothQuant's (NULL without it) */
    int n_layers, fold_final;
};

static void ranges_free(pdq_transform_view *v) {
    for (int l = 0; v->ranges && l < v->n_layers; l++) pdq_layer_ranges_free(&v->ranges[l]);
    free(v->ranges);
    v->ranges = NULL;
}

void pdq_transform_view_free(pdq_transform_view *v) {
    if (!v) return;
    ranges_free(v);
    pdq_orth_free(&v->q);
    free(v->norm0);
    free(v);
}

/* The k-th norm in saved order: the final one, then each layer's attn and ffn norms. */
static float *norm_at(pdq_model *m, int k) {
    if (k == 0) return m->norm;
    pdq_layer *L = &m->layers[(k - 1) / 2];
    return k % 2 ? L->attn_norm : L->ffn_norm;
}

static void norms_copy(pdq_model *m, float *saved, int to_model) {
    size_t D = (size_t)m->cfg.hidden_size;
    for (int k = 0; k < 1 + 2 * m->cfg.n_layers; k++) {
        float *mine = saved + (size_t)k * D, *theirs = norm_at(m, k);
        memcpy(to_model ? theirs : mine, to_model ? mine : theirs, D * sizeof(float));
    }
}

static pdq_code on_acquire(void *ctx, pdq_model *m, int what, pdq_status *st) {
    pdq_transform_view *v = ctx;
    const pdq_config *c = &m->cfg;
    size_t D = (size_t)c->hidden_size;
    double t0 = pdq_now();
    pdq_code rc;
    if (what == PDQ_ACQ_EMBED) rc = pdq_transform_table(v->o, &v->q, m->embed, c->vocab_size, (int)D, NULL, st);
    else if (what == PDQ_ACQ_LM_HEAD)
        rc = pdq_transform_table(v->o, &v->q, m->lm_head, c->vocab_size, (int)D, v->fold_final ? v->norm0 : NULL, st);
    else {
        /* from the norms as loaded, so a layer acquired again is rewritten to the same values */
        pdq_layer *L = &m->layers[what];
        memcpy(L->attn_norm, v->norm0 + (size_t)(1 + 2 * what) * D, D * sizeof(float));
        memcpy(L->ffn_norm, v->norm0 + (size_t)(2 + 2 * what) * D, D * sizeof(float));
        rc = pdq_transform_layer_fixed(L, c, what, v->o, &v->q, st);
        if (!rc && v->ranges) rc = pdq_smooth_layer(L, c, &v->ranges[what], v->o->smooth_alpha, st);
    }
    v->o->seconds += pdq_now() - t0;
    return rc ? pdq_wrap(st, "transform") : PDQ_OK;
}

pdq_code pdq_transform_attach(pdq_model *m, pdq_transform_opts *o, const int32_t *calib, int ns, int T,
                              pdq_transform_view **out, pdq_status *st) {
    *out = NULL;
    pdq_code frc = pdq_transform_supported(&m->cfg, o, st);
    if (frc) return frc;
    if (!m->lazy_src || m->on_acquire)
        return pdq_fail(st, PDQ_ERR_ARG, "a transform view needs a lazily loaded model without one");
    if (o->smooth && (!calib || ns <= 0 || T <= 0)) return pdq_fail(st, PDQ_ERR_ARG, "SmoothQuant needs calibration windows");
    double t0 = pdq_now();
    const pdq_config *c = &m->cfg;
    int D = c->hidden_size, tied = c->tie_word_embeddings;
    pdq_transform_view *v = calloc(1, sizeof *v);
    if (!v) return pdq_fail(st, PDQ_ERR_NOMEM, "out of memory");
    v->o = o;
    v->n_layers = c->n_layers;
    v->norm0 = malloc((size_t)(1 + 2 * c->n_layers) * D * sizeof(float));
    pdq_code rc = v->norm0 ? PDQ_OK : pdq_fail(st, PDQ_ERR_NOMEM, "out of memory");
    if (!rc) norms_copy(m, v->norm0, 0);
    if (!rc && o->smooth) {
        v->ranges = calloc((size_t)c->n_layers, sizeof *v->ranges);
        if (!v->ranges) rc = pdq_fail(st, PDQ_ERR_NOMEM, "out of memory");
        for (int l = 0; !rc && l < c->n_layers; l++) rc = pdq_layer_ranges_alloc(&v->ranges[l], c, st);
        /* the ranges' pass: the whole run with nothing kept but the ranges; it leaves the norms
         * transformed and may untie the model, both undone below */
        if (!rc) {
            rc = pdq_transform_run(m, o, calib, ns, T, NULL, v->ranges, st);
            norms_copy(m, v->norm0, 1);
        }
        m->cfg.tie_word_embeddings = tied;
    }
    if (!rc) {
        pdq_transform_plan(m, o);
        rc = o->r1 ? pdq_orth_make(&v->q, D, o->kind, o->seed, st) : PDQ_OK;
        v->q.pool = o->pool;
        v->q.force_scalar = o->force_scalar;
    }
    if (rc) {
        pdq_transform_view_free(v);
        return pdq_wrap(st, "transform");
    }
    /* the final norm is the only tensor no acquire returns: set now, as the run leaves it */
    v->fold_final = pdq_transform_folds_final(o, c, m->norm);
    if (v->fold_final) { /* the saved final norm serves only lm_head's fold from here on: as its factor */
        pdq_norm_to_gamma(c, v->norm0, D);
        pdq_norm_set_unit(c, m->norm, D);
    }
    if (o->untied) {
        m->cfg.tie_word_embeddings = 0;
        m->lm_head_of_embed = 1;
    }
    m->on_acquire = on_acquire;
    m->on_acquire_ctx = v;
    o->seconds = pdq_now() - t0;
    *out = v;
    return PDQ_OK;
}
