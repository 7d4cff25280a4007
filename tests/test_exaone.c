/* EXAONE 3.x (ExaoneForCausalLM) against Hugging Face. EXAONE computes Llama's function under
 * other names, so the bundled Llama model rewritten in EXAONE's layout (the same tensor bytes
 * under EXAONE's names, written with pdq_st_write; a config.json with num_layers,
 * layer_norm_epsilon and activation_function) must reproduce HF's LlamaForCausalLM outputs
 * (tests/fixtures/hf-reference) within test_reference's tolerance, and the Llama copy's logits
 * bit for bit. Also: the fields the description reads, tying's default, a refused activation
 * named by its field, and the static graphs named as EXAONE names its tensors. The names below
 * are spelled here, from llama.cpp's EXAONE mapping, not taken from pdq's table. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "pdq/config.h"
#include "pdq/family.h"
#include "pdq/model.h"
#include "pdq/runtime.h"
#include "pdq/safetensors.h"

static char *g_dir;

/* Llama's HF name -> EXAONE's (c_fc_0 is the gate, c_fc_1 the up projection). */
static void exaone_name(const char *llama, char *out, size_t cap) {
    static const char *const top[][2] = {{"model.embed_tokens.weight", "transformer.wte.weight"},
                                         {"model.norm.weight", "transformer.ln_f.weight"},
                                         {"lm_head.weight", "lm_head.weight"}};
    static const char *const layer[][2] = {
        {"input_layernorm", "ln_1"},           {"post_attention_layernorm", "ln_2"},
        {"self_attn.q_proj", "attn.attention.q_proj"}, {"self_attn.k_proj", "attn.attention.k_proj"},
        {"self_attn.v_proj", "attn.attention.v_proj"}, {"self_attn.o_proj", "attn.attention.out_proj"},
        {"mlp.gate_proj", "mlp.c_fc_0"},       {"mlp.up_proj", "mlp.c_fc_1"},
        {"mlp.down_proj", "mlp.c_proj"}};
    for (size_t i = 0; i < sizeof top / sizeof top[0]; i++)
        if (!strcmp(llama, top[i][0])) { snprintf(out, cap, "%s", top[i][1]); return; }
    int l = -1, end = 0;
    assert_int_equal(sscanf(llama, "model.layers.%d.%n", &l, &end), 1);
    char part[128];
    snprintf(part, sizeof part, "%s", llama + end);
    char *w = strstr(part, ".weight");
    assert_non_null(w);
    *w = '\0';
    for (size_t i = 0; i < sizeof layer / sizeof layer[0]; i++)
        if (!strcmp(part, layer[i][0])) { snprintf(out, cap, "transformer.h.%d.%s.weight", l, layer[i][1]); return; }
    fail_msg("no EXAONE name for %s", llama);
}

/* The bundled model's config.json in EXAONE's spelling. */
static cJSON *exaone_config(void) {
    cJSON *c = tu_load_json(PDQ_TEST_MODEL "/config.json");
    static const char *const ren[][2] = {{"num_hidden_layers", "num_layers"}, {"rms_norm_eps", "layer_norm_epsilon"},
                                         {"hidden_act", "activation_function"}};
    for (size_t i = 0; i < sizeof ren / sizeof ren[0]; i++) {
        cJSON *v = cJSON_DetachItemFromObjectCaseSensitive(c, ren[i][0]);
        assert_non_null(v);
        cJSON_AddItemToObject(c, ren[i][1], v);
    }
    cJSON_DeleteItemFromObjectCaseSensitive(c, "attention_bias");
    cJSON_DeleteItemFromObjectCaseSensitive(c, "mlp_bias");
    cJSON_ReplaceItemInObjectCaseSensitive(c, "model_type", cJSON_CreateString("exaone"));
    cJSON_ReplaceItemInObjectCaseSensitive(c, "architectures", cJSON_CreateStringArray((const char *[]){"ExaoneForCausalLM"}, 1));
    return c;
}

static int setup(void **state) {
    (void)state;
    g_dir = tu_mkdtemp();
    pdq_safetensors *s = NULL;
    pdq_status st = {0};
    if (pdq_st_open(PDQ_TEST_MODEL, &s, &st)) return fprintf(stderr, "%s\n", st.msg), -1;
    int n = pdq_st_count(s);
    pdq_st_tensor *t = calloc((size_t)n, sizeof *t);
    char (*names)[160] = calloc((size_t)n, sizeof *names);
    for (int i = 0; i < n; i++) {
        t[i] = *pdq_st_at(s, i);
        exaone_name(t[i].name, names[i], sizeof names[i]);
        t[i].name = names[i];
    }
    char path[600];
    snprintf(path, sizeof path, "%s/model.safetensors", g_dir);
    pdq_code rc = pdq_st_write(path, t, n, NULL, &st);
    free(t);
    free(names);
    pdq_st_close(s);
    if (rc) return fprintf(stderr, "%s\n", st.msg), -1;
    cJSON *c = exaone_config();
    char *txt = cJSON_Print(c);
    snprintf(path, sizeof path, "%s/config.json", g_dir);
    int ok = tu_write_file(path, txt, strlen(txt));
    free(txt);
    cJSON_Delete(c);
    return ok == 0 ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    tu_rmtree(g_dir);
    free(g_dir);
    return 0;
}

static pdq_model *load(const char *dir) {
    pdq_model *m = NULL;
    pdq_status st = {0};
    if (pdq_model_load(dir, &m, &st)) fail_msg("load %s: %s", dir, st.msg);
    pdq_set_threads(m, 1);
    return m;
}

/* The fields EXAONE names its own way are read; tying defaults to true; an activation other
 * than SiLU and a missing layer count are refused naming EXAONE's field. */
static void test_config(void **s) {
    (void)s;
    pdq_config c;
    pdq_status st = {0};
    assert_int_equal(pdq_config_load(g_dir, &c, &st), PDQ_OK);
    assert_string_equal(c.family->name, "exaone");
    assert_int_equal(c.n_layers, 4);
    assert_true(c.rms_norm_eps == 1e-5f);
    assert_int_equal(c.tie_word_embeddings, 0);
    assert_int_equal(c.bias_mask, 0);
    cJSON *j = exaone_config();
    cJSON_DeleteItemFromObjectCaseSensitive(j, "tie_word_embeddings");
    char *txt = cJSON_PrintUnformatted(j);
    assert_int_equal(pdq_config_parse(txt, strlen(txt), "config.json", &c, &st), PDQ_OK);
    assert_int_equal(c.tie_word_embeddings, 1);
    free(txt);
    cJSON_ReplaceItemInObjectCaseSensitive(j, "activation_function", cJSON_CreateString("gelu"));
    txt = cJSON_PrintUnformatted(j);
    assert_int_equal(pdq_config_parse(txt, strlen(txt), "config.json", &c, &st), PDQ_ERR_UNSUPPORTED);
    assert_non_null(strstr(st.msg, "activation_function 'gelu'"));
    free(txt);
    cJSON_DeleteItemFromObjectCaseSensitive(j, "num_layers");
    cJSON_ReplaceItemInObjectCaseSensitive(j, "activation_function", cJSON_CreateString("silu"));
    txt = cJSON_PrintUnformatted(j);
    assert_int_equal(pdq_config_parse(txt, strlen(txt), "config.json", &c, &st), PDQ_ERR_MISSING);
    assert_non_null(strstr(st.msg, "num_layers"));
    free(txt);
    cJSON_Delete(j);
}

/* HF's outputs of the same weights, as test_reference checks the Llama copy, and the Llama
 * copy's own logits bit for bit. */
static void test_hf_reference(void **s) {
    (void)s;
    pdq_model *e = load(g_dir), *l = load(PDQ_TEST_MODEL);
    static const char *const cases[] = {"prompt0", "prompt1", "prompt2", "batch-left"};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char dir[256];
        double pre, step;
        snprintf(dir, sizeof dir, "%s/%s", PDQ_TEST_REF, cases[i]);
        tu_check_ref_case(e, dir, 1e-3, &pre, &step);
        printf("  exaone %s: max |dlogit| vs HF %.3g (prefill), %.3g (greedy steps)\n", cases[i], pre, step);
    }
    int32_t ids[9] = {1, 13825, 1497, 304, 670, 766, 455, 2701, 29892};
    size_t n = (size_t)9 * e->cfg.vocab_size;
    float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
    pdq_status st = {0};
    assert_int_equal(pdq_model_forward(e, NULL, 1, 9, ids, NULL, NULL, a, 0, &st), PDQ_OK);
    assert_int_equal(pdq_model_forward(l, NULL, 1, 9, ids, NULL, NULL, b, 0, &st), PDQ_OK);
    assert_memory_equal(a, b, n * sizeof *a);
    free(a);
    free(b);
    pdq_model_free(e);
    pdq_model_free(l);
}

static int has(const pdq_graph *g, const char *name) { return pdq_graph_find(g, name) >= 0; }

/* The static graphs' constants and edges carry EXAONE's names, and no Llama name. */
static void test_graph_names(void **s) {
    (void)s;
    pdq_model *m = load(g_dir);
    pdq_status st = {0};
    pdq_graph *g = NULL, *h = NULL, *e = NULL;
    assert_int_equal(pdq_build_layer(m, 1, NULL, PDQ_MODE_APPEND, 1, 8, 1, NULL, &g, &st), PDQ_OK);
    assert_int_equal(pdq_build_head(m, 1, 1, &h, &st), PDQ_OK);
    assert_int_equal(pdq_build_embed(m, 1, 1, &e, &st), PDQ_OK);
    static const char *const want[] = {
        "transformer.h.1.hidden_states",           "transformer.h.1.past_key",
        "transformer.h.1.ln_1.weight",             "transformer.h.1.ln_1.out",
        "transformer.h.1.attn.attention.q_proj.weight", "transformer.h.1.attn.attention.k_proj.out",
        "transformer.h.1.attn.attention.new_k",    "transformer.h.1.attn.attention.out_proj.out",
        "transformer.h.1.ln_2.out",                "transformer.h.1.mlp.c_fc_0.weight",
        "transformer.h.1.mlp.c_fc_1.out",          "transformer.h.1.mlp.c_proj.weight",
        "transformer.h.1.mlp.act_fn.out",          "transformer.h.1.out"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        if (!has(g, want[i])) fail_msg("layer graph: no %s", want[i]);
    assert_int_equal(g->tensors[pdq_graph_find(g, "transformer.h.1.mlp.c_fc_0.weight")].role - 1, PDQ_ROLE_WEIGHT);
    for (int i = 0; i < g->n_tensors; i++) {
        const char *nm = g->tensors[i].name;
        if (strstr(nm, "model.layers") || strstr(nm, "self_attn") || strstr(nm, "layernorm") || strstr(nm, "_proj.q"))
            fail_msg("layer graph: a Llama name %s", nm);
    }
    assert_true(has(h, "transformer.ln_f.input") && has(h, "transformer.ln_f.weight") && has(h, "lm_head.out"));
    assert_true(has(e, "transformer.wte.weight") && has(e, "transformer.wte.out"));
    assert_int_equal(e->tensors[pdq_graph_find(e, "transformer.wte.weight")].role - 1, PDQ_ROLE_EMBED);
    char nm[128];
    pdq_linear_module(&m->cfg, 3, PDQ_LIN_GATE, nm, sizeof nm);
    assert_string_equal(nm, "transformer.h.3.mlp.c_fc_0");
    pdq_family_layer_prefix(&m->cfg, 2, nm, sizeof nm);
    assert_string_equal(nm, "transformer.h.2.");
    pdq_graph_free(g);
    pdq_graph_free(h);
    pdq_graph_free(e);
    pdq_model_free(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config),
        cmocka_unit_test(test_hf_reference),
        cmocka_unit_test(test_graph_names),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
