/* pdq quantize --eval-task: the tasks scored as pdq eval scores them, on each path quantize made,
 * into report.json's "tasks" (see quantize_tasks.h). */
#include "quantize_tasks.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "eval_session.h"
#include "exec_args.h"
#include "pdq/file.h"
#include "pdq/progress.h"
#include "pdq/ptq.h"
#include "pdq/tasks.h"
#include "ptq_args.h"

enum { P_FP32, P_WEIGHTS, P_FAKE, P_INT, P_COUNT };
static const char *const k_path[P_COUNT] = {"fp32", "weights", "static-fake", "static-int"};
static const char *const k_path_text[P_COUNT] = {"FP32", "quantized weights", "fake-quant", "integer"};

typedef struct {
    int n;
    pdq_task **t;
    pdq_task_result *r[P_COUNT]; /* [task] */
    int done[P_COUNT];           /* tasks scored on the path */
    int skipped[P_COUNT];        /* integer mode unsupported on this checkpoint (group-wise weights) */
    pdq_ll_request ***reqs;      /* [task][item][request] of the FP32 path (same tokenizer everywhere) */
} task_set;

static void set_free(task_set *s) {
    for (int i = 0; i < s->n; i++) {
        for (int p = 0; p < P_COUNT; p++)
            if (s->r[p] && i < s->done[p]) pdq_task_result_free(s->t[i], &s->r[p][i], p == P_FP32 && s->reqs ? s->reqs[i] : NULL);
        pdq_task_free(s->t[i]);
    }
    for (int p = 0; p < P_COUNT; p++) free(s->r[p]);
    free(s->reqs);
    free(s->t);
    memset(s, 0, sizeof *s);
}

static int set_load(const quantize_tasks_opts *o, task_set *s) {
    memset(s, 0, sizeof *s);
    char *list = strdup(o->tasks);
    int cap = 1;
    for (const char *c = o->tasks; *c; c++) cap += *c == ',';
    s->t = calloc((size_t)cap, sizeof *s->t);
    if (!list || !s->t) { free(list); fprintf(stderr, "pdq quantize: out of memory\n"); return 1; }
    pdq_status st = {0};
    int bad = 0;
    for (char *save = NULL, *name = strtok_r(list, ",", &save); name && !bad; name = strtok_r(NULL, ",", &save)) {
        if (pdq_task_load(name, o->data, o->limit, o->shots, &s->t[s->n], &st) != PDQ_OK) {
            fprintf(stderr, "pdq quantize: --eval-task: %s\n", st.msg);
            bad = 1;
        } else {
            s->n++;
        }
    }
    free(list);
    if (!bad && !s->n) { fprintf(stderr, "pdq quantize: --eval-task: no task named\n"); bad = 1; }
    return bad;
}

int quantize_tasks_check(const quantize_tasks_opts *o) {
    task_set s;
    int bad = set_load(o, &s);
    set_free(&s);
    return bad;
}

typedef struct {
    pdq_progress p;
} progress_ctx;

static void on_progress(void *ctx, long done, long total) {
    (void)total;
    pdq_progress_update(&((progress_ctx *)ctx)->p, done);
}

/* Every task of the set on one path. */
static int score_path(task_set *s, int path, const pdq_tokenizer *tok, pdq_ll_fn fn, void *ctx) {
    if (!(s->r[path] = calloc((size_t)s->n, sizeof(pdq_task_result)))) return 1;
    if (path == P_FP32 && !(s->reqs = calloc((size_t)s->n, sizeof *s->reqs))) return 1;
    pdq_status st = {0};
    for (int i = 0; i < s->n; i++) {
        const pdq_task *t = s->t[i];
        long total = 0;
        for (int k = 0; k < t->n_items; k++) total += t->items[k].n;
        char label[96];
        snprintf(label, sizeof label, "task %s (%s)", t->name, k_path[path]);
        progress_ctx pc;
        pdq_progress_start(&pc.p, label, total);
        pdq_code rc = pdq_task_eval(t, tok, 1, fn, ctx, on_progress, &pc, &s->r[path][i], path == P_FP32 ? &s->reqs[i] : NULL, &st);
        pdq_progress_finish(&pc.p);
        if (rc != PDQ_OK) {
            fprintf(stderr, "pdq quantize: task %s (%s): %s\n", t->name, k_path[path], st.msg);
            return 1;
        }
        s->done[path] = i + 1;
    }
    return 0;
}

static int run_reference(task_set *s, int path, const char *dir, const pdq_tokenizer *tok, int threads) {
    pdq_model *m = cli_load_model_packed("quantize", dir, threads);
    if (!m) return 1;
    pdq_ll_model lm = {.m = m};
    int bad = score_path(s, path, tok, pdq_ll_model_score, &lm);
    pdq_ll_model_free(&lm);
    pdq_model_free(m);
    return bad;
}

/* The static graphs of outdir in fake-quant or integer mode, as pdq eval --static --mode runs them.
 * Where integer mode cannot run (cli_exec_rt falls back to fake-quant) the path is skipped. */
static int run_static(task_set *s, int path, const char *outdir, const pdq_tokenizer *tok, const char *buckets, int threads) {
    pdq_model *m = cli_load_model("quantize", outdir, threads);
    if (!m) return 1;
    pdq_rt *rt = NULL;
    pdq_ptq *ptq = NULL;
    cli_exec ex = {0};
    ex.mode = path == P_INT ? PDQ_EXEC_INT : PDQ_EXEC_FAKE;
    ex.given = path != P_INT; /* int: a checkpoint it cannot run is noted, not an error */
    eval_rt_session es = {0};
    pdq_ll_session ss = {0};
    pdq_status st = {0};
    int bq[PDQ_MAX_BUCKETS], nb = 0, bad = 1;
    if (cli_static_runtime("quantize", outdir, m, 1, 0, NULL, 0, &rt, &ptq) || cli_exec_rt(&ex, "quantize", outdir, rt, ptq, threads)) {
    } else if (path == P_INT && ex.mode != PDQ_EXEC_INT) {
        fprintf(stderr, "pdq quantize: tasks: no integer-mode scores (integer mode cannot run this checkpoint)\n");
        s->skipped[path] = 1;
        bad = 0;
    } else if (buckets && pdq_buckets_parse(buckets, pdq_rt_max_seq(rt), bq, &nb, &st) != PDQ_OK) {
        fprintf(stderr, "pdq quantize: --append-bucket: %s\n", st.msg);
    } else if (eval_rt_session_init(&es, rt, m->cfg.vocab_size, bq, nb, &ss, &st) != PDQ_OK) {
        fprintf(stderr, "pdq quantize: %s\n", st.msg);
    } else {
        bad = score_path(s, path, tok, pdq_ll_session_score, &ss);
    }
    pdq_ll_session_free(&ss);
    eval_rt_session_free(&es);
    pdq_rt_free(rt);
    pdq_ptq_free(ptq);
    cli_exec_free(&ex);
    pdq_model_free(m);
    return bad;
}

static void add_metric(cJSON *o, const char *name, pdq_metric m) {
    if (isnan(m.value)) return;
    char k[64];
    cJSON_AddNumberToObject(o, name, m.value);
    snprintf(k, sizeof k, "%s_stderr", name);
    if (isnan(m.stderr_)) cJSON_AddNullToObject(o, k);
    else cJSON_AddNumberToObject(o, k, m.stderr_);
}

/* The integer bound (docs/eval.md): a continuation's log-likelihood in integer mode lies within
 * QT_INT_BOUND nats per token of fake-quant's. Then integer can only answer b where fake-quant
 * answered a when ll_a - ll_b <= QT_INT_BOUND (n_a + n_b): the item's margin is inside the bound. */
#define QT_INT_BOUND 0.1

static int inside_bound(const pdq_item_result *f, const pdq_ll_request *rq, int n) {
    int a = f->pred;
    for (int b = 0; b < n; b++)
        if (b != a && f->ll[a] - f->ll[b] <= QT_INT_BOUND * (rq[a].n_cont + rq[b].n_cont)) return 1;
    return 0;
}

static cJSON *int_vs_fake(const task_set *s, int i) {
    const pdq_task *t = s->t[i];
    long items = 0, inside = 0, changed = 0, outside = 0, over = 0;
    double worst = 0;
    for (int k = 0; k < t->n_items; k++) {
        const pdq_item_result *f = &s->r[P_FAKE][i].items[k], *q = &s->r[P_INT][i].items[k];
        if (f->refused || q->refused) continue;
        items++;
        int in = inside_bound(f, s->reqs[i][k], t->items[k].n), ch = f->pred != q->pred;
        inside += in;
        changed += ch;
        outside += ch && !in;
        for (int j = 0; j < t->items[k].n; j++) {
            double d = fabs(q->ll[j] - f->ll[j]) / s->reqs[i][k][j].n_cont;
            worst = d > worst ? d : worst;
            over += d > QT_INT_BOUND;
        }
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "task", t->name);
    cJSON_AddNumberToObject(o, "bound_per_token", QT_INT_BOUND);
    cJSON_AddNumberToObject(o, "max_dll_per_token", worst);
    cJSON_AddNumberToObject(o, "requests_over_bound", (double)over);
    cJSON_AddNumberToObject(o, "items", (double)items);
    cJSON_AddNumberToObject(o, "inside_bound", (double)inside);
    cJSON_AddNumberToObject(o, "changed", (double)changed);
    cJSON_AddNumberToObject(o, "changed_outside_bound", (double)outside);
    return o;
}

static cJSON *read_report(const char *path) {
    size_t len;
    char *txt = cli_read_text("quantize", path, &len);
    cJSON *j = txt ? cJSON_ParseWithLength(txt, len) : NULL;
    free(txt);
    if (txt && !j) fprintf(stderr, "pdq quantize: %s: not JSON\n", path);
    return j;
}

int quantize_tasks_run(const quantize_tasks_opts *o, const char *fp32_dir, const char *outdir, int act, const char *buckets,
                       int threads) {
    char path[4200];
    snprintf(path, sizeof path, "%s/report.json", outdir);
    cJSON *r = read_report(path);
    if (!r) return 1;
    task_set s;
    pdq_tokenizer *tok = NULL;
    int bad = set_load(o, &s) || !(tok = cli_load_tokenizer("quantize", fp32_dir));
    int paths = act ? P_COUNT : P_FAKE;
    for (int p = 0; p < paths && !bad; p++)
        bad = p == P_FP32 ? run_reference(&s, p, fp32_dir, tok, threads)
            : p == P_WEIGHTS ? run_reference(&s, p, outdir, tok, threads)
                             : run_static(&s, p, outdir, tok, buckets, threads);
    if (!bad) {
        cJSON *tj = cJSON_CreateObject(), *res = cJSON_AddArrayToObject(tj, "results");
        cJSON_AddStringToObject(tj, "data", o->data);
        cJSON_AddNumberToObject(tj, "limit", (double)o->limit);
        cJSON_AddNumberToObject(tj, "shots", o->shots);
        cJSON_AddBoolToObject(tj, "add_bos", 1);
        for (int i = 0; i < s.n; i++)
            for (int p = 0; p < paths; p++) {
                if (s.skipped[p]) continue;
                const pdq_task_result *x = &s.r[p][i];
                cJSON *e = cJSON_CreateObject();
                cJSON_AddStringToObject(e, "task", s.t[i]->name);
                cJSON_AddStringToObject(e, "path", k_path[p]);
                cJSON_AddNumberToObject(e, "n", (double)x->n);
                cJSON_AddNumberToObject(e, "refused", (double)x->refused);
                add_metric(e, "acc", x->acc);
                add_metric(e, "acc_norm", x->acc_norm);
                add_metric(e, "perplexity", x->perplexity);
                add_metric(e, "acc_norm_llamacpp", x->acc_norm_llamacpp);
                if (x->n_subjects) add_metric(e, "macro_acc", x->macro);
                cJSON_AddItemToArray(res, e);
            }
        if (act && !s.skipped[P_INT]) {
            cJSON *iv = cJSON_AddArrayToObject(tj, "int_vs_fake");
            for (int i = 0; i < s.n; i++)
                if (s.t[i]->kind != PDQ_TASK_GREEDY) cJSON_AddItemToArray(iv, int_vs_fake(&s, i));
        }
        cJSON_DeleteItemFromObjectCaseSensitive(r, "tasks");
        cJSON_AddItemToObject(r, "tasks", tj);
        char *txt = cJSON_Print(r);
        pdq_status st = {0};
        if (!txt) bad = 1, fprintf(stderr, "pdq quantize: out of memory\n");
        else if (pdq_file_write_text(path, txt, 0, NULL, &st) != PDQ_OK) bad = 1, fprintf(stderr, "pdq quantize: %s\n", st.msg);
        free(txt);
    }
    cJSON_Delete(r);
    pdq_tokenizer_free(tok);
    set_free(&s);
    return bad;
}

static const cJSON *get(const cJSON *o, const char *k) { return cJSON_GetObjectItemCaseSensitive(o, k); }

void quantize_tasks_print(const cJSON *r, FILE *f) {
    const cJSON *tj = get(r, "tasks"), *e;
    const char *last = "";
    cJSON_ArrayForEach(e, get(tj, "results")) {
        const cJSON *task = get(e, "task"), *path = get(e, "path");
        if (!cJSON_IsString(task) || !cJSON_IsString(path)) continue;
        const char *metric = get(e, "acc_norm") ? "acc_norm" : "acc";
        const cJSON *v = get(e, metric), *se = get(e, strcmp(metric, "acc") ? "acc_norm_stderr" : "acc_stderr");
        if (strcmp(last, task->valuestring)) fprintf(f, "%stask         %s %s:", *last ? "\n" : "", task->valuestring, metric);
        const char *name = path->valuestring;
        for (int p = 0; p < P_COUNT; p++)
            if (!strcmp(name, k_path[p])) name = k_path_text[p];
        double refused = cJSON_GetNumberValue(get(e, "refused"));
        fprintf(f, "%s %s", strcmp(last, task->valuestring) ? "" : ",", name);
        if (cJSON_IsNumber(v)) fprintf(f, " %.4f", v->valuedouble);
        if (cJSON_IsNumber(v) && cJSON_IsNumber(se)) fprintf(f, " ± %.4f", se->valuedouble);
        if (refused > 0) fprintf(f, cJSON_IsNumber(v) ? " (%g refused)" : " all %g refused (over max_seq)", refused);
        last = task->valuestring;
    }
    if (*last) fputc('\n', f);
    cJSON_ArrayForEach(e, get(tj, "int_vs_fake"))
        fprintf(f, "             %s: %g of %g items changed answer integer vs fake-quant; %g margins inside the bound, %g "
                   "changed outside it; max |dll| %.4f per token (bound %g)\n",
                get(e, "task") && cJSON_IsString(get(e, "task")) ? get(e, "task")->valuestring : "?",
                cJSON_GetNumberValue(get(e, "changed")), cJSON_GetNumberValue(get(e, "items")),
                cJSON_GetNumberValue(get(e, "inside_bound")), cJSON_GetNumberValue(get(e, "changed_outside_bound")),
                cJSON_GetNumberValue(get(e, "max_dll_per_token")), cJSON_GetNumberValue(get(e, "bound_per_token")));
}
