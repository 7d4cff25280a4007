/* The layer loop of the static contract, driven by both runtimes (the in-memory stacks of
 * src/static/runtime.c and the Circle per-layer files of src/circle/crt.c): the hidden rows go
 * through the layers in order, and each layer's K/V deltas go into the external cache at the
 * step's slots before the next layer runs. How a layer's graph is given its inputs and run is
 * the runtime's (bound buffers or the file's own); the order and the cache writes are here.
 * Internal. */
#ifndef PDQ_CONTRACT_LAYER_LOOP_H
#define PDQ_CONTRACT_LAYER_LOOP_H

#include "contract/kv_cache.h"

/* Runs layer l on hidden rows h with the step's other inputs (mask, RoPE rows, past K/V from the
 * cache), and gives its hidden output and K/V deltas (B, n_kv, T, hd), valid until the next call. */
typedef pdq_code (*pdq_layer_run_fn)(void *ctx, int l, const float *h, const float **h_out, const float **k,
                                     const float **v, pdq_status *st);

/* Layers 0..kv->L - 1 on h for a step of T rows per batch row, deltas stored at the slots of
 * positions pos[b * T + t] (-1: padding, not stored); the last layer's hidden output in *out.
 * Stops at the first error. */
pdq_code pdq_ctr_run_layers(pdq_kv_cache *kv, int T, const int *pos, pdq_layer_run_fn run, void *ctx,
                            const float *h, const float **out, pdq_status *st);

#endif
