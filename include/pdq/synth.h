/* Synthetic checkpoints of any family (random weights, HF layout) for tests and benchmarks. */
#ifndef PDQ_SYNTH_H
#define PDQ_SYNTH_H

#include <stdint.h>

#include "pdq/safetensors.h"
#include "pdq/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    const char *out_dir;   /* created if missing */
    const char *family;    /* a model_type of pdq/family.h ("qwen2", ...) or a family name
                              ("gemma3"); NULL: "llama" */
    int bias;              /* llama: attention_bias and mlp_bias */
    int hidden, intermediate, layers, heads, kv_heads;
    int head_dim;          /* 0: not written (hidden / heads) */
    int vocab;
    pdq_dtype dtype;       /* F32, BF16 or F16 */
    int shards;            /* <= 1: model.safetensors; else N shards + model.safetensors.index.json */
    int tied;              /* tie_word_embeddings (no lm_head.weight stored) */
    int rope_llama3;       /* llama3 rope_scaling with the four values below */
    double rope_factor, rope_low, rope_high;
    int rope_orig_max_pos;
    double rope_theta;
    int max_pos;
    /* sandwich-block families (gemma3_text): sliding_window (0: 4096, the config default), every
     * window_pattern-th layer global (0: 6) and the local RoPE base (0: 10000) */
    int window, window_pattern;
    double rope_local_theta;
    int sliding_window;    /* > 0: written as sliding_window; qwen2 also gets use_sliding_window */
    int max_window_layers; /* qwen2 with a window: the layers from this index on slide */
    uint64_t seed;
} pdq_synth_opts;

/* A tiny GQA model: hidden 64, intermediate 160, 2 layers, 4 heads, 2 kv heads, vocab 300, f32. */
void pdq_synth_opts_default(pdq_synth_opts *o);

/* Writes config.json and the weights, streaming tensor by tensor. Values depend only on the
 * seed and the tensor name (not on dtype or sharding) and are exactly representable in bf16 and
 * f16, so every dtype/sharding of the same seed loads to identical f32 weights:
 * linears/embeddings ~ N(0, 0.02), norms ~ 1 + N(0, 0.1) (N(0, 0.1) for Gemma's (1 + w) norms). */
pdq_code pdq_synth_write(const pdq_synth_opts *o, pdq_status *st);

#ifdef __cplusplus
}
#endif
#endif
