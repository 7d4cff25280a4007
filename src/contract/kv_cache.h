/* The external KV cache of the static contract, one module for both runtimes (the in-memory one,
 * src/static/, and the Circle one, src/circle/crt.c): per layer a K and a V cache of
 * (B, n_kv, C_l, hd) slots, C_l = max_seq - 1 for a full layer, its ring R for a sliding one
 * (rt_contract.h). The graphs return only the K/V of their own positions (deltas); the cache
 * writes them at the slot of their position (pdq_ctr_cache_slot) and feeds the first
 * max_seq - Q slots (a ring: all R) back as a Q-token graph's past. A cache holds float values, or the codes of
 * the grid of the graph's K/V output (int16 / uint8 with its scale and zero point), stored by the
 * one requantization rule (pdq/requant.h) and fed as they are to an input on the same grid.
 * Internal. */
#ifndef PDQ_CONTRACT_KV_CACHE_H
#define PDQ_CONTRACT_KV_CACHE_H

#include <stdint.h>

#include "pdq/graph.h"
#include "pdq/status.h"

typedef struct {
    pdq_tdtype dt;      /* PDQ_TF32: float values; PDQ_TI16 / PDQ_TU8: codes on this grid */
    float scale;
    int64_t zero_point;
} pdq_kv_grid;

typedef struct {
    int L, B, KV, C, hd; /* C: a full layer's slots */
    pdq_kv_grid *grid;  /* [2L]: layer l's K at 2l, its V at 2l + 1 */
    int *ring;          /* [L]: ring slots of a sliding layer, 0 for a full one */
    void **data;        /* [2L] of (B, KV, C_l, hd), zeroed */
} pdq_kv_cache;

/* The grid of a graph's K/V tensor t: its codes when it is quantized (per tensor), else float. */
pdq_kv_grid pdq_kv_grid_of(const pdq_tensor *t);
/* grid: [2L] (NULL: every cache float); ring: [L] (NULL: every layer full). On error c holds
 * nothing and needs no free. */
pdq_code pdq_kv_init(pdq_kv_cache *c, int L, int B, int KV, int C, int hd, const pdq_kv_grid *grid, const int *ring,
                     pdq_status *st);
/* Layer l's slots: its ring, or C. */
static inline int pdq_kv_slots(const pdq_kv_cache *c, int l) { return c->ring[l] ? c->ring[l] : c->C; }
/* Bytes the caches hold (every layer, K and V). */
size_t pdq_kv_bytes(const pdq_kv_cache *c);
void pdq_kv_free(pdq_kv_cache *c);
/* Every slot back to code 0, as pdq_kv_init left them. */
void pdq_kv_zero(pdq_kv_cache *c);
/* Layer l's K (which 0) or V (which 1) cache, in its grid's dtype. */
static inline void *pdq_kv_data(const pdq_kv_cache *c, int l, int which) { return c->data[2 * l + which]; }
/* Writes K/V deltas k, v (B, KV, T, hd) of row b's step at positions pos[b * T + t] (-1: padding)
 * into their slots, in order (a ring keeps the latest R); a position past a full cache is not
 * stored. */
void pdq_kv_store(pdq_kv_cache *c, int l, const float *k, const float *v, int T, const int *pos);
/* The past input of a Q-token graph, P <= C_l slots (pdq_ctr_past_slots): slots [0, P) of every
 * (row, head) of one cache, into dst (B, KV, P, hd) as float values (codes dequantized). */
void pdq_kv_past(const pdq_kv_cache *c, int l, int which, int P, float *dst);
/* The same as codes, for an input on the cache's own grid (pdq_kv_same_grid). */
void pdq_kv_past_codes(const pdq_kv_cache *c, int l, int which, int P, void *dst);
/* Whether input tensor t takes the codes of cache (l, which) as they are. */
int pdq_kv_same_grid(const pdq_kv_cache *c, int l, int which, const pdq_tensor *t);

#endif
