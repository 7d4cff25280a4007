/* Model loading: the bundled checkpoint against its raw bytes, synthetic checkpoints in every
 * dtype/sharding/tying agreeing with the f32 one (weights and logits), and loader errors. */
#include "testutil.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pdq/model.h"
#include "pdq/safetensors.h"
#include "pdq/synth.h"

/* ---------- helpers ---------- */

static char *join(const char *a, const char *b) {
    char *p = malloc(strlen(a) + strlen(b) + 2);
    sprintf(p, "%s/%s", a, b);
    return p;
}

static char *synth(const char *root, const char *name, const pdq_synth_opts *o) {
    char *dir = join(root, name);
    pdq_synth_opts x = *o;
    x.out_dir = dir;
    pdq_status st = {0};
    if (pdq_synth_write(&x, &st) != PDQ_OK) fail_msg("synth %s: %s", name, st.msg);
    return dir;
}

static pdq_model *load_ok(const char *dir) {
    pdq_model *m = NULL;
    pdq_status st = {0};
    if (pdq_model_load(dir, &m, &st) != PDQ_OK) fail_msg("load %s: %s", dir, st.msg);
    return m;
}

static void assert_same_weights(const pdq_model *a, const pdq_model *b) {
    const pdq_config *c = &a->cfg;
    size_t D = (size_t)c->hidden_size, V = (size_t)c->vocab_size;
    assert_memory_equal(a->embed, b->embed, V * D * 4);
    assert_memory_equal(a->lm_head, b->lm_head, V * D * 4);
    assert_memory_equal(a->norm, b->norm, D * 4);
    for (int l = 0; l < c->n_layers; l++) {
        assert_memory_equal(a->layers[l].attn_norm, b->layers[l].attn_norm, D * 4);
        assert_memory_equal(a->layers[l].ffn_norm, b->layers[l].ffn_norm, D * 4);
        for (int i = 0; i < PDQ_LIN_COUNT; i++) {
            int o, in;
            pdq_linear_shape(c, (pdq_linear_id)i, &o, &in);
            assert_memory_equal(a->layers[l].w[i], b->layers[l].w[i], (size_t)o * (size_t)in * 4);
        }
    }
}

#define T_IDS 7
static const int32_t k_ids[T_IDS] = {1, 5, 17, 299, 42, 7, 100};

static float *logits_of(const pdq_model *m) {
    size_t V = (size_t)m->cfg.vocab_size;
    float *lg = malloc(T_IDS * V * sizeof *lg);
    pdq_status st = {0};
    if (pdq_model_forward(m, NULL, 1, T_IDS, k_ids, NULL, NULL, lg, 0, &st) != PDQ_OK)
        fail_msg("forward: %s", st.msg);
    for (size_t i = 0; i < T_IDS * V; i++) assert_true(isfinite(lg[i]));
    return lg;
}

static void assert_same_logits(const pdq_model *a, const pdq_model *b) {
    float *la = logits_of(a), *lb = logits_of(b);
    assert_memory_equal(la, lb, T_IDS * (size_t)a->cfg.vocab_size * 4);
    free(la);
    free(lb);
}

/* Copies src's checkpoint into dst as one f32-or-original file with edits: drop a tensor, give one a
 * new shape of the same size, add an extra tensor, or add lm_head.weight = embed; config keys too. */
typedef struct {
    const char *drop;
    const char *reshape;
    int new_ndim;
    int64_t new_shape[2];
    const char *retype;   /* stored as I32 (same byte count as F32) */
    int add_extra;
    int add_lm_head_from_embed;
    const char *cfg_key, *cfg_value;
} edits;

static char *rewrite(const char *root, const char *name, const char *src, const edits *e) {
    char *dst = join(root, name);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dst);
    assert_int_equal(system(cmd), 0);
    pdq_safetensors *s;
    pdq_status st = {0};
    assert_int_equal(pdq_st_open(src, &s, &st), PDQ_OK);
    int n = pdq_st_count(s);
    pdq_st_tensor *t = calloc((size_t)n + 2, sizeof *t);
    int k = 0;
    for (int i = 0; i < n; i++) {
        const pdq_st_tensor *x = pdq_st_at(s, i);
        if (e->drop && !strcmp(x->name, e->drop)) continue;
        t[k] = *x;
        if (e->reshape && !strcmp(x->name, e->reshape)) {
            t[k].ndim = e->new_ndim;
            memcpy(t[k].shape, e->new_shape, sizeof e->new_shape);
        }
        if (e->retype && !strcmp(x->name, e->retype)) t[k].dtype = PDQ_DT_I32;
        if (e->add_lm_head_from_embed && !strcmp(x->name, "model.embed_tokens.weight")) {
            t[++k] = *x;
            t[k].name = "lm_head.weight";
        }
        k++;
    }
    static const float extra[4] = {1, 2, 3, 4};
    if (e->add_extra)
        t[k++] = (pdq_st_tensor){.name = "model.layers.0.self_attn.rotary_emb.inv_freq", .dtype = PDQ_DT_F32,
                                 .ndim = 1, .shape = {4}, .data = extra, .nbytes = 16};
    char *out = join(dst, "model.safetensors");
    assert_int_equal(pdq_st_write(out, t, k, NULL, &st), PDQ_OK);
    free(out);
    free(t);
    pdq_st_close(s);
    /* config.json, edited */
    char *cin = join(src, "config.json"), *cout = join(dst, "config.json");
    char *text = tu_read_file(cin, NULL);
    cJSON *root_j = cJSON_Parse(text);
    if (e->cfg_key) {
        cJSON_DeleteItemFromObject(root_j, e->cfg_key);
        cJSON_AddItemToObject(root_j, e->cfg_key, cJSON_Parse(e->cfg_value));
    }
    char *o = cJSON_Print(root_j);
    assert_int_equal(tu_write_file(cout, o, strlen(o)), 0);
    free(o);
    cJSON_Delete(root_j);
    free(text);
    free(cin);
    free(cout);
    return dst;
}

static void expect_load_error(const char *dir, pdq_code code, const char *m1, const char *m2) {
    pdq_model *m = NULL;
    pdq_status st = {0};
    pdq_code c = pdq_model_load(dir, &m, &st);
    if (c != code) fail_msg("%s: got %s (%s), want %s", dir, pdq_code_name(c), st.msg, pdq_code_name(code));
    assert_null(m);
    if (m1 && !strstr(st.msg, m1)) fail_msg("message '%s' lacks '%s'", st.msg, m1);
    if (m2 && !strstr(st.msg, m2)) fail_msg("message '%s' lacks '%s'", st.msg, m2);
}

/* ---------- tests ---------- */

/* Reads element i of a BF16 tensor straight from the file bytes. */
static float raw_bf16(const char *file, const cJSON *hdr, size_t data_start, const char *name, size_t i) {
    const cJSON *e = cJSON_GetObjectItem(hdr, name);
    assert_non_null(e);
    assert_string_equal(cJSON_GetObjectItem(e, "dtype")->valuestring, "BF16");
    size_t begin = (size_t)cJSON_GetArrayItem(cJSON_GetObjectItem(e, "data_offsets"), 0)->valuedouble;
    FILE *f = fopen(file, "rb");
    assert_non_null(f);
    unsigned char b[2];
    fseek(f, (long)(data_start + begin + 2 * i), SEEK_SET);
    assert_int_equal(fread(b, 1, 2, f), 2);
    fclose(f);
    uint32_t u = (uint32_t)(b[0] | b[1] << 8) << 16;
    float v;
    memcpy(&v, &u, 4);
    return v;
}

static void test_bundled(void **state) {
    (void)state;
    pdq_model *m = load_ok(PDQ_TEST_MODEL);
    const pdq_config *c = &m->cfg;
    assert_int_equal(c->hidden_size, 256);
    assert_int_equal(c->n_layers, 4);
    assert_true(m->lm_head != m->embed);
    assert_string_equal(m->dir, PDQ_TEST_MODEL);
    for (int i = 0; i < PDQ_LIN_COUNT; i++) {
        static const int want[PDQ_LIN_COUNT][2] = {{256, 256}, {64, 256}, {64, 256}, {256, 256},
                                                    {688, 256}, {688, 256}, {256, 688}};
        int o, in;
        pdq_linear_shape(c, (pdq_linear_id)i, &o, &in);
        assert_int_equal(o, want[i][0]);
        assert_int_equal(in, want[i][1]);
    }
    assert_string_equal(pdq_linear_name(PDQ_LIN_GATE), "gate_proj");
    assert_string_equal(pdq_linear_parent(PDQ_LIN_O), "self_attn");
    assert_string_equal(pdq_linear_parent(PDQ_LIN_DOWN), "mlp");

    /* values == the bf16 bits in the file, parsed here independently */
    const char *file = PDQ_TEST_MODEL "/model.safetensors";
    size_t len;
    char *raw = tu_read_file(file, &len);
    uint64_t hl = 0;
    for (int i = 7; i >= 0; i--) hl = (hl << 8) | (unsigned char)raw[i];
    cJSON *hdr = cJSON_ParseWithLength(raw + 8, hl);
    free(raw);
    size_t ds = 8 + hl;
    uint64_t rs = 11;
    for (int k = 0; k < 20; k++) {
        size_t i = (size_t)(tu_randu(&rs) * 256 * 32000);
        assert_true(m->embed[i] == raw_bf16(file, hdr, ds, "model.embed_tokens.weight", i));
        assert_true(m->lm_head[i] == raw_bf16(file, hdr, ds, "lm_head.weight", i));
        size_t j = (size_t)(tu_randu(&rs) * 256 * 688);
        assert_true(m->layers[3].w[PDQ_LIN_DOWN][j] == raw_bf16(file, hdr, ds, "model.layers.3.mlp.down_proj.weight", j));
        assert_true(m->layers[1].w[PDQ_LIN_K][j % (64 * 256)] ==
                    raw_bf16(file, hdr, ds, "model.layers.1.self_attn.k_proj.weight", j % (64 * 256)));
        assert_true(m->layers[2].ffn_norm[j % 256] ==
                    raw_bf16(file, hdr, ds, "model.layers.2.post_attention_layernorm.weight", j % 256));
        assert_true(m->norm[j % 256] == raw_bf16(file, hdr, ds, "model.norm.weight", j % 256));
    }
    cJSON_Delete(hdr);
    pdq_set_threads(m, 1);
    assert_int_equal(m->n_threads, 1);
    assert_true(pdq_default_threads() >= 1);
    pdq_model_free(m);
}

static void test_dtypes_and_shards(void **state) {
    (void)state;
    char *root = tu_mkdtemp();
    pdq_synth_opts o;
    pdq_synth_opts_default(&o);
    o.seed = 5;
    char *d32 = synth(root, "f32", &o);
    o.dtype = PDQ_DT_BF16;
    char *dbf = synth(root, "bf16", &o);
    o.dtype = PDQ_DT_F16;
    char *dh = synth(root, "f16", &o);
    o.dtype = PDQ_DT_BF16;
    o.shards = 3;
    char *dsh = synth(root, "sharded", &o);
    pdq_model *a = load_ok(d32), *b = load_ok(dbf), *h = load_ok(dh), *s = load_ok(dsh);
    /* the synthetic weights look like weights: mean ~0, std ~0.02, norms ~1 */
    double sum = 0, sq = 0;
    size_t n = 300 * 64;
    for (size_t i = 0; i < n; i++) sum += a->embed[i], sq += (double)a->embed[i] * a->embed[i];
    assert_true(fabs(sum / n) < 0.002);
    assert_true(fabs(sqrt(sq / n) - 0.02) < 0.002);
    assert_true(fabs(a->layers[1].ffn_norm[3] - 1.0f) < 0.5f);
    assert_same_weights(a, b);
    assert_same_weights(a, h);
    assert_same_weights(a, s);
    assert_same_logits(a, b);
    assert_same_logits(a, h);
    assert_same_logits(a, s);
    /* a different seed gives different weights */
    o.seed = 6;
    o.shards = 0;
    char *d6 = synth(root, "seed6", &o);
    pdq_model *x = load_ok(d6);
    assert_true(memcmp(a->embed, x->embed, 300 * 64 * 4) != 0);
    pdq_model_free(x);
    pdq_model_free(a);
    pdq_model_free(b);
    pdq_model_free(h);
    pdq_model_free(s);
    free(d32), free(dbf), free(dh), free(dsh), free(d6);
    tu_rmtree(root);
    free(root);
}

/* A synthetic Gemma 3 (the family's name accepted for its model_type): the config reads back as
 * written (layer types, window), every role of the table is stored (the four norms of a layer
 * centred on 0 for (1 + w)), a bfloat16 sharded copy loads to the same weights and logits. */
static void test_synth_gemma3(void **state) {
    (void)state;
    char *root = tu_mkdtemp();
    pdq_synth_opts o;
    pdq_synth_opts_default(&o);
    o.family = "gemma3";
    o.layers = 4;
    o.kv_heads = 1;
    o.head_dim = 32;
    o.window = 4;
    o.window_pattern = 2;
    o.tied = 1;
    char *d32 = synth(root, "g32", &o);
    o.dtype = PDQ_DT_BF16;
    o.shards = 2;
    char *dbf = synth(root, "gbf", &o);
    pdq_model *a = load_ok(d32), *b = load_ok(dbf);
    assert_string_equal(a->cfg.family->name, "gemma3");
    assert_int_equal(a->cfg.sliding_window, 4);
    for (int l = 0; l < 4; l++) assert_int_equal(pdq_cfg_layer_window(&a->cfg, l), l % 2 ? 0 : 4);
    size_t D = 64;
    for (int l = 0; l < 4; l++) {
        const float *norms[4] = {a->layers[l].attn_norm, a->layers[l].post_attn_norm, a->layers[l].ffn_norm,
                                 a->layers[l].post_ffn_norm};
        for (int k = 0; k < 4; k++) {
            double sum = 0;
            for (size_t i = 0; i < D; i++) sum += norms[k][i];
            assert_true(fabs(sum / D) < 0.1);
        }
        assert_memory_equal(a->layers[l].post_attn_norm, b->layers[l].post_attn_norm, D * 4);
        assert_memory_equal(a->layers[l].post_ffn_norm, b->layers[l].post_ffn_norm, D * 4);
    }
    assert_same_weights(a, b);
    assert_same_logits(a, b);
    pdq_model_free(a);
    pdq_model_free(b);
    free(d32), free(dbf);
    tu_rmtree(root);
    free(root);
}

static void test_tied(void **state) {
    (void)state;
    char *root = tu_mkdtemp();
    pdq_synth_opts o;
    pdq_synth_opts_default(&o);
    o.tied = 1;
    char *dt = synth(root, "tied", &o);
    o.dtype = PDQ_DT_F16;
    o.shards = 2;
    char *dts = synth(root, "tied-f16-sharded", &o);
    pdq_model *a = load_ok(dt), *b = load_ok(dts);
    assert_true(a->lm_head == a->embed);
    assert_true(b->lm_head == b->embed);
    assert_int_equal(a->cfg.tie_word_embeddings, 1);
    assert_same_weights(a, b);
    assert_same_logits(a, b);
    /* the untied equivalent: lm_head.weight stored as a copy of the embedding */
    edits e = {.add_lm_head_from_embed = 1, .cfg_key = "tie_word_embeddings", .cfg_value = "false"};
    char *du = rewrite(root, "untied", dt, &e);
    pdq_model *u = load_ok(du);
    assert_true(u->lm_head != u->embed);
    assert_same_weights(a, u);
    assert_same_logits(a, u);
    pdq_model_free(a);
    pdq_model_free(b);
    pdq_model_free(u);
    free(dt), free(dts), free(du);
    tu_rmtree(root);
    free(root);
}

static void test_llama3_gqa(void **state) {
    (void)state;
    char *root = tu_mkdtemp();
    pdq_synth_opts o;
    pdq_synth_opts_default(&o);
    o.heads = 8;
    o.kv_heads = 2;
    o.head_dim = 16; /* 8 * 16 = 128 != hidden 64 */
    o.rope_llama3 = 1;
    o.rope_factor = 8, o.rope_low = 1, o.rope_high = 4, o.rope_orig_max_pos = 64;
    o.rope_theta = 500000;
    char *d32 = synth(root, "l3-f32", &o);
    o.dtype = PDQ_DT_BF16;
    o.shards = 4;
    char *dbf = synth(root, "l3-bf16", &o);
    pdq_model *a = load_ok(d32), *b = load_ok(dbf);
    assert_int_equal(a->cfg.rope_type, PDQ_ROPE_LLAMA3);
    assert_int_equal(a->cfg.head_dim, 16);
    int q_out, q_in;
    pdq_linear_shape(&a->cfg, PDQ_LIN_Q, &q_out, &q_in);
    assert_int_equal(q_out, 128);
    for (int i = 0; i < 8; i++) {
        double f = 1.0 / pow(500000.0, 2.0 * i / 16.0), wl = 2 * M_PI / f, want;
        if (wl < 64.0 / 4) want = f;
        else if (wl > 64.0) want = f / 8;
        else {
            double sm = (64.0 / wl - 1) / 3.0;
            want = (1 - sm) * f / 8 + sm * f;
        }
        assert_true(fabs(a->inv_freq[i] - want) <= 1e-6 * want);
    }
    assert_same_weights(a, b);
    assert_same_logits(a, b);
    /* MHA (kv == heads) and the default rope run too, and the rope choice matters */
    o.dtype = PDQ_DT_F32;
    o.shards = 0;
    o.rope_llama3 = 0;
    char *dd = synth(root, "default-rope", &o);
    pdq_model *d = load_ok(dd);
    float *la = logits_of(a), *ld = logits_of(d);
    assert_true(memcmp(la, ld, T_IDS * 300 * 4) != 0);
    free(la), free(ld);
    o.kv_heads = 8;
    char *dm = synth(root, "mha", &o);
    pdq_model *mh = load_ok(dm);
    free(logits_of(mh));
    pdq_model_free(a), pdq_model_free(b), pdq_model_free(d), pdq_model_free(mh);
    free(d32), free(dbf), free(dd), free(dm);
    tu_rmtree(root);
    free(root);
}

static void test_errors(void **state) {
    (void)state;
    char *root = tu_mkdtemp();
    pdq_synth_opts o;
    pdq_synth_opts_default(&o);
    char *base = synth(root, "base", &o);
    char *d;
    edits e0 = {.drop = "model.layers.1.self_attn.q_proj.weight"};
    d = rewrite(root, "missing", base, &e0);
    expect_load_error(d, PDQ_ERR_MISSING, "model.layers.1.self_attn.q_proj.weight", "model.safetensors");
    free(d);
    edits e1 = {.reshape = "model.layers.0.mlp.down_proj.weight", .new_ndim = 2, .new_shape = {160, 64}};
    d = rewrite(root, "shape", base, &e1);
    expect_load_error(d, PDQ_ERR_SHAPE, "tensor model.layers.0.mlp.down_proj.weight has shape [160, 64], expected [64, 160]",
                      "model.safetensors");
    free(d);
    edits e2 = {.reshape = "model.norm.weight", .new_ndim = 2, .new_shape = {8, 8}};
    d = rewrite(root, "shape-norm", base, &e2);
    expect_load_error(d, PDQ_ERR_SHAPE, "model.norm.weight has shape [8, 8], expected [64]", NULL);
    free(d);
    edits e3 = {.drop = "lm_head.weight"};
    d = rewrite(root, "no-lm-head", base, &e3);
    expect_load_error(d, PDQ_ERR_MISSING, "lm_head.weight", "tie_word_embeddings");
    free(d);
    edits e4 = {.retype = "model.layers.1.input_layernorm.weight"};
    d = rewrite(root, "int-norm", base, &e4);
    expect_load_error(d, PDQ_ERR_UNSUPPORTED, "model.layers.1.input_layernorm.weight", "I32");
    free(d);
    /* a config/checkpoint disagreement: config says 3 layers */
    edits e5 = {.cfg_key = "num_hidden_layers", .cfg_value = "3"};
    d = rewrite(root, "more-layers", base, &e5);
    expect_load_error(d, PDQ_ERR_MISSING, "model.layers.2.", NULL);
    free(d);
    edits e6 = {.cfg_key = "model_type", .cfg_value = "\"gpt_neox\""};
    d = rewrite(root, "neox", base, &e6);
    expect_load_error(d, PDQ_ERR_UNSUPPORTED, "gpt_neox", "config.json");
    /* no weights at all */
    char *w = join(d, "model.safetensors");
    remove(w);
    free(w);
    free(d);
    edits e7 = {.cfg_key = "hidden_act", .cfg_value = "\"silu\""};
    d = rewrite(root, "noweights", base, &e7);
    w = join(d, "model.safetensors");
    remove(w);
    expect_load_error(d, PDQ_ERR_MISSING, "model.safetensors", NULL);
    /* a corrupt weights file */
    assert_int_equal(tu_write_file(w, "\x08\0\0\0\0\0\0\0{}", 10), 0);
    expect_load_error(d, PDQ_ERR_FORMAT, "model.safetensors", NULL);
    free(w);
    free(d);
    /* extra tensors (rotary_emb.inv_freq of old checkpoints) are ignored */
    edits e8 = {.add_extra = 1};
    d = rewrite(root, "extra", base, &e8);
    pdq_model *a = load_ok(base), *b = load_ok(d);
    assert_same_weights(a, b);
    pdq_model_free(a);
    pdq_model_free(b);
    /* a pdq quantized checkpoint directory is recognised */
    w = join(d, "pdq_quant.json");
    assert_int_equal(tu_write_file(w, "{}", 2), 0);
    pdq_model *q = NULL;
    pdq_status st = {0};
    pdq_code qc = pdq_model_load(d, &q, &st);
    assert_int_not_equal(qc, PDQ_OK); /* until the quantized loader lands: a clear error, never a crash */
    assert_null(q);
    free(w);
    free(d);
    expect_load_error("/nonexistent-model", PDQ_ERR_IO, "/nonexistent-model", NULL);
    expect_load_error(root, PDQ_ERR_IO, "config.json", NULL);
    free(base);
    tu_rmtree(root);
    free(root);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bundled),
        cmocka_unit_test(test_dtypes_and_shards),
        cmocka_unit_test(test_tied),
        cmocka_unit_test(test_synth_gemma3),
        cmocka_unit_test(test_llama3_gqa),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
