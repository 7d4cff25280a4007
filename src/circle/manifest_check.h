/* manifest.json of a Circle export, checked before the runtime sizes anything from it: sizes
 * integral and bounded (the same limits as config.json), max_seq bounded, graph options from
 * their enums, mask fill finite. Independent of the Circle files (fuzzed alone). */
#ifndef PDQ_MANIFEST_CHECK_H
#define PDQ_MANIFEST_CHECK_H

#include <cjson/cJSON.h>

#include "pdq/status.h"

#define PDQ_MANIFEST_MAX_SEQ 65536
#define PDQ_MANIFEST_MAX_LAYERS 1024

typedef struct {
    int max_seq, layers, kv_heads, heads, head_dim, hidden, vocab, quantized;
    int rope, scale_fusion, layout; /* pdq_rope_conv, pdq_scale_fusion, pdq_attn_layout */
    double fill;
    int sliding_window;             /* 0: none; else a key is seen by the window's queries */
    /* model.layer_types: 1 where a layer is "sliding_attention" (absent with a sliding_window:
     * every layer); kv_cache.ring_slots, when given, must be the contract's ring */
    unsigned char sliding[PDQ_MANIFEST_MAX_LAYERS];
    int rotary_dim;                 /* the width of the cos/sin inputs (head_dim unless partial) */
    /* rope.layer_tables: 1 where a layer takes the local table (rope_cos_local.npy; present only
     * with one, and then "local" exactly on the sliding layers); local_rope: some layer does */
    unsigned char rope_local[PDQ_MANIFEST_MAX_LAYERS];
    int local_rope;
} pdq_manifest;

pdq_code pdq_manifest_check(const cJSON *root, const char *path, pdq_manifest *m, pdq_status *st);

#endif
