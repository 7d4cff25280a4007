/* The logits / generate / ppl commands end to end, against the HF reference fixtures, and their
 * error paths (clear message, non-zero exit). */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "pdq/eval.h"
#include "pdq/npy.h"

static char *g_tmp;

static int setup(void **state) {
    (void)state;
    g_tmp = tu_mkdtemp();
    return g_tmp ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    tu_rmtree(g_tmp);
    free(g_tmp);
    return 0;
}

static void test_logits_npy(void **state) {
    (void)state;
    char cmd[1024], out[512];
    snprintf(out, sizeof out, "%s/l.npy", g_tmp);
    snprintf(cmd, sizeof cmd, "%s logits --model %s --ids \"1 13825 1497 304 670 766 455 2701 29892\" --out %s --threads 1 2>&1",
             tu_pdq_bin(), PDQ_TEST_MODEL, out);
    assert_int_equal(tu_run(cmd, NULL), 0);
    pdq_npy got, ref;
    pdq_status st = {0};
    assert_int_equal(pdq_npy_read_f32(out, &got, &st), PDQ_OK);
    assert_int_equal(pdq_npy_read_f32(PDQ_TEST_REF "/prompt1/prefill_logits.npy", &ref, &st), PDQ_OK);
    assert_int_equal(got.ndim, 2);
    assert_int_equal(got.shape[0], 9);
    assert_int_equal(got.shape[1], 32000);
    assert_int_equal(got.count, ref.count);
    for (size_t i = 0; i < got.count; i++) assert_true(fabsf(((float *)got.data)[i] - ((float *)ref.data)[i]) <= 1e-3f);
    pdq_npy_free(&got);
    pdq_npy_free(&ref);
}

static void test_generate_greedy(void **state) {
    (void)state;
    char cmd[1024], *out = NULL;
    snprintf(cmd, sizeof cmd, "%s generate --model %s --ids \"1 512 278 6763 29892 4177 2825\" --max-new 16 --ignore-eos --json --threads 1",
             tu_pdq_bin(), PDQ_TEST_MODEL);
    assert_int_equal(tu_run(cmd, &out), 0);
    cJSON *j = cJSON_Parse(out);
    assert_non_null(j);
    char *ref_text = tu_read_file(PDQ_TEST_REF "/prompt0/result.json", NULL);
    cJSON *ref = cJSON_Parse(ref_text);
    const cJSON *want = cJSON_GetArrayItem(cJSON_GetObjectItem(ref, "generated_ids"), 0);
    const cJSON *got = cJSON_GetObjectItem(j, "ids");
    assert_int_equal(cJSON_GetArraySize(got), cJSON_GetArraySize(want));
    for (int i = 0; i < cJSON_GetArraySize(want); i++)
        assert_int_equal(cJSON_GetArrayItem(got, i)->valueint, cJSON_GetArrayItem(want, i)->valueint);
    cJSON_Delete(j);
    cJSON_Delete(ref);
    free(ref_text);
    free(out);
}

/* The first 16 windows of the test split: HF's per-window losses give the expected value. */
static void test_ppl_ids_file(void **state) {
    (void)state;
    size_t len;
    char *raw = tu_read_file("data/web-bible/tokens-llama2/test.u16.bin", &len);
    assert_non_null(raw);
    char path[512];
    snprintf(path, sizeof path, "%s/ids.txt", g_tmp);
    FILE *f = fopen(path, "w");
    for (int i = 0; i < 4096; i++) fprintf(f, "%d%c", (uint8_t)raw[2 * i] | ((uint8_t)raw[2 * i + 1] << 8), i % 20 == 19 ? '\n' : ' ');
    fclose(f);
    free(raw);
    char *ref_text = tu_read_file(PDQ_TEST_REF "/ppl-test-256/result.json", NULL);
    cJSON *ref = cJSON_Parse(ref_text);
    const cJSON *windows = cJSON_GetObjectItem(cJSON_GetObjectItem(ref, "perplexity"), "windows");
    double nll = 0;
    int tokens = 0;
    for (int w = 0; w < 16; w++) {
        const cJSON *win = cJSON_GetArrayItem(windows, w);
        int n = cJSON_GetObjectItem(win, "loss_tokens")->valueint;
        nll += cJSON_GetObjectItem(win, "loss")->valuedouble * n;
        tokens += n;
    }
    double want = exp(nll / tokens);
    char cmd[1024], *out = NULL;
    snprintf(cmd, sizeof cmd, "PDQ_PROGRESS=0 %s ppl --model %s --ids-file %s --max-len 256 --stride 256 --json --threads 1",
             tu_pdq_bin(), PDQ_TEST_MODEL, path);
    assert_int_equal(tu_run(cmd, &out), 0);
    cJSON *j = cJSON_Parse(out);
    assert_non_null(j);
    double got = cJSON_GetObjectItem(j, "ppl")->valuedouble;
    assert_int_equal(cJSON_GetObjectItem(j, "tokens")->valueint, tokens);
    assert_true(fabs(got - want) / want < 5e-4);
    cJSON_Delete(j);
    cJSON_Delete(ref);
    free(ref_text);
    free(out);
}

/* Each bad input: non-zero exit and a message that names the problem. */
static void expect_error(const char *args, const char *needle) {
    char cmd[1024], *out = NULL;
    snprintf(cmd, sizeof cmd, "%s %s 2>&1", tu_pdq_bin(), args);
    int rc = tu_run(cmd, &out);
    if (rc == 0 || !strstr(out, needle)) fprintf(stderr, "command: %s\nexit %d, output:\n%s\n", cmd, rc, out);
    assert_int_not_equal(rc, 0);
    assert_non_null(strstr(out, needle));
    free(out);
}

static void test_errors(void **state) {
    (void)state;
    char args[1024];
    expect_error("logits --model /nonexistent --ids 1 --out /tmp/x.npy", "/nonexistent");
    expect_error("logits --model " PDQ_TEST_MODEL " --ids \"1 40000\" --out /tmp/x.npy", "40000");
    expect_error("logits --model " PDQ_TEST_MODEL " --ids \"1 x\" --out /tmp/x.npy", "bad token id");
    expect_error("ppl --model " PDQ_TEST_MODEL " --ids-file /nonexistent.txt", "/nonexistent.txt");
    snprintf(args, sizeof args, "ppl --model %s --ids-file %s/ids.txt --max-len 1024", PDQ_TEST_MODEL, g_tmp);
    expect_error(args, "max_position_embeddings 512");
    expect_error("generate --model " PDQ_TEST_MODEL " --ids 1 --top-p 0", "top-p");
    expect_error("generate --model " PDQ_TEST_MODEL " --ids 1 --bogus-flag", "--bogus-flag");
    expect_error("nosuchcommand", "unknown command");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_logits_npy),
        cmocka_unit_test(test_generate_greedy),
        cmocka_unit_test(test_ppl_ids_file),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
