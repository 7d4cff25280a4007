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
}

/* A family pdq does not read yet is refused naming its model_type; Phi-3's and Phi-4-mini's
 * features are computed by every path; the static graphs refuse longrope past its original length. */
static void test_refusals(void **s) {
    (void)s;
    if (!families_dir()) skip();
    char dir[600];
    snprintf(dir, sizeof dir, "%s/gemma3/ckpt", families_dir());
    pdq_model *m = NULL;
    pdq_status st = {0};
    assert_int_equal(pdq_model_load(dir, &m, &st), PDQ_ERR_UNSUPPORTED);
    assert_non_null(strstr(st.msg, "gemma3_text"));
    assert_non_null(strstr(st.msg, "config.json"));
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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_descriptions), cmocka_unit_test(test_qwen2),      cmocka_unit_test(test_qwen3),
        cmocka_unit_test(test_phi3),         cmocka_unit_test(test_phi4mini),   cmocka_unit_test(test_mistral),
        cmocka_unit_test(test_llama_bias),   cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
