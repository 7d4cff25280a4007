/* Every model family against Hugging Face's own modeling code: the tiny seeded checkpoints and
 * HF outputs in ../shared/reference/families (see its README). Prefill logits, greedy decoding
 * through the KV cache, a left-padded batch and strided perplexity, per family; the lazy loader
 * reads the same weights as the eager one (stacked projections split alike); a family pdq does
 * not read, and a path that does not compute a family's features, refuse by name. Skips when
 * ../shared is absent. */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "pdq/eval.h"
#include "pdq/family.h"
#include "pdq/model.h"
#include "pdq/npy.h"
#include "pdq/runtime.h"

static const char *families_dir(void) {
    static char path[512];
    const char *sh = tu_shared_dir();
    if (!sh) return NULL;
    snprintf(path, sizeof path, "%s/reference/families", sh);
    return path;
}

static pdq_model *load(const char *fam, int lazy) {
    char dir[600];
    snprintf(dir, sizeof dir, "%s/%s/ckpt", families_dir(), fam);
    pdq_model *m = NULL;
    pdq_status st = {0};
    pdq_code rc = lazy ? pdq_model_load_lazy(dir, &m, &st) : pdq_model_load(dir, &m, &st);
    if (rc) fail_msg("load %s: %s", dir, st.msg);
    pdq_set_threads(m, 1);
    return m;
}

/* HF's strided perplexity (window 64, stride 32) over the reference's 300 ids. */
static void check_ppl(const pdq_model *m, const char *fam) {
    char path[600];
    snprintf(path, sizeof path, "%s/%s/ref/ppl-w64-s32/result.json", families_dir(), fam);
    cJSON *res = tu_load_json(path);
    const cJSON *ids_j = cJSON_GetObjectItem(res, "ppl_input_ids"), *p = cJSON_GetObjectItem(res, "perplexity");
    int n = cJSON_GetArraySize(ids_j);
    int32_t *ids = malloc((size_t)n * sizeof *ids);
    for (int i = 0; i < n; i++) ids[i] = cJSON_GetArrayItem(ids_j, i)->valueint;
    double ref = cJSON_GetObjectItem(p, "ppl_f64")->valuedouble;
    pdq_ppl_result r;
    pdq_status st = {0};
    assert_int_equal(pdq_ppl_model(m, ids, n, 64, 32, NULL, &r, &st), PDQ_OK);
    double rel = fabs(r.ppl - ref) / ref;
    printf("  %s ppl %.6f (HF %.6f, rel diff %.2e), %ld tokens\n", fam, r.ppl, ref, rel, r.tokens);
    assert_int_equal(r.tokens, cJSON_GetObjectItem(p, "n_tokens")->valueint);
    assert_true(rel <= 1e-5);
    free(ids);
    cJSON_Delete(res);
}

/* The lazy loader's layer weights equal the eager loader's, bit for bit. */
static void check_lazy(const pdq_model *eager, const char *fam) {
    pdq_model *m = load(fam, 1);
    pdq_status st = {0};
    for (int l = 0; l < m->cfg.n_layers; l++) {
        assert_int_equal(pdq_model_layer_acquire(m, l, &st), PDQ_OK);
        for (int i = 0; i < PDQ_LIN_COUNT; i++) {
            int o, in;
            pdq_linear_shape(&m->cfg, (pdq_linear_id)i, &o, &in);
            assert_memory_equal(m->layers[l].w[i], eager->layers[l].w[i], (size_t)o * in * sizeof(float));
            if (eager->layers[l].bias[i])
                assert_memory_equal(m->layers[l].bias[i], eager->layers[l].bias[i], (size_t)o * sizeof(float));
        }
        pdq_model_layer_release(m, l);
    }
    pdq_model_free(m);
}

static void check_family(const char *fam) {
    if (!families_dir()) {
        printf("  SKIP %s: ../shared/reference/families is absent\n", fam);
        skip();
    }
    pdq_model *m = load(fam, 0);
    char dir[600];
    double pre = 0, step = 0, worst = 0;
    const char *cases[] = {"prompt0", "prompt1", "prompt2", "batch-left"};
    for (int i = 0; i < 4; i++) {
        snprintf(dir, sizeof dir, "%s/%s/ref/%s", families_dir(), fam, cases[i]);
        tu_check_ref_case(m, dir, 1e-4, &pre, &step);
        worst = fmax(worst, fmax(pre, step));
    }
    printf("  %s (%s): max |dlogit| %.3g over every prompt, batch and greedy step\n", fam, m->cfg.family->name, worst);
    /* the family's table counts what HF's model.num_parameters() counted */
    snprintf(dir, sizeof dir, "%s/%s/ref/provenance.json", families_dir(), fam);
    cJSON *prov = tu_load_json(dir);
    assert_int_equal(pdq_family_param_count(&m->cfg), (long long)cJSON_GetObjectItem(prov, "params")->valuedouble);
    cJSON_Delete(prov);
    check_ppl(m, fam);
    check_lazy(m, fam);
    pdq_model_free(m);
}

static void test_qwen2(void **s) { (void)s; check_family("qwen2"); }
static void test_qwen3(void **s) { (void)s; check_family("qwen3"); }
static void test_phi3(void **s) { (void)s; check_family("phi3"); }
static void test_phi4mini(void **s) { (void)s; check_family("phi4mini"); }
static void test_mistral(void **s) { (void)s; check_family("mistral"); }
static void test_llama_bias(void **s) { (void)s; check_family("llama-bias"); }
static void test_gemma3(void **s) { (void)s; check_family("gemma3"); }

/* final_logit_softcapping (null in the reference config, set by Gemma 2 checkpoints): the capped
 * model's logits are cap * tanh(HF's logits / cap), computed here from HF's own prefill logits. */
static void test_gemma_final_softcap(void **s) {
    (void)s;
    if (!families_dir()) skip();
    pdq_model *m = load("gemma3", 0);
    const float cap = 2.5f; /* below the largest logit (about 4), so the cap bends them */
    m->cfg.final_softcap = cap;
    char path[600];
    snprintf(path, sizeof path, "%s/gemma3/ref/prompt1/prefill_logits.npy", families_dir());
    pdq_npy ref;
    pdq_status st = {0};
    assert_int_equal(pdq_npy_read_f32(path, &ref, &st), PDQ_OK);
    const float *rd = ref.data;
    snprintf(path, sizeof path, "%s/gemma3/ref/prompts.json", families_dir());
    cJSON *pj = tu_load_json(path);
    const cJSON *ids_j = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(pj, "cases"), 1), "ids");
    int T = cJSON_GetArraySize(ids_j), V = m->cfg.vocab_size;
    assert_int_equal((long)T * V, (long)ref.count);
    int32_t *ids = malloc((size_t)T * sizeof *ids);
    for (int i = 0; i < T; i++) ids[i] = cJSON_GetArrayItem(ids_j, i)->valueint;
    float *lg = malloc((size_t)T * V * sizeof *lg);
    assert_int_equal(pdq_model_forward(m, NULL, 1, T, ids, NULL, NULL, lg, 0, &st), PDQ_OK);
    double worst = 0, top = 0;
    for (size_t i = 0; i < (size_t)T * V; i++) {
        double want = cap * tanh(rd[i] / cap);
        worst = fmax(worst, fabs(lg[i] - want));
        top = fmax(top, fabs(rd[i]));
    }
    printf("  gemma3 with final softcap %.1f: max |dlogit| %.3g vs cap * tanh(HF / cap) (HF's largest %.2f)\n", cap,
           worst, top);
    assert_true(top > cap);
    assert_true(worst <= 1e-4);
    free(lg);
    free(ids);
    cJSON_Delete(pj);
    pdq_npy_free(&ref);
    pdq_model_free(m);
}

/* attn_logit_softcapping (Gemma 2's; HF's Gemma 3 never applies it): the attention output of
 * layer 0 (sliding, local RoPE base) recomputed here in double from the layer's normed input --
 * q/k/v, (1 + w) head norms, rotate_half RoPE with base 10000, scores times 24^-0.5, the cap
 * cap * tanh(s / cap), causal softmax -- against what the reference forward feeds o_proj. */
typedef struct {
    int n;
    float *h, *att; /* [n, D] input of q/k/v, [n, H*hd] input of o_proj */
} attn_seen;

static void see_attn(void *ctx, int layer, pdq_linear_id which, const float *x, int rows, int cols) {
    attn_seen *a = ctx;
    if (layer != 0) return;
    float **dst = which == PDQ_LIN_Q ? &a->h : which == PDQ_LIN_O ? &a->att : NULL;
    if (!dst) return;
    *dst = malloc(sizeof(float) * (size_t)rows * cols);
    memcpy(*dst, x, sizeof(float) * (size_t)rows * cols);
    a->n = rows;
}

static void head_norm_rope(double *v, const float *w, int hd, float eps, int pos) {
    double ss = 0;
    for (int i = 0; i < hd; i++) ss += v[i] * v[i];
    double inv = 1 / sqrt(ss / hd + eps), r[1024];
    for (int i = 0; i < hd; i++) r[i] = v[i] * inv * (1.0 + w[i]);
    for (int i = 0; i < hd / 2; i++) {
        double f = pos * pow(10000.0, -2.0 * i / hd), c = cos(f), sn = sin(f);
        v[i] = r[i] * c - r[i + hd / 2] * sn;
        v[i + hd / 2] = r[i + hd / 2] * c + r[i] * sn;
    }
}

static void test_gemma_attn_softcap(void **s) {
    (void)s;
    if (!families_dir()) skip();
    pdq_model *m = load("gemma3", 0);
    const pdq_config *c = &m->cfg;
    int D = c->hidden_size, H = c->n_heads, KV = c->n_kv_heads, hd = c->head_dim, T = 6;
    const int32_t ids[6] = {2, 17, 300, 45, 9, 511};
    const float caps[2] = {0.0f, 0.3f}; /* none, then one that bends scores of about +-1 */
    for (int ci = 0; ci < 2; ci++) {
        m->cfg.attn_softcap = caps[ci];
        float *x = malloc(sizeof(float) * (size_t)T * D);
        pdq_status st = {0};
        assert_int_equal(pdq_model_embed(m, T, ids, x, &st), PDQ_OK);
        attn_seen a = {0};
        assert_int_equal(pdq_model_layer_forward(m, 0, &m->layers[0], NULL, 1, T, x, NULL, NULL, see_attn, &a, &st),
                         PDQ_OK);
        assert_non_null(a.h);
        assert_non_null(a.att);
        double *q = malloc(sizeof(double) * (size_t)T * H * hd), *k = malloc(sizeof(double) * (size_t)T * KV * hd);
        double *v = malloc(sizeof(double) * (size_t)T * KV * hd);
        const pdq_layer *L = &m->layers[0];
        for (int t = 0; t < T; t++) {
            for (int o = 0; o < H * hd; o++) {
                double acc = 0;
                for (int i = 0; i < D; i++) acc += (double)L->w[PDQ_LIN_Q][(size_t)o * D + i] * a.h[(size_t)t * D + i];
                q[(size_t)t * H * hd + o] = acc;
            }
            for (int o = 0; o < KV * hd; o++) {
                double ak = 0, av = 0;
                for (int i = 0; i < D; i++) {
                    ak += (double)L->w[PDQ_LIN_K][(size_t)o * D + i] * a.h[(size_t)t * D + i];
                    av += (double)L->w[PDQ_LIN_V][(size_t)o * D + i] * a.h[(size_t)t * D + i];
                }
                k[(size_t)t * KV * hd + o] = ak;
                v[(size_t)t * KV * hd + o] = av;
            }
            for (int h = 0; h < H; h++) head_norm_rope(q + ((size_t)t * H + h) * hd, L->q_norm, hd, c->rms_norm_eps, t);
            for (int h = 0; h < KV; h++) head_norm_rope(k + ((size_t)t * KV + h) * hd, L->k_norm, hd, c->rms_norm_eps, t);
        }
        double worst = 0, bent = 0;
        for (int t = 0; t < T; t++)
            for (int h = 0; h < H; h++) {
                int g = h / (H / KV);
                double sc[6], mx = -1e300, sum = 0;
                for (int j = 0; j <= t; j++) {
                    double d = 0;
                    for (int i = 0; i < hd; i++) d += q[((size_t)t * H + h) * hd + i] * k[((size_t)j * KV + g) * hd + i];
                    d /= sqrt(24.0); /* query_pre_attn_scalar */
                    if (caps[ci] > 0) {
                        bent = fmax(bent, fabs(d - caps[ci] * tanh(d / caps[ci])));
                        d = caps[ci] * tanh(d / caps[ci]);
                    }
                    sc[j] = d;
                    mx = fmax(mx, d);
                }
                for (int j = 0; j <= t; j++) sum += (sc[j] = exp(sc[j] - mx));
                for (int i = 0; i < hd; i++) {
                    double o = 0;
                    for (int j = 0; j <= t; j++) o += sc[j] / sum * v[((size_t)j * KV + g) * hd + i];
                    worst = fmax(worst, fabs(o - a.att[(size_t)t * H * hd + h * hd + i]));
                }
            }
        printf("  gemma3 layer 0 attention, softcap %.1f: max |d| %.3g vs double (scores bent by up to %.3g)\n",
               (double)caps[ci], worst, bent);
        assert_true(worst <= 1e-5);
        if (caps[ci] > 0) assert_true(bent > 0.05);
        free(q), free(k), free(v), free(a.h), free(a.att), free(x);
    }
    pdq_model_free(m);
}

/* Gemma 3's derived constants against model_facts.json (HF's own values): both RoPE tables, the
 * attention scale and the float32 embedding scale. */
static void check_gemma_facts(const pdq_config *c, const cJSON *f) {
    const char *table[2] = {"rope_global", "rope_local"};
    for (int t = 0; t < 2; t++) {
        const cJSON *inv = cJSON_GetObjectItem(cJSON_GetObjectItem(f, table[t]), "inv_freq");
        float got[PDQ_MAX_ROPE_PAIRS];
        if (t) pdq_rope_inv_freq_local(c, got);
        else pdq_rope_inv_freq(c, got);
        assert_int_equal(cJSON_GetArraySize(inv), c->head_dim / 2);
        for (int i = 0; i < c->head_dim / 2; i++) assert_true(got[i] == (float)cJSON_GetArrayItem(inv, i)->valuedouble);
    }
    assert_true(c->attn_scale == (float)cJSON_GetObjectItem(f, "attention_scale")->valuedouble);
    assert_true(c->embed_scale == (float)cJSON_GetObjectItem(f, "embed_scale_float32")->valuedouble);
}

/* What a family description sets from its config.json. */
static void test_descriptions(void **s) {
    (void)s;
    if (!families_dir()) skip();
    struct {
        const char *fam, *name;
        unsigned bias;
        int qk_norm, fused, rotary, window, tied;
    } want[] = {
        {"qwen2", "qwen2", 0x7, 0, 0, 16, 0, 1},   {"qwen3", "qwen3", 0, 1, 0, 32, 0, 1},
        {"phi3", "phi3", 0, 0, 1, 16, 2047, 0},    {"phi4mini", "phi3", 0, 0, 1, 24, 8192, 1},
        {"mistral", "mistral", 0, 0, 0, 16, 8, 0}, {"llama-bias", "llama", 0x7f, 0, 0, 16, 0, 0},
        {"gemma3", "gemma3", 0, 1, 0, 32, 8, 1},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        char dir[600];
        snprintf(dir, sizeof dir, "%s/%s/ckpt", families_dir(), want[i].fam);
        pdq_config c;
        pdq_status st = {0};
        assert_int_equal(pdq_config_load(dir, &c, &st), PDQ_OK);
        assert_string_equal(c.family->name, want[i].name);
        assert_int_equal(c.bias_mask, want[i].bias);
        assert_int_equal(c.qk_norm, want[i].qk_norm);
        assert_int_equal(c.fused_qkv, want[i].fused);
        assert_int_equal(c.rotary_dim, want[i].rotary);
        assert_int_equal(c.sliding_window, want[i].window);
        assert_int_equal(c.tie_word_embeddings, want[i].tied);
    }
    /* Phi-4-mini's longrope attention factor, as HF derives it: sqrt(1 + ln 32 / ln 128) */
    char dir[600];
    snprintf(dir, sizeof dir, "%s/phi4mini/ckpt", families_dir());
    pdq_config c;
    pdq_status st = {0};
    assert_int_equal(pdq_config_load(dir, &c, &st), PDQ_OK);
    assert_int_equal(c.rope_type, PDQ_ROPE_LONGROPE);
    assert_true(fabs(c.rope_attn_factor - sqrt(1.0 + log(32.0) / log(128.0))) < 1e-6);
    /* Gemma 3: layer_types, the two RoPE tables and the constants model_facts.json derives */
    snprintf(dir, sizeof dir, "%s/gemma3/ckpt", families_dir());
    assert_int_equal(pdq_config_load(dir, &c, &st), PDQ_OK);
    const unsigned char sliding[4] = {1, 1, 0, 1};
    assert_memory_equal(c.layer_sliding, sliding, 4);
    assert_int_equal(c.rope_type, PDQ_ROPE_LINEAR);
    assert_true(c.rope_factor == 8.0 && c.rope_local_theta == 10000.0 && c.rope_theta == 1e6);
    assert_int_equal(c.act, PDQ_ACT_GELU_TANH);
    assert_true(c.norm_offset == 1.0f);
    assert_true(c.final_softcap == 0.0f && c.attn_softcap == 0.0f);
    char facts[600];
    snprintf(facts, sizeof facts, "%s/gemma3/ref/model_facts.json", families_dir());
    cJSON *f = tu_load_json(facts);
    check_gemma_facts(&c, f);
    cJSON_Delete(f);
}

/* A family pdq does not read yet is refused naming its model_type; Phi-3's and Phi-4-mini's
 * features are computed by every path; the static graphs refuse longrope past its original length. */
static void test_refusals(void **s) {
    (void)s;
    if (!families_dir()) skip();
    char dir[600];
    snprintf(dir, sizeof dir, "%s/gemma3/ckpt", families_dir());
    pdq_config gc;
    pdq_status st = {0};
    assert_int_equal(pdq_config_load(dir, &gc, &st), PDQ_OK);
    /* Gemma 3: every path computes it, its local RoPE table included (the static contract's
     * layer type is (window, table)); of the transforms only R1 is refused
     * (tests/cli/families_quant.sh) */
    for (int p = PDQ_PATH_REFERENCE; p <= PDQ_PATH_TRANSFORM; p++)
        if (pdq_family_require(&gc, (pdq_path)p, &st) != PDQ_OK) fail_msg("path %d: %s", p, st.msg);
    /* the real config has two tables (local base 10000; rope_theta 1e6 with linear scaling 8);
     * with the local base equal to rope_theta and no scaling they are one */
    assert_true(pdq_rope_local_differs(&gc));
    gc.rope_local_theta = gc.rope_theta;
    assert_true(pdq_rope_local_differs(&gc)); /* the global table is still scaled */
    gc.rope_type = PDQ_ROPE_DEFAULT;
    assert_false(pdq_rope_local_differs(&gc));
    assert_int_equal(pdq_family_require(&gc, PDQ_PATH_STATIC, &st), PDQ_OK);
    assert_int_equal(pdq_family_require(&gc, PDQ_PATH_EXPORT, &st), PDQ_OK);
    /* a multimodal config: the text model's fields under text_config, ids at the root (HF's
     * Gemma3Config); without text_config it is refused naming it; only the reference model and
     * the static graphs read its language_model.* tensors */
    const char *mm = "{\"model_type\": \"gemma3\", \"eos_token_id\": [1, 106], \"text_config\": {\"hidden_size\": 96, "
                     "\"intermediate_size\": 256, \"num_hidden_layers\": 4, \"num_attention_heads\": 4, \"head_dim\": 32, "
                     "\"num_key_value_heads\": 1, \"vocab_size\": 512, \"sliding_window\": 8}}";
    assert_int_equal(pdq_config_parse(mm, strlen(mm), "mm/config.json", &gc, &st), PDQ_OK);
    assert_string_equal(gc.family->hf_class, "Gemma3ForConditionalGeneration");
    assert_int_equal(gc.n_eos, 2);
    assert_int_equal(gc.eos_token_ids[1], 106);
    assert_int_equal(gc.sliding_window, 8);
    assert_int_equal(pdq_family_require(&gc, PDQ_PATH_QUANTIZE, &st), PDQ_ERR_UNSUPPORTED);
    assert_non_null(strstr(st.msg, "the text model of a multimodal checkpoint"));
    char role[128];
    pdq_family_role_name(&gc, PDQ_ROLE_POST_FFN_NORM, 3, role, sizeof role);
    assert_string_equal(role, "language_model.model.layers.3.post_feedforward_layernorm.weight");
    const char *bad = "{\"model_type\": \"gemma3\", \"vision_config\": {}}";
    assert_int_equal(pdq_config_parse(bad, strlen(bad), "mm/config.json", &gc, &st), PDQ_ERR_MISSING);
    assert_non_null(strstr(st.msg, "mm/config.json: 'text_config'"));
    const char *badf = "{\"model_type\": \"gemma3\", \"text_config\": {\"hidden_size\": \"x\"}}";
    assert_int_equal(pdq_config_parse(badf, strlen(badf), "mm/config.json", &gc, &st), PDQ_ERR_FORMAT);
    assert_non_null(strstr(st.msg, "mm/config.json (text_config)"));
    pdq_model *m;
    /* stacked linears, partial RoPE, longrope and windows: every path computes them now */
    for (int f = 0; f < 2; f++) {
        m = load(f ? "phi4mini" : "phi3", 0);
        for (int p = PDQ_PATH_REFERENCE; p <= PDQ_PATH_TRANSFORM; p++)
            assert_int_equal(pdq_family_require(&m->cfg, (pdq_path)p, &st), PDQ_OK);
        pdq_model_free(m);
    }
    /* one static RoPE table cannot follow longrope's switch past the original context */
    m = load("phi4mini", 0);
    pdq_rt *rt = NULL;
    assert_int_equal(pdq_rt_create(m, 1, 256, NULL, &rt, &st), PDQ_ERR_UNSUPPORTED);
    assert_non_null(strstr(st.msg, "original_max_position_embeddings 128"));
    assert_int_equal(pdq_rt_create(m, 1, 64, NULL, &rt, &st), PDQ_OK);
    pdq_rt_free(rt);
    pdq_model_free(m);
}

/* The static graphs name their constants and edges from the family's role table: Phi-3's q cut
 * from qkv_proj is "qkv_proj.q" (no Llama name appears), Llama keeps its own names, and every
 * 2-D weight constant carries its role (the quantized export finds weights by role, not name). */
static int has_name(const pdq_graph *g, const char *name) { return pdq_graph_find(g, name) >= 0; }

static int count_containing(const pdq_graph *g, const char *part) {
    int n = 0;
    for (int i = 0; i < g->n_tensors; i++) n += strstr(g->tensors[i].name, part) != NULL;
    return n;
}

static void check_graph_names(const char *fam, const char *const *want, const char *const *absent) {
    pdq_model *m = load(fam, 0);
    pdq_status st = {0};
    pdq_graph *g = NULL, *h = NULL;
    assert_int_equal(pdq_build_layer(m, 1, NULL, PDQ_MODE_APPEND, 1, 8, 1, NULL, &g, &st), PDQ_OK);
    assert_int_equal(pdq_build_head(m, 1, 1, &h, &st), PDQ_OK);
    for (const char *const *w = want; *w; w++)
        if (!has_name(g, *w) && !has_name(h, *w)) fail_msg("%s: no tensor %s", fam, *w);
    for (const char *const *a = absent; *a; a++) assert_int_equal(count_containing(g, *a), 0);
    for (int i = 0; i < g->n_tensors; i++) {
        const pdq_tensor *t = &g->tensors[i];
        if (t->kind == PDQ_TK_CONST && t->dtype == PDQ_TF32 && t->ndim == 2)
            assert_int_equal(t->role - 1, PDQ_ROLE_WEIGHT);
    }
    assert_int_equal(h->tensors[pdq_graph_find(h, "lm_head.weight")].role - 1, PDQ_ROLE_LM_HEAD);
    pdq_graph_free(g);
    pdq_graph_free(h);
    pdq_model_free(m);
}

static void test_graph_names(void **s) {
    (void)s;
    if (!families_dir()) skip();
    static const char *const phi3[] = {"model.layers.1.self_attn.qkv_proj.q.weight", "model.layers.1.self_attn.qkv_proj.k.out",
                                       "model.layers.1.self_attn.qkv_proj.v.weight", "model.layers.1.self_attn.o_proj.weight",
                                       "model.layers.1.mlp.gate_up_proj.gate.weight", "model.layers.1.mlp.gate_up_proj.up.out",
                                       "model.layers.1.mlp.down_proj.weight", "model.layers.1.self_attn.new_k",
                                       "model.layers.1.past_key", "model.layers.1.input_layernorm.weight",
                                       "model.norm.weight", "lm_head.out", NULL};
    static const char *const phi3_absent[] = {".q_proj", ".k_proj", ".v_proj", ".gate_proj", ".up_proj", NULL};
    check_graph_names("phi3", phi3, phi3_absent);
    static const char *const llama[] = {"model.layers.1.self_attn.q_proj.weight", "model.layers.1.self_attn.q_proj.bias",
                                        "model.layers.1.mlp.up_proj.out", "model.layers.1.post_attention_layernorm.out",
                                        "model.layers.1.self_attn.new_v", "lm_head.weight", NULL};
    static const char *const llama_absent[] = {"qkv_proj", "gate_up_proj", NULL};
    check_graph_names("llama-bias", llama, llama_absent);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_descriptions), cmocka_unit_test(test_qwen2),      cmocka_unit_test(test_qwen3),
        cmocka_unit_test(test_phi3),         cmocka_unit_test(test_phi4mini),   cmocka_unit_test(test_mistral),
        cmocka_unit_test(test_llama_bias),   cmocka_unit_test(test_gemma3),     cmocka_unit_test(test_gemma_final_softcap),
        cmocka_unit_test(test_gemma_attn_softcap),
        cmocka_unit_test(test_refusals),     cmocka_unit_test(test_graph_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
