/* The layer loop (layer_loop.h). */
#include "contract/layer_loop.h"

pdq_code pdq_ctr_run_layers(pdq_kv_cache *kv, int T, const int *pos, pdq_layer_run_fn run, void *ctx,
                            const float *h, const float **out, pdq_status *st) {
    for (int l = 0; l < kv->L; l++) {
        const float *k, *v;
        pdq_code rc = run(ctx, l, h, &h, &k, &v, st);
        if (rc != PDQ_OK) return rc;
        pdq_kv_store(kv, l, k, v, T, pos);
    }
    *out = h;
    return PDQ_OK;
}
