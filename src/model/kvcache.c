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

void pdq_kvcache_fan_out(pdq_kvcache *dst, const pdq_kvcache *src, int n) {
    size_t slot = (size_t)src->head_dim;
    for (int l = 0; l < dst->n_layers; l++)
        for (int b = 0; b < dst->B; b++)
            for (int h = 0; h < dst->n_kv; h++) {
                size_t d = ((size_t)b * dst->n_kv + h) * dst->capacity * slot, s = (size_t)h * src->capacity * slot;
                memcpy(dst->k[l] + d, src->k[l] + s, (size_t)n * slot * sizeof(float));
                memcpy(dst->v[l] + d, src->v[l] + s, (size_t)n * slot * sizeof(float));
            }
    for (int b = 0; b < dst->B; b++) memcpy(dst->valid + (size_t)b * dst->capacity, src->valid, (size_t)n);
    dst->len = n;
}
