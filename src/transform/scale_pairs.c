/* Per-channel scale migration between a producer and its consumers, shared by CLE and
 * SmoothQuant: producer output channel j divided by s_j, consumer input column j multiplied by
 * s_j. Pairs (all function-preserving because what lies between is linear in that channel):
 *   up -> down     down's input is silu(gate) * up, linear in each up row;
 *   v -> o         attention mixes value rows linearly per channel; with GQA one kv channel
 *                  (g, d) feeds o_proj column (h, d) of every query head h in group g, so those
 *                  columns share its scale;
 *   norm -> linears  the norm weight takes 1/s, the reading linears' columns s.
 * A producer's bias is part of its output channel and takes 1/s with its row. */
#include <math.h>

#include "scale_pairs.h"

float pdq_absmax_row(const float *w, int n) {
    float m = 0.0f;
    for (int i = 0; i < n; i++) m = fmaxf(m, fabsf(w[i]));
    return m;
}

void pdq_absmax_cols(const float *w, int rows, int cols, float *out) {
    for (int c = 0; c < cols; c++) out[c] = 0.0f;
    for (int r = 0; r < rows; r++) {
        const float *row = w + (size_t)r * cols;
        for (int c = 0; c < cols; c++) out[c] = fmaxf(out[c], fabsf(row[c]));
    }
}

void pdq_scale_cols(float *w, int rows, int cols, const float *s) {
    for (int r = 0; r < rows; r++) {
        float *row = w + (size_t)r * cols;
        for (int c = 0; c < cols; c++) row[c] *= s[c];
    }
}

void pdq_migrate_up_down(pdq_layer *L, const pdq_config *c, const float *s) {
    int D = c->hidden_size, I = c->intermediate_size;
    for (int j = 0; j < I; j++) {
        float *row = L->w[PDQ_LIN_UP] + (size_t)j * D, inv = 1.0f / s[j];
        for (int k = 0; k < D; k++) row[k] *= inv;
        if (L->bias[PDQ_LIN_UP]) L->bias[PDQ_LIN_UP][j] *= inv;
    }
    pdq_scale_cols(L->w[PDQ_LIN_DOWN], D, I, s);
}

void pdq_migrate_v_o(pdq_layer *L, const pdq_config *c, const float *s) {
    int D = c->hidden_size, H = c->n_heads, KV = c->n_kv_heads, hd = c->head_dim, group = H / KV;
    for (int j = 0; j < KV * hd; j++) {
        float *row = L->w[PDQ_LIN_V] + (size_t)j * D, inv = 1.0f / s[j];
        for (int k = 0; k < D; k++) row[k] *= inv;
        if (L->bias[PDQ_LIN_V]) L->bias[PDQ_LIN_V][j] *= inv;
    }
    for (int r = 0; r < D; r++) {
        float *row = L->w[PDQ_LIN_O] + (size_t)r * H * hd;
        for (int h = 0; h < H; h++)
            for (int d = 0; d < hd; d++) row[h * hd + d] *= s[(h / group) * hd + d];
    }
}

void pdq_o_cols_absmax_grouped(const pdq_layer *L, const pdq_config *c, float *tmp, float *out) {
    int D = c->hidden_size, H = c->n_heads, KV = c->n_kv_heads, hd = c->head_dim, group = H / KV;
    pdq_absmax_cols(L->w[PDQ_LIN_O], D, H * hd, tmp);
    for (int j = 0; j < KV * hd; j++) out[j] = 0.0f;
    for (int h = 0; h < H; h++)
        for (int d = 0; d < hd; d++) {
            float *o = &out[(h / group) * hd + d];
            *o = fmaxf(*o, tmp[h * hd + d]);
        }
}

float pdq_safe_scale(double s) {
    if (!isfinite(s) || s <= 0.0) return 1.0f;
    if (s < 1e-4) s = 1e-4;
    if (s > 1e4) s = 1e4;
    return (float)s;
}
