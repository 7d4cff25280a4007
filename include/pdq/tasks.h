/* Task accuracy by log-likelihood, scored the way lm-evaluation-harness scores it: task files
 * read into (context, continuation) requests, the harness's context/continuation token split,
 * and its metrics (acc, acc_norm, perplexity) with its standard errors. */
#ifndef PDQ_TASKS_H
#define PDQ_TASKS_H

#include <stddef.h>
#include <stdint.h>

#include "pdq/eval.h"
#include "pdq/model.h"
#include "pdq/status.h"
#include "pdq/tokenizer.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    PDQ_TASK_CHOICE,  /* one context, one continuation per choice (arc, piqa, mmlu, ...) */
    PDQ_TASK_PARTIAL, /* one context per option, one shared continuation (winogrande) */
    PDQ_TASK_GREEDY   /* one request; acc = every continuation token is the argmax (lambada) */
} pdq_task_kind;

typedef struct {
    int n;          /* requests */
    char **ctx;     /* [n] context text (the same text n times for PDQ_TASK_CHOICE) */
    char **cont;    /* [n] continuation text, target delimiter included */
    char **choice;  /* [n] the choice as the harness's doc_to_choice gives it (acc_norm divides by
                       its length in characters, i.e. Unicode code points) */
    int gold;       /* index of the right request */
    int subject;    /* mmlu: index into pdq_task.subjects; else -1 */
    long line;      /* line of the record in its file (for messages and samples) */
} pdq_task_item;

typedef struct {
    char name[32];
    pdq_task_kind kind;
    int has_acc_norm;    /* the harness reports acc_norm for this task */
    int has_perplexity;  /* lambada_openai */
    int llamacpp_rule;   /* hellaswag from llama.cpp's 6-line file: also llama.cpp's own score
                            (acc_norm_llamacpp, see pdq_task_result) */
    int shots;
    int n_items, cap;
    pdq_task_item *items;
    int n_subjects;      /* mmlu */
    char **subjects;     /* "abstract_algebra", ... */
} pdq_task;

/* Task names pdq knows, NULL-terminated. */
extern const char *const pdq_task_names[];

/* Reads task `name` from path: the folder holding the data sets (../shared/data/tasks layout),
 * the task's own folder, or the task's file. Every layout of the README in
 * ../shared/data/tasks and the Hugging Face datasets JSON Lines export of the same split is
 * accepted; anything else is refused naming the file, the line and the missing field.
 * limit > 0 keeps the first limit items (mmlu: of each subject, as the harness's --limit).
 * shots > 0 (mmlu only) puts the first `shots` dev questions before each test question. */
pdq_code pdq_task_load(const char *name, const char *path, long limit, int shots, pdq_task **out,
                       pdq_status *st);
void pdq_task_free(pdq_task *t);

/* Helpers used by the readers (task_text.c), public for the tests and fuzzers. */
/* Python's str.strip() for the ASCII whitespace a task file holds (space, \t\n\r\f\v). */
char *pdq_task_strip(const char *s, size_t n);
/* lm-eval's hellaswag preprocess: strip, " [title]" -> ". ", drop "[...]", "  " -> " " once. */
char *pdq_task_hellaswag_preprocess(const char *s);
/* Length in Unicode code points of UTF-8 text (what Python's len() gives). */
long pdq_utf8_chars(const char *s);

/* ---- token requests ---- */
typedef struct {
    int32_t *ctx;   /* context ids (with BOS when the tokenizer adds it) */
    int n_ctx;
    int32_t *cont;  /* continuation ids */
    int n_cont;
} pdq_ll_request;

/* The harness's split: trailing whitespace of the context moves to the continuation; the
 * continuation's ids are encode(context + continuation)[len(encode(context)):]. add_bos: 1 the
 * tokenizer's default special tokens (harness >= v0.4.9.2; none added when the context text
 * already starts with the BOS text), 0 none (releases up to v0.4.9.1). An empty context becomes
 * the prefix token (BOS, else EOS) before the continuation encoded without special tokens,
 * unless that already starts with it. An empty continuation is an error. */
pdq_code pdq_ll_encode(const pdq_tokenizer *tok, const char *context, const char *continuation, int add_bos,
                       pdq_ll_request *out, pdq_status *st);
void pdq_ll_request_free(pdq_ll_request *r);

/* A scorer: the summed log-probability of each of n continuations after one shared context
 * (ll[i]) and whether every continuation token is the argmax (greedy[i]). Returns PDQ_ERR_LIMIT
 * when the requests do not fit the scorer's length (the evaluator counts those items). */
typedef pdq_code (*pdq_ll_fn)(void *ctx, const int32_t *ctx_ids, int n_ctx, int32_t *const *cont,
                              const int *n_cont, int n, double *ll, int *greedy, pdq_status *st);

/* Per-position log-softmax of one row of logits at `target` (double), and whether the target
 * is the row's first argmax. */
double pdq_ll_token(const float *logits, int vocab, int32_t target, int *is_argmax);

/* Scorer on the reference model (f32 or packed): the context's prefill runs once and its KV cache
 * is shared by the continuations, which then run as one batch (one pass over the weights). A
 * request longer than max_len + 1 tokens keeps its last max_len + 1 (the harness's left
 * truncation) and runs alone. */
typedef struct {
    const pdq_model *m;
    int max_len;        /* 0: the model's max_position_embeddings */
    pdq_kvcache kv;     /* owned, grown to the longest request seen */
    pdq_kvcache batch;  /* owned: the context's cache once per continuation */
    int32_t *ids;       /* owned scratch: the batch's tokens */
    float *logits;      /* owned scratch [rows * vocab] */
    int rows;
} pdq_ll_model;
pdq_code pdq_ll_model_score(void *ctx, const int32_t *ctx_ids, int n_ctx, int32_t *const *cont, const int *n_cont,
                            int n, double *ll, int *greedy, pdq_status *st);
void pdq_ll_model_free(pdq_ll_model *s);

/* Scorer on a window-logits function (the static graphs, the exported Circle pair): one forward
 * of context + continuation without its last token per request. A request longer than max_seq
 * is refused with PDQ_ERR_LIMIT, never truncated. */
typedef struct {
    pdq_window_logits_fn fn;
    void *ctx;
    int vocab, max_seq;
    float *logits;    /* owned scratch [max_seq * vocab] */
} pdq_ll_window;
pdq_code pdq_ll_window_score(void *ctx, const int32_t *ctx_ids, int n_ctx, int32_t *const *cont, const int *n_cont,
                             int n, double *ll, int *greedy, pdq_status *st);
void pdq_ll_window_free(pdq_ll_window *s);

/* Scorer on a static-shape session (the static graphs, the exported Circle pair): the shared
 * context is prefilled once (positions 0..n_ctx-1), each continuation without its last token is
 * appended at n_ctx through the append graphs, and the session rewinds to n_ctx for the next.
 * A request longer than max_seq is refused with PDQ_ERR_LIMIT, never truncated. */
typedef struct {
    /* prefill from length 0: logits (vocab) of the last of n tokens */
    pdq_code (*prefill)(void *ctx, const int32_t *ids, int n, float *last, pdq_status *st);
    /* append n tokens at the current length: logits of every appended row (n x vocab) */
    pdq_code (*append)(void *ctx, const int32_t *ids, int n, float *rows, pdq_status *st);
    /* back to length len <= the current one */
    pdq_code (*rewind)(void *ctx, int len, pdq_status *st);
    void *ctx;
    int vocab, max_seq;
    float *logits;    /* owned scratch [max_seq * vocab] */
} pdq_ll_session;
pdq_code pdq_ll_session_score(void *ctx, const int32_t *ctx_ids, int n_ctx, int32_t *const *cont, const int *n_cont,
                              int n, double *ll, int *greedy, pdq_status *st);
void pdq_ll_session_free(pdq_ll_session *s);

/* ---- results ---- */
typedef struct {
    double *ll;      /* [n] per request */
    int *greedy;     /* [n] */
    int pred, pred_norm;
    int acc, acc_norm;
    int refused;     /* too long for the scorer: not scored, not counted in the metrics */
    int pred_llamacpp, acc_llamacpp; /* llamacpp_rule tasks */
} pdq_item_result;

typedef struct {
    double value, stderr_;  /* stderr_ NaN when it does not exist (n < 2) */
} pdq_metric;

typedef struct {
    const char *subject;  /* borrowed from the task */
    long n;
    pdq_metric acc;
} pdq_subject_result;

typedef struct {
    long n;              /* scored items */
    long refused;        /* items longer than the scorer's length */
    pdq_metric acc, acc_norm, perplexity;
    /* llama.cpp's `llama-perplexity --hellaswag` rule (llamacpp_rule tasks): each ending's text
     * context + " " + ending is tokenized whole with the tokenizer's special tokens; the tokens
     * after the four sequences' common prefix are scored and their mean log-probability
     * (per token, not per character) picks the ending, the first of equal maxima */
    pdq_metric acc_norm_llamacpp;
    /* mmlu: per subject, micro (the harness's group score: items pooled, pooled stderr) and
     * macro (the unweighted mean of subjects) */
    int n_subjects;
    pdq_subject_result *subjects;
    pdq_metric macro;
    pdq_metric category[4];  /* the harness's mmlu_stem, mmlu_other, mmlu_social_sciences, mmlu_humanities */
    long category_n[4];
    pdq_item_result *items;  /* [task->n_items] */
} pdq_task_result;

/* Progress callback: done of total requests. */
typedef void (*pdq_task_progress_fn)(void *ctx, long done, long total);

/* Scores every item of the task through fn; items whose requests fn refuses with PDQ_ERR_LIMIT
 * are counted as refused. reqs (may be NULL) receives the token requests, [item][request],
 * for the caller's samples. */
pdq_code pdq_task_eval(const pdq_task *t, const pdq_tokenizer *tok, int add_bos, pdq_ll_fn fn, void *fn_ctx,
                       pdq_task_progress_fn progress, void *progress_ctx, pdq_task_result *out,
                       pdq_ll_request ***reqs, pdq_status *st);
void pdq_task_result_free(const pdq_task *t, pdq_task_result *r, pdq_ll_request **reqs);

/* Metric helpers (the harness's formulas). */
/* Mean of 0/1 values and its standard error sqrt(p (1 - p) / (n - 1)) (NaN for n < 2). */
pdq_metric pdq_metric_mean01(long hits, long n);
/* exp(-mean(ll)) with the harness's bootstrap standard error: iters resamples (chunks of 1000
 * seeded 0, 1, ... with Python's Mersenne Twister, random.choices), sample stddev of the
 * replicates. iters = 100000 in the harness. */
pdq_metric pdq_metric_perplexity(const double *ll, long n, int iters);
/* Pooled standard error of a size-weighted group of means (the harness's group stderr). */
double pdq_pooled_stderr(const double *stderrs, const long *sizes, int k);

/* MMLU's four groups as the harness nests them (subjects -> group -> mmlu). */
enum { PDQ_MMLU_STEM, PDQ_MMLU_OTHER, PDQ_MMLU_SOCIAL, PDQ_MMLU_HUMANITIES };
extern const char *const pdq_mmlu_category_names[4];
/* The group of an MMLU subject ("abstract_algebra"), or -1. */
int pdq_mmlu_category(const char *subject);
/* The i-th of the 57 subjects in alphabetical order (the harness's files), NULL past the end. */
const char *pdq_mmlu_subject(int i);

/* Python's random.Random(seed) (MT19937 seeded by init_by_array of the integer's 32-bit words)
 * and random.random(). */
typedef struct {
    uint32_t mt[624];
    int i;
} pdq_pyrandom;
void pdq_pyrandom_seed(pdq_pyrandom *r, uint32_t seed);
double pdq_pyrandom_random(pdq_pyrandom *r);
/* The same generator as C++'s std::mt19937: seeded as std::mt19937(seed) (default seed 5489),
 * and its next 32-bit output. */
void pdq_mt19937_seed(pdq_pyrandom *r, uint32_t seed);
uint32_t pdq_mt19937_next(pdq_pyrandom *r);
/* std::uniform_int_distribution<size_t>(0, n - 1)(gen) with a std::mt19937 gen, as libstdc++
 * (GCC 11 and later) draws it: Lemire's nearly divisionless method on 32-bit draws (n >= 1;
 * n = 1 still consumes a draw). The standard leaves this algorithm to the library. */
uint32_t pdq_libstdcxx_uniform(pdq_pyrandom *r, uint32_t n);
/* The tasks llama-perplexity --hellaswag --hellaswag-tasks n_tasks scores out of a file of
 * n_file tasks, in its order (hellaswag_score, llama.cpp b4747): std::mt19937(1), per task an
 * index drawn uniformly among the tasks left, which is then erased (without replacement).
 * order[min(n_tasks, n_file)] receives 0-based task indices of the file; returns that count. */
long pdq_llamacpp_hellaswag_order(long n_file, long n_tasks, long *order);
/* Keeps the items idx[0..n) of t, in that order (each index at most once); frees the others. */
pdq_code pdq_task_pick(pdq_task *t, const long *idx, long n, pdq_status *st);

#ifdef __cplusplus
}
#endif
#endif
