/* The FP32 reference model against Hugging Face transformers outputs on the bundled model
 * (tests/fixtures/hf-reference, see its README): logits, greedy generation with a KV cache,
 * a left-padded batch, and test-split perplexity. */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "pdq/eval.h"
#include "pdq/model.h"
#include "pdq/npy.h"

static pdq_model *g_model;

static int setup(void **state) {
    (void)state;
    pdq_status st = {0};
    if (pdq_model_load(PDQ_TEST_MODEL, &g_model, &st) != PDQ_OK) {
        fprintf(stderr, "load: %s\n", st.msg);
        return -1;
    }
    pdq_set_threads(g_model, 1);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    pdq_model_free(g_model);
    return 0;
}

static void check_case(const char *dir) {
    double pre, step;
    tu_check_ref_case(g_model, dir, 1e-3, &pre, &step);
}

static void test_prompt0(void **state) { (void)state; check_case(PDQ_TEST_REF "/prompt0"); }
static void test_prompt1(void **state) { (void)state; check_case(PDQ_TEST_REF "/prompt1"); }
static void test_prompt2(void **state) { (void)state; check_case(PDQ_TEST_REF "/prompt2"); }
static void test_batch_left(void **state) { (void)state; check_case(PDQ_TEST_REF "/batch-left"); }

/* Logits without a cache equal logits with one (same ids): the two paths share nothing but math. */
static void test_cache_free_forward(void **state) {
    (void)state;
    int32_t ids[9] = {1, 13825, 1497, 304, 670, 766, 455, 2701, 29892};
    int V = g_model->cfg.vocab_size;
    float *a = malloc((size_t)9 * V * sizeof *a), *b = malloc((size_t)V * sizeof *b);
    pdq_status st = {0};
    assert_int_equal(pdq_model_forward(g_model, NULL, 1, 9, ids, NULL, NULL, a, 0, &st), PDQ_OK);
    pdq_kvcache kv;
    assert_int_equal(pdq_kvcache_init(&kv, &g_model->cfg, 1, 9, &st), PDQ_OK);
    for (int t = 0; t < 9; t++) {
        assert_int_equal(pdq_model_forward(g_model, &kv, 1, 1, ids + t, NULL, NULL, b, 1, &st), PDQ_OK);
        assert_true(tu_max_abs(a + (size_t)t * V, b, V) < 1e-4);
    }
    /* The cache is full now: one more token is an error naming the capacity, not a crash. */
    assert_int_equal(pdq_model_forward(g_model, &kv, 1, 1, ids, NULL, NULL, b, 1, &st), PDQ_ERR_LIMIT);
    assert_non_null(strstr(st.msg, "capacity 9"));
    int32_t bad = 32000;
    assert_int_equal(pdq_model_forward(g_model, NULL, 1, 1, &bad, NULL, NULL, b, 1, &st), PDQ_ERR_ARG);
    assert_non_null(strstr(st.msg, "32000"));
    pdq_kvcache_free(&kv);
    free(a);
    free(b);
}

/* Test-split perplexity, window 256 stride 256, against HF's value (within 0.05%). */
static void test_perplexity(void **state) {
    (void)state;
    size_t len;
    char *raw = tu_read_file("data/web-bible/tokens-llama2/test.u16.bin", &len);
    assert_non_null(raw);
    long n = (long)(len / 2);
    int32_t *ids = malloc((size_t)n * sizeof *ids);
    for (long i = 0; i < n; i++) ids[i] = (uint8_t)raw[2 * i] | ((uint8_t)raw[2 * i + 1] << 8);
    free(raw);
    cJSON *res = tu_load_json(PDQ_TEST_REF "/ppl-test-256/result.json");
    const cJSON *p = cJSON_GetObjectItem(res, "perplexity");
    double ref_ppl = cJSON_GetObjectItem(p, "ppl_f64")->valuedouble;
    int ref_tokens = cJSON_GetObjectItem(p, "n_tokens")->valueint;
    pdq_ppl_result r;
    pdq_status st = {0};
    assert_int_equal(pdq_ppl_model(g_model, ids, n, 256, 256, NULL, &r, &st), PDQ_OK);
    printf("  test ppl %.4f (HF %.4f, rel diff %.2e), %ld tokens\n", r.ppl, ref_ppl, fabs(r.ppl - ref_ppl) / ref_ppl, r.tokens);
    assert_int_equal(r.tokens, ref_tokens);
    assert_true(fabs(r.ppl - ref_ppl) / ref_ppl < 5e-4);
    cJSON_Delete(res);
    free(ids);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prompt0),
        cmocka_unit_test(test_prompt1),
        cmocka_unit_test(test_prompt2),
        cmocka_unit_test(test_batch_left),
        cmocka_unit_test(test_cache_free_forward),
        cmocka_unit_test(test_perplexity),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
