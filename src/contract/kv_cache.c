/* The external KV cache (kv_cache.h). */
#include "contract/kv_cache.h"

#include <stdlib.h>
#include <string.h>

#include "contract/rt_contract.h"
#include "pdq/requant.h"

static size_t es_of(pdq_tdtype dt) { return dt == PDQ_TF32 ? sizeof(float) : pdq_tdtype_size(dt); }

pdq_kv_grid pdq_kv_grid_of(const pdq_tensor *t) {
    pdq_kv_grid g = {PDQ_TF32, 1.0f, 0};
    if (t && t->q && t->q->n == 1 && (t->dtype == PDQ_TI16 || t->dtype == PDQ_TU8)) {
        g.dt = t->dtype;
        g.scale = t->q->scale[0];
        g.zero_point = t->q->zero_point[0];
    }
    return g;
}

void pdq_kv_free(pdq_kv_cache *c) {
    if (!c) return;
    for (int i = 0; c->data && i < 2 * c->L; i++) free(c->data[i]);
    free(c->data);
    free(c->grid);
    free(c->ring);
    memset(c, 0, sizeof *c);
}

pdq_code pdq_kv_init(pdq_kv_cache *c, int L, int B, int KV, int C, int hd, const pdq_kv_grid *grid, const int *ring,
                     pdq_status *st) {
    memset(c, 0, sizeof *c);
    c->L = L;
    c->B = B;
    c->KV = KV;
    c->C = C;
    c->hd = hd;
    c->grid = calloc((size_t)(2 * L) + 1, sizeof *c->grid);
    c->data = calloc((size_t)(2 * L) + 1, sizeof *c->data);
    c->ring = calloc((size_t)L + 1, sizeof *c->ring);
    size_t n = (size_t)B * KV * C * hd;
    int ok = c->grid && c->data && c->ring;
    for (int l = 0; ok && l < L; l++) c->ring[l] = ring ? ring[l] : 0;
    for (int i = 0; ok && i < 2 * L; i++) {
        c->grid[i] = grid ? grid[i] : (pdq_kv_grid){PDQ_TF32, 1.0f, 0};
        size_t ni = (size_t)B * KV * pdq_kv_slots(c, i / 2) * hd;
        ok = (c->data[i] = calloc(ni ? ni : 1, es_of(c->grid[i].dt))) != NULL;
    }
    if (ok) return PDQ_OK;
    pdq_kv_free(c);
    return pdq_fail(st, PDQ_ERR_NOMEM, "KV cache: %d layers of %zu slots' values", L, n);
}

void pdq_kv_zero(pdq_kv_cache *c) {
    /* each buffer at its own size: a ring layer holds fewer slots than C */
    for (int i = 0; i < 2 * c->L; i++)
        memset(c->data[i], 0, (size_t)c->B * c->KV * pdq_kv_slots(c, i / 2) * c->hd * es_of(c->grid[i].dt));
}

size_t pdq_kv_bytes(const pdq_kv_cache *c) {
    size_t n = 0;
    for (int i = 0; i < 2 * c->L; i++) n += (size_t)c->B * c->KV * pdq_kv_slots(c, i / 2) * c->hd * es_of(c->grid[i].dt);
    return n;
}

/* n values of src into cache i at element `at`. */
static void put(const pdq_kv_cache *c, int i, size_t at, const float *src, size_t n) {
    const pdq_kv_grid *g = &c->grid[i];
    if (g->dt == PDQ_TF32) {
        memcpy((float *)c->data[i] + at, src, n * sizeof(float));
        return;
    }
    int64_t lo = g->dt == PDQ_TI16 ? -32768 : 0, hi = g->dt == PDQ_TI16 ? 32767 : 255;
    for (size_t j = 0; j < n; j++) {
        int64_t q = pdq_rq_code((double)src[j], (double)g->scale, g->zero_point, lo, hi);
        if (g->dt == PDQ_TI16) ((int16_t *)c->data[i])[at + j] = (int16_t)q;
        else ((uint8_t *)c->data[i])[at + j] = (uint8_t)q;
    }
}

void pdq_kv_store(pdq_kv_cache *c, int l, const float *k, const float *v, int T, const int *pos) {
    size_t hd = (size_t)c->hd, C = (size_t)pdq_kv_slots(c, l);
    for (int b = 0; b < c->B; b++)
        for (int t = 0; t < T; t++) {
            int s = pdq_ctr_cache_slot(pos[(size_t)b * T + t], c->ring[l], c->C);
            if (s < 0 || (size_t)s >= C) continue;
            for (int h = 0; h < c->KV; h++) {
                size_t src = (((size_t)b * c->KV + h) * T + t) * hd;
                size_t dst = (((size_t)b * c->KV + h) * C + s) * hd;
                put(c, 2 * l, dst, k + src, hd);
                put(c, 2 * l + 1, dst, v + src, hd);
            }
        }
}

void pdq_kv_past(const pdq_kv_cache *c, int l, int which, int P, float *dst) {
    const pdq_kv_grid *g = &c->grid[2 * l + which];
    const void *src = c->data[2 * l + which];
    size_t hd = (size_t)c->hd, run = (size_t)P * hd, C = (size_t)pdq_kv_slots(c, l);
    for (size_t bh = 0; bh < (size_t)c->B * c->KV; bh++) {
        size_t from = bh * C * hd;
        float *d = dst + bh * run;
        if (g->dt == PDQ_TF32) {
            memcpy(d, (const float *)src + from, run * sizeof(float));
            continue;
        }
        for (size_t j = 0; j < run; j++) {
            int64_t q = g->dt == PDQ_TI16 ? ((const int16_t *)src)[from + j] : ((const uint8_t *)src)[from + j];
            d[j] = (float)pdq_rq_value(q, (double)g->scale, g->zero_point);
        }
    }
}

void pdq_kv_past_codes(const pdq_kv_cache *c, int l, int which, int P, void *dst) {
    size_t es = es_of(c->grid[2 * l + which].dt), hd = (size_t)c->hd, run = (size_t)P * hd * es;
    size_t C = (size_t)pdq_kv_slots(c, l);
    const char *src = c->data[2 * l + which];
    for (size_t bh = 0; bh < (size_t)c->B * c->KV; bh++) memcpy((char *)dst + bh * run, src + bh * C * hd * es, run);
}

int pdq_kv_same_grid(const pdq_kv_cache *c, int l, int which, const pdq_tensor *t) {
    const pdq_kv_grid *g = &c->grid[2 * l + which];
    return g->dt != PDQ_TF32 && t->q && t->q->n == 1 && t->dtype == g->dt && t->q->scale[0] == g->scale &&
           t->q->zero_point[0] == g->zero_point;
}
