/* SmoothQuant (Xiao et al. 2023): s_j = max|X_j|^alpha / max|W_j|^(1-alpha) moves part of an
 * activation channel's range into the weights that read it (X / s, W * s). With int16
 * activations and 4-bit weights the point here is the reverse direction too: a channel whose
 * weights are tiny because its activations are huge (an outlier channel) gets its weights back
 * up, so a per-row weight grid no longer rounds them to zero. Ranges come from calibration. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "layer_ops.h"
#include "scale_pairs.h"

pdq_code pdq_layer_ranges_alloc(pdq_layer_ranges *r, const pdq_config *c, pdq_status *st) {
    r->qkv = malloc((size_t)c->hidden_size * sizeof(float));
    r->o = malloc((size_t)c->n_heads * c->head_dim * sizeof(float));
    r->gate = malloc((size_t)c->hidden_size * sizeof(float));
    r->down = malloc((size_t)c->intermediate_size * sizeof(float));
    if (r->qkv && r->o && r->gate && r->down) return PDQ_OK;
    pdq_layer_ranges_free(r);
    return pdq_fail(st, PDQ_ERR_NOMEM, "SmoothQuant: out of memory");
}

void pdq_layer_ranges_free(pdq_layer_ranges *r) {
    free(r->qkv);
    free(r->o);
    free(r->gate);
    free(r->down);
    memset(r, 0, sizeof *r);
}

void pdq_layer_ranges_copy(pdq_layer_ranges *dst, const pdq_layer_ranges *src, const pdq_config *c) {
    memcpy(dst->qkv, src->qkv, (size_t)c->hidden_size * sizeof(float));
    memcpy(dst->o, src->o, (size_t)c->n_heads * c->head_dim * sizeof(float));
    memcpy(dst->gate, src->gate, (size_t)c->hidden_size * sizeof(float));
    memcpy(dst->down, src->down, (size_t)c->intermediate_size * sizeof(float));
}

static void absmax_hook(void *ctx, int layer, pdq_linear_id which, const float *x, int rows, int cols) {
    (void)layer;
    pdq_layer_ranges *r = ctx;
    float *dst = which == PDQ_LIN_Q ? r->qkv : which == PDQ_LIN_O ? r->o : which == PDQ_LIN_GATE ? r->gate : r->down;
    for (int i = 0; i < rows; i++) {
        const float *row = x + (size_t)i * cols;
        for (int c = 0; c < cols; c++) dst[c] = fmaxf(dst[c], fabsf(row[c]));
    }
}

pdq_code pdq_layer_ranges_collect(const pdq_model *m, int l, const pdq_layer *L, float *x, int ns, int T,
                                  pdq_layer_ranges *r, pdq_status *st) {
    const pdq_config *c = &m->cfg;
    memset(r->qkv, 0, (size_t)c->hidden_size * sizeof(float));
    memset(r->o, 0, (size_t)c->n_heads * c->head_dim * sizeof(float));
    memset(r->gate, 0, (size_t)c->hidden_size * sizeof(float));
    memset(r->down, 0, (size_t)c->intermediate_size * sizeof(float));
    pdq_code rc = PDQ_OK;
    for (int s = 0; !rc && s < ns; s++)
        rc = pdq_model_layer_forward(m, l, L, NULL, 1, T, x + (size_t)s * T * c->hidden_size, NULL, NULL, absmax_hook, r, st);
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
    pdq_norm_to_gamma(c, gamma, D); /* the factor (1 + w) of a Gemma norm takes 1/s, not w */
    for (int j = 0; j < D; j++) {
        s[j] = smooth_scale(act[j], wmax[j], alpha);
        gamma[j] /= s[j];
    }
    pdq_norm_from_gamma(c, gamma, D);
    for (int i = 0; i < n; i++) {
        int out, in;
        pdq_linear_shape(c, ids[i], &out, &in);
        pdq_scale_cols(L->w[ids[i]], out, in, s);
    }
}

pdq_code pdq_smooth_layer(pdq_layer *L, const pdq_config *c, const pdq_layer_ranges *r, float alpha, pdq_status *st) {
    int D = c->hidden_size, I = c->intermediate_size, H = c->n_heads, KV = c->n_kv_heads, hd = c->head_dim;
    int group = H / KV;
    int n = I > H * hd ? I : H * hd;
    if (n < D) n = D;
    float *wmax = malloc((size_t)n * sizeof(float)), *tmp = malloc((size_t)n * sizeof(float));
    float *s = malloc((size_t)n * sizeof(float)), *act = malloc((size_t)n * sizeof(float));
    pdq_code rc = wmax && tmp && s && act ? PDQ_OK : pdq_fail(st, PDQ_ERR_NOMEM, "SmoothQuant: out of memory");
    static const pdq_linear_id qkv[3] = {PDQ_LIN_Q, PDQ_LIN_K, PDQ_LIN_V}, gu[2] = {PDQ_LIN_GATE, PDQ_LIN_UP};
    if (!rc) {
        /* the o and down scales use the ranges before the norm pairs change v and up's inputs:
         * those change only the producers' columns, not their outputs */
        pdq_o_cols_absmax_grouped(L, c, tmp, wmax);
        for (int j = 0; j < KV * hd; j++) act[j] = 0.0f;
        for (int h = 0; h < H; h++)
            for (int d = 0; d < hd; d++) act[(h / group) * hd + d] = fmaxf(act[(h / group) * hd + d], r->o[h * hd + d]);
        for (int j = 0; j < KV * hd; j++) s[j] = smooth_scale(act[j], wmax[j], alpha);
        pdq_migrate_v_o(L, c, s);
        pdq_absmax_cols(L->w[PDQ_LIN_DOWN], D, I, wmax);
        for (int j = 0; j < I; j++) s[j] = smooth_scale(r->down[j], wmax[j], alpha);
        pdq_migrate_up_down(L, c, s);
        smooth_norm(L, c, L->attn_norm, qkv, 3, r->qkv, alpha, wmax, tmp, s);
        smooth_norm(L, c, L->ffn_norm, gu, 2, r->gate, alpha, wmax, tmp, s);
    }
    free(wmax);
    free(tmp);
    free(s);
    free(act);
    return rc;
}
