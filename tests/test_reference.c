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

static cJSON *load_json(const char *path) {
    char *text = tu_read_file(path, NULL);
    assert_non_null(text);
    cJSON *j = cJSON_Parse(text);
    free(text);
    assert_non_null(j);
    return j;
}

/* Row r of a [rows][cols] JSON int matrix into out; returns cols. */
static int json_row(const cJSON *matrix, int r, int32_t *out, int max) {
    const cJSON *row = cJSON_GetArrayItem(matrix, r);
    int n = cJSON_GetArraySize(row);
    assert_true(n <= max);
    for (int i = 0; i < n; i++) out[i] = cJSON_GetArrayItem(row, i)->valueint;
    return n;
}

/* Max |a-b| over n floats. */
static double max_abs(const float *a, const float *b, int n) {
    double m = 0;
    for (int i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (!(d <= m)) m = d; /* NaN propagates as a failure */
    }
    return m;
}

/* Prefill logits and 16 greedy steps of one reference case (B rows, left padded). */
static void check_case(const char *dir) {
    char path[512];
    snprintf(path, sizeof path, "%s/result.json", dir);
    cJSON *res = load_json(path);
    const cJSON *input = cJSON_GetObjectItem(res, "input");
    const cJSON *ids_j = cJSON_GetObjectItem(input, "input_ids");
    const cJSON *mask_j = cJSON_GetObjectItem(input, "attention_mask");
    const cJSON *gen_j = cJSON_GetObjectItem(res, "generated_ids");
    int B = cJSON_GetArraySize(ids_j), V = g_model->cfg.vocab_size;
    assert_true(B >= 1 && B <= 8);
    int32_t row[256];
    int T = json_row(ids_j, 0, row, 256);
    int32_t *ids = malloc((size_t)B * T * sizeof *ids);
    uint8_t *mask = malloc((size_t)B * T);
    for (int b = 0; b < B; b++) {
        json_row(ids_j, b, ids + (size_t)b * T, T);
        json_row(mask_j, b, row, 256);
        for (int t = 0; t < T; t++) mask[(size_t)b * T + t] = (uint8_t)row[t];
    }

    pdq_npy pre, steps;
    pdq_status st = {0};
    snprintf(path, sizeof path, "%s/prefill_logits.npy", dir);
    assert_int_equal(pdq_npy_read_f32(path, &pre, &st), PDQ_OK);
    snprintf(path, sizeof path, "%s/step_logits.npy", dir);
    assert_int_equal(pdq_npy_read_f32(path, &steps, &st), PDQ_OK);
    assert_int_equal(pre.shape[1], T);
    int n_steps = (int)steps.shape[1];

    /* Prefill through a KV cache, so the steps below continue from it. */
    pdq_kvcache kv;
    assert_int_equal(pdq_kvcache_init(&kv, &g_model->cfg, B, T + n_steps, &st), PDQ_OK);
    float *logits = malloc((size_t)B * T * V * sizeof *logits);
    assert_int_equal(pdq_model_forward(g_model, &kv, B, T, ids, mask, NULL, logits, 0, &st), PDQ_OK);
    double worst = 0;
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            if (!mask[(size_t)b * T + t]) continue; /* pad positions are meaningless */
            const float *ref = (const float *)pre.data + ((size_t)b * T + t) * V;
            const float *got = logits + ((size_t)b * T + t) * V;
            double d = max_abs(ref, got, V);
            if (d > worst) worst = d;
            assert_true(d <= 1e-3);
            assert_int_equal(pdq_argmax(ref, V), pdq_argmax(got, V));
        }
    printf("  %s prefill: max |dlogit| %.3g over %d rows x %d positions\n", dir, worst, B, T);

    /* Greedy decode: step k's logits chose generated token k. */
    int32_t *next = malloc((size_t)B * sizeof *next);
    uint8_t *ones = malloc((size_t)B);
    for (int b = 0; b < B; b++) ones[b] = 1;
    float *last = malloc((size_t)B * V * sizeof *last);
    for (int b = 0; b < B; b++) memcpy(last + (size_t)b * V, logits + ((size_t)b * T + T - 1) * V, (size_t)V * sizeof(float));
    worst = 0;
    for (int k = 0; k < n_steps; k++) {
        for (int b = 0; b < B; b++) {
            const float *ref = (const float *)steps.data + ((size_t)b * n_steps + k) * V;
            double d = max_abs(ref, last + (size_t)b * V, V);
            if (d > worst) worst = d;
            assert_true(d <= 1e-3);
            next[b] = pdq_argmax(last + (size_t)b * V, V);
            assert_int_equal(next[b], cJSON_GetArrayItem(cJSON_GetArrayItem(gen_j, b), k)->valueint);
        }
        if (k + 1 < n_steps)
            assert_int_equal(pdq_model_forward(g_model, &kv, B, 1, next, ones, NULL, last, 1, &st), PDQ_OK);
    }
    printf("  %s decode: %d greedy steps identical, max |dlogit| %.3g\n", dir, n_steps, worst);
    pdq_kvcache_free(&kv);
    free(next); free(ones); free(last); free(logits); free(ids); free(mask);
    pdq_npy_free(&pre);
    pdq_npy_free(&steps);
    cJSON_Delete(res);
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
        assert_true(max_abs(a + (size_t)t * V, b, V) < 1e-4);
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
    cJSON *res = load_json(PDQ_TEST_REF "/ppl-test-256/result.json");
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
