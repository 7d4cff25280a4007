/* SmoothQuant (Xiao et al. 2023): s_j = max|X_j|^alpha / max|W_j|^(1-alpha) moves part of an
 * activation channel's range into the weights that read it (X / s, W * s). With int16
 * activations and 4-bit weights the point here is the reverse direction too: a channel whose
 * weights are tiny because its activations are huge (an outlier channel) gets its weights back
 * up, so a per-row weight grid no longer rounds them to zero. Ranges come from calibration. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "scale_pairs.h"

void pdq_act_stats_free(pdq_act_stats *a) {
    for (int l = 0; l < a->n_layers; l++) {
        if (a->qkv) free(a->qkv[l]);
        if (a->o) free(a->o[l]);
        if (a->gate) free(a->gate[l]);
        if (a->down) free(a->down[l]);
    }
    free(a->qkv);
    free(a->o);
    free(a->gate);
    free(a->down);
    memset(a, 0, sizeof *a);
}

typedef struct {
    pdq_act_stats *a;
} stats_ctx;

static void absmax_hook(void *ctx, int layer, pdq_linear_id which, const float *x, int rows, int cols) {
    pdq_act_stats *a = ((stats_ctx *)ctx)->a;
    float *dst = which == PDQ_LIN_Q ? a->qkv[layer] : which == PDQ_LIN_O ? a->o[layer]
                 : which == PDQ_LIN_GATE ? a->gate[layer] : a->down[layer];
    for (int r = 0; r < rows; r++) {
        const float *row = x + (size_t)r * cols;
        for (int c = 0; c < cols; c++) dst[c] = fmaxf(dst[c], fabsf(row[c]));
    }
}

pdq_code pdq_act_stats_collect(const pdq_model *m, const int32_t *calib, int ns, int T, pdq_act_stats *a,
                               pdq_status *st) {
    const pdq_config *c = &m->cfg;
    int D = c->hidden_size, nl = c->n_layers;
    memset(a, 0, sizeof *a);
    if (!calib || ns <= 0 || T <= 0) return pdq_fail(st, PDQ_ERR_ARG, "SmoothQuant needs calibration windows");
    a->qkv = calloc((size_t)nl, sizeof *a->qkv);
    a->o = calloc((size_t)nl, sizeof *a->o);
    a->gate = calloc((size_t)nl, sizeof *a->gate);
    a->down = calloc((size_t)nl, sizeof *a->down);
    if (!a->qkv || !a->o || !a->gate || !a->down) {
        pdq_act_stats_free(a);
        return pdq_fail(st, PDQ_ERR_NOMEM, "out of memory");
    }
    a->n_layers = nl;
    int ok = 1;
    for (int l = 0; l < nl; l++) {
        ok &= !!(a->qkv[l] = calloc((size_t)D, sizeof(float)));
        ok &= !!(a->o[l] = calloc((size_t)c->n_heads * c->head_dim, sizeof(float)));
        ok &= !!(a->gate[l] = calloc((size_t)D, sizeof(float)));
        ok &= !!(a->down[l] = calloc((size_t)c->intermediate_size, sizeof(float)));
    }
    float *x = malloc((size_t)T * D * sizeof(float));
    pdq_code rc = ok && x ? PDQ_OK : pdq_fail(st, PDQ_ERR_NOMEM, "out of memory");
    stats_ctx ctx = {a};
    /* one window at a time through the whole model: memory is one window's activations */
    for (int s = 0; !rc && s < ns; s++) {
        rc = pdq_model_embed(m, T, calib + (size_t)s * T, x, st);
        for (int l = 0; !rc && l < nl; l++)
            rc = pdq_model_layer_forward(m, l, &m->layers[l], NULL, 1, T, x, NULL, NULL, absmax_hook, &ctx, st);
    }
    free(x);
    if (rc) pdq_act_stats_free(a);
    return rc;
}

/* s_j from an activation range and a weight range. */
static float smooth_scale(float act, float w, float alpha) {
    if (!(act > 0.0f) || !(w > 0.0f)) return 1.0f;
    return pdq_safe_scale(pow((double)act, alpha) / pow((double)w, 1.0 - alpha));
}

/* norm -> n linears: gamma / s, columns * s. */
static void smooth_norm(pdq_layer *L, const pdq_config *c, float *gamma, const pdq_linear_id *ids, int n,
                        const float *act, float alpha, float *wmax, float *tmp, float *s) {
    int D = c->hidden_size;
    for (int j = 0; j < D; j++) wmax[j] = 0.0f;
    for (int i = 0; i < n; i++) {
        int out, in;
        pdq_linear_shape(c, ids[i], &out, &in);
        pdq_absmax_cols(L->w[ids[i]], out, in, tmp);
        for (int j = 0; j < D; j++) wmax[j] = fmaxf(wmax[j], tmp[j]);
    }
    for (int j = 0; j < D; j++) {
        s[j] = smooth_scale(act[j], wmax[j], alpha);
        gamma[j] /= s[j];
    }
    for (int i = 0; i < n; i++) {
        int out, in;
        pdq_linear_shape(c, ids[i], &out, &in);
        pdq_scale_cols(L->w[ids[i]], out, in, s);
    }
}

pdq_code pdq_smooth(pdq_model *m, const pdq_act_stats *a, float alpha, pdq_status *st) {
    const pdq_config *c = &m->cfg;
    int D = c->hidden_size, I = c->intermediate_size, H = c->n_heads, KV = c->n_kv_heads, hd = c->head_dim;
    int group = H / KV;
    if (a->n_layers != c->n_layers) return pdq_fail(st, PDQ_ERR_SHAPE, "SmoothQuant: statistics for %d layers, model has %d", a->n_layers, c->n_layers);
    int n = I > H * hd ? I : H * hd;
    if (n < D) n = D;
    float *wmax = malloc((size_t)n * sizeof(float)), *tmp = malloc((size_t)n * sizeof(float));
    float *s = malloc((size_t)n * sizeof(float)), *act = malloc((size_t)n * sizeof(float));
    pdq_code rc = wmax && tmp && s && act ? PDQ_OK : pdq_fail(st, PDQ_ERR_NOMEM, "SmoothQuant: out of memory");
    static const pdq_linear_id qkv[3] = {PDQ_LIN_Q, PDQ_LIN_K, PDQ_LIN_V}, gu[2] = {PDQ_LIN_GATE, PDQ_LIN_UP};
    for (int l = 0; !rc && l < c->n_layers; l++) {
        pdq_layer *L = &m->layers[l];
        /* the o and down scales use the ranges before the norm pairs change v and up's inputs:
         * those change only the producers' columns, not their outputs */
        pdq_o_cols_absmax_grouped(L, c, tmp, wmax);
        for (int j = 0; j < KV * hd; j++) act[j] = 0.0f;
        for (int h = 0; h < H; h++)
            for (int d = 0; d < hd; d++) act[(h / group) * hd + d] = fmaxf(act[(h / group) * hd + d], a->o[l][h * hd + d]);
        for (int j = 0; j < KV * hd; j++) s[j] = smooth_scale(act[j], wmax[j], alpha);
        pdq_migrate_v_o(L, c, s);
        pdq_absmax_cols(L->w[PDQ_LIN_DOWN], D, I, wmax);
        for (int j = 0; j < I; j++) s[j] = smooth_scale(a->down[l][j], wmax[j], alpha);
        pdq_migrate_up_down(L, c, s);
        smooth_norm(L, c, L->attn_norm, qkv, 3, a->qkv[l], alpha, wmax, tmp, s);
        smooth_norm(L, c, L->ffn_norm, gu, 2, a->gate[l], alpha, wmax, tmp, s);
    }
    free(wmax);
    free(tmp);
    free(s);
    free(act);
    return rc;
}
