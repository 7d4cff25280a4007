/* The static graphs' runtime contract, written once for both runtimes that drive them (the
 * in-memory one, src/static/rt_*.c, and the Circle one, src/circle/crt.c): from token positions,
 * the additive attention masks, the RoPE rows and the cache slots each graph input and K/V
 * output stands for (the I/O order itself is in include/pdq/runtime.h). Internal.
 *
 * Attention types. A layer is full (its cache has max_seq - 1 slots, slot = position) or, when
 * its window W is shorter than max_seq, sliding: its cache is a ring of R = W - 1 slots (1 when
 * W = 1), slot = position mod R, and its append graphs of Q tokens take the whole ring as past
 * (keys = concat(ring[R], new[Q]), mask (Q, R + Q)). A window >= max_seq masks nothing a static
 * graph can hold, so such a layer is full. README "static contract" has the table. */
#ifndef PDQ_CONTRACT_RT_CONTRACT_H
#define PDQ_CONTRACT_RT_CONTRACT_H

#include <stddef.h>
#include <stdint.h>

#include "pdq/config.h"
#include "pdq/model.h"

/* Ring slots of a layer with window `window` (0: full) at static length max_seq; 0: full layer. */
static inline int pdq_ctr_ring_of(int window, int max_seq) {
    return window > 0 && window < max_seq ? (window > 1 ? window - 1 : 1) : 0;
}
/* Layer l's ring slots (0: a full layer) from the family's per-layer window. */
static inline int pdq_ctr_ring(const pdq_config *c, int max_seq, int l) {
    return pdq_ctr_ring_of(pdq_cfg_layer_window(c, l), max_seq);
}
/* Whether going back from length `from` to `to` keeps every key a query at `to` needs: the
 * positions written since (to .. from-1) went to slots p mod ring, which held p - ring, and a
 * query at `to` needs to - ring .. to - 1. Exact when no ring layer exists, when going back to
 * the start, or when nothing written since reached position ring (only then did a write land on
 * a still-needed slot). */
static inline int pdq_ctr_rewind_exact(int ring, int from, int to) {
    return !ring || !to || from <= (to > ring ? to : ring);
}
/* Whether any layer (ring 1) / any full layer (ring 0) exists at max_seq. */
int pdq_ctr_has_type(const pdq_config *c, int max_seq, int ring);
/* Cache slots of a layer: its ring, or max_seq - 1. */
static inline int pdq_ctr_cache_slots(int ring, int max_seq) { return ring ? ring : max_seq - 1; }
/* Past slots of a Q-token graph (decode: Q = 1): the whole ring, or the cache's first max_seq - Q. */
static inline int pdq_ctr_past_slots(int ring, int max_seq, int Q) { return ring ? ring : max_seq - Q; }

/* Prefill mask [S, S] from the positions of the S graph rows (pos[i] -1: padding): a real query
 * sees the real keys at positions <= its own (and, with a sliding window W > 0, above its own
 * minus W), a padding query nothing. */
void pdq_ctr_prefill_mask(const int *pos, int S, int window, float fill, float *mask);
/* Query row q [max_seq] of a Q-token append at cache length len (decode: Q = 1) on a full layer.
 * The graph's keys are concat(past[0 : max_seq - Q], new[Q]): a real query sees the len cached
 * slots and the new keys up to itself, a padding query only itself (so its softmax stays finite). */
void pdq_ctr_append_mask_row(int max_seq, int Q, int len, int q, int real, int window, float fill, float *row);
/* Query row q [ring + Q] of a Q-token append at cache length len on a sliding layer of window W
 * whose ring has `ring` slots. Keys are concat(ring[0 : ring], new[Q]); ring slot j holds the
 * latest position p < len with p mod ring = j (none when len <= j). A real query at position
 * len + q sees slot j when that p exists and p > len + q - W, and new key i when i <= q and
 * q - i < W; a padding query only itself. */
void pdq_ctr_ring_mask_row(int ring, int window, int Q, int len, int q, int real, float fill, float *row);
/* The mask row of a layer type: ring 0 takes pdq_ctr_append_mask_row (window 0), else the ring row. */
void pdq_ctr_type_mask_row(int ring, int window, int max_seq, int Q, int len, int q, int real, float fill, float *row);
/* Whether layer l turns RoPE by the local table (a sliding layer by the family, whatever its ring,
 * of a model whose local table differs from the global one; pdq_rope_local_differs). */
static inline int pdq_ctr_rope_local(const pdq_config *c, int l) {
    return pdq_cfg_layer_window(c, l) > 0 && pdq_rope_local_differs(c);
}
/* RoPE tables (max_seq, rd) or row buffers (rows, rd): the global pair and the local pair of
 * sliding layers (NULL when no layer takes a local table). */
typedef struct {
    float *cos, *sin, *cos_local, *sin_local;
} pdq_ctr_rope;
/* Fills the tables of positions pos[0..n) (n rows each): the global pair, and the local pair when
 * tab->cos_local is not NULL; pre_negate: the first rd/2 columns of sin negated (the
 * pre_negated_sin convention). */
void pdq_ctr_rope_tables(const pdq_model *m, int n, const int32_t *pos, int pre_negate, const pdq_ctr_rope *tab);
/* Row `row` of every pair in `rows` <- the tables' row of absolute position pos (padding rows
 * take position 0), rd wide. */
void pdq_ctr_rope_rows(const pdq_ctr_rope *tab, int rd, int pos, const pdq_ctr_rope *rows, size_t row);
/* The cos/sin pair a layer takes: the local one when it turns by the local table. */
static inline void pdq_ctr_rope_pick(const pdq_ctr_rope *r, int local, float **cos, float **sin) {
    *cos = local && r->cos_local ? r->cos_local : r->cos;
    *sin = local && r->sin_local ? r->sin_local : r->sin;
}
/* The cache slot of a token at position pos: pos itself inside the cache's C slots; -1 (not
 * stored) for padding (pos -1) or past the cache. */
static inline int pdq_ctr_slot(int pos, int C) { return pos >= 0 && pos < C ? pos : -1; }
/* The slot of position pos in a layer's cache: the ring slot pos mod ring, or pdq_ctr_slot. */
static inline int pdq_ctr_cache_slot(int pos, int ring, int C) {
    return ring ? (pos >= 0 ? pos % ring : -1) : pdq_ctr_slot(pos, C);
}

/* Inputs of a whole-model graph (one file holding every layer), in order, -1 when absent: the
 * ids, one mask per attention type present ("attention_mask" for full layers,
 * "sliding_attention_mask" for sliding ones), cos and sin (the global table), "cos_local" and
 * "sin_local" when some layer takes the local table, then (decode / append) each layer's past K
 * and V from index `past`. A model without sliding layers has exactly ids, mask, cos, sin. */
typedef struct {
    int ids, mask_full, mask_ring, cos, sin, cos_local, sin_local, past, n_shared;
} pdq_ctr_whole_io;
void pdq_ctr_whole_io_of(int has_full, int has_ring, int has_local, pdq_ctr_whole_io *io);

#endif
