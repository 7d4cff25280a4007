/* The FP32 reference forward pass, written to mirror Hugging Face's modeling code of each
 * family (LlamaForCausalLM, Qwen2/Qwen3, Phi3, Mistral, Gemma3ForCausalLM; eager attention,
 * float32): RMSNorm, rotate_half RoPE (partial, llama3, linear or longrope scaled; Gemma's local
 * table on sliding layers), GQA, SiLU- or GELU-tanh-gated MLP, causal + padding (+ sliding
 * window) mask; the switches of pdq_config add linear biases, q/k head norms, (1 + w) norms, the
 * embedding scale, the attention scale and softcaps; the sandwich block (Gemma) adds a norm on
 * each branch's output before its residual add. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "kernels/f32mm.h"
#include "kernels/qmatmul.h"
#include "model/work.h"
#include "pdq/family.h"
#include "pdq/model.h"
#include "pdq/threadpool.h"

/* The kernel switches of model.h's kernel_path. */
static pdq_qctx kernel_ctx(const pdq_model *m) {
    int k = m->kernel_path;
    pdq_qctx ctx = {.pool = m->pool, .force_scalar = k == 1, .no_avx512 = k == 2 || k == 3, .no_vnni = k == 3,
                    .no_int = k == 4, .work = m->work ? &m->work->kern : NULL};
    return ctx;
}

/* y[n, out] = x[n, in] · W[out, in]ᵀ on the model's pool, in kernels/f32mm.h's fixed order (the
 * same bits at any thread count and SIMD level, for the GEMV of decode as for the GEMM). */
static void linear(const pdq_model *m, float *y, const float *x, const float *w, int n, int out, int in) {
    pdq_qctx ctx = kernel_ctx(m);
    pdq_f32mm(m->pool, pdq_qctx_level(&ctx), y, x, w, n, out, in);
}

/* y[n, out] += the linear's bias, when it has one (HF adds it last). */
static void add_bias(const pdq_layer *L, pdq_linear_id id, float *y, int n, int out) {
    const float *b = L->bias[id];
    if (b)
        for (int r = 0; r < n; r++)
            for (int j = 0; j < out; j++) y[(size_t)r * out + j] += b[j];
}

/* A linear of a layer: the packed kernel when the layer's weight is packed (weight-only model),
 * else the float path above, unchanged; then its bias. */
static pdq_code layer_linear(const pdq_model *m, const pdq_layer *L, pdq_linear_id id, float *y, const float *x,
                             int n, int out, int in, pdq_status *st) {
    if (L->pw[id]) {
        pdq_qctx ctx = kernel_ctx(m);
        pdq_code rc = pdq_qmatmul(&ctx, L->pw[id], x, n, y, st);
        if (rc) return rc;
    } else {
        linear(m, y, x, L->w[id], n, out, in);
    }
    add_bias(L, id, y, n, out);
    return PDQ_OK;
}

/* The linears ids[0..nl) of one input x (q, k, v; gate, up), each into ys[i] with outs[i] columns:
 * one packed call when all are packed (x rounded once: the same values), else one at a time. */
static pdq_code layer_linears(const pdq_model *m, const pdq_layer *L, int nl, const pdq_linear_id *ids,
                              float *const *ys, const int *outs, const float *x, int n, int in, pdq_status *st) {
    const pdq_qmatrix *ws[PDQ_QMATMUL_MANY];
    int packed = nl <= PDQ_QMATMUL_MANY;
    for (int i = 0; packed && i < nl; i++) packed = (ws[i] = L->pw[ids[i]]) != NULL;
    if (!packed) {
        for (int i = 0; i < nl; i++) {
            pdq_code rc = layer_linear(m, L, ids[i], ys[i], x, n, outs[i], in, st);
            if (rc) return rc;
        }
        return PDQ_OK;
    }
    pdq_qctx ctx = kernel_ctx(m);
    pdq_code rc = pdq_qmatmul_many(&ctx, nl, ws, x, n, ys, st);
    for (int i = 0; !rc && i < nl; i++) add_bias(L, ids[i], ys[i], n, outs[i]);
    return rc;
}

void pdq_rmsnorm(float *y, const float *x, const float *w, int rows, int d, float eps) {
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * d;
        float *yr = y + (size_t)r * d;
        float ss = 0.0f;
        for (int i = 0; i < d; i++) ss += xr[i] * xr[i];
        float inv = 1.0f / sqrtf(ss / (float)d + eps);
        for (int i = 0; i < d; i++) yr[i] = w[i] * (xr[i] * inv);
    }
}

/* Gemma's RMSNorm: x / sqrt(mean(x^2) + eps) * (offset + w), every step in float32 as HF's
 * Gemma3RMSNorm (offset 1); a config without the offset takes pdq_rmsnorm unchanged. */
static void norm(const pdq_config *c, float *y, const float *x, const float *w, int rows, int d) {
    if (c->norm_offset == 0.0f) {
        pdq_rmsnorm(y, x, w, rows, d, c->rms_norm_eps);
        return;
    }
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * d;
        float *yr = y + (size_t)r * d;
        float ss = 0.0f;
        for (int i = 0; i < d; i++) ss += xr[i] * xr[i];
        float inv = 1.0f / sqrtf(ss / (float)d + c->rms_norm_eps);
        for (int i = 0; i < d; i++) yr[i] = (xr[i] * inv) * (c->norm_offset + w[i]);
    }
}

/* cap * tanh(x / cap), float32 as HF's softcapping (cap 0: none). */
static void softcap(float *x, size_t n, float cap) {
    if (cap == 0.0f) return;
    for (size_t i = 0; i < n; i++) x[i] = tanhf(x[i] / cap) * cap;
}

/* PyTorch's gelu(approximate="tanh") in float32: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). */
float pdq_gelu_tanh(float x) {
    const float beta = (float)(M_SQRT2 * M_2_SQRTPI * 0.5), kappa = 0.044715f;
    float inner = beta * (x + kappa * (x * x * x));
    return 0.5f * x * (1.0f + tanhf(inner));
}

void pdq_rope_tables_layer(const pdq_model *m, int layer, int n, const int32_t *pos, float *cos_out,
                           float *sin_out) {
    int hd = pdq_cfg_rotary_dim(&m->cfg), half = hd / 2;
    /* longrope: HF picks the long factors for a whole call once its longest position reaches
     * the original context */
    const float *inv_freq = m->inv_freq;
    if (layer >= 0 && m->inv_freq_local && pdq_cfg_layer_window(&m->cfg, layer)) inv_freq = m->inv_freq_local;
    if (m->inv_freq_long) {
        int32_t top = 0;
        for (int t = 0; t < n; t++) top = pos[t] > top ? pos[t] : top;
        if (top + 1 > m->cfg.rope_original_max_pos) inv_freq = m->inv_freq_long;
    }
    float attn = m->cfg.rope_attn_factor > 0 ? m->cfg.rope_attn_factor : 1.0f;
    for (int t = 0; t < n; t++) {
        for (int i = 0; i < half; i++) {
            /* HF: freqs = inv_freq(float32) @ position(float32), then cos/sin in float32
             * (times the longrope attention factor, 1 otherwise: exact). */
            float f = inv_freq[i] * (float)pos[t];
            float c = cosf(f) * attn, s = sinf(f) * attn;
            cos_out[(size_t)t * hd + i] = cos_out[(size_t)t * hd + i + half] = c;
            sin_out[(size_t)t * hd + i] = sin_out[(size_t)t * hd + i + half] = s;
        }
    }
}

void pdq_rope_tables(const pdq_model *m, int n, const int32_t *pos, float *cos_out, float *sin_out) {
    pdq_rope_tables_layer(m, -1, n, pos, cos_out, sin_out);
}

/* x ← x·cos + rotate_half(x)·sin on the first rd dims of one head vector (the rest pass). */
static void apply_rope(float *x, const float *cos, const float *sin, int rd) {
    int half = rd / 2;
    for (int i = 0; i < half; i++) {
        float a = x[i], b = x[i + half];
        x[i] = a * cos[i] - b * sin[i];
        x[i + half] = b * cos[i + half] + a * sin[i + half];
    }
}

pdq_code pdq_model_embed(const pdq_model *m, int n, const int32_t *ids, float *x, pdq_status *st) {
    int D = m->cfg.hidden_size, V = m->cfg.vocab_size;
    for (int i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= V)
            return pdq_fail(st, PDQ_ERR_ARG, "token id %d at position %d is outside the vocabulary [0, %d)", ids[i], i, V);
        if (!m->embed && m->embed_q) pdq_qmatrix_dequant_row(m->embed_q, ids[i], x + (size_t)i * D);
        else memcpy(x + (size_t)i * D, m->embed + (size_t)ids[i] * D, (size_t)D * sizeof(float));
        if (m->cfg.embed_scale != 0.0f)
            for (int j = 0; j < D; j++) x[(size_t)i * D + j] *= m->cfg.embed_scale;
    }
    return PDQ_OK;
}

static pdq_code head(const pdq_model *m, int n, const float *x, float *logits, pdq_status *st) {
    int D = m->cfg.hidden_size;
    size_t bytes = (size_t)n * D * sizeof(float);
    float *h = m->work ? pdq_scratch_get(&m->work->head, bytes) : malloc(bytes);
    if (!h) return pdq_fail(st, PDQ_ERR_NOMEM, "head of %d rows", n);
    norm(&m->cfg, h, x, m->norm, n, D);
    pdq_code rc = PDQ_OK;
    if (m->lm_head_q) {
        pdq_qctx ctx = kernel_ctx(m);
        rc = pdq_qmatmul(&ctx, m->lm_head_q, h, n, logits, st);
    } else {
        linear(m, logits, h, m->lm_head, n, m->cfg.vocab_size, D);
    }
    if (!rc) softcap(logits, (size_t)n * m->cfg.vocab_size, m->cfg.final_softcap);
    if (!m->work) free(h);
    return rc;
}

void pdq_model_head(const pdq_model *m, int n, const float *x, float *logits) {
    pdq_status st = {0};
    (void)head(m, n, x, logits, &st);
}

typedef struct {
    float *h, *q, *k, *v, *att, *o, *g, *u, *scores, *cos, *sin;
    void *own; /* the block when the model keeps no work */
} scratch;

#define SCRATCH_N 11

/* A layer's activations, carved from the model's kept work (or one block of this call). */
static int scratch_get(const pdq_model *m, scratch *s, const size_t n_floats[SCRATCH_N]) {
    float **slot[SCRATCH_N] = {&s->h, &s->q, &s->k, &s->v, &s->att, &s->o, &s->g, &s->u, &s->scores, &s->cos, &s->sin};
    size_t total = 0;
    for (int i = 0; i < SCRATCH_N; i++) total += pdq_scratch_size(n_floats[i] * sizeof(float));
    s->own = NULL;
    char *p = m->work ? pdq_scratch_get(&m->work->layer, total) : (s->own = aligned_alloc(64, total ? total : 64));
    if (!p) return 0;
    for (int i = 0; i < SCRATCH_N; i++) {
        *slot[i] = (float *)p;
        p += pdq_scratch_size(n_floats[i] * sizeof(float));
    }
    return 1;
}

static void scratch_free(scratch *s) { free(s->own); }

/* Default positions, as HF generate: the count of real tokens before each token in its row. */
static void default_positions(const pdq_kvcache *kv, int B, int T, const uint8_t *mask, int32_t *pos) {
    for (int b = 0; b < B; b++) {
        int32_t past = 0;
        for (int j = 0; j < kv->len; j++) past += kv->valid[(size_t)b * kv->capacity + j];
        for (int t = 0; t < T; t++) {
            int real = mask ? mask[(size_t)b * T + t] : 1;
            pos[(size_t)b * T + t] = real ? past : 1; /* HF fills padding positions with 1 */
            past += real;
        }
    }
}

/* Attention of the T new queries of row b, head h, against every visible cached key; scores
 * [T, L] is this head's scratch. */
static void attend_head(const pdq_config *c, const pdq_kvcache *kv, int layer, int b, int T, int h,
                        const float *q, float *att, float *scores) {
    int H = c->n_heads, KV = c->n_kv_heads, hd = c->head_dim, cap = kv->capacity;
    int L = kv->len + T, group = H / KV, W = pdq_cfg_layer_window(c, layer);
    float scale = c->attn_scale != 0.0f ? c->attn_scale : 1.0f / sqrtf((float)hd);
    const uint8_t *valid = kv->valid + (size_t)b * cap;
    int g = h / group;
    const float *K = kv->k[layer] + (((size_t)b * KV + g) * cap) * hd;
    const float *Vv = kv->v[layer] + (((size_t)b * KV + g) * cap) * hd;
    /* scores[T, L] = Q_h[T, hd] · K[L, hd]ᵀ ; Q_h rows are strided by H*hd. */
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, L, hd, 1.0f,
                q + (size_t)h * hd, H * hd, K, hd, 0.0f, scores, L);
    for (int t = 0; t < T; t++) {
        float *s = scores + (size_t)t * L;
        int self = kv->len + t;
        float mx = -INFINITY;
        for (int j = 0; j < L; j++) {
            if (j <= self && valid[j] && (W == 0 || j > self - W)) {
                s[j] *= scale;
                if (c->attn_softcap != 0.0f) s[j] = tanhf(s[j] / c->attn_softcap) * c->attn_softcap;
                if (s[j] > mx) mx = s[j];
            } else {
                s[j] = -INFINITY;
            }
        }
        double sum = 0.0;
        for (int j = 0; j < L; j++) {
            float e = mx == -INFINITY ? 0.0f : expf(s[j] - mx); /* no visible key: zero output */
            s[j] = e;
            sum += e;
        }
        float inv = sum > 0 ? (float)(1.0 / sum) : 0.0f;
        for (int j = 0; j < L; j++) s[j] *= inv;
    }
    /* att_h[T, hd] = P[T, L] · V[L, hd], rows strided by H*hd. */
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, hd, L, 1.0f, scores, L, Vv, hd,
                0.0f, att + (size_t)h * hd, H * hd);
}

typedef struct {
    const pdq_config *c;
    const pdq_kvcache *kv;
    int layer, b, T;
    const float *q;
    float *att, *scores; /* scores: [threads][T * L] */
} attend_job;

static void attend_task(void *ctx, int h, int thread) {
    attend_job *a = ctx;
    size_t tl = (size_t)a->T * (a->kv->len + a->T);
    attend_head(a->c, a->kv, a->layer, a->b, a->T, h, a->q, a->att, a->scores + (size_t)thread * tl);
}

/* Threads that run attention heads at once: the model's pool when BLAS is single-threaded (each
 * head's products then run inline on its worker), else one (BLAS threads the products; two sets
 * of threads would compete for the cores). A head's values do not depend on the thread. */
static int attend_threads(const pdq_model *m) {
    int n = pdq_pool_threads(m->pool);
    return n > 1 && openblas_get_num_threads() == 1 ? n : 1;
}

/* Attention of the T new queries of row b against every visible cached key, head by head. */
static void attend(const pdq_model *m, const pdq_kvcache *kv, int layer, int b, int T, const float *q, float *att,
                   float *scores) {
    attend_job a = {&m->cfg, kv, layer, b, T, q, att, scores};
    if (attend_threads(m) > 1) {
        pdq_pool_run(m->pool, m->cfg.n_heads, attend_task, &a);
        return;
    }
    for (int h = 0; h < m->cfg.n_heads; h++) attend_task(&a, h, 0);
}

static pdq_code layer_forward(const pdq_model *m, int li, const pdq_layer *w, pdq_kvcache *kv, int B,
                              int T, float *x, const uint8_t *mask, const int32_t *pos,
                              pdq_linear_hook hook, void *hook_ctx, pdq_linear_id stop, pdq_status *st) {
    const pdq_config *c = &m->cfg;
    int D = c->hidden_size, H = c->n_heads, KV = c->n_kv_heads, hd = c->head_dim, F = c->intermediate_size;
    int n = B * T, L = kv->len + T, cap = kv->capacity;
    if (L > cap) return pdq_fail(st, PDQ_ERR_LIMIT, "kv cache full: %d + %d tokens exceed its capacity %d", kv->len, T, cap);
    scratch s = {0};
    int rd = pdq_cfg_rotary_dim(c);
    size_t sizes[SCRATCH_N] = {(size_t)n * D, (size_t)n * H * hd, (size_t)n * KV * hd, (size_t)n * KV * hd,
                               (size_t)n * H * hd, (size_t)n * D, (size_t)n * F, (size_t)n * F,
                               (size_t)attend_threads(m) * T * L, (size_t)n * rd, (size_t)n * rd};
    if (!scratch_get(m, &s, sizes)) return pdq_fail(st, PDQ_ERR_NOMEM, "layer %d: scratch for %d tokens", li, n);

    /* Attention block. */
    int sandwich = pdq_family_of(c)->block == PDQ_BLOCK_SANDWICH;
    norm(c, s.h, x, w->attn_norm, n, D);
    if (hook) hook(hook_ctx, li, PDQ_LIN_Q, s.h, n, D);
    if (stop == PDQ_LIN_Q) goto out;
    const pdq_linear_id qkv[3] = {PDQ_LIN_Q, PDQ_LIN_K, PDQ_LIN_V};
    float *const qkv_out[3] = {s.q, s.k, s.v};
    const int qkv_cols[3] = {H * hd, KV * hd, KV * hd};
    pdq_code rc = layer_linears(m, w, 3, qkv, qkv_out, qkv_cols, s.h, n, D, st);
    if (rc) {
        scratch_free(&s);
        return rc;
    }
    if (w->q_norm) { /* Qwen3, Gemma 3: each head normed over head_dim before RoPE */
        norm(c, s.q, s.q, w->q_norm, n * H, hd);
        norm(c, s.k, s.k, w->k_norm, n * KV, hd);
    }
    pdq_rope_tables_layer(m, li, n, pos, s.cos, s.sin);
    for (int i = 0; i < n; i++) {
        const float *ci = s.cos + (size_t)i * rd, *si = s.sin + (size_t)i * rd;
        for (int h = 0; h < H; h++) apply_rope(s.q + ((size_t)i * H + h) * hd, ci, si, rd);
        for (int h = 0; h < KV; h++) apply_rope(s.k + ((size_t)i * KV + h) * hd, ci, si, rd);
    }
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < T; t++) {
            size_t i = (size_t)b * T + t, slot = (size_t)kv->len + t;
            for (int h = 0; h < KV; h++) {
                size_t dst = (((size_t)b * KV + h) * cap + slot) * hd;
                memcpy(kv->k[li] + dst, s.k + (i * KV + h) * hd, (size_t)hd * sizeof(float));
                memcpy(kv->v[li] + dst, s.v + (i * KV + h) * hd, (size_t)hd * sizeof(float));
            }
            kv->valid[(size_t)b * cap + slot] = mask ? mask[i] != 0 : 1;
        }
    }
    for (int b = 0; b < B; b++)
        attend(m, kv, li, b, T, s.q + (size_t)b * T * H * hd, s.att + (size_t)b * T * H * hd, s.scores);
    if (hook) hook(hook_ctx, li, PDQ_LIN_O, s.att, n, H * hd);
    if (stop == PDQ_LIN_O) goto out;
    if ((rc = layer_linear(m, w, PDQ_LIN_O, s.o, s.att, n, D, H * hd, st))) {
        scratch_free(&s);
        return rc;
    }
    if (sandwich) norm(c, s.o, s.o, w->post_attn_norm, n, D);
    for (size_t i = 0; i < (size_t)n * D; i++) x[i] += s.o[i];

    /* MLP block: down(act(gate(h)) * up(h)), act SiLU or GELU-tanh. */
    norm(c, s.h, x, w->ffn_norm, n, D);
    if (hook) hook(hook_ctx, li, PDQ_LIN_GATE, s.h, n, D);
    if (stop == PDQ_LIN_GATE) goto out;
    const pdq_linear_id gate_up[2] = {PDQ_LIN_GATE, PDQ_LIN_UP};
    float *const gate_up_out[2] = {s.g, s.u};
    const int gate_up_cols[2] = {F, F};
    rc = layer_linears(m, w, 2, gate_up, gate_up_out, gate_up_cols, s.h, n, D, st);
    if (rc) {
        scratch_free(&s);
        return rc;
    }
    if (c->act == PDQ_ACT_GELU_TANH)
        for (size_t i = 0; i < (size_t)n * F; i++) s.g[i] = pdq_gelu_tanh(s.g[i]) * s.u[i];
    else
        for (size_t i = 0; i < (size_t)n * F; i++) {
            float g = s.g[i];
            s.g[i] = g / (1.0f + expf(-g)) * s.u[i];
        }
    if (hook) hook(hook_ctx, li, PDQ_LIN_DOWN, s.g, n, F);
    if (stop == PDQ_LIN_DOWN) goto out;
    if ((rc = layer_linear(m, w, PDQ_LIN_DOWN, s.o, s.g, n, D, F, st))) {
        scratch_free(&s);
        return rc;
    }
    if (sandwich) norm(c, s.o, s.o, w->post_ffn_norm, n, D);
    for (size_t i = 0; i < (size_t)n * D; i++) x[i] += s.o[i];
out:
    scratch_free(&s);
    return PDQ_OK;
}

/* The layer forward up to the hook of `stop` (PDQ_LIN_COUNT: the whole layer). */
static pdq_code layer_forward_until(const pdq_model *m, int layer_index, const pdq_layer *layer, pdq_kvcache *kv,
                                    int B, int T, float *x, const uint8_t *mask, const int32_t *pos,
                                    pdq_linear_hook hook, void *hook_ctx, pdq_linear_id stop, pdq_status *st) {
    if (layer_index < 0 || layer_index >= m->cfg.n_layers)
        return pdq_fail(st, PDQ_ERR_ARG, "layer %d out of range [0, %d)", layer_index, m->cfg.n_layers);
    pdq_kvcache tmp = {0};
    pdq_kvcache *cache = kv;
    pdq_code rc;
    if (!cache) {
        if ((rc = pdq_kvcache_init(&tmp, &m->cfg, B, T, st)) != PDQ_OK) return rc;
        cache = &tmp;
    } else if (cache->B != B) {
        return pdq_fail(st, PDQ_ERR_SHAPE, "kv cache holds %d rows, forward got %d", cache->B, B);
    }
    int32_t *own_pos = NULL;
    if (!pos) {
        own_pos = malloc((size_t)B * T * sizeof *own_pos);
        if (!own_pos) { pdq_kvcache_free(&tmp); return pdq_fail(st, PDQ_ERR_NOMEM, "positions"); }
        default_positions(cache, B, T, mask, own_pos);
        pos = own_pos;
    }
    rc = layer_forward(m, layer_index, layer, cache, B, T, x, mask, pos, hook, hook_ctx, stop, st);
    free(own_pos);
    pdq_kvcache_free(&tmp);
    return rc;
}

pdq_code pdq_model_layer_forward(const pdq_model *m, int layer_index, const pdq_layer *layer,
                                 pdq_kvcache *kv, int B, int T, float *x, const uint8_t *mask,
                                 const int32_t *pos, pdq_linear_hook hook, void *hook_ctx,
                                 pdq_status *st) {
    return layer_forward_until(m, layer_index, layer, kv, B, T, x, mask, pos, hook, hook_ctx, PDQ_LIN_COUNT, st);
}

pdq_code pdq_model_layer_inputs(const pdq_model *m, int layer_index, const pdq_layer *layer, int T, float *x,
                                pdq_linear_id which, pdq_linear_hook hook, void *hook_ctx, pdq_status *st) {
    if (which != PDQ_LIN_Q && which != PDQ_LIN_O && which != PDQ_LIN_GATE && which != PDQ_LIN_DOWN)
        return pdq_fail(st, PDQ_ERR_ARG, "layer inputs: %s is not the first linear of its input group",
                        pdq_linear_name(which));
    return layer_forward_until(m, layer_index, layer, NULL, 1, T, x, NULL, NULL, hook, hook_ctx, which, st);
}

pdq_code pdq_model_forward(const pdq_model *m, pdq_kvcache *kv, int B, int T, const int32_t *ids,
                           const uint8_t *mask, const int32_t *pos, float *logits, int last_only,
                           pdq_status *st) {
    const pdq_config *c = &m->cfg;
    int D = c->hidden_size;
    if (B <= 0 || T <= 0) return pdq_fail(st, PDQ_ERR_ARG, "forward: batch %d and length %d must be positive", B, T);
    pdq_kvcache tmp = {0};
    pdq_kvcache *cache = kv;
    pdq_code rc;
    if (!cache) {
        if ((rc = pdq_kvcache_init(&tmp, c, B, T, st)) != PDQ_OK) return rc;
        cache = &tmp;
    }
    if (cache->B != B) {
        pdq_kvcache_free(&tmp);
        return pdq_fail(st, PDQ_ERR_SHAPE, "kv cache holds %d rows, forward got %d", cache->B, B);
    }
    if (cache->len + T > cache->capacity) {
        pdq_kvcache_free(&tmp);
        return pdq_fail(st, PDQ_ERR_LIMIT, "kv cache full: %d + %d tokens exceed its capacity %d", cache->len, T, cache->capacity);
    }
    size_t xbytes = (size_t)B * T * D * sizeof(float);
    float *x = m->work ? pdq_scratch_get(&m->work->hidden, xbytes) : malloc(xbytes);
    int32_t *own_pos = NULL;
    if (!pos) own_pos = malloc((size_t)B * T * sizeof *own_pos);
    if (!x || (!pos && !own_pos)) {
        rc = pdq_fail(st, PDQ_ERR_NOMEM, "forward of %d x %d tokens", B, T);
        goto done;
    }
    if (!pos) {
        default_positions(cache, B, T, mask, own_pos);
        pos = own_pos;
    }
    if ((rc = pdq_model_embed(m, B * T, ids, x, st)) != PDQ_OK) goto done;
    for (int l = 0; l < c->n_layers; l++)
        if ((rc = layer_forward(m, l, &m->layers[l], cache, B, T, x, mask, pos, NULL, NULL, PDQ_LIN_COUNT, st)))
            goto done;
    cache->len += T;
    if (logits) {
        if (last_only) {
            for (int b = 0; b < B; b++)
                memmove(x + (size_t)b * D, x + ((size_t)b * T + T - 1) * D, (size_t)D * sizeof(float));
            rc = head(m, B, x, logits, st);
        } else {
            rc = head(m, B * T, x, logits, st);
        }
    }
done:
    if (!m->work) free(x);
    free(own_pos);
    pdq_kvcache_free(&tmp);
    return rc;
}
