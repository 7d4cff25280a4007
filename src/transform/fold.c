/* RMSNorm folding: RMSNorm(x) * g feeds W as (x/rms) diag(g) W^T = (x/rms) (W diag(g))^T, so
 * the factor g moves into the columns of every linear that reads the norm and the norm keeps a
 * unit factor (the graphs keep their RMS_NORM op with gamma 1). R1 needs it: a rotation commutes
 * with x/rms(x) but not with a per-channel gamma. The final norm goes into lm_head (apply.c).
 * A norm stores w and multiplies by g = norm_offset + w (Gemma's (1 + w), offset 0 elsewhere),
 * so the unit factor is stored as w = 1 - offset; g is formed in float32 as the forward does. */
#include "layer_ops.h"
#include "scale_pairs.h"

void pdq_norm_to_gamma(const pdq_config *c, float *w, int n) {
    if (c->norm_offset == 0.0f) return; /* w is the factor: leave its bits alone */
    for (int i = 0; i < n; i++) w[i] = c->norm_offset + w[i];
}

void pdq_norm_from_gamma(const pdq_config *c, float *g, int n) {
    if (c->norm_offset == 0.0f) return;
    for (int i = 0; i < n; i++) g[i] = g[i] - c->norm_offset;
}

void pdq_norm_set_unit(const pdq_config *c, float *w, int n) {
    for (int i = 0; i < n; i++) w[i] = 1.0f - c->norm_offset;
}

int pdq_norm_is_unit(const pdq_config *c, const float *w, int n) {
    for (int i = 0; i < n; i++)
        if (c->norm_offset + w[i] != 1.0f) return 0;
    return 1;
}

static void fold_into(const pdq_config *c, float *norm, pdq_layer *L, const pdq_linear_id *ids, int n) {
    pdq_norm_to_gamma(c, norm, c->hidden_size);
    for (int i = 0; i < n; i++) {
        int out, in;
        pdq_linear_shape(c, ids[i], &out, &in);
        pdq_scale_cols(L->w[ids[i]], out, in, norm);
    }
    pdq_norm_set_unit(c, norm, c->hidden_size);
}

void pdq_fold_layer(pdq_layer *L, const pdq_config *c) {
    static const pdq_linear_id attn[3] = {PDQ_LIN_Q, PDQ_LIN_K, PDQ_LIN_V}, ffn[2] = {PDQ_LIN_GATE, PDQ_LIN_UP};
    fold_into(c, L->attn_norm, L, attn, 3);
    fold_into(c, L->ffn_norm, L, ffn, 2);
}
