/* Norm weights as TICO quantizes them: int16 symmetric per channel. A 1-D gamma has one value
 * per channel, so each value is its own grid (scale |g| / 32767, code +-32767): the step only
 * rounds through that grid, which keeps the value up to float rounding. */
#include <math.h>

#include "pdq/ptq.h"

static void norm_fq(float *w, int n) {
    for (int i = 0; i < n; i++) {
        pdq_agrid g;
        pdq_agrid_from_range(PDQ_ADT_INT16, fmin(w[i], 0), fmax(w[i], 0), &g);
        pdq_agrid_fq(&g, &w[i], 1);
    }
}

void pdq_ptq_quantize_norms(pdq_model *m) {
    int D = m->cfg.hidden_size;
    for (int l = 0; l < m->cfg.n_layers; l++) {
        norm_fq(m->layers[l].attn_norm, D);
        norm_fq(m->layers[l].ffn_norm, D);
        if (m->layers[l].post_attn_norm) norm_fq(m->layers[l].post_attn_norm, D);
        if (m->layers[l].post_ffn_norm) norm_fq(m->layers[l].post_ffn_norm, D);
    }
    norm_fq(m->norm, D);
}
