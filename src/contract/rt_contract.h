/* The static graphs' runtime contract, written once for both runtimes that drive them (the
 * in-memory one, src/static/rt_*.c, and the Circle one, src/circle/crt.c): from token positions,
 * the additive attention masks, the RoPE rows and the cache slots each graph input and K/V
 * output stands for (the I/O order itself is in include/pdq/runtime.h). Internal. */
#ifndef PDQ_CONTRACT_RT_CONTRACT_H
#define PDQ_CONTRACT_RT_CONTRACT_H

/* Prefill mask [S, S] from the positions of the S graph rows (pos[i] -1: padding): a real query
 * sees the real keys at positions <= its own (and, with a sliding window W > 0, above its own
 * minus W), a padding query nothing. */
void pdq_ctr_prefill_mask(const int *pos, int S, int window, float fill, float *mask);
/* Query row q [max_seq] of a Q-token append at cache length len (decode: Q = 1). The graph's keys
 * are concat(past[0 : max_seq - Q], new[Q]): a real query sees the len cached slots and the new
 * keys up to itself, a padding query only itself (so its softmax stays finite). */
void pdq_ctr_append_mask_row(int max_seq, int Q, int len, int q, int real, int window, float fill, float *row);
/* cos/sin rows [hd] of position pos (padding rows take position 0) from tables [*, hd]. */
void pdq_ctr_rope_row(const float *cos_tab, const float *sin_tab, int hd, int pos, float *cos, float *sin);
/* The cache slot of a token at position pos: pos itself inside the cache's C slots; -1 (not
 * stored) for padding (pos -1) or past the cache. */
static inline int pdq_ctr_slot(int pos, int C) { return pos >= 0 && pos < C ? pos : -1; }

#endif
