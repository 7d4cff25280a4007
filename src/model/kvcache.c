/* The reference model's dynamic KV cache: plain arrays, per layer [B, n_kv, capacity, hd]. */
#include <stdlib.h>
#include <string.h>

#include "pdq/model.h"

pdq_code pdq_kvcache_init(pdq_kvcache *kv, const pdq_config *cfg, int B, int capacity, pdq_status *st) {
    memset(kv, 0, sizeof *kv);
    if (B <= 0 || capacity <= 0) return pdq_fail(st, PDQ_ERR_ARG, "kv cache: batch %d and capacity %d must be positive", B, capacity);
    kv->B = B;
    kv->capacity = capacity;
    kv->n_layers = cfg->n_layers;
    kv->n_kv = cfg->n_kv_heads;
    kv->head_dim = cfg->head_dim;
    size_t per = (size_t)B * (size_t)kv->n_kv * (size_t)capacity * (size_t)kv->head_dim;
    kv->k = calloc((size_t)kv->n_layers, sizeof *kv->k);
    kv->v = calloc((size_t)kv->n_layers, sizeof *kv->v);
    kv->valid = calloc((size_t)B * (size_t)capacity, 1);
    if (!kv->k || !kv->v || !kv->valid) goto oom;
    for (int l = 0; l < kv->n_layers; l++) {
        kv->k[l] = calloc(per, sizeof(float));
        kv->v[l] = calloc(per, sizeof(float));
        if (!kv->k[l] || !kv->v[l]) goto oom;
    }
    return PDQ_OK;
oom:
    pdq_kvcache_free(kv);
    return pdq_fail(st, PDQ_ERR_NOMEM, "kv cache: %zu floats per layer", per * 2);
}

void pdq_kvcache_free(pdq_kvcache *kv) {
    if (!kv) return;
    for (int l = 0; kv->k && l < kv->n_layers; l++) free(kv->k[l]);
    for (int l = 0; kv->v && l < kv->n_layers; l++) free(kv->v[l]);
    free(kv->k);
    free(kv->v);
    free(kv->valid);
    memset(kv, 0, sizeof *kv);
}
