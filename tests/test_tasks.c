/* Task scoring against an independent implementation written here from the rules in
 * ../shared/data/tasks/README.md: prompts re-built from the raw records, the harness's token
 * split re-done, each continuation scored by brute force from the full-sequence logits of
 * pdq_model_forward (the reference model, equal to HF's). Plus the metric formulas against hand
 * values and Python's, the readers' other layouts and their refusals. */
#include "testutil.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pdq/model.h"
#include "pdq/runtime.h"
#include "pdq/tasks.h"
#include "pdq/tokenizer.h"

#define TASKS "../shared/data/tasks"

static int have_tasks(void) {
    FILE *f = fopen(TASKS "/README.md", "rb");
    if (f) fclose(f);
    else fprintf(stderr, "SKIP: %s absent (the task data sets stay outside the repository)\n", TASKS);
    return f != NULL;
}

/* ---- the rules, re-implemented ---- */

/* The expected requests of one record. */
typedef struct {
    int n, gold;
    char ctx[8][16384], cont[8][2048], choice[8][2048];
} expect;

static void mc(expect *e, const char *ctx, const char *const *choices, int n, int gold) {
    e->n = n;
    e->gold = gold;
    for (int j = 0; j < n; j++) {
        snprintf(e->ctx[j], sizeof e->ctx[j], "%s", ctx);
        snprintf(e->cont[j], sizeof e->cont[j], " %s", choices[j]);
        snprintf(e->choice[j], sizeof e->choice[j], "%s", choices[j]);
    }
}

/* Line `index` (0-based) of a file. */
static char *nth_line(const char *path, int index) {
    char *text = tu_read_file(path, NULL), *p = text;
    assert_non_null(text);
    for (int i = 0; i < index; i++) p = strchr(p, '\n') + 1;
    char *nl = strchr(p, '\n');
    char *o = strndup(p, nl ? (size_t)(nl - p) : strlen(p));
    free(text);
    return o;
}

static cJSON *record(const char *path, int index) {
    char *l = nth_line(path, index);
    cJSON *o = cJSON_Parse(l);
    free(l);
    assert_non_null(o);
    return o;
}

static const char *s(const cJSON *o, const char *k) { return cJSON_GetObjectItem(o, k)->valuestring; }

static void expect_arc(expect *e, const char *file, int index) {
    cJSON *o = record(file, index), *q = cJSON_GetObjectItem(o, "question"), *ch = cJSON_GetObjectItem(q, "choices");
    char ctx[4096];
    snprintf(ctx, sizeof ctx, "Question: %s\nAnswer:", s(q, "stem"));
    const char *texts[8];
    int n = cJSON_GetArraySize(ch), gold = -1;
    for (int j = 0; j < n; j++) {
        texts[j] = s(cJSON_GetArrayItem(ch, j), "text");
        if (!strcmp(s(cJSON_GetArrayItem(ch, j), "label"), s(o, "answerKey"))) gold = j;
    }
    mc(e, ctx, texts, n, gold);
    cJSON_Delete(o);
}

static void expect_piqa(expect *e, int index) {
    cJSON *o = record(TASKS "/piqa/valid.jsonl", index);
    char ctx[4096], *lab = nth_line(TASKS "/piqa/valid-labels.lst", index);
    snprintf(ctx, sizeof ctx, "Question: %s\nAnswer:", s(o, "goal"));
    const char *sol[2] = {s(o, "sol1"), s(o, "sol2")};
    mc(e, ctx, sol, 2, atoi(lab));
    free(lab);
    cJSON_Delete(o);
}

static void expect_hellaswag(expect *e, int index) {
    char *l[6];
    for (int k = 0; k < 6; k++) l[k] = nth_line(TASKS "/hellaswag/hellaswag_val_full.txt", index * 6 + k);
    mc(e, l[0], (const char *const *)&l[2], 4, atoi(l[1]));
    for (int k = 0; k < 6; k++) free(l[k]);
}

static void expect_winogrande(expect *e, int index) {
    cJSON *o = record(TASKS "/winogrande/winogrande.jsonl", index), *opts = cJSON_GetObjectItem(o, "context_options");
    e->n = 2;
    e->gold = cJSON_GetObjectItem(o, "gold")->valueint;
    const char *c = s(o, "continuation");
    while (*c == ' ') c++;
    size_t n = strlen(c);
    while (n && c[n - 1] == ' ') n--;
    for (int j = 0; j < 2; j++) {
        const char *opt = cJSON_GetArrayItem(opts, j)->valuestring;
        snprintf(e->ctx[j], sizeof e->ctx[j], "%s", opt);
        snprintf(e->cont[j], sizeof e->cont[j], " %.*s", (int)n, c);
        snprintf(e->choice[j], sizeof e->choice[j], "%s", opt);
    }
    cJSON_Delete(o);
}

static void expect_lambada(expect *e, int index) {
    cJSON *o = record(TASKS "/lambada_openai/lambada_test.jsonl", index);
    const char *t = s(o, "text"), *last = strrchr(t, ' ');
    e->n = 1;
    e->gold = 0;
    snprintf(e->ctx[0], sizeof e->ctx[0], "%.*s", (int)(last - t), t);
    snprintf(e->cont[0], sizeof e->cont[0], "%s", last);
    snprintf(e->choice[0], sizeof e->choice[0], "%s", last);
    cJSON_Delete(o);
}

/* One line of Hendrycks' CSV (the items picked have no newline inside a field): commas outside
 * quotes split, "" inside quotes is a quote. */
static void mmlu_fields(const char *path, int index, char f[6][1024]) {
    char *l = nth_line(path, index);
    int k = 0, w = 0, q = 0;
    for (const char *p = l; *p && *p != '\r'; p++) {
        if (q && p[0] == '"' && p[1] == '"') f[k][w++] = '"', p++;
        else if (*p == '"') q = !q;
        else if (*p == ',' && !q) f[k][w] = 0, k++, w = 0;
        else f[k][w++] = *p;
    }
    f[k][w] = 0;
    assert_int_equal(k, 5);
    free(l);
}

static void expect_mmlu(expect *e, const char *subject, int index, int shots) {
    char path[512], f[6][1024], ctx[16384];
    int w = snprintf(ctx, sizeof ctx, "The following are multiple choice questions (with answers) about ");
    for (const char *c = subject; *c; c++) ctx[w++] = *c == '_' ? ' ' : *c;
    w += snprintf(ctx + w, sizeof ctx - (size_t)w, ".\n\n");
    for (int k = 0; k <= shots; k++) {
        if (k < shots) snprintf(path, sizeof path, TASKS "/mmlu/dev/%s_dev.csv", subject);
        else snprintf(path, sizeof path, TASKS "/mmlu/test/%s_test.csv", subject);
        mmlu_fields(path, k < shots ? k : index, f);
        w += snprintf(ctx + w, sizeof ctx - (size_t)w, "%s\nA. %s\nB. %s\nC. %s\nD. %s\nAnswer:", f[0], f[1], f[2], f[3], f[4]);
        if (k < shots) w += snprintf(ctx + w, sizeof ctx - (size_t)w, " %s\n\n", f[5]);
    }
    static const char *const abcd[4] = {"A", "B", "C", "D"};
    mc(e, ctx, abcd, 4, f[5][0] - 'A');
}

static void expect_boolq(expect *e, int index) {
    cJSON *o = record(TASKS "/boolq/boolq.jsonl", index);
    char ctx[16384];
    snprintf(ctx, sizeof ctx, "%s\nAnswer:", s(o, "query") + strlen("Passage: "));
    static const char *const yn[2] = {"no", "yes"};
    mc(e, ctx, yn, 2, cJSON_GetObjectItem(o, "gold")->valueint);
    cJSON_Delete(o);
}

static void expect_obqa(expect *e, int index) {
    cJSON *o = record(TASKS "/openbookqa/openbook_qa.jsonl", index), *ch = cJSON_GetObjectItem(o, "choices");
    const char *c[8];
    int n = cJSON_GetArraySize(ch);
    for (int j = 0; j < n; j++) c[j] = cJSON_GetArrayItem(ch, j)->valuestring;
    mc(e, s(o, "query"), c, n, cJSON_GetObjectItem(o, "gold")->valueint);
    cJSON_Delete(o);
}

/* encode(context + cont)[len(encode(context)):] after moving the context's trailing spaces. */
static void split(const pdq_tokenizer *tok, const char *ctx, const char *cont, int32_t **c, size_t *nc, int32_t **k,
                  size_t *nk) {
    pdq_status st = {0};
    char whole[20000];
    size_t n = strlen(ctx);
    while (n && (ctx[n - 1] == ' ' || ctx[n - 1] == '\n')) n--;
    snprintf(whole, sizeof whole, "%s%s", ctx, cont);
    if (n == 0) { /* empty context: the prefix token, the continuation without specials */
        assert_int_equal(pdq_tokenizer_encode(tok, cont, strlen(cont), 0, k, nk, &st), PDQ_OK);
        *c = malloc(sizeof **c);
        **c = pdq_tokenizer_bos_id(tok);
        *nc = 1;
        return;
    }
    int32_t *w;
    size_t nw;
    assert_int_equal(pdq_tokenizer_encode(tok, whole, strlen(whole), 1, &w, &nw, &st), PDQ_OK);
    assert_int_equal(pdq_tokenizer_encode(tok, whole, n, 1, c, nc, &st), PDQ_OK);
    assert_true(nw > *nc);
    *nk = nw - *nc;
    *k = malloc(*nk * sizeof **k);
    memcpy(*k, w + *nc, *nk * sizeof **k);
    free(w);
}

/* sum log softmax over the continuation rows of one forward of (ctx + cont)[-(L+1):][:-1],
 * L = max_position_embeddings (the harness's left truncation). */
static double brute_ll(const pdq_model *m, const int32_t *c, size_t nc, const int32_t *k, size_t nk, int *greedy) {
    int V = m->cfg.vocab_size, L = m->cfg.max_position_embeddings;
    size_t total = nc + nk, skip = total > (size_t)L + 1 ? total - (size_t)L - 1 : 0;
    int T = (int)(total - skip - 1);
    int32_t *all = malloc(total * sizeof *all), *ids = NULL;
    memcpy(all, c, nc * sizeof *c);
    memcpy(all + nc, k, nk * sizeof *k);
    ids = all + skip;
    float *lg = malloc((size_t)T * V * sizeof *lg);
    pdq_status st = {0};
    assert_int_equal(pdq_model_forward(m, NULL, 1, T, ids, NULL, NULL, lg, 0, &st), PDQ_OK);
    double ll = 0;
    *greedy = 1;
    for (size_t t = 0; t < nk; t++) {
        const float *row = lg + (size_t)(T - (int)nk + (int)t) * V;
        double mx = -INFINITY, z = 0;
        int arg = 0;
        for (int v = 0; v < V; v++)
            if (row[v] > mx) mx = row[v], arg = v;
        for (int v = 0; v < V; v++) z += exp(row[v] - mx);
        ll += row[k[t]] - mx - log(z);
        *greedy &= arg == k[t];
    }
    free(all);
    free(lg);
    return ll;
}

static long chars(const char *p) {
    long n = 0;
    for (; *p; p++) n += ((unsigned char)*p >> 6) != 2;
    return n;
}

/* pdq's items [index...] of the task against the expectations, request by request. */
static void check_items(const pdq_model *m, const pdq_tokenizer *tok, const pdq_task *t, const int *index, expect *ex,
                        int k) {
    pdq_task view = *t;
    view.items = malloc((size_t)k * sizeof *view.items);
    for (int i = 0; i < k; i++) view.items[i] = t->items[index[i]];
    view.n_items = k;
    view.n_subjects = 0; /* subject results are checked elsewhere */
    pdq_ll_model lm = {.m = m};
    pdq_task_result r;
    pdq_ll_request **reqs;
    pdq_status st = {0};
    assert_int_equal(pdq_task_eval(&view, tok, 1, pdq_ll_model_score, &lm, NULL, NULL, &r, &reqs, &st), PDQ_OK);
    for (int i = 0; i < k; i++) {
        const pdq_task_item *it = &view.items[i];
        assert_int_equal(it->n, ex[i].n);
        assert_int_equal(it->gold, ex[i].gold);
        double ll[8], best = -INFINITY, best_norm = -INFINITY;
        int pred = 0, pred_norm = 0;
        for (int j = 0; j < it->n; j++) {
            assert_string_equal(it->ctx[j], ex[i].ctx[j]);
            assert_string_equal(it->cont[j], ex[i].cont[j]);
            int32_t *c, *kk;
            size_t nc, nk;
            split(tok, ex[i].ctx[j], ex[i].cont[j], &c, &nc, &kk, &nk);
            assert_int_equal(reqs[i][j].n_ctx, (int)nc);
            assert_int_equal(reqs[i][j].n_cont, (int)nk);
            assert_memory_equal(reqs[i][j].ctx, c, nc * sizeof *c);
            assert_memory_equal(reqs[i][j].cont, kk, nk * sizeof *kk);
            int g;
            ll[j] = brute_ll(m, c, nc, kk, nk, &g);
            if (fabs(ll[j] - r.items[i].ll[j]) > 1e-4)
                fail_msg("%s item %d request %d: ll %.6f, brute force %.6f", t->name, index[i], j, r.items[i].ll[j], ll[j]);
            assert_int_equal(r.items[i].greedy[j], g);
            if (ll[j] > best) best = ll[j], pred = j;
            if (ll[j] / (double)chars(ex[i].choice[j]) > best_norm) best_norm = ll[j] / (double)chars(ex[i].choice[j]), pred_norm = j;
            free(c);
            free(kk);
        }
        if (t->kind != PDQ_TASK_GREEDY) {
            assert_int_equal(r.items[i].pred, pred);
            assert_int_equal(r.items[i].pred_norm, pred_norm);
        } else {
            assert_int_equal(r.items[i].acc, r.items[i].greedy[0]);
        }
    }
    pdq_task_result_free(&view, &r, reqs);
    pdq_ll_model_free(&lm);
    free(view.items);
}

typedef struct {
    pdq_model *m;
    pdq_tokenizer *tok;
} fixture;

static int setup(void **state) {
    static fixture f;
    pdq_status st = {0};
    if (pdq_model_load(PDQ_TEST_MODEL, &f.m, &st) != PDQ_OK || pdq_tokenizer_load(PDQ_TEST_MODEL, &f.tok, &st) != PDQ_OK) {
        fprintf(stderr, "%s\n", st.msg);
        return -1;
    }
    pdq_set_threads(f.m, 2);
    *state = &f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    pdq_model_free(f->m);
    pdq_tokenizer_free(f->tok);
    return 0;
}

static pdq_task *load(const char *name, long limit, int shots) {
    pdq_task *t;
    pdq_status st = {0};
    if (pdq_task_load(name, TASKS, limit, shots, &t, &st) != PDQ_OK) fail_msg("%s", st.msg);
    return t;
}

static expect g_ex[8];

/* Loads a task and checks its items idx[0..k) against g_ex. */
static void check_task(const fixture *f, const char *name, long limit, int shots, const int *idx, int k) {
    pdq_task *t = load(name, limit, shots);
    check_items(f->m, f->tok, t, idx, g_ex, k);
    pdq_task_free(t);
}

/* llama.cpp's rule (--hellaswag, --multiple-choice), re-done: whole sequences context + " " +
 * choice with BOS, their common token prefix, the mean log-probability of each tail, the first
 * maximum. */
static void check_llamacpp(const pdq_model *m, const pdq_tokenizer *tok, const pdq_task *t) {
    pdq_ll_model lm = {.m = m};
    pdq_task_result r;
    pdq_status st = {0};
    assert_true(t->llamacpp_rule);
    assert_int_equal(pdq_task_eval(t, tok, 1, pdq_ll_model_score, &lm, NULL, NULL, &r, NULL, &st), PDQ_OK);
    long hits = 0;
    for (int i = 0; i < t->n_items; i++) {
        int n = t->items[i].n;
        assert_true(n >= 2 && n <= 8);
        int32_t *seq[8];
        size_t len[8], p = 0;
        for (int j = 0; j < n; j++) {
            char text[8192];
            snprintf(text, sizeof text, "%s %s", t->items[i].ctx[j], t->items[i].choice[j]);
            assert_int_equal(pdq_tokenizer_encode(tok, text, strlen(text), 1, &seq[j], &len[j], &st), PDQ_OK);
        }
        for (int same = 1; same; p += same)
            for (int j = 0; j < n; j++) same &= p < len[j] && seq[j][p] == seq[0][p];
        int best = 0, g;
        double score[8];
        for (int j = 0; j < n; j++) {
            score[j] = brute_ll(m, seq[j], p, seq[j] + p, len[j] - p, &g) / (double)(len[j] - p);
            if (score[j] > score[best]) best = j;
        }
        for (int j = 0; j < n; j++) free(seq[j]);
        assert_int_equal(r.items[i].pred_llamacpp, best);
        hits += best == t->items[i].gold;
    }
    assert_true(fabs(r.acc_norm_llamacpp.value - (double)hits / t->n_items) < 1e-12);
    pdq_task_result_free(t, &r, NULL);
    pdq_ll_model_free(&lm);
}

static void test_reference_arc(void **state) {
    fixture *f = *state;
    if (!have_tasks()) return;
    /* 8: numeric labels, 17: five choices, 367: three choices */
    const int idx[] = {0, 1, 8, 17, 367};
    for (int i = 0; i < 5; i++) expect_arc(&g_ex[i], TASKS "/arc/ARC-Easy-Dev.jsonl", idx[i]);
    pdq_task *t = load("arc_easy", 0, 0);
    assert_int_equal(t->n_items, 570);
    check_items(f->m, f->tok, t, idx, g_ex, 5);
    pdq_task_free(t);
    /* llama.cpp's --multiple-choice rule on ARC (pdq eval --llamacpp-rule): 18 items, 17 has
     * five choices */
    t = load("arc_easy", 18, 0);
    t->llamacpp_rule = 1;
    check_llamacpp(f->m, f->tok, t);
    pdq_task_free(t);
    const int ch[] = {35, 210}; /* three choices; five choices with E */
    for (int i = 0; i < 2; i++) expect_arc(&g_ex[i], TASKS "/arc/ARC-Challenge-Dev.jsonl", ch[i]);
    check_task(f, "arc_challenge", 0, 0, ch, 2);
}

static void test_reference_piqa_hellaswag(void **state) {
    fixture *f = *state;
    if (!have_tasks()) return;
    const int idx[] = {0, 1, 13}; /* 1, 13: a solution with a trailing space */
    for (int i = 0; i < 3; i++) expect_piqa(&g_ex[i], idx[i]);
    check_task(f, "piqa", 20, 0, idx, 3);
    const int h[] = {0, 1};
    for (int i = 0; i < 2; i++) expect_hellaswag(&g_ex[i], h[i]);
    pdq_task *t = load("hellaswag", 8, 0);
    assert_int_equal(t->n_items, 8);
    check_items(f->m, f->tok, t, h, g_ex, 2);
    check_llamacpp(f->m, f->tok, t);
    pdq_task_free(t);
}

static void test_reference_winogrande_lambada(void **state) {
    fixture *f = *state;
    if (!have_tasks()) return;
    const int idx[] = {0, 1};
    for (int i = 0; i < 2; i++) expect_winogrande(&g_ex[i], idx[i]);
    pdq_task *t = load("winogrande", 2, 0);
    assert_int_equal(t->kind, PDQ_TASK_PARTIAL);
    check_items(f->m, f->tok, t, idx, g_ex, 2);
    pdq_task_free(t);
    for (int i = 0; i < 2; i++) expect_lambada(&g_ex[i], idx[i]);
    check_task(f, "lambada_openai", 2, 0, idx, 2);
}

static void test_reference_mmlu_boolq_obqa(void **state) {
    fixture *f = *state;
    if (!have_tasks()) return;
    const int idx[] = {1}; /* anatomy's first question: subjects in alphabetical order, limit 1 */
    expect_mmlu(&g_ex[0], "anatomy", 0, 0);
    pdq_task *t = load("mmlu", 1, 0);
    assert_int_equal(t->n_items, 57); /* --limit applies per subject, as the harness's */
    check_items(f->m, f->tok, t, idx, g_ex, 1);
    pdq_task_free(t);
    expect_mmlu(&g_ex[0], "anatomy", 0, 2);
    check_task(f, "mmlu", 1, 2, idx, 1);
    const int first[] = {0};
    expect_boolq(&g_ex[0], 0);
    check_task(f, "boolq", 1, 0, first, 1);
    const int o[] = {0, 1};
    for (int i = 0; i < 2; i++) expect_obqa(&g_ex[i], o[i]);
    check_task(f, "openbookqa", 2, 0, o, 2);
}

/* A one-word LAMBADA text has an empty context: BOS stands for it. */
static void test_empty_context(void **state) {
    fixture *f = *state;
    char *dir = tu_mkdtemp(), path[512];
    snprintf(path, sizeof path, "%s/lambada.jsonl", dir);
    /* then a context of some 400 tokens (past the scorer's first cache size) and one of some
     * 800, over the model's 512 (left-truncated as the harness does) */
    static char text[16384], midctx[4000], longctx[8000];
    for (int i = 0, w = 0; i < 55; i++) w += snprintf(midctx + w, sizeof midctx - (size_t)w, "%sAnd God said, let there be", i ? " " : "");
    for (int i = 0, w = 0; i < 110; i++) w += snprintf(longctx + w, sizeof longctx - (size_t)w, "%sAnd God said, let there be", i ? " " : "");
    snprintf(text, sizeof text, "{\"text\": \"Jesus\"}\n{\"text\": \"And God said\"}\n{\"text\": \"%s light\"}\n{\"text\": \"%s light\"}\n",
             midctx, longctx);
    assert_int_equal(tu_write_file(path, text, strlen(text)), 0);
    pdq_task *t;
    pdq_status st = {0};
    assert_int_equal(pdq_task_load("lambada_openai", path, 0, 0, &t, &st), PDQ_OK);
    assert_int_equal(t->n_items, 4);
    expect *e = &g_ex[0];
    e[0].n = e[1].n = 1;
    e[0].gold = e[1].gold = 0;
    strcpy(e[0].ctx[0], "");
    strcpy(e[0].cont[0], " Jesus");
    strcpy(e[0].choice[0], " Jesus");
    strcpy(e[1].ctx[0], "And God");
    strcpy(e[1].cont[0], " said");
    strcpy(e[1].choice[0], " said");
    for (int i = 2; i < 4; i++) {
        e[i] = e[1];
        strcpy(e[i].ctx[0], i == 2 ? midctx : longctx);
        strcpy(e[i].cont[0], " light");
        strcpy(e[i].choice[0], " light");
    }
    const int idx[] = {0, 1, 2, 3};
    check_items(f->m, f->tok, t, idx, e, 4);
    pdq_task_free(t);
    /* --no-bos: the context has no BOS; the empty one still gets it */
    pdq_ll_request r;
    assert_int_equal(pdq_ll_encode(f->tok, "And God", " said", 0, &r, &st), PDQ_OK);
    assert_true(r.n_ctx >= 1 && r.ctx[0] != pdq_tokenizer_bos_id(f->tok));
    pdq_ll_request_free(&r);
    assert_int_equal(pdq_ll_encode(f->tok, "", " said", 0, &r, &st), PDQ_OK);
    assert_int_equal(r.n_ctx, 1);
    assert_int_equal(r.ctx[0], pdq_tokenizer_bos_id(f->tok));
    pdq_ll_request_free(&r);
    /* trailing whitespace of the context moves to the continuation */
    pdq_ll_request a, b;
    assert_int_equal(pdq_ll_encode(f->tok, "Question: x\nAnswer: ", "yes", 1, &a, &st), PDQ_OK);
    assert_int_equal(pdq_ll_encode(f->tok, "Question: x\nAnswer:", " yes", 1, &b, &st), PDQ_OK);
    assert_int_equal(a.n_ctx, b.n_ctx);
    assert_int_equal(a.n_cont, b.n_cont);
    assert_memory_equal(a.cont, b.cont, (size_t)a.n_cont * sizeof *a.cont);
    pdq_ll_request_free(&a);
    pdq_ll_request_free(&b);
    tu_rmtree(dir);
    free(dir);
}

/* Window scorer (static / Circle paths) over the reference forward: the same scores as the
 * prefix-sharing scorer, and a request over max_seq refused and counted. */
static pdq_code ref_window(void *ctx, const int32_t *ids, int T, float *logits, pdq_status *st) {
    return pdq_model_forward(ctx, NULL, 1, T, ids, NULL, NULL, logits, 0, st);
}

static void test_window_refuses(void **state) {
    fixture *f = *state;
    if (!have_tasks()) return;
    pdq_task *t = load("arc_easy", 6, 0);
    pdq_status st = {0};
    pdq_ll_model lm = {.m = f->m};
    pdq_task_result a, b;
    assert_int_equal(pdq_task_eval(t, f->tok, 1, pdq_ll_model_score, &lm, NULL, NULL, &a, NULL, &st), PDQ_OK);
    int longest = 0;
    pdq_ll_request **reqs;
    pdq_ll_window w = {ref_window, f->m, f->m->cfg.vocab_size, 4096, NULL};
    assert_int_equal(pdq_task_eval(t, f->tok, 1, pdq_ll_window_score, &w, NULL, NULL, &b, &reqs, &st), PDQ_OK);
    int need[6];
    for (int i = 0; i < t->n_items; i++) {
        need[i] = 0;
        for (int j = 0; j < t->items[i].n; j++) {
            int len = reqs[i][j].n_ctx + reqs[i][j].n_cont - 1;
            if (len > need[i]) need[i] = len;
            assert_true(fabs(a.items[i].ll[j] - b.items[i].ll[j]) < 1e-4);
        }
        if (need[i] > longest) longest = need[i];
    }
    pdq_task_result_free(t, &b, reqs);
    pdq_ll_window_free(&w);
    /* max_seq one short of the longest item: exactly the items that need more are refused */
    long expect_refused = 0;
    for (int i = 0; i < t->n_items; i++) expect_refused += need[i] > longest - 1;
    pdq_ll_window w2 = {ref_window, f->m, f->m->cfg.vocab_size, longest - 1, NULL};
    assert_int_equal(pdq_task_eval(t, f->tok, 1, pdq_ll_window_score, &w2, NULL, NULL, &b, NULL, &st), PDQ_OK);
    assert_int_equal(b.refused, expect_refused);
    assert_int_equal(b.n, t->n_items - expect_refused);
    for (int i = 0; i < t->n_items; i++) assert_int_equal(b.items[i].refused, need[i] > longest - 1);
    pdq_task_result_free(t, &b, NULL);
    pdq_ll_window_free(&w2);
    /* the reference path left-truncates like the harness instead: max_len below the request */
    pdq_ll_model small = {.m = f->m, .max_len = longest - 3};
    assert_int_equal(pdq_task_eval(t, f->tok, 1, pdq_ll_model_score, &small, NULL, NULL, &b, NULL, &st), PDQ_OK);
    assert_int_equal(b.refused, 0);
    pdq_task_result_free(t, &b, NULL);
    pdq_ll_model_free(&small);
    pdq_task_result_free(t, &a, NULL);
    pdq_ll_model_free(&lm);
    pdq_task_free(t);
}

/* Shared-prefix scorer on the static runtime (float graphs): a context prefilled once, each
 * continuation appended in buckets of up to 3 tokens, then a rewind. Checked against the
 * reference scorer (within 1e-3: other graphs, other float sums) and, bit for bit, against each
 * request run alone after every cache slot was filled with other tokens' K/V: the rewind is
 * exact and no stale slot is read. */
typedef struct {
    pdq_rt *rt;
    int V;
    int scramble; /* before each prefill, fill every slot with other tokens' K/V */
} rt_sess;

static pdq_code sess_prefill(void *ctx, const int32_t *ids, int n, float *last, pdq_status *st) {
    rt_sess *s = ctx;
    if (s->scramble) {
        int L = pdq_rt_max_seq(s->rt);
        int32_t *junk = malloc(sizeof(int32_t) * (size_t)L);
        for (int i = 0; i < L; i++) junk[i] = 5 + (i * 7919) % (s->V - 5);
        pdq_code rc = pdq_rt_prefill(s->rt, 1, L, junk, NULL, PDQ_PAD_RIGHT, NULL, NULL, st);
        free(junk);
        if (rc != PDQ_OK) return rc;
    }
    return pdq_rt_prefill(s->rt, 1, n, ids, NULL, PDQ_PAD_RIGHT, last, NULL, st);
}

static pdq_code sess_append(void *ctx, const int32_t *ids, int n, float *rows, pdq_status *st) {
    rt_sess *s = ctx;
    for (int done = 0; done < n;) {
        int q = n - done < 3 ? n - done : 3;
        if (pdq_rt_append(s->rt, 1, q, ids + done, NULL, q, NULL, rows + (size_t)done * s->V, st) != PDQ_OK) return st->code;
        done += q;
    }
    return PDQ_OK;
}

static pdq_code sess_rewind(void *ctx, int len, pdq_status *st) { return pdq_rt_rewind(((rt_sess *)ctx)->rt, 0, len, st); }

/* Each request alone: its own prefill (after the scramble) and append. */
static pdq_code alone_score(void *ctx, const int32_t *c, int nc, int32_t *const *cont, const int *ncont, int n, double *ll,
                            int *greedy, pdq_status *st) {
    for (int i = 0; i < n; i++)
        if (pdq_ll_session_score(ctx, c, nc, &cont[i], &ncont[i], 1, &ll[i], &greedy[i], st) != PDQ_OK) return st->code;
    return PDQ_OK;
}

static void test_session(void **state) {
    fixture *f = *state;
    if (!have_tasks()) return;
    pdq_status st = {0};
    pdq_rt *rt;
    const int L = 128;
    assert_int_equal(pdq_rt_create(f->m, 1, L, NULL, &rt, &st), PDQ_OK);
    int V = f->m->cfg.vocab_size;
    rt_sess rs = {rt, V, 0}, ra = {rt, V, 1};
    pdq_ll_session shared = {sess_prefill, sess_append, sess_rewind, &rs, V, L, NULL};
    pdq_ll_session alone = {sess_prefill, sess_append, sess_rewind, &ra, V, L, NULL};
    pdq_ll_model lm = {.m = f->m};
    const char *names[] = {"arc_easy", "piqa", "winogrande"};
    for (int k = 0; k < 3; k++) {
        pdq_task *t = load(names[k], 5, 0);
        pdq_task_result a, b, c;
        pdq_ll_request **reqs;
        assert_int_equal(pdq_task_eval(t, f->tok, 1, pdq_ll_model_score, &lm, NULL, NULL, &a, &reqs, &st), PDQ_OK);
        assert_int_equal(pdq_task_eval(t, f->tok, 1, pdq_ll_session_score, &shared, NULL, NULL, &b, NULL, &st), PDQ_OK);
        assert_int_equal(pdq_task_eval(t, f->tok, 1, alone_score, &alone, NULL, NULL, &c, NULL, &st), PDQ_OK);
        int multi = 0;
        for (int i = 0; i < t->n_items; i++) {
            if (b.items[i].refused) continue;
            for (int j = 0; j < t->items[i].n; j++) {
                multi += reqs[i][j].n_cont > 3; /* more than one bucket */
                assert_true(fabs(a.items[i].ll[j] - b.items[i].ll[j]) < 1e-3);
                assert_true(b.items[i].ll[j] == c.items[i].ll[j]);
                assert_int_equal(b.items[i].greedy[j], c.items[i].greedy[j]);
            }
        }
        if (k < 2) assert_true(multi > 0);
        assert_int_equal(b.refused, c.refused);
        pdq_task_result_free(t, &a, reqs);
        pdq_task_result_free(t, &b, NULL);
        pdq_task_result_free(t, &c, NULL);
        pdq_task_free(t);
    }
    /* a request over max_seq is refused, never truncated; a rewind only goes back */
    int32_t ids[8] = {1, 5, 6, 7, 8, 9, 10, 11}, *cont = ids + 4;
    int nc = 4;
    double ll;
    int g;
    shared.max_seq = 6;
    assert_int_equal(pdq_ll_session_score(&shared, ids, 4, &cont, &nc, 1, &ll, &g, &st), PDQ_ERR_LIMIT);
    assert_non_null(strstr(st.msg, "exceeds max_seq 6"));
    assert_int_equal(pdq_rt_prefill(rt, 1, 4, ids, NULL, PDQ_PAD_RIGHT, NULL, NULL, &st), PDQ_OK);
    assert_int_equal(pdq_rt_rewind(rt, 0, 5, &st), PDQ_ERR_ARG);
    assert_int_equal(pdq_rt_rewind(rt, 1, 2, &st), PDQ_ERR_ARG);
    assert_int_equal(pdq_rt_rewind(rt, 0, 2, &st), PDQ_OK);
    assert_int_equal(pdq_rt_len(rt, 0), 2);
    pdq_ll_session_free(&shared);
    pdq_ll_session_free(&alone);
    pdq_ll_model_free(&lm);
    pdq_rt_free(rt);
}

/* Formulas: hand values, and Python's random module (random.Random(0).random() and (1)). */
static void test_metrics(void **state) {
    (void)state;
    pdq_metric m = pdq_metric_mean01(3, 4); /* values 1,1,1,0: sample sd sqrt(0.25), / sqrt(4) */
    assert_true(fabs(m.value - 0.75) < 1e-15);
    assert_true(fabs(m.stderr_ - 0.25) < 1e-15);
    assert_true(isnan(pdq_metric_mean01(1, 1).stderr_));
    pdq_pyrandom r;
    pdq_pyrandom_seed(&r, 0);
    assert_true(fabs(pdq_pyrandom_random(&r) - 0.8444218515250481) < 1e-16);
    assert_true(fabs(pdq_pyrandom_random(&r) - 0.7579544029403025) < 1e-16);
    pdq_pyrandom_seed(&r, 1);
    assert_true(fabs(pdq_pyrandom_random(&r) - 0.13436424411240122) < 1e-16);
    /* pooled: sum((n_i - 1) se_i^2 n_i) / (sum n_i - k) / sum n_i, by hand: (1 + 1.5) / 8 / 10 */
    double se[2] = {pdq_metric_mean01(2, 4).stderr_, pdq_metric_mean01(3, 6).stderr_};
    long sz[2] = {4, 6};
    double pooled = pdq_pooled_stderr(se, sz, 2);
    assert_true(fabs(pooled - sqrt(2.5 / 8 / 10)) < 1e-12);
    /* perplexity: exp(-mean) and a bootstrap spread that shrinks with n */
    double ll[4] = {-1, -2, -3, -4};
    pdq_metric p = pdq_metric_perplexity(ll, 4, 2000);
    assert_true(fabs(p.value - exp(2.5)) < 1e-12);
    assert_true(p.stderr_ > 0 && p.stderr_ < exp(4));
    assert_int_equal(pdq_mmlu_category("abstract_algebra"), PDQ_MMLU_STEM);
    assert_int_equal(pdq_mmlu_category("world_religions"), PDQ_MMLU_HUMANITIES);
    assert_int_equal(pdq_mmlu_category("nope"), -1);
}

static void test_text_rules(void **state) {
    (void)state;
    char *p = pdq_task_hellaswag_preprocess("  Making a cake: [header] How to bake [title] Mix flour.  [step]  Stir. ");
    assert_string_equal(p, "Making a cake: How to bake. Mix flour.  Stir."); /* one pass: 4 spaces -> 2 */
    free(p);
    p = pdq_task_strip(" \t a b \n", 8);
    assert_string_equal(p, "a b");
    free(p);
    assert_int_equal(pdq_utf8_chars("caf\xc3\xa9"), 4);
}

/* Writes text to dir/name and loads it as task; returns the status code, message in st. */
static pdq_code load_text(const char *dir, const char *name, const char *text, const char *task, pdq_task **t,
                          pdq_status *st) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    assert_int_equal(tu_write_file(path, text, strlen(text)), 0);
    return pdq_task_load(task, path, 0, 0, t, st);
}

/* HF datasets' exports give the same requests as the README's layouts (hand-written items). */
static void test_hf_layouts(void **state) {
    (void)state;
    char *d = tu_mkdtemp();
    pdq_task *t;
    pdq_status st = {0};
    static const struct {
        const char *file, *task, *text;
        int ci;                    /* which request's context / continuation to compare */
        const char *ctx, *cont;
        int gold;
    } cases[] = {
        {"arc.jsonl", "arc_easy", "{\"id\":\"x\",\"question\":\"Which?\",\"choices\":{\"text\":[\"a\",\"b\",\"c\"],\"label\":[\"1\",\"2\",\"3\"]},\"answerKey\":\"3\"}\n",
         2, "Question: Which?\nAnswer:", " c", 2},
        {"hs.jsonl", "hellaswag", "{\"activity_label\":\"Baking\",\"ctx_a\":\"A man mixes.\",\"ctx_b\":\"THEN he\",\"endings\":[\"bakes [title] it.\",\"b\",\"c\",\"d\"],\"label\":\"1\"}\n",
         0, "Baking: A man mixes. Then he", " bakes. it.", 1},
        {"w.jsonl", "winogrande", "{\"sentence\":\"Tom gave Ann a gift because _ was kind.\",\"option1\":\"Tom\",\"option2\":\"Ann\",\"answer\":\"1\"}\n",
         1, "Tom gave Ann a gift because Ann", " was kind.", 0},
        {"m.jsonl", "mmlu", "{\"question\":\" 1+1? \",\"subject\":\"college_mathematics\",\"choices\":[\"1\",\"2\",\"3\",\"4\"],\"answer\":1}\n",
         3, "The following are multiple choice questions (with answers) about college mathematics.\n\n1+1?\nA. 1\nB. 2\nC. 3\nD. 4\nAnswer:", " D", 1},
        {"b.jsonl", "boolq", "{\"question\":\"is it\",\"passage\":\"It is.\",\"idx\":0,\"label\":1}\n",
         1, "It is.\nQuestion: is it?\nAnswer:", " yes", 1},
        {"o.jsonl", "openbookqa", "{\"id\":\"1\",\"question_stem\":\"Sun is\",\"choices\":{\"text\":[\"hot\",\"cold\"],\"label\":[\"A\",\"B\"]},\"answerKey\":\"A\"}\n",
         1, "Sun is", " cold", 0},
        {"p.jsonl", "piqa", "{\"goal\":\"g\",\"sol1\":\" s1 \",\"sol2\":\"s2\",\"label\":1}\n", 0, "Question: g\nAnswer:", "  s1 ", 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        assert_int_equal(load_text(d, cases[i].file, cases[i].text, cases[i].task, &t, &st), PDQ_OK);
        assert_string_equal(t->items[0].ctx[cases[i].ci], cases[i].ctx);
        assert_string_equal(t->items[0].cont[cases[i].ci], cases[i].cont);
        assert_int_equal(t->items[0].gold, cases[i].gold);
        pdq_task_free(t);
    }
    /* --limit counts per subject, as the harness limits each subject's task */
    char mp[512];
    snprintf(mp, sizeof mp, "%s/m2.jsonl", d);
    const char *m2 = "{\"question\":\"a\",\"subject\":\"anatomy\",\"choices\":[\"1\",\"2\",\"3\",\"4\"],\"answer\":0}\n"
                     "{\"question\":\"b\",\"subject\":\"anatomy\",\"choices\":[\"1\",\"2\",\"3\",\"4\"],\"answer\":0}\n"
                     "{\"question\":\"c\",\"subject\":\"virology\",\"choices\":[\"1\",\"2\",\"3\",\"4\"],\"answer\":2}\n";
    assert_int_equal(tu_write_file(mp, m2, strlen(m2)), 0);
    assert_int_equal(pdq_task_load("mmlu", mp, 1, 0, &t, &st), PDQ_OK);
    assert_int_equal(t->n_items, 2);
    assert_int_equal(t->n_subjects, 2);
    assert_int_equal(t->items[1].subject, 1);
    assert_int_equal(t->items[1].gold, 2);
    pdq_task_free(t);
    tu_rmtree(d);
    free(d);
}

static void refused(const char *dir, const char *name, const char *text, const char *task, const char *want1,
                    const char *want2) {
    pdq_task *t = NULL;
    pdq_status st = {0};
    assert_int_not_equal(load_text(dir, name, text, task, &t, &st), PDQ_OK);
    assert_null(t);
    if (!strstr(st.msg, want1) || !strstr(st.msg, want2)) fail_msg("'%s' lacks '%s' / '%s'", st.msg, want1, want2);
}

/* Unknown layouts are refused naming the file, the line and the missing field. */
static void test_refusals(void **state) {
    (void)state;
    char *d = tu_mkdtemp();
    refused(d, "a.jsonl", "{\"question\":{\"stem\":\"q\",\"choices\":[{\"text\":\"a\",\"label\":\"A\"}]},\"answerKey\":\"A\"}\n{\"question\":{\"stem\":\"q\",\"choices\":[{\"text\":\"a\",\"label\":\"A\"}]}}\n",
            "arc_easy", "a.jsonl:2:", "answerKey");
    refused(d, "b.jsonl", "{\"question\":{\"stem\":\"q\",\"choices\":[{\"text\":\"a\",\"label\":\"A\"}]},\"answerKey\":\"B\"}\n", "arc_easy", "b.jsonl:1:", "'B'");
    refused(d, "c.jsonl", "{\"goal\":\"g\",\"sol1\":\"a\"}\n", "piqa", "c.jsonl:1:", "sol2");
    refused(d, "h.txt", "ctx\n1\ne1\ne2\n", "hellaswag", "h.txt:5:", "ending 3");
    refused(d, "w.jsonl", "{\"foo\": 1}\n", "winogrande", "w.jsonl:1:", "context_options");
    refused(d, "l.jsonl", "{\"text\": \"a b\"}\nnot json\n", "lambada_openai", "l.jsonl:2:", "JSON");
    refused(d, "o.jsonl", "{\"query\":\"q\",\"choices\":[\"a\"],\"gold\":3}\n", "openbookqa", "o.jsonl:1:", "gold");
    refused(d, "q.jsonl", "{\"query\":\"q\",\"choices\":[\"no\",\"yes\"],\"gold\":0}\n", "boolq", "q.jsonl:1:", "Passage");
    refused(d, "e.jsonl", "\n\n", "boolq", "e.jsonl", "no records");
    char sub[600];
    snprintf(sub, sizeof sub, "mkdir -p %s/mm/test %s/mm/dev && printf 'q,a,b,c\\n' > %s/mm/test/abstract_algebra_test.csv", d, d, d);
    assert_int_equal(tu_run(sub, NULL), 0);
    snprintf(sub, sizeof sub, "%s/mm", d);
    pdq_task *t = NULL;
    pdq_status st = {0};
    assert_int_not_equal(pdq_task_load("mmlu", sub, 0, 0, &t, &st), PDQ_OK);
    assert_non_null(strstr(st.msg, "abstract_algebra_test.csv:1:"));
    assert_non_null(strstr(st.msg, "'D'"));
    assert_int_not_equal(pdq_task_load("nope", d, 0, 0, &t, &st), PDQ_OK);
    assert_int_not_equal(pdq_task_load("piqa", d, 0, 0, &t, &st), PDQ_OK); /* no file there */
    tu_rmtree(d);
    free(d);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_metrics),
        cmocka_unit_test(test_text_rules),
        cmocka_unit_test(test_hf_layouts),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_reference_arc),
        cmocka_unit_test(test_reference_piqa_hellaswag),
        cmocka_unit_test(test_reference_winogrande_lambada),
        cmocka_unit_test(test_reference_mmlu_boolq_obqa),
        cmocka_unit_test(test_empty_context),
        cmocka_unit_test(test_window_refuses),
        cmocka_unit_test(test_session),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
