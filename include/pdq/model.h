/* The FP32 reference Llama model: plain, independent, Hugging Face semantics. It is the oracle
 * that the static, quantized and exported paths are checked against. */
#ifndef PDQ_MODEL_H
#define PDQ_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "pdq/config.h"
#include "pdq/family.h"
#include "pdq/status.h"

#ifdef __cplusplus
extern "C" {
#endif


typedef struct {
    float *attn_norm;          /* [D] input_layernorm */
    float *w[PDQ_LIN_COUNT];   /* q [H*hd, D], k/v [KV*hd, D], o [D, H*hd], gate/up [I, D], down [D, I] */
    float *ffn_norm;           /* [D] before the MLP: post_attention_layernorm (Llama), pre_feedforward_layernorm (Gemma) */
    float *wk_scale;           /* NULL, or [n_kv*hd] when Wk is per-row quantized (w = wk_scale[r] *
                                  integer): a k_proj scale fold then scales these scales, so the folded
                                  weight is still (code - zero) * float32 scale, exactly as exported;
                                  [n_kv*hd][ceil(D / wk_group)] when Wk is quantized in groups */
    int wk_group;              /* 0: wk_scale per row; else the columns of one group */
    float *bias[PDQ_LIN_COUNT];/* [out] when cfg.bias_mask has the linear's bit, else NULL */
    float *q_norm, *k_norm;    /* [head_dim] when cfg.qk_norm, else NULL */
    float *post_attn_norm;     /* [D] sandwich block (Gemma's post_attention_layernorm), else NULL */
    float *post_ffn_norm;      /* [D] sandwich block (post_feedforward_layernorm), else NULL */
    struct pdq_qmatrix *pw[PDQ_LIN_COUNT]; /* packed weight-only model (pdq_model_load_packed): the
                                  packed linear (w[i] is then NULL), else NULL */
} pdq_layer;

enum { PDQ_ACQ_EMBED = -1, PDQ_ACQ_LM_HEAD = -2 };

typedef struct pdq_model {
    pdq_config cfg;
    float *embed;       /* [V, D] */
    pdq_layer *layers;  /* [n_layers] */
    float *norm;        /* [D] final norm */
    float *lm_head;     /* [V, D]; == embed when tied */
    float *inv_freq;    /* [rotary_dim/2] RoPE inverse frequencies (llama3 scaling applied; longrope:
                           the short factors') */
    float *inv_freq_long; /* longrope: [rotary_dim/2] for sequences past its original length; else NULL */
    float *inv_freq_local; /* [rotary_dim/2] of sliding layers when cfg.rope_local_theta is set; else NULL */
    int n_threads;
    char *dir;          /* directory it was loaded from */
    struct pdq_safetensors *lazy_src; /* non-NULL: loaded lazily (pdq_model_load_lazy), the open
                                         source the big weights are read from on demand */
    /* lazy model seen through a rewrite (pdq_transform_attach): called by every acquire once it has
     * read its tensors from the source and before anyone sees them, what = a layer index or
     * PDQ_ACQ_EMBED / PDQ_ACQ_LM_HEAD; it rewrites them in place. NULL: none. */
    pdq_code (*on_acquire)(void *ctx, struct pdq_model *m, int what, pdq_status *st);
    void *on_acquire_ctx;
    int lm_head_of_embed;          /* lazy: lm_head is read from the embedding tensor (a tied source
                                      untied in memory, tie_word_embeddings then 0) */
    struct pdq_qmatrix *embed_q;   /* packed model: the quantized embedding (embed is then NULL) */
    struct pdq_qmatrix *lm_head_q; /* packed model: the quantized lm_head (lm_head NULL); == embed_q when tied */
    struct pdq_packed *packed;     /* packed model: owns the mapped checkpoint and the matrices */
    struct pdq_pool *pool;         /* workers for the linears: packed kernels, f32 matmul (pdq_set_threads) */
    int kernel_path;               /* packed model: 0 the fastest the CPU has, 1 scalar, 2 AVX2 (no
                                      AVX-512), 3 AVX2 without VNNI; these compute the same bits.
                                      4: the f32 kernels for uint4 too (A/B against the integer
                                      path; differs from it in the last bits) */
    struct pdq_fwd_work *work;     /* scratch the forward keeps between calls (model/work.h), so
                                      a model runs one forward at a time; NULL: per call */
} pdq_model;

/* Loads an HF checkpoint directory (config.json + safetensors, sharded or not; f32/bf16/f16
 * converted to f32 once). A pdq quantized checkpoint directory (see quant.h) loads too: its
 * weights are dequantized. Tensor shapes are all checked; errors name file and tensor. */
pdq_code pdq_model_load(const char *dir, pdq_model **out, pdq_status *st);
/* Weight-only load of a pdq quantized checkpoint for the reference forward (generate, ppl,
 * logits): codes, scales and zero points stay packed (codes read from the mapped file) and the
 * forward calls the packed kernels (src/kernels/qmatmul.h); no f32 copy of a quantized linear,
 * embedding or lm_head is made. Such a model has NULL float pointers where weights are packed,
 * so code that needs f32 weights (static graphs, PTQ, export, GPTQ) loads with pdq_model_load.
 * Any other directory loads as pdq_model_load. The model owns a worker pool for its kernels
 * (sized by pdq_set_threads), so one packed model runs one forward at a time. */
pdq_code pdq_model_load_packed(const char *dir, pdq_model **out, pdq_status *st);
/* Weight bytes one decode token reads: packed codes, scales, zeros of every packed matrix plus
 * the f32 bytes of the float linears and lm_head (embedding rows and norms not counted). */
size_t pdq_model_decode_weight_bytes(const pdq_model *m);
/* Lazy load, for whole-model work that needs one layer at a time (quantization): config, norms
 * and RoPE tables are loaded; the decoder linears, the embedding and lm_head stay NULL, read
 * from the mmapped safetensors (converted to f32) by the acquire calls and freed by release.
 * A pdq quantized checkpoint directory loads eagerly (as pdq_model_load). On an eagerly loaded
 * model acquire and release do nothing, so code written for both works on either. */
pdq_code pdq_model_load_lazy(const char *dir, pdq_model **out, pdq_status *st);
/* Weights of layer l (m->layers[l].w[*]) as f32. */
pdq_code pdq_model_layer_acquire(pdq_model *m, int l, pdq_status *st);
void pdq_model_layer_release(pdq_model *m, int l);
/* m->embed (and m->lm_head when tied) / m->lm_head (the embedding when tied). */
pdq_code pdq_model_embed_acquire(pdq_model *m, pdq_status *st);
void pdq_model_embed_release(pdq_model *m);
pdq_code pdq_model_lm_head_acquire(pdq_model *m, pdq_status *st);
void pdq_model_lm_head_release(pdq_model *m);
/* Allocates a zeroed model with every buffer sized for cfg (for generators and tests). */
pdq_code pdq_model_alloc(const pdq_config *cfg, pdq_model **out, pdq_status *st);
void pdq_model_free(pdq_model *m);

/* Threads for BLAS and our own loops; n <= 0 means all cores. */
void pdq_set_threads(pdq_model *m, int n);
/* serial 1: BLAS single-threaded, so the reference forward runs attention's heads on the model's
 * pool (BLAS's own workers, spinning after each product, would compete with the pool for the
 * cores); 0: back to pdq_set_threads's choice. The values do not change. */
void pdq_model_blas_serial(const pdq_model *m, int serial);
int pdq_default_threads(void);

/* Dynamic KV cache for the reference model: per layer [B, n_kv, capacity, hd], K after RoPE.
 * valid[b*capacity + j] marks real (non-padding) key slots. */
typedef struct {
    int B, capacity, n_layers, n_kv, head_dim;
    int len;              /* slots filled (same for every row: padding occupies slots) */
    float **k, **v;       /* [n_layers] */
    uint8_t *valid;       /* [B * capacity] */
} pdq_kvcache;

pdq_code pdq_kvcache_init(pdq_kvcache *kv, const pdq_config *cfg, int B, int capacity, pdq_status *st);
void pdq_kvcache_free(pdq_kvcache *kv);
/* Every row of dst gets the first n slots of src's row 0 (keys, values, validity); dst->len = n.
 * The caches share the model's shape; n <= both capacities. Shared-prefix scoring uses it to run
 * one context's continuations as one batch. */
void pdq_kvcache_fan_out(pdq_kvcache *dst, const pdq_kvcache *src, int n);

/* Forward of T new tokens for B rows (row-major ids[B*T]).
 * mask[B*T]: 1 real token, 0 padding (NULL: all real). Keys are visible to a query when they are
 * real and not in its future. pos[B*T]: RoPE positions (NULL: HF default, cumsum(mask)-1 over
 * the whole sequence so far, i.e. past real tokens + real tokens before it in this chunk).
 * kv: NULL runs without a cache (T tokens from scratch); else appended to, capacity checked.
 * logits: [B*T*V], or [B*V] for the last position only when last_only; may be NULL. */
pdq_code pdq_model_forward(const pdq_model *m, pdq_kvcache *kv, int B, int T, const int32_t *ids,
                           const uint8_t *mask, const int32_t *pos, float *logits, int last_only,
                           pdq_status *st);

/* --- layer-level pieces, for GPTQ calibration and the static runtime's checks --- */

/* Sees the input of a linear group: which = PDQ_LIN_Q (input of q/k/v), PDQ_LIN_O,
 * PDQ_LIN_GATE (input of gate/up) or PDQ_LIN_DOWN; x is [rows, cols] row-major. */
typedef void (*pdq_linear_hook)(void *ctx, int layer, pdq_linear_id which, const float *x,
                                int rows, int cols);

/* Embedding lookup: x[B*T*D]. Ids out of range -> error. */
pdq_code pdq_model_embed(const pdq_model *m, int n, const int32_t *ids, float *x, pdq_status *st);

/* One decoder layer in place on x[B*T*D], same mask/pos/kv semantics as pdq_model_forward
 * (kv may be NULL; then keys are only this chunk's). hook may be NULL. The layer's weights are
 * taken from `layer` (so callers can run a modified copy), the rest from m. */
pdq_code pdq_model_layer_forward(const pdq_model *m, int layer_index, const pdq_layer *layer,
                                 pdq_kvcache *kv, int B, int T, float *x, const uint8_t *mask,
                                 const int32_t *pos, pdq_linear_hook hook, void *hook_ctx,
                                 pdq_status *st);

/* The same forward of one window (B 1, no cache) stopped right after the hook has seen the input
 * of `which` (PDQ_LIN_Q, PDQ_LIN_O, PDQ_LIN_GATE or PDQ_LIN_DOWN): GPTQ's calibration needs one
 * group's input per pass, not the layer's output. x is left partly updated. */
pdq_code pdq_model_layer_inputs(const pdq_model *m, int layer_index, const pdq_layer *layer, int T, float *x,
                                pdq_linear_id which, pdq_linear_hook hook, void *hook_ctx, pdq_status *st);

/* Final norm + lm_head on n rows of x[n*D] -> logits[n*V]. */
void pdq_model_head(const pdq_model *m, int n, const float *x, float *logits);

/* RMSNorm: y = x / sqrt(mean(x^2) + eps) * w, per row of d values (y may alias x). */
void pdq_rmsnorm(float *y, const float *x, const float *w, int rows, int d, float eps);

/* Fills cos/sin [n, head_dim] for the given positions (HF: emb = cat(freqs, freqs)), with the
 * global table (rope_theta and its scaling). */
void pdq_rope_tables(const pdq_model *m, int n, const int32_t *pos, float *cos_out, float *sin_out);
/* The same for layer `layer`: a sliding layer of a model with a local RoPE base (Gemma 3's
 * rope_local_base_freq) takes that table; every other layer the global one. */
void pdq_rope_tables_layer(const pdq_model *m, int layer, int n, const int32_t *pos, float *cos_out,
                           float *sin_out);

/* GELU with the tanh approximation, float32, as PyTorch computes gelu(approximate="tanh"). */
float pdq_gelu_tanh(float x);

/* Loads a pdq quantized checkpoint directory (pdq_quant.json + model.q.safetensors, written by
 * quant/checkpoint.c): dequantizes into m, which must be allocated for the directory's config.
 * The reader lives below quant/ (src/model/load_quant.c) so the loaders need no quantizer. */
pdq_code pdq_quant_load(const char *dir, pdq_model *m, pdq_status *st);
/* 1 if dir holds pdq_quant.json. */
int pdq_quant_is_checkpoint(const char *dir);

#ifdef __cplusplus
}
#endif
#endif
