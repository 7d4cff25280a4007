/* Static-shape decoder-layer graphs (prefill / decode / append) and the runtime that drives
 * them with an external KV cache, the way an NPU runs fixed-shape graphs. */
#ifndef PDQ_RUNTIME_H
#define PDQ_RUNTIME_H

#include <stdint.h>

#include "pdq/graph.h"
#include "pdq/model.h"
#include "pdq/qexec.h"
#include "pdq/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------- graph options (TICO NPU export profile knobs) ---------------- */

typedef enum { PDQ_RT_ROPE_HF = 0, PDQ_RT_ROPE_PRE_NEGATED_SIN } pdq_rope_conv;
typedef enum { PDQ_RT_SCALE_LOGITS = 0, PDQ_RT_SCALE_K_PROJ } pdq_scale_fusion;
typedef enum { PDQ_RT_LAYOUT_BATCHED = 0, PDQ_RT_LAYOUT_UNROLLED } pdq_attn_layout;

typedef struct {
    pdq_rope_conv rope;      /* hf: rotate_half = cat(-x2, x1); pre_negated_sin: cat(x2, x1) with
                                the first half of sin negated by the runtime */
    pdq_scale_fusion scale;  /* 1/sqrt(hd) on the logits, or folded into a scaled copy of Wk (then
                                the cached K is the scaled K) */
    pdq_attn_layout layout;  /* batched heads (GATHER repeats kv heads for GQA) or one chain per head */
    float mask_fill;         /* additive value of masked positions (default -120) */
} pdq_static_opts;

void pdq_static_opts_default(pdq_static_opts *o);
/* Parses "hf"/"pre_negated_sin", "none"/"k_proj", "batched"/"unrolled"; -1 when unknown. */
int pdq_rope_conv_parse(const char *s);
int pdq_scale_fusion_parse(const char *s);
int pdq_attn_layout_parse(const char *s);

/* Graph I/O contract, in order. Prefill (S = max_seq):
 *   in:  hidden (B,S,D), attention_mask (B,S,S) additive, cos (B,S,hd), sin (B,S,hd)
 *   out: hidden (B,S,D), new_k (B,n_kv,S,hd) after RoPE, new_v (B,n_kv,S,hd)
 * Append of Q tokens (decode is Q = 1), past P = max_seq - Q:
 *   in:  hidden (B,Q,D), attention_mask (B,Q,max_seq), past_key (B,n_kv,P,hd),
 *        past_value (B,n_kv,P,hd), cos (B,Q,hd), sin (B,Q,hd)
 *   out: hidden (B,Q,D), new_k (B,n_kv,Q,hd), new_v (B,n_kv,Q,hd)  (the delta only)
 * Keys inside the append graph are concat(past, new): the new tokens sit at slots P..max_seq-1.
 * A sliding layer (window W < max_seq, src/contract/rt_contract.h) takes its ring instead:
 * past (B,n_kv,W-1,hd) for every Q and a mask (B,Q,W-1+Q); its prefill mask carries the window. */
enum { PDQ_PF_IN_HIDDEN = 0, PDQ_PF_IN_MASK, PDQ_PF_IN_COS, PDQ_PF_IN_SIN };
enum { PDQ_AP_IN_HIDDEN = 0, PDQ_AP_IN_MASK, PDQ_AP_IN_PAST_K, PDQ_AP_IN_PAST_V, PDQ_AP_IN_COS, PDQ_AP_IN_SIN };
enum { PDQ_L_OUT_HIDDEN = 0, PDQ_L_OUT_K, PDQ_L_OUT_V };

typedef enum { PDQ_MODE_PREFILL = 0, PDQ_MODE_APPEND } pdq_graph_mode;

/* Builds decoder layer `layer` (weights from w, or m->layers[layer] when w is NULL; borrowed, so
 * they must outlive the graph). prefill: Q is ignored (S = max_seq). append: 1 <= Q < max_seq.
 * Tensor names are HF-like: "model.layers.<i>.self_attn.q_proj.out", "...weight", inputs
 * "model.layers.<i>.hidden_states", "...attention_mask", "...past_key", "...cos", ... */
pdq_code pdq_build_layer(const pdq_model *m, int layer, const pdq_layer *w, pdq_graph_mode mode,
                         int B, int max_seq, int Q, const pdq_static_opts *o, pdq_graph **out,
                         pdq_status *st);

/* Embedding graph: in input_ids int32 (B,T) -> GATHER(embed) -> out (B,T,D). */
pdq_code pdq_build_embed(const pdq_model *m, int B, int T, pdq_graph **out, pdq_status *st);
/* Head graph: in hidden (B,T,D) -> RMS_NORM(model.norm) -> FC(lm_head) -> logits (B,T,V). */
pdq_code pdq_build_head(const pdq_model *m, int B, int T, pdq_graph **out, pdq_status *st);

/* ---------------- the runtime ---------------- */

typedef enum { PDQ_PAD_LEFT = 0, PDQ_PAD_RIGHT } pdq_padding;

typedef struct pdq_rt pdq_rt;

/* Creates a runtime for batch B and static length max_seq (>= 2). Graphs are built per layer:
 * prefill now, append buckets on first use. Cache per layer: (B, n_kv, max_seq-1, hd), a sliding
 * layer's ring (B, n_kv, W-1, hd). The model
 * must outlive the runtime (weights are borrowed). */
pdq_code pdq_rt_create(const pdq_model *m, int B, int max_seq, const pdq_static_opts *o,
                       pdq_rt **out, pdq_status *st);
void pdq_rt_free(pdq_rt *rt);

int pdq_rt_batch(const pdq_rt *rt);
int pdq_rt_max_seq(const pdq_rt *rt);
/* Tokens in row b's sequence so far (prompt + decoded + appended). */
int pdq_rt_len(const pdq_rt *rt, int b);
void pdq_rt_reset(pdq_rt *rt);
/* pdq_rt_reset and every cache slot zeroed, as a new runtime: what the masked slots of the next
 * sequence hold then does not depend on earlier sequences. */
void pdq_rt_clear(pdq_rt *rt);
/* Forgets row b's tokens from position len on (0 <= len <= its length): the next append writes
 * from slot len. Masks never show a slot at or past a row's length, so what those slots still
 * hold is never read (as after any prefill). Used to score several continuations of one
 * prefilled context (pdq eval). */
pdq_code pdq_rt_rewind(pdq_rt *rt, int b, int len, pdq_status *st);
/* The layer graphs (for observers / export): mode prefill, or append with Q (built if needed). */
pdq_code pdq_rt_layer_graph(pdq_rt *rt, pdq_graph_mode mode, int Q, int layer, const pdq_graph **g,
                            pdq_status *st);
/* Hook called after every op of every layer graph the runtime runs (NULL to clear). */
void pdq_rt_set_hook(pdq_rt *rt, pdq_edge_hook hook, void *ctx);

/* Integer mode: every graph the runtime runs from now on is lowered by lower(ctx, float graph,
 * &quantized graph) and run by the integer executor with eo (pool, scalar); the edge hook is not
 * called. Graph stacks are rebuilt; NULL lower reverts to the float interpreter. */
typedef pdq_code (*pdq_rt_lower_fn)(void *ctx, const pdq_graph *g, pdq_graph **qg, pdq_status *st);
pdq_code pdq_rt_set_lowering(pdq_rt *rt, pdq_rt_lower_fn lower, void *ctx, const pdq_exec_opts *eo, pdq_status *st);
/* Layer l's cache (which 0: K, 1: V), (B, n_kv, max_seq-1, hd) float values, or a sliding layer's
 * ring (B, n_kv, W-1, hd) (slot = position mod (W-1); src/contract/rt_contract.h); NULL for a bad index. */
const float *pdq_rt_cache(const pdq_rt *rt, int layer, int which);
/* Bytes of the external KV cache: (full layers x (max_seq-1) + sliding layers x ring slots) x
 * n_kv x hd x 2 x 4. */
size_t pdq_rt_kv_bytes(const pdq_rt *rt);

/* Prefill: starts new sequences. ids/mask are (B,T) row-major with T <= max_seq; mask 1 = real
 * token, 0 = padding (NULL: all real). Padding must sit on the `pad` side of every row and every
 * row needs a real token. The runtime pads to max_seq on that side, uses compact positions (first
 * real token is position 0), writes the real tokens' K/V compacted into the cache.
 * logits (B,V): each row's last real token (may be NULL). all_logits (B,T,V): every position
 * of the caller's layout (padding positions hold finite but meaningless values), may be NULL. */
pdq_code pdq_rt_prefill(pdq_rt *rt, int B, int T, const int32_t *ids, const uint8_t *mask,
                        pdq_padding pad, float *logits, float *all_logits, pdq_status *st);

/* Prefill from n unpadded rows (ids[b], lens[b]) padded on the given side. */
pdq_code pdq_rt_prefill_rows(pdq_rt *rt, int B, const int32_t *const *ids, const int *lens,
                             pdq_padding pad, float *logits, pdq_status *st);

/* One decode step: one new token per row (ids[B]); logits (B,V). */
pdq_code pdq_rt_decode(pdq_rt *rt, int B, const int32_t *ids, float *logits, pdq_status *st);

/* Appends n[b] tokens to row b (ids (B,T) row-major, real tokens first in each row; n NULL: T
 * each) through the append graph in buckets of Q tokens. logits (B,V): last appended token of
 * each row with n[b] > 0 (other rows untouched); all_logits (B,T,V) optional. */
pdq_code pdq_rt_append(pdq_rt *rt, int B, int T, const int32_t *ids, const int *n, int Q,
                       float *logits, float *all_logits, pdq_status *st);

/* A pdq_window_logits_fn (eval.h) running the prefill graph with B = 1: ctx is a pdq_rt*. */
pdq_code pdq_rt_window_logits(void *ctx, const int32_t *ids, int T, float *logits, pdq_status *st);

#ifdef __cplusplus
}
#endif
#endif
