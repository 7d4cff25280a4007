/* Cross-layer equalization (Nagel et al. 2019) on up->down and v->o: each channel's scale makes
 * the producer's row range equal the consumer's column range, s = sqrt(r1 / r2), so a per-channel
 * grid on either side no longer has to cover an outlier channel of the other. Weight-only. */
#include <math.h>
#include <stdlib.h>

#include "layer_ops.h"
#include "scale_pairs.h"

pdq_code pdq_cle_layer(pdq_layer *L, const pdq_config *c, pdq_status *st) {
    int D = c->hidden_size, I = c->intermediate_size, H = c->n_heads, KV = c->n_kv_heads, hd = c->head_dim;
    int n = I > H * hd ? I : H * hd;
    float *r2 = malloc((size_t)n * sizeof(float)), *tmp = malloc((size_t)n * sizeof(float));
    float *s = malloc((size_t)n * sizeof(float));
    pdq_code rc = r2 && tmp && s ? PDQ_OK : pdq_fail(st, PDQ_ERR_NOMEM, "CLE: out of memory");
    if (!rc) {
        pdq_absmax_cols(L->w[PDQ_LIN_DOWN], D, I, r2);
        for (int j = 0; j < I; j++)
            s[j] = pdq_safe_scale(sqrt((double)pdq_absmax_row(L->w[PDQ_LIN_UP] + (size_t)j * D, D) / r2[j]));
        pdq_migrate_up_down(L, c, s);
        pdq_o_cols_absmax_grouped(L, c, tmp, r2);
        for (int j = 0; j < KV * hd; j++)
            s[j] = pdq_safe_scale(sqrt((double)pdq_absmax_row(L->w[PDQ_LIN_V] + (size_t)j * D, D) / r2[j]));
        pdq_migrate_v_o(L, c, s);
    }
    free(r2);
    free(tmp);
    free(s);
    return rc;
}
