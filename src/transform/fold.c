/* RMSNorm folding: RMSNorm(x) * w feeds W as (x/rms) diag(w) W^T = (x/rms) (W diag(w))^T, so
 * the weight moves into the columns of every linear that reads the norm and the norm keeps a
 * unit weight (the graphs keep their RMS_NORM op with gamma 1). R1 needs it: a rotation commutes
 * with x/rms(x) but not with a per-channel gamma. */
#include <stdlib.h>
#include <string.h>

#include "pdq/transform.h"

static void scale_cols(float *w, int rows, int cols, const float *g) {
    for (int r = 0; r < rows; r++) {
        float *row = w + (size_t)r * cols;
        for (int c = 0; c < cols; c++) row[c] *= g[c];
    }
}

static void set_one(float *g, int n) {
    for (int i = 0; i < n; i++) g[i] = 1.0f;
}

static int all_one(const float *g, int n) {
    for (int i = 0; i < n; i++)
        if (g[i] != 1.0f) return 0;
    return 1;
}

pdq_code pdq_fold_norms(pdq_model *m, int untie, pdq_status *st) {
    const pdq_config *c = &m->cfg;
    int D = c->hidden_size, V = c->vocab_size;
    if (m->lazy_src) return pdq_fail(st, PDQ_ERR_ARG, "norm folding needs an eagerly loaded model");
    for (int l = 0; l < c->n_layers; l++) {
        pdq_layer *L = &m->layers[l];
        static const pdq_linear_id attn[3] = {PDQ_LIN_Q, PDQ_LIN_K, PDQ_LIN_V}, ffn[2] = {PDQ_LIN_GATE, PDQ_LIN_UP};
        for (int i = 0; i < 3; i++) {
            int out, in;
            pdq_linear_shape(c, attn[i], &out, &in);
            scale_cols(L->w[attn[i]], out, in, L->attn_norm);
        }
        for (int i = 0; i < 2; i++) {
            int out, in;
            pdq_linear_shape(c, ffn[i], &out, &in);
            scale_cols(L->w[ffn[i]], out, in, L->ffn_norm);
        }
        set_one(L->attn_norm, D);
        set_one(L->ffn_norm, D);
    }
    if (all_one(m->norm, D)) return PDQ_OK;
    if (c->tie_word_embeddings) {
        /* one tensor is both the embedding and lm_head: folding the final norm into it would
         * change the embedding, so only an untied copy can take it */
        if (!untie) return PDQ_OK;
        float *h = malloc((size_t)V * D * sizeof(float));
        if (!h) return pdq_fail(st, PDQ_ERR_NOMEM, "out of memory untying lm_head (%d x %d)", V, D);
        memcpy(h, m->embed, (size_t)V * D * sizeof(float));
        m->lm_head = h;
        m->cfg.tie_word_embeddings = 0;
    }
    scale_cols(m->lm_head, V, D, m->norm);
    set_one(m->norm, D);
    return PDQ_OK;
}
