/* The quantize job's task step (pdq quantize --eval-task): the tasks scored as pdq eval scores them, on each path quantize made,
 * into report.json's "tasks" (see quantize_tasks.h). */
#include "tasks.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "eval_session.h"
#include "pdq/file.h"
#include "pdq/lower.h"
#include "pdq/progress.h"
#include "pdq/ptq.h"
#include "pdq/qexec.h"
#include "pdq/tasks.h"
#include "pdq/threadpool.h"

enum { P_FP32, P_WEIGHTS, P_FAKE, P_INT, P_COUNT };
static const char *const k_path[P_COUNT] = {"fp32", "weights", "static-fake", "static-int"};

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

static int set_load(const job_ctx *j, const quantize_tasks_opts *o, task_set *s) {
    memset(s, 0, sizeof *s);
    char *list = strdup(o->tasks);
    int cap = 1;
    for (const char *c = o->tasks; *c; c++) cap += *c == ',';
    s->t = calloc((size_t)cap, sizeof *s->t);
    if (!list || !s->t) { free(list); return job_fail(j, PDQ_ERR_NOMEM, "out of memory"); }
    pdq_status st = {0};
    int bad = 0;
    for (char *save = NULL, *name = strtok_r(list, ",", &save); name && !bad; name = strtok_r(NULL, ",", &save)) {
        if (pdq_task_load(name, o->data, o->limit, o->shots, &s->t[s->n], &st) != PDQ_OK) {
            bad = job_fail(j, st.code, "--eval-task: %s", st.msg);
        } else {
            s->n++;
        }
    }
    free(list);
    if (!bad && !s->n) bad = job_fail(j, PDQ_ERR_ARG, "--eval-task: no task named");
    return bad;
}

int quantize_tasks_check(const job_ctx *j, const quantize_tasks_opts *o) {
    task_set s;
    int bad = set_load(j, o, &s);
    set_free(&s);
    return bad;
}


/* Every task of the set on one path. */
static int score_path(const job_ctx *j, task_set *s, int path, const pdq_tokenizer *tok, pdq_ll_fn fn, void *ctx) {
    if (!(s->r[path] = calloc((size_t)s->n, sizeof(pdq_task_result)))) return job_fail(j, PDQ_ERR_NOMEM, "out of memory");
    if (path == P_FP32 && !(s->reqs = calloc((size_t)s->n, sizeof *s->reqs))) return job_fail(j, PDQ_ERR_NOMEM, "out of memory");
    pdq_status st = {0};
    for (int i = 0; i < s->n; i++) {
        const pdq_task *t = s->t[i];
        long total = 0;
        for (int k = 0; k < t->n_items; k++) total += t->items[k].n;
        char label[96];
        snprintf(label, sizeof label, "task %s (%s)", t->name, k_path[path]);
        pdq_progress pc;
        pdq_progress_start(&pc, label, total);
        pdq_code rc = pdq_task_eval(t, tok, 1, fn, ctx, pdq_progress_on, &pc, &s->r[path][i], path == P_FP32 ? &s->reqs[i] : NULL, &st);
        pdq_progress_finish(&pc);
        if (rc != PDQ_OK) return job_fail(j, st.code, "task %s (%s): %s", t->name, k_path[path], st.msg);
        s->done[path] = i + 1;
    }
    return 0;
}

static int run_reference(const job_ctx *j, task_set *s, int path, const char *dir, const pdq_tokenizer *tok, int threads) {
    pdq_model *m = job_load_model_packed(j, dir, threads);
    if (!m) return 1;
    pdq_ll_model lm = {.m = m};
    int bad = score_path(j, s, path, tok, pdq_ll_model_score, &lm);
    pdq_ll_model_free(&lm);
    pdq_model_free(m);
    return bad;
}

/* The static runtime of dir in fake-quant mode (ptq.json's activations), as pdq eval --static
 * opens it. 0, or 1 with the error in j. */
static int open_static(const job_ctx *j, const char *dir, pdq_model *m, pdq_rt **rt, pdq_ptq **ptq) {
    pdq_status st = {0};
    if (pdq_ptq_open_runtime(m, dir, 1, 0, NULL, rt, ptq, &st) != PDQ_OK) return job_fail(j, st.code, "%s", st.msg);
    if (*ptq) job_note(j, "fake-quantized %s activations from %s/ptq.json", pdq_adtype_name(pdq_ptq_get_opts(*ptq)->adtype), dir);
    return 0;
}

/* Integer mode on rt as pdq eval's default --mode int takes it: lowered graphs on a pool of
 * `threads`; where integer mode cannot run (group-wise weights) *fake is set and rt stays in
 * fake-quant. 0, or 1 with the error in j. */
static int set_int(const job_ctx *j, const char *dir, pdq_rt *rt, pdq_ptq *ptq, int threads, pdq_pool **pool,
                   pdq_lowering **lw, int *fake) {
    pdq_status st = {0};
    pdq_exec_opts eo;
    pdq_exec_opts_default(&eo);
    eo.mode = PDQ_EXEC_INT;
    if (!(*pool = pdq_pool_create(threads, &st))) return job_fail(j, st.code, "%s", st.msg);
    eo.pool = *pool;
    if (pdq_lowering_open(dir, ptq, lw, &st) != PDQ_OK || pdq_rt_set_lowering(rt, pdq_lowering_lower, *lw, &eo, &st) != PDQ_OK) {
        if (st.code == PDQ_ERR_UNSUPPORTED) {
            /* the default on a checkpoint integer mode cannot run (group-wise weights): the oracle */
            job_note(j, "integer mode unsupported here (%s); running fake-quant", st.msg);
            pdq_status st2 = {0};
            *fake = 1;
            if (pdq_rt_set_lowering(rt, NULL, NULL, NULL, &st2) == PDQ_OK) {
                pdq_ptq_attach(ptq, rt); /* rebuilt graphs: the hook's graph map starts afresh (mode kept) */
                return 0;
            }
            return job_fail(j, st2.code, "%s", st2.msg);
        }
        return job_fail(j, st.code, "integer mode: %s (--mode fake runs the float oracle)", st.msg);
    }
    job_note(j, "integer execution of those grids (--mode fake: the float fake-quant oracle)");
    return 0;
}

/* The static graphs of outdir in fake-quant or integer mode, as pdq eval --static --mode runs them.
 * Where integer mode cannot run the path is skipped. */
static int run_static(const job_ctx *j, task_set *s, int path, const char *outdir, const pdq_tokenizer *tok,
                      const char *buckets, int threads) {
    pdq_model *m = job_load_model(j, outdir, threads);
    if (!m) return 1;
    pdq_rt *rt = NULL;
    pdq_ptq *ptq = NULL;
    pdq_pool *pool = NULL;
    pdq_lowering *lw = NULL;
    int fake = 0;
    eval_rt_session es = {0};
    pdq_ll_session ss = {0};
    pdq_status st = {0};
    int bq[PDQ_MAX_BUCKETS], nb = 0, bad = 1;
    if (open_static(j, outdir, m, &rt, &ptq)) {
    } else if (!ptq) {
        job_fail(j, PDQ_ERR_MISSING, "--mode %s needs a quantized checkpoint with ptq.json (%s has none)",
                 pdq_exec_mode_name(path == P_INT ? PDQ_EXEC_INT : PDQ_EXEC_FAKE), outdir);
    } else if (path == P_INT && set_int(j, outdir, rt, ptq, threads, &pool, &lw, &fake)) {
    } else if (path == P_INT && fake) {
        job_note(j, "tasks: no integer-mode scores (integer mode cannot run this checkpoint)");
        s->skipped[path] = 1;
        bad = 0;
    } else if (buckets && pdq_buckets_parse(buckets, pdq_rt_max_seq(rt), bq, &nb, &st) != PDQ_OK) {
        job_fail(j, st.code, "--append-bucket: %s", st.msg);
    } else if (eval_rt_session_init(&es, rt, m->cfg.vocab_size, bq, nb, &ss, &st) != PDQ_OK) {
        job_fail(j, st.code, "%s", st.msg);
    } else {
        bad = score_path(j, s, path, tok, pdq_ll_session_score, &ss);
    }
    pdq_ll_session_free(&ss);
    eval_rt_session_free(&es);
    pdq_rt_free(rt);
    pdq_ptq_free(ptq);
    pdq_lowering_free(lw);
    pdq_pool_free(pool);
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

static cJSON *read_report(const job_ctx *j, const char *path) {
    size_t len;
    char *txt = job_read_text(j, path, &len);
    cJSON *r = txt ? cJSON_ParseWithLength(txt, len) : NULL;
    free(txt);
    if (txt && !r) job_fail(j, PDQ_ERR_FORMAT, "%s: not JSON", path);
    return r;
}

int quantize_tasks_run(const job_ctx *j, const quantize_tasks_opts *o, const char *fp32_dir, const char *outdir, int act, const char *buckets,
                       int threads) {
    char path[4200];
    snprintf(path, sizeof path, "%s/report.json", outdir);
    cJSON *r = read_report(j, path);
    if (!r) return 1;
    task_set s;
    pdq_tokenizer *tok = NULL;
    int bad = set_load(j, o, &s) || !(tok = job_load_tokenizer(j, fp32_dir));
    int paths = act ? P_COUNT : P_FAKE;
    for (int p = 0; p < paths && !bad; p++)
        bad = p == P_FP32 ? run_reference(j, &s, p, fp32_dir, tok, threads)
            : p == P_WEIGHTS ? run_reference(j, &s, p, outdir, tok, threads)
                             : run_static(j, &s, p, outdir, tok, buckets, threads);
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
        if (!txt) bad = job_fail(j, PDQ_ERR_NOMEM, "out of memory");
        else if (pdq_file_write_text(path, txt, 0, NULL, &st) != PDQ_OK) bad = job_fail(j, st.code, "%s", st.msg);
        free(txt);
    }
    cJSON_Delete(r);
    pdq_tokenizer_free(tok);
    set_free(&s);
    return bad;
}
