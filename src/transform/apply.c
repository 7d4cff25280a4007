/* The transform set of a quantize run: parsing, the fixed order (fold, CLE, R1, R2, SmoothQuant),
 * and its record in pdq_quant.json / report.json.
 *
 * Order: R1 needs unit norm weights, so folding comes first. CLE comes before the rotations: R2
 * mixes the channels of a head, so an outlier v channel would be spread over the whole head
 * before CLE could take it out (measured on the outlier model: R2 then CLE +2.33 ppl, CLE alone
 * +0.07). CLE touches only the internal v->o / up->down channels, R1 the residual dimension, so
 * they do not interfere. SmoothQuant is last: its ranges are measured on the model as the other
 * transforms left it. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layer_ops.h"
#include "dist/dist.h"
#include "pdq/progress.h"
#include "run.h"

void pdq_transform_opts_default(pdq_transform_opts *o) {
    memset(o, 0, sizeof *o);
    o->smooth_alpha = 0.5f;
    o->kind = PDQ_ROT_AUTO;
}

int pdq_transform_any(const pdq_transform_opts *o) { return o && (o->fold || o->r1 || o->r2 || o->cle || o->smooth); }

pdq_code pdq_transform_parse(const char *list, pdq_transform_opts *o, pdq_status *st) {
    o->fold = o->r1 = o->r2 = o->cle = o->smooth = 0;
    if (!list || !strcmp(list, "none")) return PDQ_OK;
    char buf[256];
    if (strlen(list) >= sizeof buf) return pdq_fail(st, PDQ_ERR_ARG, "--transform list too long (%zu characters)", strlen(list));
    strcpy(buf, list);
    for (char *save = NULL, *t = strtok_r(buf, ",+", &save); t; t = strtok_r(NULL, ",+", &save)) {
        if (!strcmp(t, "fold")) o->fold = 1;
        else if (!strcmp(t, "r1")) o->r1 = o->fold = 1;
        else if (!strcmp(t, "r2")) o->r2 = 1;
        else if (!strcmp(t, "cle")) o->cle = 1;
        else if (!strcmp(t, "smooth") || !strcmp(t, "smoothquant")) o->smooth = 1;
        else
            return pdq_fail(st, PDQ_ERR_ARG, "--transform: unknown transform '%s' (fold, r1, r2, cle, smooth or none)", t);
    }
    return PDQ_OK;
}

void pdq_transform_name(const pdq_transform_opts *o, char *buf, size_t n) {
    buf[0] = 0;
    const char *names[5] = {"fold", "r1", "r2", "cle", "smooth"};
    int on[5] = {o->fold && !o->r1, o->r1, o->r2, o->cle, o->smooth};
    size_t len = 0;
    for (int i = 0; i < 5; i++)
        if (on[i] && len < n) len += (size_t)snprintf(buf + len, n - len, "%s%s", len ? "+" : "", names[i]);
    if (!len) snprintf(buf, n, "none");
}

void pdq_transform_plan(const pdq_model *m, pdq_transform_opts *o) {
    const pdq_config *c = &m->cfg;
    int fold_final = (o->fold || o->r1) && !pdq_norm_is_unit(c, m->norm, c->hidden_size);
    /* one tensor is both the embedding and lm_head: folding the final norm into it would change
     * the embedding, so only an untied copy can take it; R1 needs it folded, fold alone keeps it */
    o->untied = fold_final && c->tie_word_embeddings && o->r1;
    o->final_norm_kept = fold_final && c->tie_word_embeddings && !o->r1;
    o->r1_hadamard = o->r1 && o->kind != PDQ_ROT_RANDOM && pdq_is_pow2(c->hidden_size);
    o->r2_hadamard = o->r2 && o->kind != PDQ_ROT_RANDOM && pdq_is_pow2(c->head_dim);
}

/* Every tensor of layer `layer` (-1: the whole-model ones) to k, in the checkpoint's order, from
 * the family's role table: a stacked tensor (Phi-3's qkv_proj) as its linears one after another. */
static pdq_code put_tensors(const pdq_tensor_sink *k, const pdq_model *m, int layer, pdq_status *st) {
    if (!k) return PDQ_OK;
    const pdq_config *c = &m->cfg;
    int n = pdq_tensor_list(c, c->tie_word_embeddings, PDQ_TORDER_TRANSFORM, 1, NULL, 0);
    pdq_tensor_entry *e = calloc((size_t)n + 1, sizeof *e);
    if (!e) return pdq_fail(st, PDQ_ERR_NOMEM, "out of memory");
    pdq_tensor_list(c, c->tie_word_embeddings, PDQ_TORDER_TRANSFORM, 1, e, n);
    pdq_code rc = PDQ_OK;
    for (int i = 0; !rc && i < n; i++)
        for (int p = 0; !rc && e[i].layer == layer && p < pdq_tensor_entry_pieces(&e[i]); p++) {
            long rows, cols;
            const float *d = pdq_tensor_entry_piece(m, &e[i], p, &rows, &cols, NULL, 0);
            rc = d ? k->put(k->ctx, &e[i], p, d, (size_t)rows * (cols ? (size_t)cols : 1), st)
                   : pdq_fail(st, PDQ_ERR_ARG, "%s%s: the model holds no data for it", e[i].name, e[i].suffix);
        }
    free(e);
    return rc;
}

static void scale_cols(float *w, int rows, int cols, const float *g) {
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) w[(size_t)r * cols + c] *= g[c];
}

int pdq_transform_folds_final(const pdq_transform_opts *o, const pdq_config *c, const float *norm) {
    return (o->fold || o->r1) && !o->final_norm_kept && !pdq_norm_is_unit(c, norm, c->hidden_size);
}

pdq_code pdq_transform_table(const pdq_transform_opts *o, const pdq_orth *q, float *t, int V, int D,
                             const float *fold_norm, pdq_status *st) {
    if (fold_norm) scale_cols(t, V, D, fold_norm);
    return o->r1 ? pdq_orth_right(q, t, V, (size_t)D, st) : PDQ_OK;
}

pdq_code pdq_transform_layer_fixed(pdq_layer *L, const pdq_config *c, int l, const pdq_transform_opts *o,
                                   const pdq_orth *q, pdq_status *st) {
    pdq_code rc = PDQ_OK;
    if (o->fold || o->r1) pdq_fold_layer(L, c);
    if (o->cle) rc = pdq_cle_layer(L, c, st);
    if (!rc && o->r1) rc = pdq_r1_layer(L, c, q, st);
    if (!rc && o->r2) rc = pdq_r2_layer(L, c, l, o->kind, o->seed, o->pool, o->force_scalar, st);
    return rc;
}

/* The embedding, lm_head and the final norm: the norm into lm_head (untying a tied one when R1
 * needs it), R1 on both tables; put in checkpoint order; x [ns, T, D] = the calibration windows'
 * embeddings when SmoothQuant needs them. */
static pdq_code tables(pdq_model *m, pdq_transform_opts *o, const pdq_orth *q, const int32_t *calib, int ns, int T,
                       float *x, const pdq_tensor_sink *k, pdq_status *st) {
    pdq_config *c = &m->cfg;
    int D = c->hidden_size, V = c->vocab_size;
    size_t VD = (size_t)V * D;
    pdq_code rc = pdq_model_embed_acquire(m, st);
    if (!rc && !c->tie_word_embeddings) rc = pdq_model_lm_head_acquire(m, st);
    if (!rc && o->untied) {
        float *h = malloc(VD * sizeof(float));
        if (!h) rc = pdq_fail(st, PDQ_ERR_NOMEM, "out of memory untying lm_head (%d x %d)", V, D);
        else {
            memcpy(h, m->embed, VD * sizeof(float));
            m->lm_head = h;
            c->tie_word_embeddings = 0;
        }
    }
    /* a tied table is never folded: plan untied it or kept the final norm */
    int fold = !rc && pdq_transform_folds_final(o, c, m->norm);
    if (fold) pdq_norm_to_gamma(c, m->norm, D);
    if (!rc && m->lm_head != m->embed) rc = pdq_transform_table(o, q, m->lm_head, V, D, fold ? m->norm : NULL, st);
    if (!rc) rc = pdq_transform_table(o, q, m->embed, V, D, NULL, st);
    if (fold) pdq_norm_set_unit(c, m->norm, D);
    if (!rc) rc = put_tensors(k, m, -1, st);
    if (!rc && x) rc = pdq_model_embed(m, ns * T, calib, x, st);
    if (m->lazy_src) {
        /* a lazy model's lm_head is its own buffer once untied (acquire made it, or we did) */
        if (m->lm_head != m->embed) pdq_model_lm_head_release(m);
        pdq_model_embed_release(m);
    }
    return rc;
}

/* The ranks' ranges of one layer into r: the channel-wise maximum, taken in rank order on every
 * rank (exact, so the result does not depend on the number of ranks or the order). */
static pdq_code ranges_merge(const pdq_transform_opts *o, const pdq_config *c, pdq_layer_ranges *r, pdq_status *st) {
    int size = pdq_dist_size(o->dist);
    if (size == 1) return PDQ_OK;
    size_t D = (size_t)c->hidden_size, O = (size_t)c->n_heads * c->head_dim, I = (size_t)c->intermediate_size;
    size_t n = 2 * D + O + I;
    float *mine = malloc(n * sizeof(float)), *all = malloc(n * (size_t)size * sizeof(float));
    pdq_code rc = mine && all ? PDQ_OK : pdq_fail(st, PDQ_ERR_NOMEM, "SmoothQuant: out of memory merging ranges");
    float *part[4] = {r->qkv, r->o, r->gate, r->down};
    size_t len[4] = {D, O, D, I};
    if (!rc) {
        for (size_t i = 0, off = 0; i < 4; off += len[i], i++) memcpy(mine + off, part[i], len[i] * sizeof(float));
        rc = pdq_dist_allgather(o->dist, mine, n * sizeof(float), all, st);
    }
    for (size_t i = 0, off = 0; !rc && i < 4; off += len[i], i++)
        for (size_t j = 0; j < len[i]; j++) {
            float v = all[off + j];
            for (int k = 1; k < size; k++) v = fmaxf(v, all[(size_t)k * n + off + j]);
            part[i][j] = v;
        }
    free(mine);
    free(all);
    return rc;
}

static pdq_code one_layer(pdq_model *m, int l, pdq_transform_opts *o, const pdq_orth *q, float *x, int ns, int T,
                          pdq_layer_ranges *r, pdq_layer_ranges *keep, const pdq_tensor_sink *k, pdq_status *st) {
    const pdq_config *c = &m->cfg;
    pdq_layer *L = &m->layers[l];
    pdq_code rc = pdq_model_layer_acquire(m, l, st);
    if (rc) return rc;
    rc = pdq_transform_layer_fixed(L, c, l, o, q, st);
    /* SmoothQuant's ranges are those of the model as the other transforms left it */
    if (!rc && o->smooth) rc = pdq_layer_ranges_collect(m, l, L, x, ns, T, r, st);
    if (!rc && o->smooth) rc = ranges_merge(o, c, r, st);
    if (!rc && o->smooth && keep) pdq_layer_ranges_copy(&keep[l], r, c);
    if (!rc && o->smooth) rc = pdq_smooth_layer(L, c, r, o->smooth_alpha, st);
    if (!rc) rc = put_tensors(k, m, l, st);
    pdq_model_layer_release(m, l);
    return rc;
}

pdq_code pdq_transform_supported(const pdq_config *c, const pdq_transform_opts *o, pdq_status *st) {
    pdq_code rc = pdq_family_require(c, PDQ_PATH_TRANSFORM, st);
    /* a sandwich block's post-branch norms normalize o_proj's and down_proj's outputs and scale
     * them per channel on their way into the residual: no rotation of the residual commutes
     * with that gamma, and folding it has no reader to go into */
    if (!rc && o->r1 && pdq_family_of(c)->block == PDQ_BLOCK_SANDWICH)
        rc = pdq_fail(st, PDQ_ERR_UNSUPPORTED,
                      "%s model: R1 (--transform r1) cannot keep its function: the post-attention and post-feedforward "
                      "norms scale the residual per channel after normalizing, which no rotation of the residual stream "
                      "commutes with (fold, r2, cle and smooth keep it)",
                      pdq_family_of(c)->name);
    return rc;
}

pdq_code pdq_transform_run(pdq_model *m, pdq_transform_opts *o, const int32_t *calib, int ns, int T,
                           const pdq_tensor_sink *k, pdq_layer_ranges *keep, pdq_status *st) {
    double t0 = pdq_now();
    const pdq_config *c = &m->cfg;
    pdq_code frc = pdq_transform_supported(c, o, st);
    if (frc) return frc;
    if (o->smooth && (!calib || ns <= 0 || T <= 0)) return pdq_fail(st, PDQ_ERR_ARG, "SmoothQuant needs calibration windows");
    if (o->smooth && o->smooth_nsamples > 0 && o->smooth_nsamples < ns) ns = o->smooth_nsamples;
    /* this rank's windows: s % ranks == rank (all of them in one process) */
    int rank = pdq_dist_rank(o->dist), size = pdq_dist_size(o->dist);
    int32_t *mine = NULL;
    if (o->smooth && size > 1) {
        int n = 0;
        if (!(mine = malloc(((size_t)ns / size + 1) * T * sizeof *mine)))
            return pdq_fail(st, PDQ_ERR_NOMEM, "SmoothQuant: out of memory for this rank's windows");
        for (int s = rank; s < ns; s += size, n++) memcpy(mine + (size_t)n * T, calib + (size_t)s * T, (size_t)T * sizeof *mine);
        calib = mine;
        ns = n;
    }
    pdq_transform_plan(m, o);
    pdq_orth q = {0};
    pdq_layer_ranges r = {0};
    float *x = NULL;
    pdq_code rc = o->r1 ? pdq_orth_make(&q, c->hidden_size, o->kind, o->seed, st) : PDQ_OK;
    q.pool = o->pool;
    q.force_scalar = o->force_scalar;
    if (!rc && o->smooth) { /* every window's activations, carried from layer to layer */
        x = malloc(((size_t)ns * T * c->hidden_size + 1) * sizeof(float));
        rc = x ? pdq_layer_ranges_alloc(&r, c, st)
               : pdq_fail(st, PDQ_ERR_NOMEM, "SmoothQuant: out of memory for %d windows of %d tokens", ns, T);
    }
    if (!rc) rc = tables(m, o, &q, calib, ns, T, x, k, st);
    for (int l = 0; !rc && l < c->n_layers; l++) rc = one_layer(m, l, o, &q, x, ns, T, &r, keep, k, st);
    free(x);
    free(mine);
    pdq_layer_ranges_free(&r);
    pdq_orth_free(&q);
    o->seconds = pdq_now() - t0;
    return rc ? pdq_wrap(st, "transform") : PDQ_OK;
}

pdq_code pdq_transform_model(pdq_model *m, pdq_transform_opts *o, const int32_t *calib, int ns, int T,
                             pdq_status *st) {
    if (m->lazy_src) return pdq_fail(st, PDQ_ERR_ARG, "transforming a model in memory needs an eagerly loaded one");
    return pdq_transform_run(m, o, calib, ns, T, NULL, NULL, st);
}

struct cJSON *pdq_transform_json(const pdq_transform_opts *o) {
    cJSON *j = cJSON_CreateObject();
    char name[64];
    pdq_transform_name(o, name, sizeof name);
    cJSON_AddStringToObject(j, "name", name);
    cJSON_AddBoolToObject(j, "fold_norms", o->fold || o->r1);
    cJSON_AddBoolToObject(j, "r1", o->r1);
    cJSON_AddBoolToObject(j, "r2", o->r2);
    cJSON_AddBoolToObject(j, "cle", o->cle);
    cJSON_AddBoolToObject(j, "smoothquant", o->smooth);
    if (o->r1 || o->r2) {
        cJSON_AddStringToObject(j, "rotation", o->kind == PDQ_ROT_RANDOM ? "random" : o->kind == PDQ_ROT_HADAMARD ? "hadamard" : "auto");
        cJSON_AddNumberToObject(j, "rotation_seed", (double)o->seed);
        if (o->r1) cJSON_AddStringToObject(j, "r1_matrix", o->r1_hadamard ? "randomized hadamard" : "random orthogonal");
        if (o->r2) cJSON_AddStringToObject(j, "r2_matrix", o->r2_hadamard ? "randomized hadamard" : "random orthogonal");
    }
    if (o->smooth) {
        cJSON_AddNumberToObject(j, "smooth_alpha", o->smooth_alpha);
        cJSON_AddNumberToObject(j, "smooth_nsamples", o->smooth_nsamples);
    }
    cJSON_AddBoolToObject(j, "untied_lm_head", o->untied);
    if (o->fold || o->r1) cJSON_AddBoolToObject(j, "final_norm_folded", !o->final_norm_kept);
    cJSON_AddNumberToObject(j, "seconds", o->seconds);
    return j;
}
