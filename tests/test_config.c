/* config.json parsing: the bundled model's values, llama3 RoPE vs the formula, every error. */
#include "testutil.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pdq/config.h"
#include "pdq/family.h"
#include "pdq/safetensors.h"

static void test_bundled(void **state) {
    (void)state;
    pdq_config c;
    pdq_status st = {0};
    assert_int_equal(pdq_config_load(PDQ_TEST_MODEL, &c, &st), PDQ_OK);
    /* values as written in models/web-bible-llama-19m/config.json */
    assert_int_equal(c.hidden_size, 256);
    assert_int_equal(c.intermediate_size, 688);
    assert_int_equal(c.n_layers, 4);
    assert_int_equal(c.n_heads, 8);
    assert_int_equal(c.n_kv_heads, 2);
    assert_int_equal(c.head_dim, 32);
    assert_true(c.rms_norm_eps == 1e-5f);
    assert_true(c.rope_theta == 10000.0);
    assert_int_equal(c.rope_type, PDQ_ROPE_DEFAULT);
    assert_int_equal(c.max_position_embeddings, 512);
    assert_int_equal(c.vocab_size, 32000);
    assert_int_equal(c.tie_word_embeddings, 0);
    assert_int_equal(c.bos_token_id, 1);
    assert_int_equal(c.n_eos, 1);
    assert_int_equal(c.eos_token_ids[0], 2);
    assert_int_equal(c.pad_token_id, -1);
    assert_string_equal(c.torch_dtype, "bfloat16");

    /* parameter count == sum of the element counts stored in the checkpoint */
    pdq_safetensors *s;
    assert_int_equal(pdq_st_open(PDQ_TEST_MODEL, &s, &st), PDQ_OK);
    long long total = 0;
    for (int i = 0; i < pdq_st_count(s); i++) {
        const pdq_st_tensor *t = pdq_st_at(s, i);
        long long n = 1;
        for (int d = 0; d < t->ndim; d++) n *= t->shape[d];
        total += n;
    }
    pdq_st_close(s);
    assert_int_equal(pdq_config_param_count(&c), total);
    c.tie_word_embeddings = 1;
    assert_int_equal(pdq_config_param_count(&c), total - 32000LL * 256);

    /* default RoPE: 1 / theta^(2i/d) */
    float inv[16];
    c.tie_word_embeddings = 0;
    pdq_rope_inv_freq(&c, inv);
    for (int i = 0; i < 16; i++) {
        double want = 1.0 / pow(10000.0, 2.0 * i / 32.0);
        assert_true(fabs(inv[i] - want) <= 2e-7 * want);
    }
}

/* Base config text (a Llama-3.1-8B config) with edits applied through cJSON. */
static const char *k_base =
    "{\"architectures\":[\"LlamaForCausalLM\"],\"attention_bias\":false,\"bos_token_id\":128000,"
    "\"eos_token_id\":[128001,128008,128009],\"hidden_act\":\"silu\",\"hidden_size\":4096,"
    "\"intermediate_size\":14336,\"max_position_embeddings\":131072,\"mlp_bias\":false,"
    "\"model_type\":\"llama\",\"num_attention_heads\":32,\"num_hidden_layers\":32,"
    "\"num_key_value_heads\":8,\"rms_norm_eps\":1e-05,\"rope_scaling\":{\"factor\":8.0,"
    "\"low_freq_factor\":1.0,\"high_freq_factor\":4.0,\"original_max_position_embeddings\":8192,"
    "\"rope_type\":\"llama3\"},\"rope_theta\":500000.0,\"tie_word_embeddings\":false,"
    "\"torch_dtype\":\"bfloat16\",\"vocab_size\":128256}";

/* Parses base with `key` replaced by JSON `value` (NULL: removed; key "a.b" edits a nested object). */
static pdq_code parse_edit(const char *key, const char *value, pdq_config *c, pdq_status *st) {
    cJSON *root = cJSON_Parse(k_base);
    cJSON *obj = root;
    char k[64];
    snprintf(k, sizeof k, "%s", key ? key : "");
    char *dot = strchr(k, '.');
    if (dot) {
        *dot = '\0';
        obj = cJSON_GetObjectItem(root, k);
        memmove(k, dot + 1, strlen(dot + 1) + 1);
    }
    if (key) {
        cJSON_DeleteItemFromObject(obj, k);
        if (value) cJSON_AddItemToObject(obj, k, cJSON_Parse(value));
    }
    char *text = cJSON_PrintUnformatted(root);
    pdq_code rc = pdq_config_parse(text, strlen(text), "cfg.json", c, st);
    free(text);
    cJSON_Delete(root);
    return rc;
}

static void test_llama31(void **state) {
    (void)state;
    pdq_config c;
    pdq_status st = {0};
    assert_int_equal(parse_edit(NULL, NULL, &c, &st), PDQ_OK);
    assert_int_equal(c.head_dim, 128);
    assert_int_equal(c.n_eos, 3);
    assert_int_equal(c.eos_token_ids[0], 128001);
    assert_int_equal(c.eos_token_ids[2], 128009);
    assert_int_equal(c.rope_type, PDQ_ROPE_LLAMA3);
    assert_true(c.rope_factor == 8.0 && c.rope_low_freq_factor == 1.0 && c.rope_high_freq_factor == 4.0);
    assert_int_equal(c.rope_original_max_pos, 8192);
    /* Llama-3.1-8B has 8,030,261,248 parameters (embed + lm_head untied) */
    assert_int_equal(pdq_config_param_count(&c), 8030261248LL);

    float inv[64];
    pdq_rope_inv_freq(&c, inv);
    int n_low = 0, n_mid = 0, n_high = 0;
    for (int i = 0; i < 64; i++) {
        /* straight from the Llama 3.1 reference: wavelen bands at 8192/4 and 8192/1 */
        double f = 1.0 / pow(500000.0, (2.0 * i) / 128.0);
        double wl = 2 * M_PI / f, want;
        if (wl < 8192.0 / 4.0) {
            want = f;
            n_high++;
        } else if (wl > 8192.0 / 1.0) {
            want = f / 8.0;
            n_low++;
        } else {
            double smooth = (8192.0 / wl - 1.0) / (4.0 - 1.0);
            want = (1 - smooth) * f / 8.0 + smooth * f;
            n_mid++;
        }
        if (fabs(inv[i] - want) > 4e-7 * want) fail_msg("inv_freq[%d] = %.9g want %.9g", i, inv[i], want);
    }
    assert_true(n_low > 0 && n_mid > 0 && n_high > 0); /* all three bands exercised */
    assert_true(inv[0] == 1.0f);
    /* default rope with the same theta differs only in the scaled bands */
    assert_int_equal(parse_edit("rope_scaling", "null", &c, &st), PDQ_OK);
    float def[64];
    pdq_rope_inv_freq(&c, def);
    assert_true(def[0] == inv[0]);
    assert_true(fabs(def[63] / 8.0 - inv[63]) < 1e-6 * def[63]);
}

static void test_variants(void **state) {
    (void)state;
    pdq_config c;
    pdq_status st = {0};
    assert_int_equal(parse_edit("head_dim", "64", &c, &st), PDQ_OK);
    assert_int_equal(c.head_dim, 64); /* head_dim overrides hidden/heads */
    assert_int_equal(parse_edit("head_dim", "null", &c, &st), PDQ_OK);
    assert_int_equal(c.head_dim, 128);
    assert_int_equal(parse_edit("eos_token_id", "7", &c, &st), PDQ_OK);
    assert_int_equal(c.n_eos, 1);
    assert_int_equal(c.eos_token_ids[0], 7);
    assert_int_equal(parse_edit("eos_token_id", NULL, &c, &st), PDQ_OK);
    assert_int_equal(c.n_eos, 0);
    assert_int_equal(parse_edit("bos_token_id", NULL, &c, &st), PDQ_OK);
    assert_int_equal(c.bos_token_id, -1);
    assert_int_equal(parse_edit("num_key_value_heads", NULL, &c, &st), PDQ_OK);
    assert_int_equal(c.n_kv_heads, 32); /* HF default: MHA */
    assert_int_equal(parse_edit("rope_scaling", "{\"type\":\"default\"}", &c, &st), PDQ_OK);
    assert_int_equal(c.rope_type, PDQ_ROPE_DEFAULT);
    assert_int_equal(parse_edit("rope_scaling", "{\"rope_type\":\"default\"}", &c, &st), PDQ_OK);
    assert_int_equal(c.rope_type, PDQ_ROPE_DEFAULT);
    assert_int_equal(parse_edit("tie_word_embeddings", "true", &c, &st), PDQ_OK);
    assert_int_equal(c.tie_word_embeddings, 1);
    assert_int_equal(parse_edit("rms_norm_eps", NULL, &c, &st), PDQ_OK);
    assert_true(c.rms_norm_eps == 1e-6f); /* HF default */
    assert_int_equal(parse_edit("pad_token_id", "0", &c, &st), PDQ_OK);
    assert_int_equal(c.pad_token_id, 0);
}

typedef struct {
    const char *key, *value;
    pdq_code code;
    const char *needle;
} bad_case;

static void test_errors(void **state) {
    (void)state;
    static const bad_case cases[] = {
        {"model_type", "\"gpt_neox\"", PDQ_ERR_UNSUPPORTED, "gpt_neox"},
        {"model_type", "\"gemma\"", PDQ_ERR_UNSUPPORTED, "model_type"},
        {"model_type", NULL, PDQ_ERR_MISSING, "model_type"},
        {"attention_bias", "1", PDQ_ERR_FORMAT, "attention_bias"},
        {"mlp_bias", "\"no\"", PDQ_ERR_FORMAT, "mlp_bias"},
        {"hidden_act", "\"gelu\"", PDQ_ERR_UNSUPPORTED, "hidden_act"},
        {"num_key_value_heads", "7", PDQ_ERR_UNSUPPORTED, "num_key_value_heads"},
        {"num_attention_heads", "30", PDQ_ERR_UNSUPPORTED, "num_attention_heads"},
        {"hidden_size", NULL, PDQ_ERR_MISSING, "hidden_size"},
        {"intermediate_size", NULL, PDQ_ERR_MISSING, "intermediate_size"},
        {"num_hidden_layers", NULL, PDQ_ERR_MISSING, "num_hidden_layers"},
        {"num_attention_heads", NULL, PDQ_ERR_MISSING, "num_attention_heads"},
        {"vocab_size", NULL, PDQ_ERR_MISSING, "vocab_size"},
        {"hidden_size", "\"4096\"", PDQ_ERR_FORMAT, "hidden_size"},
        {"hidden_size", "4096.5", PDQ_ERR_FORMAT, "hidden_size"},
        {"hidden_size", "-1", PDQ_ERR_FORMAT, "hidden_size"},
        {"vocab_size", "1e12", PDQ_ERR_FORMAT, "vocab_size"},
        {"rms_norm_eps", "\"small\"", PDQ_ERR_FORMAT, "rms_norm_eps"},
        {"rms_norm_eps", "0", PDQ_ERR_FORMAT, "rms_norm_eps"},
        {"rope_theta", "[1]", PDQ_ERR_FORMAT, "rope_theta"},
        {"head_dim", "33", PDQ_ERR_UNSUPPORTED, "head_dim"},
        {"eos_token_id", "[1,\"x\"]", PDQ_ERR_FORMAT, "eos_token_id"},
        {"eos_token_id", "\"2\"", PDQ_ERR_FORMAT, "eos_token_id"},
        {"tie_word_embeddings", "\"yes\"", PDQ_ERR_FORMAT, "tie_word_embeddings"},
        {"rope_scaling", "{\"rope_type\":\"yarn\",\"factor\":4.0}", PDQ_ERR_UNSUPPORTED, "yarn"},
        {"rope_scaling", "{\"type\":\"dynamic\",\"factor\":4.0}", PDQ_ERR_UNSUPPORTED, "dynamic"},
        {"rope_scaling", "{\"type\":\"linear\"}", PDQ_ERR_MISSING, "factor"},
        {"rope_scaling", "[1]", PDQ_ERR_FORMAT, "rope_scaling"},
        {"rope_scaling.factor", NULL, PDQ_ERR_MISSING, "factor"},
        {"rope_scaling.original_max_position_embeddings", NULL, PDQ_ERR_MISSING, "original_max_position_embeddings"},
        {"rope_scaling.low_freq_factor", "\"1\"", PDQ_ERR_FORMAT, "low_freq_factor"},
        {"rope_scaling.high_freq_factor", "0.5", PDQ_ERR_FORMAT, "high_freq_factor"},
        /* documented limits: the value and the range are named, nothing is cast first */
        {"num_hidden_layers", "100000", PDQ_ERR_FORMAT, "num_hidden_layers = 100000: must be an integer in [1, 1024]"},
        {"vocab_size", "1073741824", PDQ_ERR_FORMAT, "vocab_size = 1073741824: must be an integer in [1, 16777216]"},
        {"hidden_size", "1e30", PDQ_ERR_FORMAT, "hidden_size = 1e+30: must be an integer in [1, 65536]"},
        {"intermediate_size", "2097152", PDQ_ERR_FORMAT, "intermediate_size = 2097152: must be an integer in [1, 1048576]"},
        {"num_key_value_heads", "64", PDQ_ERR_FORMAT, "num_key_value_heads = 64: must be an integer in [1, 32]"},
        {"max_position_embeddings", "4.5", PDQ_ERR_FORMAT, "max_position_embeddings = 4.5"},
        {"rms_norm_eps", "1e-60", PDQ_ERR_FORMAT, "rms_norm_eps = 1e-60: must be a finite number in [1e-30, 1]"},
        {"rms_norm_eps", "-1e-5", PDQ_ERR_FORMAT, "rms_norm_eps = -1e-05: must be a finite number in [1e-30, 1]"},
        {"rope_theta", "1e300", PDQ_ERR_FORMAT, "rope_theta = 1e+300: must be a finite number in [0.001, 1e+15]"},
        {"bos_token_id", "200000", PDQ_ERR_FORMAT, "bos_token_id = 200000: must be an integer in [0, 128255]"},
        {"eos_token_id", "128256", PDQ_ERR_FORMAT, "eos_token_id = 128256: must be in [0, 128255]"},
        {"head_dim", "4096", PDQ_ERR_FORMAT, "head_dim = 4096: must be an integer in [1, 1024]"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        pdq_config c;
        pdq_status st = {0};
        pdq_code rc = parse_edit(cases[i].key, cases[i].value, &c, &st);
        if (rc != cases[i].code || !strstr(st.msg, cases[i].needle) || !strstr(st.msg, "cfg.json"))
            fail_msg("%s=%s: got %s '%s', want %s naming %s", cases[i].key, cases[i].value ? cases[i].value : "(removed)",
                     pdq_code_name(rc), st.msg, pdq_code_name(cases[i].code), cases[i].needle);
    }
    /* hidden not divisible by heads, no head_dim */
    pdq_config c;
    pdq_status st = {0};
    const char *j = "{\"model_type\":\"llama\",\"hidden_size\":100,\"intermediate_size\":8,\"num_hidden_layers\":1,"
                    "\"num_attention_heads\":3,\"vocab_size\":10}";
    assert_int_equal(pdq_config_parse(j, strlen(j), "x.json", &c, &st), PDQ_ERR_UNSUPPORTED);
    assert_non_null(strstr(st.msg, "divisible"));
    assert_int_equal(pdq_config_parse("{\"model_type\":", 14, "x.json", &c, &st), PDQ_ERR_FORMAT);
    assert_non_null(strstr(st.msg, "x.json"));
    assert_int_equal(pdq_config_parse("[]", 2, "x.json", &c, &st), PDQ_ERR_FORMAT);
    assert_int_equal(pdq_config_load("/nonexistent-dir", &c, &st), PDQ_ERR_IO);
    assert_non_null(strstr(st.msg, "/nonexistent-dir/config.json"));
}

/* Gemma 3 text: Gemma3TextConfig's defaults when fields are absent (tie true, window 4096,
 * pattern 6: layer i is full when (i + 1) % 6 == 0, scalar 256, local base 10000), the older
 * sliding_window_pattern, the linear RoPE scaling of the global table, and errors naming fields. */
static void test_gemma3(void **state) {
    (void)state;
    pdq_config c;
    pdq_status st = {0};
    const char *min = "{\"model_type\":\"gemma3_text\",\"hidden_size\":1152,\"intermediate_size\":6912,"
                      "\"num_hidden_layers\":26,\"num_attention_heads\":4,\"num_key_value_heads\":1,"
                      "\"head_dim\":256,\"vocab_size\":262144}";
    assert_int_equal(pdq_config_parse(min, strlen(min), "g.json", &c, &st), PDQ_OK);
    assert_string_equal(c.family->name, "gemma3");
    assert_int_equal(c.tie_word_embeddings, 1);
    assert_int_equal(c.sliding_window, 4096);
    assert_int_equal(c.qk_norm, 1);
    for (int l = 0; l < 26; l++) assert_int_equal(c.layer_sliding[l], (l + 1) % 6 != 0);
    assert_true(c.attn_scale == (float)(1.0 / 16.0) && c.rope_local_theta == 10000.0);
    assert_true(c.embed_scale == (float)sqrt(1152.0));
    /* google/gemma-3-1b-pt's safetensors total_size is 1,999,771,904 bfloat16 bytes */
    assert_int_equal(pdq_family_param_count(&c), 999885952LL);
    char buf[1024];
    struct {
        const char *extra;
        pdq_code code;
        const char *needle;
    } cases[] = {
        {",\"sliding_window_pattern\":2", PDQ_OK, NULL},
        {",\"rope_scaling\":{\"rope_type\":\"linear\",\"factor\":8.0}", PDQ_OK, NULL},
        {",\"final_logit_softcapping\":30.0", PDQ_OK, NULL},
        {",\"layer_types\":[\"full_attention\"]", PDQ_ERR_FORMAT, "'layer_types' has 1 entries, num_hidden_layers is 26"},
        {",\"hidden_activation\":\"gelu\"", PDQ_ERR_UNSUPPORTED, "hidden_activation 'gelu'"},
        {",\"query_pre_attn_scalar\":\"x\"", PDQ_ERR_FORMAT, "query_pre_attn_scalar"},
        {",\"sliding_window_pattern\":0", PDQ_ERR_FORMAT, "sliding_window_pattern"},
        {",\"final_logit_softcapping\":-1", PDQ_ERR_FORMAT, "final_logit_softcapping"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(buf, sizeof buf, "%.*s%s}", (int)strlen(min) - 1, min, cases[i].extra);
        pdq_code rc = pdq_config_parse(buf, strlen(buf), "g.json", &c, &st);
        if (rc != cases[i].code || (cases[i].needle && (!strstr(st.msg, cases[i].needle) || !strstr(st.msg, "g.json"))))
            fail_msg("%s: got %s '%s'", cases[i].extra, pdq_code_name(rc), rc ? st.msg : "");
        if (i == 0)
            for (int l = 0; l < 26; l++) assert_int_equal(c.layer_sliding[l], l % 2 == 0);
        if (i == 1) {
            float g[128], loc[128];
            pdq_rope_inv_freq(&c, g);
            pdq_rope_inv_freq_local(&c, loc);
            /* global: rope_theta 1e6 (the default) / 8; local: 10000, unscaled */
            assert_true(c.rope_type == PDQ_ROPE_LINEAR && g[0] == 0.125f && loc[0] == 1.0f);
            assert_true(fabs(g[1] - pow(1e6, -2.0 / 256) / 8) < 1e-7 * g[1]);
            assert_true(fabs(loc[1] - pow(1e4, -2.0 / 256)) < 1e-7 * loc[1]);
        }
        if (i == 2) assert_true(c.final_softcap == 30.0f);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gemma3),
        cmocka_unit_test(test_bundled),
        cmocka_unit_test(test_llama31),
        cmocka_unit_test(test_variants),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
