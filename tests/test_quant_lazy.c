/* Memory-bounded quantization: a lazily loaded model (one layer's f32 weights at a time) is
 * quantized to exactly the checkpoint the eagerly loaded model gives, and the streamed files
 * hold exactly the weights the quantizer left in the eager model. */
#include <stdlib.h>
#include <string.h>

#include "pdq/model.h"
#include "pdq/quant.h"
#include "pdq/synth.h"
#include "testutil.h"

static void same_array(const float *a, const float *b, size_t n, const char *what) {
    if (!a || !b || memcmp(a, b, n * sizeof(float)) != 0) fail_msg("%s differs", what);
}

/* Every weight bit for bit (wk_scale too when with_k). */
static void same_model(const pdq_model *a, const pdq_model *b, int with_k) {
    const pdq_config *c = &a->cfg;
    size_t D = (size_t)c->hidden_size, V = (size_t)c->vocab_size;
    same_array(a->embed, b->embed, V * D, "embedding");
    same_array(a->lm_head, b->lm_head, V * D, "lm_head");
    same_array(a->norm, b->norm, D, "final norm");
    for (int l = 0; l < c->n_layers; l++) {
        const pdq_layer *x = &a->layers[l], *y = &b->layers[l];
        same_array(x->attn_norm, y->attn_norm, D, "input_layernorm");
        same_array(x->ffn_norm, y->ffn_norm, D, "post_attention_layernorm");
        for (int i = 0; i < PDQ_LIN_COUNT; i++) {
            int o, in;
            pdq_linear_shape(c, (pdq_linear_id)i, &o, &in);
            same_array(x->w[i], y->w[i], (size_t)o * in, pdq_linear_name((pdq_linear_id)i));
        }
        if (with_k) {
            assert_true(!x->wk_scale == !y->wk_scale);
            if (x->wk_scale) same_array(x->wk_scale, y->wk_scale, (size_t)c->n_kv_heads * c->head_dim, "wk_scale");
        }
    }
}

static void same_file(const char *a_dir, const char *b_dir, const char *file) {
    char pa[1024], pb[1024];
    snprintf(pa, sizeof pa, "%s/%s", a_dir, file);
    snprintf(pb, sizeof pb, "%s/%s", b_dir, file);
    size_t na = 0, nb = 0;
    char *a = tu_read_file(pa, &na), *b = tu_read_file(pb, &nb);
    assert_non_null(a);
    assert_non_null(b);
    if (na != nb || memcmp(a, b, na) != 0) fail_msg("%s: lazy and eager files differ", file);
    free(a);
    free(b);
}

/* Quantizes dir eagerly and lazily with the same options and compares everything. */
static void eager_vs_lazy(const char *dir, const pdq_quant_opts *o, const int32_t *calib, int ns, int T) {
    pdq_status st = {0};
    pdq_model *em = NULL, *lm = NULL;
    assert_int_equal(pdq_model_load(dir, &em, &st), PDQ_OK);
    pdq_set_threads(em, 1);
    pdq_qmodel eq, lq;
    assert_int_equal(pdq_quantize_model(em, o, calib, ns, T, &eq, &st), PDQ_OK);
    char *ea = tu_mkdtemp(), *la = tu_mkdtemp();
    assert_int_equal(pdq_quant_save(ea, dir, em, &eq, &st), PDQ_OK);

    assert_int_equal(pdq_model_load_lazy(dir, &lm, &st), PDQ_OK);
    pdq_set_threads(lm, 1);
    assert_null(lm->embed);
    assert_null(lm->layers[0].w[PDQ_LIN_Q]);
    assert_int_equal(pdq_quantize_model(lm, o, calib, ns, T, &lq, &st), PDQ_OK);
    /* nothing big stays materialized */
    assert_null(lm->embed);
    assert_null(lm->lm_head);
    for (int l = 0; l < lm->cfg.n_layers; l++) assert_null(lm->layers[l].w[PDQ_LIN_DOWN]);
    assert_int_equal(pdq_quant_save(la, dir, lm, &lq, &st), PDQ_OK);

    same_file(ea, la, "model.q.safetensors");
    same_file(ea, la, "hf/model.safetensors");
    same_file(ea, la, "pdq_quant.json");
    /* the streamed files hold what the quantizer left in the eager model (the old save wrote
     * those arrays): the checkpoint dequantizes to them, and the HF copy is them */
    pdq_model *back = NULL, *hf = NULL;
    assert_int_equal(pdq_model_load(la, &back, &st), PDQ_OK);
    same_model(em, back, 1);
    char hfdir[1024];
    snprintf(hfdir, sizeof hfdir, "%s/hf", la);
    assert_int_equal(pdq_model_load(hfdir, &hf, &st), PDQ_OK);
    same_model(em, hf, 0);

    pdq_model_free(hf);
    pdq_model_free(back);
    pdq_qmodel_free(&eq);
    pdq_qmodel_free(&lq);
    pdq_model_free(em);
    pdq_model_free(lm);
    tu_rmtree(ea);
    tu_rmtree(la);
    free(ea);
    free(la);
}

static int32_t *random_ids(int n, int vocab, uint64_t seed) {
    int32_t *ids = malloc((size_t)n * sizeof *ids);
    for (int i = 0; i < n; i++) ids[i] = (int32_t)(tu_rand(&seed) % (uint64_t)vocab);
    return ids;
}

/* Acquire gives the eager load's weights; release frees; on an eager model both do nothing. */
static void test_acquire_release(void **state) {
    (void)state;
    pdq_status st = {0};
    pdq_model *em = NULL, *lm = NULL;
    assert_int_equal(pdq_model_load(PDQ_TEST_MODEL, &em, &st), PDQ_OK);
    assert_int_equal(pdq_model_load_lazy(PDQ_TEST_MODEL, &lm, &st), PDQ_OK);
    const pdq_config *c = &em->cfg;
    same_array(em->norm, lm->norm, (size_t)c->hidden_size, "final norm");
    for (int i = 0; i < PDQ_LIN_COUNT; i++) assert_null(lm->layers[2].w[i]);
    assert_int_equal(pdq_model_layer_acquire(lm, 2, &st), PDQ_OK);
    for (int i = 0; i < PDQ_LIN_COUNT; i++) {
        int o, in;
        pdq_linear_shape(c, (pdq_linear_id)i, &o, &in);
        same_array(em->layers[2].w[i], lm->layers[2].w[i], (size_t)o * in, pdq_linear_name((pdq_linear_id)i));
    }
    assert_null(lm->layers[1].w[PDQ_LIN_Q]);
    pdq_model_layer_release(lm, 2);
    for (int i = 0; i < PDQ_LIN_COUNT; i++) assert_null(lm->layers[2].w[i]);
    size_t VD = (size_t)c->vocab_size * c->hidden_size;
    assert_int_equal(pdq_model_embed_acquire(lm, &st), PDQ_OK);
    same_array(em->embed, lm->embed, VD, "embedding");
    assert_int_equal(pdq_model_lm_head_acquire(lm, &st), PDQ_OK);
    same_array(em->lm_head, lm->lm_head, VD, "lm_head");
    pdq_model_embed_release(lm);
    pdq_model_lm_head_release(lm);
    assert_null(lm->embed);
    assert_null(lm->lm_head);

    float *w = em->layers[0].w[PDQ_LIN_Q], *e = em->embed;
    assert_int_equal(pdq_model_layer_acquire(em, 0, &st), PDQ_OK);
    pdq_model_layer_release(em, 0);
    pdq_model_embed_release(em);
    assert_ptr_equal(em->layers[0].w[PDQ_LIN_Q], w);
    assert_ptr_equal(em->embed, e);
    pdq_model_free(em);
    pdq_model_free(lm);
}

/* Bundled model: GPTQ w4 act-order with an 8-bit override and GPTQ lm_head; RTN w3 sym groups. */
static void test_bundled(void **state) {
    (void)state;
    enum { NS = 2, T = 32 };
    pdq_config c;
    pdq_status st = {0};
    assert_int_equal(pdq_config_load(PDQ_TEST_MODEL, &c, &st), PDQ_OK);
    int32_t *ids = random_ids(NS * T, c.vocab_size, 7);
    pdq_quant_opts o;
    pdq_quant_opts_default(&o, 4);
    o.quiet = 1;
    pdq_qoverride ov;
    assert_int_equal(pdq_qoverride_parse("down_proj=8", &ov, &st), PDQ_OK);
    o.overrides = &ov;
    o.n_overrides = 1;
    o.lm_head_gptq = 1;
    eager_vs_lazy(PDQ_TEST_MODEL, &o, ids, NS, T);

    pdq_quant_opts_default(&o, 3);
    o.quiet = 1;
    o.method = PDQ_QM_RTN;
    o.gptq.scheme.sym = 1;
    o.gptq.scheme.group = 16;
    o.lm_head_bits = 0;
    eager_vs_lazy(PDQ_TEST_MODEL, &o, NULL, 0, 0);
    free(ids);
}

/* Tied embeddings, bf16 in two shards: GPTQ with static groups, embedding kept in float. */
static void test_tied_sharded(void **state) {
    (void)state;
    enum { NS = 3, T = 16 };
    char *dir = tu_mkdtemp();
    pdq_synth_opts so;
    pdq_synth_opts_default(&so);
    so.out_dir = dir;
    so.tied = 1;
    so.dtype = PDQ_DT_BF16;
    so.shards = 2;
    so.seed = 11;
    pdq_status st = {0};
    assert_int_equal(pdq_synth_write(&so, &st), PDQ_OK);
    int32_t *ids = random_ids(NS * T, so.vocab, 5);
    pdq_quant_opts o;
    pdq_quant_opts_default(&o, 4);
    o.quiet = 1;
    o.gptq.scheme.group = 32;
    o.gptq.static_groups = 1;
    o.embed_bits = o.lm_head_bits = 0;
    eager_vs_lazy(dir, &o, ids, NS, T);
    o.embed_bits = o.lm_head_bits = 8;
    o.gptq.actorder = 0;
    eager_vs_lazy(dir, &o, ids, NS, T);
    free(ids);
    tu_rmtree(dir);
    free(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_acquire_release),
        cmocka_unit_test(test_bundled),
        cmocka_unit_test(test_tied_sharded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
