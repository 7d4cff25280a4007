/* pdq verify: the static prefill/decode/append runtime against the reference model recomputing
 * the whole sequence at every step; per-step mean/max |Δlogit|, PEIR and top-1 agreement. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "commands.h"
#include "pdq/file.h"
#include "common.h"
#include "exec_args.h"
#include "dir_defaults.h"
#include "ptq_args.h"
#include "verify_ref.h"
#include "pdq/eval.h"
#include "pdq/quant.h"
#include "pdq/runtime.h"

#define MAX_ROWS 16

static const char *k_usage =
    "usage: pdq verify --model DIR [(--prompt T | --ids \"1 2 3\")... | --text FILE] [--max-seq N] [--steps K (0)]\n"
    "                  [--padding left|right] [--append T | --append-ids \"...\"] [--bucket Q] [--ref DIR]\n"
    "                  [--rope hf|pre_negated_sin] [--scale-fusion none|k_proj] [--layout batched|unrolled]\n"
    "                  [--mask-fill X] [--tol X] [--min-top1 F] [--json FILE] [--threads N] [--mode float|fake|int]\n"
    "  --max-seq defaults to the max_seq of DIR/ptq.json (quantized checkpoints), else 256\n"
    "  no --prompt/--ids: the first lines of --text FILE, or BOS alone\n"
    VERIFY_REF_USAGE
    "  --tol X              limit on max |dlogit| (default 1e-4 when the graphs are float and run the reference's\n"
    "                       weights; otherwise none)\n"
    "  --min-top1 F         least top-1 agreement with the reference (default 0.9 when there is no --tol default)\n"
    "  the last line says PASS or FAIL (exit status 1) with the tolerance and top-1 x/y\n"
    EXEC_ARGS_USAGE;

typedef struct {
    cJSON *steps;
    double worst;
    int top1, n;
} report;

static void record(report *r, int step, const char *kind, int row, const pdq_logit_cmp *c) {
    printf("step %3d  %-7s  row %d  mean|d| %.3e  max|d| %.3e  peir %.3e  top1 %s\n", step, kind, row,
           c->mean_abs_diff, c->max_abs_diff, c->peir, c->top1_agree ? "yes" : "NO");
    if (c->max_abs_diff > r->worst || c->max_abs_diff != c->max_abs_diff) r->worst = c->max_abs_diff;
    r->top1 += c->top1_agree;
    r->n++;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "step", step);
    cJSON_AddStringToObject(o, "kind", kind);
    cJSON_AddNumberToObject(o, "row", row);
    cJSON_AddNumberToObject(o, "mean_abs_diff", c->mean_abs_diff);
    cJSON_AddNumberToObject(o, "max_abs_diff", c->max_abs_diff);
    cJSON_AddNumberToObject(o, "peir", c->peir);
    cJSON_AddBoolToObject(o, "top1_agree", c->top1_agree);
    cJSON_AddItemToArray(r->steps, o);
}

/* Reference logits for every position of a whole sequence, recomputed from scratch. */
static float *reference(const pdq_model *m, const int32_t *ids, int n, pdq_status *st) {
    float *l = malloc(sizeof(float) * (size_t)n * m->cfg.vocab_size);
    if (!l) { pdq_fail(st, PDQ_ERR_NOMEM, "reference logits"); return NULL; }
    if (pdq_model_forward(m, NULL, 1, n, ids, NULL, NULL, l, 0, st) != PDQ_OK) { free(l); return NULL; }
    return l;
}

static int write_json(const char *path, report *r, const char *ref, double tol, double min_top1, int pass) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddItemToObject(root, "steps", r->steps);
    cJSON_AddNumberToObject(root, "max_abs_diff", r->worst);
    cJSON_AddStringToObject(root, "reference", ref);
    cJSON_AddNumberToObject(root, "top1_agree", r->top1);
    cJSON_AddNumberToObject(root, "steps_compared", r->n);
    if (tol >= 0) cJSON_AddNumberToObject(root, "tol", tol);
    if (min_top1 > 0) cJSON_AddNumberToObject(root, "min_top1", min_top1);
    cJSON_AddBoolToObject(root, "pass", pass);
    char *s = cJSON_Print(root);
    r->steps = NULL;
    pdq_status st = {0};
    int ok = pdq_file_write_text(path, s, 1, NULL, &st) == PDQ_OK; /* atomic: pdq/file.h */
    free(s);
    cJSON_Delete(root);
    if (!ok) fprintf(stderr, "pdq verify: %s\n", st.msg);
    return ok ? 0 : 1;
}

int cmd_verify(int argc, char **argv) {
    for (int i = 0; i < argc; i++) /* exported files: circle_cli.c */
        if (strcmp(argv[i], "--circle") == 0) return cmd_verify_circle(argc, argv);
    pdq_args a;
    args_init(&a, "verify", argc, argv);
    if (args_flag(&a, "--help")) { fputs(k_usage, stdout); return 0; }
    const char *dir = args_required(&a, "--model");
    const char *prompts[MAX_ROWS], *idss[MAX_ROWS];
    int n_prompts = args_all(&a, "--prompt", prompts, MAX_ROWS);
    int n_idss = args_all(&a, "--ids", idss, MAX_ROWS);
    int max_seq = (int)args_int_range(&a, "--max-seq", 0, 2, ARGS_MAX_SEQ_LIMIT);
    int steps = (int)args_int_range(&a, "--steps", 0, 0, ARGS_MAX_SEQ_LIMIT);
    const char *app = args_str(&a, "--append"), *app_ids = args_str(&a, "--append-ids");
    int bucket = (int)args_int_range(&a, "--bucket", 0, 1, ARGS_MAX_SEQ_LIMIT);
    pdq_static_opts o;
    pdq_padding pad;
    int opts_given = cli_static_opts(&a, &o, &pad);
    double fill = args_real(&a, "--mask-fill", -120.0, -HUGE_VAL, 0, ARGS_HI_OPEN);
    double tol = args_real(&a, "--tol", -1.0, 0, HUGE_VAL, ARGS_CLOSED);
    double min_top1 = args_real(&a, "--min-top1", -1.0, 0, 1, ARGS_CLOSED);
    const char *json_path = args_str(&a, "--json"), *ref_dir = args_str(&a, "--ref");
    const char *text_file = args_str(&a, "--text");
    if (!text_file) text_file = args_str(&a, "--eval");
    int threads = args_threads(&a);
    cli_exec ex;
    if (cli_exec_read(&a, &ex)) return ARGS_USAGE_EXIT;
    if (n_prompts + n_idss > MAX_ROWS) args_error(&a, "%d rows given, at most %d", n_prompts + n_idss, MAX_ROWS);
    if (text_file && n_prompts + n_idss) args_error(&a, "--text gives the default prompts: it excludes --prompt/--ids");
    if (app && app_ids) args_error(&a, "--append and --append-ids exclude each other: give one");
    if (args_finish(&a)) return ARGS_USAGE_EXIT;
    if (opts_given < 0) return ARGS_USAGE_EXIT;
    if (json_path && cli_check_out_file("verify", "--json", json_path)) return 1;
    o.mask_fill = (float)fill;
    /* a quantized dir runs with the max_seq it was calibrated with unless told otherwise */
    max_seq = cli_resolve_max_seq(dir, max_seq);
    if (bucket >= max_seq) {
        fprintf(stderr, "pdq verify: --bucket %d must be below max_seq %d\n", bucket, max_seq);
        return ARGS_USAGE_EXIT;
    }

    int B = n_prompts + n_idss, status = 1;
    pdq_status st = {0};
    pdq_tokenizer *tok = NULL;
    pdq_model *m = NULL;
    pdq_rt *rt = NULL;
    pdq_ptq *ptq = NULL;
    int32_t *seq[MAX_ROWS] = {0}, *ext = NULL;
    int len[MAX_ROWS] = {0};
    long n_ext = 0;
    float *logits = NULL, *all = NULL;
    report rep = {cJSON_CreateArray(), 0.0, 0, 0};
    verify_ref ref = {0};
    if ((n_prompts || app || text_file) && !(tok = cli_load_tokenizer("verify", dir))) goto done;
    if (!B) { /* no prompt given: the model's own domain (--text), or BOS alone */
        pdq_config cfg;
        if (!tok) { pdq_status ig = {0}; if (pdq_tokenizer_load(dir, &tok, &ig) != PDQ_OK) tok = NULL; }
        if (pdq_config_load(dir, &cfg, &st) != PDQ_OK) { fprintf(stderr, "pdq verify: %s\n", st.msg); goto done; }
        int32_t *rows[4];
        int lens4[4], room = max_seq - steps - 1 - (app ? 8 : 0);
        if ((B = verify_default_prompts("verify", text_file, tok, &cfg, room, rows, lens4, 4)) < 0) { B = 0; goto done; }
        for (int b = 0; b < B; b++) {
            seq[b] = realloc(rows[b], sizeof(int32_t) * (size_t)(lens4[b] + steps + max_seq + 1));
            if (!seq[b]) { free(rows[b]); fprintf(stderr, "pdq verify: out of memory\n"); goto done; }
            len[b] = lens4[b];
        }
    }
    for (int b = 0; b < n_prompts + n_idss; b++) {
        int32_t *ids = NULL;
        long n;
        if (b < n_prompts) {
            size_t nn;
            if (pdq_tokenizer_encode(tok, prompts[b], strlen(prompts[b]), 1, &ids, &nn, &st) != PDQ_OK) {
                fprintf(stderr, "pdq verify: %s\n", st.msg);
                goto done;
            }
            n = (long)nn;
        } else if ((n = cli_parse_ids("verify", idss[b - n_prompts], &ids)) < 0) {
            goto done;
        }
        if (n == 0) { fprintf(stderr, "pdq verify: row %d is empty\n", b); free(ids); goto done; }
        /* room for the prompt, the decode steps and the appended turn */
        seq[b] = malloc(sizeof(int32_t) * (size_t)(n + steps + max_seq + 1));
        if (!seq[b]) { free(ids); fprintf(stderr, "pdq verify: out of memory\n"); goto done; }
        memcpy(seq[b], ids, sizeof(int32_t) * (size_t)n);
        len[b] = (int)n;
        free(ids);
    }
    if (app) {
        size_t nn;
        if (pdq_tokenizer_encode(tok, app, strlen(app), 0, &ext, &nn, &st) != PDQ_OK) {
            fprintf(stderr, "pdq verify: %s\n", st.msg);
            goto done;
        }
        n_ext = (long)nn;
    } else if (app_ids && (n_ext = cli_parse_ids("verify", app_ids, &ext)) < 0) {
        goto done;
    }
    if ((app || app_ids) && n_ext == 0) { fprintf(stderr, "pdq verify: the appended turn is empty\n"); goto done; }
    /* every token fed (prompt, one per decode step, the appended turn) needs a cache slot: say so
     * before loading anything rather than at the step that overflows */
    for (int b = 0; b < B; b++)
        if (len[b] + steps + n_ext > max_seq) {
            if (n_ext)
                fprintf(stderr, "pdq verify: row %d: %d prompt tokens + %d steps + the appended turn of %ld tokens exceed max_seq %d\n",
                        b, len[b], steps, n_ext, max_seq);
            else
                fprintf(stderr, "pdq verify: row %d: %d prompt tokens + %d steps exceed max_seq %d\n", b, len[b], steps, max_seq);
            goto done;
        }
    if (!(m = cli_load_model("verify", dir, threads))) goto done;
    int V = m->cfg.vocab_size;
    for (int b = 0; b < B; b++) { /* before building any graph */
        char what[32];
        snprintf(what, sizeof what, "row %d", b);
        if (cli_check_ids("verify", what, seq[b], len[b], V)) goto done;
    }
    if (cli_check_ids("verify", "the appended turn", ext, n_ext, V)) goto done;
    /* A quantized checkpoint with ptq.json runs fake-quant graphs (pdq/ptq.h). */
    if (cli_static_runtime("verify", dir, m, B, max_seq, &o, opts_given > 0 || fill != -120.0, &rt, &ptq) ||
        cli_exec_rt(&ex, "verify", dir, rt, ptq, threads))
        goto done;
    if (verify_ref_open("verify", dir, ref_dir, m, threads, &ref)) goto done;
    /* float graphs on the reference's own weights must match it to rounding; quantized activations,
     * or quantized weights against the original model, are judged by top-1 */
    int quantized = ptq || (ref_dir && pdq_quant_is_checkpoint(dir));
    printf("reference: %s\n", ref.name);
    logits = malloc(sizeof(float) * (size_t)B * V);
    if (!logits) { fprintf(stderr, "pdq verify: out of memory\n"); goto done; }

    if (pdq_rt_prefill_rows(rt, B, (const int32_t *const *)seq, len, pad, logits, &st) != PDQ_OK) {
        fprintf(stderr, "pdq verify: prefill: %s\n", st.msg);
        goto done;
    }
    for (int step = 0; step <= steps; step++) {
        if (step > 0) {
            int32_t next[MAX_ROWS];
            for (int b = 0; b < B; b++) seq[b][len[b]++] = next[b] = pdq_argmax(logits + (size_t)b * V, V);
            if (pdq_rt_decode(rt, B, next, logits, &st) != PDQ_OK) {
                fprintf(stderr, "pdq verify: decode step %d: %s\n", step, st.msg);
                goto done;
            }
        }
        for (int b = 0; b < B; b++) {
            float *rl = reference(ref.model, seq[b], len[b], &st);
            if (!rl) { fprintf(stderr, "pdq verify: reference: %s\n", st.msg); goto done; }
            pdq_logit_cmp c;
            pdq_compare_logits(rl + (size_t)(len[b] - 1) * V, logits + (size_t)b * V, V, &c);
            record(&rep, step, step ? "decode" : "prefill", b, &c);
            free(rl);
        }
    }
    if (n_ext > 0) {
        /* Every token of seq is in the cache already (decode fed them); the turn follows. */
        int T = (int)n_ext;
        int32_t *blk = malloc(sizeof(int32_t) * (size_t)B * T);
        all = malloc(sizeof(float) * (size_t)B * T * V);
        if (!blk || !all) { free(blk); fprintf(stderr, "pdq verify: out of memory\n"); goto done; }
        for (int b = 0; b < B; b++) memcpy(blk + (size_t)b * T, ext, sizeof(int32_t) * (size_t)T);
        int Q = bucket > 0 ? bucket : (T < 8 ? T : 8);
        pdq_code rc = pdq_rt_append(rt, B, T, blk, NULL, Q, logits, all, &st);
        if (rc != PDQ_OK) { free(blk); fprintf(stderr, "pdq verify: append: %s\n", st.msg); goto done; }
        for (int b = 0; b < B; b++) {
            memcpy(seq[b] + len[b], blk + (size_t)b * T, sizeof(int32_t) * (size_t)T);
            len[b] += T;
            float *rl = reference(ref.model, seq[b], len[b], &st);
            if (!rl) { free(blk); fprintf(stderr, "pdq verify: reference: %s\n", st.msg); goto done; }
            for (int t = 0; t < T; t++) {
                pdq_logit_cmp c;
                pdq_compare_logits(rl + (size_t)(len[b] - T + t) * V, all + ((size_t)b * T + t) * V, V, &c);
                record(&rep, steps + 1 + t, "append", b, &c);
            }
            free(rl);
        }
        free(blk);
    }
    printf("max |dlogit| over all steps: %.3e\n", rep.worst);
    if (tol < 0 && !quantized) tol = 1e-4;
    if (min_top1 < 0 && quantized) min_top1 = 0.9;
    int tol_ok = tol < 0 || rep.worst <= tol, top1_ok = min_top1 <= 0 || rep.top1 >= min_top1 * rep.n - 1e-9;
    if (!tol_ok) fprintf(stderr, "pdq verify: max |dlogit| %.3e exceeds --tol %.3e\n", rep.worst, tol);
    if (!top1_ok) fprintf(stderr, "pdq verify: top-1 agreement %d/%d is below --min-top1 %.3g\n", rep.top1, rep.n, min_top1);
    char lim[64] = "no limit";
    if (tol >= 0) snprintf(lim, sizeof lim, "tol %.1e", tol);
    printf("%s  max |dlogit| %.3e (%s), top-1 %d/%d", tol_ok && top1_ok ? "PASS" : "FAIL", rep.worst, lim, rep.top1, rep.n);
    if (min_top1 > 0) printf(" (min %.3g)", min_top1);
    printf(" vs %s\n", ref.name);
    status = tol_ok && top1_ok ? 0 : 1;
    if (json_path && write_json(json_path, &rep, ref.name, tol, min_top1, status == 0)) status = 1;
done:
    verify_ref_close(&ref);
    cJSON_Delete(rep.steps);
    for (int b = 0; b < B; b++) free(seq[b]);
    free(ext);
    free(logits);
    free(all);
    pdq_rt_free(rt);
    cli_exec_free(&ex);
    pdq_ptq_free(ptq);
    pdq_model_free(m);
    pdq_tokenizer_free(tok);
    return status;
}
