/* RMSNorm folding: RMSNorm(x) * w feeds W as (x/rms) diag(w) W^T = (x/rms) (W diag(w))^T, so
 * the weight moves into the columns of every linear that reads the norm and the norm keeps a
 * unit weight (the graphs keep their RMS_NORM op with gamma 1). R1 needs it: a rotation commutes
 * with x/rms(x) but not with a per-channel gamma. The final norm goes into lm_head (apply.c). */
#include "layer_ops.h"
#include "scale_pairs.h"

static void set_one(float *g, int n) {
    for (int i = 0; i < n; i++) g[i] = 1.0f;
}

void pdq_fold_layer(pdq_layer *L, const pdq_config *c) {
    static const pdq_linear_id attn[3] = {PDQ_LIN_Q, PDQ_LIN_K, PDQ_LIN_V}, ffn[2] = {PDQ_LIN_GATE, PDQ_LIN_UP};
    for (int i = 0; i < 3; i++) {
        int out, in;
        pdq_linear_shape(c, attn[i], &out, &in);
        pdq_scale_cols(L->w[attn[i]], out, in, L->attn_norm);
    }
    for (int i = 0; i < 2; i++) {
        int out, in;
        pdq_linear_shape(c, ffn[i], &out, &in);
        pdq_scale_cols(L->w[ffn[i]], out, in, L->ffn_norm);
    }
    set_one(L->attn_norm, c->hidden_size);
    set_one(L->ffn_norm, c->hidden_size);
}
