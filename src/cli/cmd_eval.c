/* pdq eval: task accuracy by log-likelihood as lm-evaluation-harness scores it, on the FP32
 * reference, a weight-only quantized checkpoint (packed kernels), the static graphs or the
 * exported Circle pair. Results on stdout (table or --json), progress on stderr. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "commands.h"
#include "common.h"
#include "eval_compare.h"
#include "job/eval_session.h"
#include "exec_args.h"
#include "pdq/circle_export.h"
#include "pdq/file.h"
#include "pdq/progress.h"
#include "pdq/tasks.h"
#include "ptq_args.h"

static const char *k_usage =
    "usage: pdq eval --model DIR --task NAME[,NAME...] --data PATH [--limit N] [--shots K] [--json]\n"
    "                [--samples FILE] [--no-bos] [--threads N] [--max-len N]\n"
    "                [--static [--max-seq N] [--mode float|fake|int] [--append-bucket Q[,Q...]]]\n"
    "                [--per-request] [--llamacpp-rule] [--llamacpp-tasks N]\n"
    "       pdq eval --circle OUTDIR --task ... --data PATH ...   (the exported prefill graph)\n"
    "       pdq eval --model DIR --compare DIR2 --task ... --data PATH ...   (two models side by side:\n"
    "                  each metric, b - a, and how many items changed answer)\n"
    "  tasks: arc_easy arc_challenge piqa hellaswag winogrande lambada_openai mmlu boolq openbookqa\n"
    "  --data PATH     the folder of the task data sets (../shared/data/tasks layout), a task's\n"
    "                  folder, or one task's file (AI2/PIQA/llama.cpp/Hendrycks forms or HF JSONL)\n"
    "  --limit N       the first N items of each task (of each subject for mmlu)\n"
    "  --shots K       mmlu: the first K dev questions before each question (default 0)\n"
    "  --no-bos        no BOS on the context (lm-eval releases up to v0.4.9.1); default: the\n"
    "                  tokenizer's own special tokens, as the current harness\n"
    "  --samples FILE  one JSON line per item: ids, each request's log-likelihood and greedy flag\n"
    "  --max-len N     reference path: longer requests keep their last N+1 tokens (the harness's\n"
    "                  left truncation; default max_position_embeddings)\n"
    "  static / Circle paths: a request longer than max_seq is refused and counted, never truncated;\n"
    "                  a question's context is prefilled once and each continuation appended\n"
    "                  through the append buckets (Circle: the export's), then rewound\n"
    "  --append-bucket static path: the append graphs' sizes besides decode (as pdq export's)\n"
    "  --per-request   static / Circle paths: one prefill of context + continuation per request\n"
    "  --llamacpp-rule choice tasks: also llama.cpp's score (acc_norm_llamacpp, the rule of\n"
    "                  llama-perplexity --multiple-choice and --hellaswag; always on for hellaswag\n"
    "                  in llama.cpp's format)\n"
    "  --llamacpp-tasks N  hellaswag in llama.cpp's 6-line format: the N tasks (all if N is\n"
    "                  larger) llama-perplexity --hellaswag --hellaswag-tasks N scores, in its\n"
    "                  order (its std::mt19937(1) draws without replacement, reproduced)\n"
    EXEC_ARGS_USAGE;


void eval_json_str(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c == '\n') fputs("\\n", f);
        else if (c == '\t') fputs("\\t", f);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

static void json_num(FILE *f, double v) {
    if (isfinite(v)) fprintf(f, "%.17g", v);
    else fputs("null", f);
}

static void json_ids(FILE *f, const int32_t *ids, int n) {
    fputc('[', f);
    for (int i = 0; i < n; i++) fprintf(f, i ? ", %d" : "%d", ids[i]);
    fputc(']', f);
}

/* One line per item, like the harness's --log_samples. */
static void write_samples(FILE *f, const pdq_task *t, const pdq_task_result *r, pdq_ll_request **reqs) {
    for (int i = 0; i < t->n_items; i++) {
        const pdq_task_item *it = &t->items[i];
        const pdq_item_result *ir = &r->items[i];
        fprintf(f, "{\"task\": \"%s\", \"doc_id\": %d, \"line\": %ld, \"gold\": %d, \"refused\": %s, \"requests\": [", t->name, i,
                it->line, it->gold, ir->refused ? "true" : "false");
        for (int j = 0; j < it->n; j++) {
            fprintf(f, "%s{\"context\": ", j ? ", " : "");
            eval_json_str(f, it->ctx[j]);
            fputs(", \"continuation\": ", f);
            eval_json_str(f, it->cont[j]);
            fputs(", \"context_ids\": ", f);
            json_ids(f, reqs[i][j].ctx, reqs[i][j].n_ctx);
            fputs(", \"continuation_ids\": ", f);
            json_ids(f, reqs[i][j].cont, reqs[i][j].n_cont);
            fputs(", \"ll\": ", f);
            json_num(f, ir->refused ? NAN : ir->ll[j]);
            fprintf(f, ", \"greedy\": %s}", !ir->refused && ir->greedy[j] ? "true" : "false");
        }
        fprintf(f, "], \"pred\": %d, \"pred_norm\": %d, \"acc\": %d, \"acc_norm\": %d", ir->refused ? -1 : ir->pred,
                ir->refused ? -1 : ir->pred_norm, ir->acc, ir->acc_norm);
        if (t->llamacpp_rule) fprintf(f, ", \"pred_llamacpp\": %d", ir->refused ? -1 : ir->pred_llamacpp);
        fputs("}\n", f);
    }
}

static void row(const char *task, int shots, const char *metric, pdq_metric m, long n, long refused) {
    if (isnan(m.value)) return;
    printf("| %-40s | %6d | %-17s | %10.4f | ± | ", task, shots, metric, m.value);
    if (isnan(m.stderr_)) printf("%10s", "N/A");
    else printf("%10.4f", m.stderr_);
    printf(" | %6ld | %7ld |\n", n, refused);
}

static void print_table(const pdq_task *t, const pdq_task_result *r) {
    row(t->name, t->shots, "acc", r->acc, r->n, r->refused);
    row(t->name, t->shots, "acc_norm", r->acc_norm, r->n, r->refused);
    row(t->name, t->shots, "perplexity", r->perplexity, r->n, r->refused);
    row(t->name, t->shots, "acc_norm_llamacpp", r->acc_norm_llamacpp, r->n, r->refused);
    if (!r->n_subjects) return;
    row("mmlu (macro: mean of subjects)", t->shots, "acc", r->macro, r->n, r->refused);
    char name[96];
    for (int c = 0; c < 4; c++) {
        snprintf(name, sizeof name, " - %s", pdq_mmlu_category_names[c]);
        row(name, t->shots, "acc", r->category[c], r->category_n[c], 0);
    }
    for (int s = 0; s < r->n_subjects; s++) {
        snprintf(name, sizeof name, "   - %s", r->subjects[s].subject);
        row(name, t->shots, "acc", r->subjects[s].acc, r->subjects[s].n, 0);
    }
}

static void json_metric(const char *name, pdq_metric m, int *first) {
    if (isnan(m.value)) return;
    printf("%s\"%s\": ", *first ? "" : ", ", name);
    json_num(stdout, m.value);
    printf(", \"%s_stderr\": ", name);
    json_num(stdout, m.stderr_);
    *first = 0;
}

static void print_json(const pdq_task *t, const pdq_task_result *r, int first_task) {
    int f = 0; /* after "refused" */
    printf("%s{\"task\": \"%s\", \"shots\": %d, \"n\": %ld, \"refused\": %ld", first_task ? "" : ", ", t->name, t->shots, r->n, r->refused);
    json_metric("acc", r->acc, &f);
    json_metric("acc_norm", r->acc_norm, &f);
    json_metric("perplexity", r->perplexity, &f);
    json_metric("acc_norm_llamacpp", r->acc_norm_llamacpp, &f);
    if (r->n_subjects) {
        json_metric("macro_acc", r->macro, &f);
        printf(", \"groups\": {");
        for (int c = 0; c < 4; c++) {
            printf("%s\"%s\": {\"n\": %ld", c ? ", " : "", pdq_mmlu_category_names[c], r->category_n[c]);
            int g = 0; /* a group or subject with no scored item has no acc */
            json_metric("acc", r->category[c], &g);
            printf("}");
        }
        printf("}, \"subjects\": {");
        for (int s = 0; s < r->n_subjects; s++) {
            printf("%s\"%s\": {\"n\": %ld", s ? ", " : "", r->subjects[s].subject, r->subjects[s].n);
            int g = 0;
            json_metric("acc", r->subjects[s].acc, &g);
            printf("}");
        }
        printf("}");
    }
    printf("}");
}

typedef struct {
    pdq_ll_fn fn;
    void *ctx;
    const char *path; /* what runs: fp32, packed, static-float, ... */
} scorer;

/* Loads and scores each task; prints the results. */
/* Keeps the tasks llama-perplexity --hellaswag --hellaswag-tasks n scores, in its order. */
static int pick_llamacpp_tasks(pdq_task *t, long n, pdq_status *st) {
    if (strcmp(t->name, "hellaswag") != 0 || !t->llamacpp_rule) {
        fprintf(stderr, "pdq eval: --llamacpp-tasks: %s is not hellaswag in llama.cpp's 6-line format\n", t->name);
        return 1;
    }
    long *order = malloc((size_t)t->n_items * sizeof *order);
    long k = order ? pdq_llamacpp_hellaswag_order(t->n_items, n, order) : -1;
    int bad = k < 0 || pdq_task_pick(t, order, k, st) != PDQ_OK;
    if (bad) fprintf(stderr, "pdq eval: --llamacpp-tasks: %s\n", k < 0 ? "out of memory" : st->msg);
    free(order);
    return bad;
}

static int run_tasks(const char *tasks, const char *data, long limit, long hs_tasks, int shots, int add_bos, int llamacpp,
                     int json, const char *samples, const pdq_tokenizer *tok, const scorer *sc, const char *model) {
    char *list = strdup(tasks);
    if (!list) return 1;
    FILE *sf = NULL;
    pdq_file_writer *sw = NULL;
    pdq_status st = {0};
    if (samples) {
        if (pdq_file_begin(samples, NULL, &sw, &st) != PDQ_OK) {
            fprintf(stderr, "pdq eval: %s\n", st.msg);
            free(list);
            return 1;
        }
        sf = pdq_file_stream(sw);
    }
    if (json) {
        printf("{\"model\": ");
        eval_json_str(stdout, model);
        printf(", \"path\": \"%s\", \"add_bos\": %s, \"results\": [", sc->path, add_bos ? "true" : "false");
    } else {
        printf("| %-40s | %6s | %-17s | %10s | ± | %10s | %6s | %7s |\n", "task", "n-shot", "metric", "value", "stderr", "n", "refused");
        printf("|------------------------------------------|--------|-------------------|------------|---|------------|--------|---------|\n");
    }
    int status = 0, first = 1;
    for (char *save = NULL, *name = strtok_r(list, ",", &save); name && !status; name = strtok_r(NULL, ",", &save)) {
        pdq_task *t;
        if (pdq_task_load(name, data, limit, shots, &t, &st) != PDQ_OK) {
            fprintf(stderr, "pdq eval: %s\n", st.msg);
            status = 1;
            break;
        }
        if (hs_tasks > 0 && pick_llamacpp_tasks(t, hs_tasks, &st)) {
            pdq_task_free(t);
            status = 1;
            break;
        }
        if (llamacpp && t->kind != PDQ_TASK_CHOICE) {
            fprintf(stderr, "pdq eval: --llamacpp-rule: %s is not a multiple-choice task with one context\n", name);
            pdq_task_free(t);
            status = 1;
            break;
        }
        if (llamacpp) t->llamacpp_rule = 1;
        pdq_progress pc;
        long total = 0;
        for (int i = 0; i < t->n_items; i++) total += t->items[i].n;
        char label[64];
        snprintf(label, sizeof label, "%s (%s)", name, sc->path);
        pdq_progress_start(&pc, label, total);
        pdq_task_result r;
        pdq_ll_request **reqs = NULL;
        pdq_code rc = pdq_task_eval(t, tok, add_bos, sc->fn, sc->ctx, pdq_progress_on, &pc, &r, samples ? &reqs : NULL, &st);
        pdq_progress_finish(&pc);
        if (rc != PDQ_OK) {
            fprintf(stderr, "pdq eval: %s\n", st.msg);
            status = 1;
        } else {
            if (r.refused) fprintf(stderr, "pdq eval: %s: %ld item(s) longer than max_seq refused (not scored, not counted)\n", name, r.refused);
            if (json) print_json(t, &r, first);
            else print_table(t, &r);
            first = 0;
            if (sf) write_samples(sf, t, &r, reqs);
            pdq_task_result_free(t, &r, reqs);
        }
        pdq_task_free(t);
    }
    if (json && !status) printf("]}\n");
    fflush(stdout);
    if (sw && status) pdq_file_abort(sw);
    else if (sw && pdq_file_commit(sw, &st) != PDQ_OK) {
        fprintf(stderr, "pdq eval: %s\n", st.msg);
        status = 1;
    }
    free(list);
    return status;
}

int cmd_eval(int argc, char **argv) {
    pdq_args a;
    args_init(&a, "eval", argc, argv);
    if (args_flag(&a, "--help")) { fputs(k_usage, stdout); return 0; }
    const char *dir = args_str(&a, "--model"), *cdir = args_str(&a, "--circle");
    const char *tasks = args_required(&a, "--task"), *data = args_required(&a, "--data");
    const char *samples = args_str(&a, "--samples"), *cmp = args_str(&a, "--compare");
    long limit = args_int_range(&a, "--limit", 0, 1, 1L << 30);
    long hs_tasks = args_int_range(&a, "--llamacpp-tasks", 0, 1, 1L << 30);
    int shots = (int)args_int_range(&a, "--shots", 0, 0, 64);
    int json = args_flag(&a, "--json"), no_bos = args_flag(&a, "--no-bos"), threads = args_threads(&a);
    int use_static = args_flag(&a, "--static");
    int max_seq = (int)args_int_range(&a, "--max-seq", 0, 2, ARGS_MAX_SEQ_LIMIT);
    int max_len = (int)args_int_range(&a, "--max-len", 0, 1, 1 << 20);
    const char *buckets = args_str(&a, "--append-bucket");
    int per_request = args_flag(&a, "--per-request"), llamacpp = args_flag(&a, "--llamacpp-rule");
    cli_exec ex;
    if (cli_exec_read(&a, &ex)) return ARGS_USAGE_EXIT;
    args_one_of(&a, "--model", dir, "--circle", cdir);
    if (cdir && (use_static || max_seq || max_len)) args_error(&a, "--circle runs the export's max_seq: drop --static/--max-seq/--max-len");
    if (max_seq && !use_static) args_error(&a, "--max-seq is the static graph length: it needs --static");
    if (cmp && (cdir || use_static || samples)) args_error(&a, "--compare runs two reference or packed models: drop --circle/--static/--samples");
    if (max_len && use_static) args_error(&a, "--max-len is the reference path's truncation: the static path refuses longer requests");
    if (buckets && !use_static) args_error(&a, "--append-bucket sizes the static path's append graphs: it needs --static (--circle uses the export's)");
    if (per_request && !use_static && !cdir) args_error(&a, "--per-request is for the static and Circle paths");
    if (llamacpp && cmp) args_error(&a, "--llamacpp-rule is not part of --compare");
    if (hs_tasks && (cmp || limit)) args_error(&a, "--llamacpp-tasks picks llama.cpp's tasks: drop --limit/--compare");
    if (args_finish(&a)) return ARGS_USAGE_EXIT;
    if (samples && cli_check_out_file("eval", "--samples", samples)) return 1;
    if (cdir) dir = cdir; /* the export carries the tokenizer */
    pdq_tokenizer *tok = cli_load_tokenizer("eval", dir);
    if (!tok) return 1;
    pdq_status st = {0};
    int status = 1;
    if (cdir) {
        pdq_set_threads(NULL, threads);
        pdq_crt *crt;
        pdq_exec_opts eo;
        if (cli_exec_opts(&ex, "eval", threads, &eo)) {
        } else if (pdq_crt_open_opts(cdir, 1, &eo, &crt, &st) != PDQ_OK) {
            fprintf(stderr, "pdq eval: %s\n", st.msg);
        } else {
            pdq_ll_window w = {pdq_crt_window_logits, crt, pdq_crt_vocab(crt), pdq_crt_max_seq(crt), NULL};
            pdq_ll_session ss;
            eval_crt_session_init(crt, &ss);
            scorer sc = per_request ? (scorer){pdq_ll_window_score, &w, "circle"} : (scorer){pdq_ll_session_score, &ss, "circle"};
            status = run_tasks(tasks, data, limit, hs_tasks, shots, !no_bos, llamacpp, json, samples, tok, &sc, cdir);
            pdq_ll_window_free(&w);
            pdq_ll_session_free(&ss);
            pdq_crt_free(crt);
        }
        cli_exec_free(&ex);
        pdq_tokenizer_free(tok);
        return status;
    }
    pdq_model *m = use_static ? cli_load_model("eval", dir, threads) : cli_load_model_packed("eval", dir, threads);
    if (!m) { pdq_tokenizer_free(tok); cli_exec_free(&ex); return 1; }
    if (use_static) {
        pdq_rt *rt = NULL;
        pdq_ptq *ptq = NULL;
        if (max_seq <= 0 && !pdq_ptq_in_dir(dir)) max_seq = ARGS_MAX_SEQ_DEFAULT;
        int bq[PDQ_MAX_BUCKETS], nb = 0;
        eval_rt_session es = {0};
        pdq_ll_session ss = {0};
        if (!cli_static_runtime("eval", dir, m, 1, max_seq, NULL, 0, &rt, &ptq) && !cli_exec_rt(&ex, "eval", dir, rt, ptq, threads)) {
            pdq_ll_window w = {pdq_rt_window_logits, rt, m->cfg.vocab_size, pdq_rt_max_seq(rt), NULL};
            const char *what = !ptq ? "static-float" : ex.mode == PDQ_EXEC_INT ? "static-int" : ex.mode == PDQ_EXEC_FAKE ? "static-fake" : "static-float";
            scorer sc = {pdq_ll_window_score, &w, what};
            if (buckets && pdq_buckets_parse(buckets, pdq_rt_max_seq(rt), bq, &nb, &st) != PDQ_OK)
                fprintf(stderr, "pdq eval: --append-bucket: %s\n", st.msg);
            else if (!per_request && eval_rt_session_init(&es, rt, m->cfg.vocab_size, bq, nb, &ss, &st) != PDQ_OK)
                fprintf(stderr, "pdq eval: %s\n", st.msg);
            else {
                if (!per_request) sc = (scorer){pdq_ll_session_score, &ss, what};
                status = run_tasks(tasks, data, limit, hs_tasks, shots, !no_bos, llamacpp, json, samples, tok, &sc, dir);
            }
            pdq_ll_window_free(&w);
        }
        pdq_ll_session_free(&ss);
        eval_rt_session_free(&es);
        pdq_rt_free(rt);
        pdq_ptq_free(ptq);
    } else if (cmp) {
        pdq_model *m2 = cli_load_model_packed("eval", cmp, threads);
        pdq_tokenizer *tok2 = m2 ? cli_load_tokenizer("eval", cmp) : NULL;
        pdq_ll_model la = {.m = m, .max_len = max_len}, lb = {.m = m2, .max_len = max_len};
        eval_side sa = {dir, tok, pdq_ll_model_score, &la}, sb = {cmp, tok2, pdq_ll_model_score, &lb};
        if (tok2) status = eval_compare(&sa, &sb, tasks, data, limit, shots, !no_bos, json);
        pdq_ll_model_free(&la);
        pdq_ll_model_free(&lb);
        pdq_tokenizer_free(tok2);
        pdq_model_free(m2);
    } else {
        pdq_ll_model lm = {.m = m, .max_len = max_len};
        scorer sc = {pdq_ll_model_score, &lm, m->packed ? "packed" : "fp32"};
        if (max_len > m->cfg.max_position_embeddings)
            fprintf(stderr, "pdq eval: --max-len %d exceeds the model's max_position_embeddings %d\n", max_len, m->cfg.max_position_embeddings);
        else
            status = run_tasks(tasks, data, limit, hs_tasks, shots, !no_bos, llamacpp, json, samples, tok, &sc, dir);
        pdq_ll_model_free(&lm);
    }
    cli_exec_free(&ex);
    pdq_model_free(m);
    pdq_tokenizer_free(tok);
    return status;
}
