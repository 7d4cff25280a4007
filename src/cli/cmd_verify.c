/* pdq verify: the static prefill/decode/append runtime against the reference model recomputing
 * the whole sequence at every step; per-step mean/max |Δlogit|, PEIR and top-1 agreement. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "commands.h"
#include "common.h"
#include "dir_defaults.h"
#include "ptq_args.h"
#include "pdq/eval.h"
#include "pdq/runtime.h"

#define MAX_ROWS 16

static const char *k_usage =
    "usage: pdq verify --model DIR (--prompt T | --ids \"1 2 3\")... [--max-seq N] [--steps K (0)]\n"
    "                  [--padding left|right] [--append T | --append-ids \"...\"] [--bucket Q]\n"
    "                  [--rope hf|pre_negated_sin] [--scale-fusion none|k_proj] [--layout batched|unrolled]\n"
    "                  [--mask-fill X] [--tol X] [--json FILE] [--threads N]\n"
    "  --max-seq defaults to the max_seq of DIR/ptq.json (quantized checkpoints), else 256\n";

typedef struct {
    cJSON *steps;
    double worst;
} report;

static void record(report *r, int step, const char *kind, int row, const pdq_logit_cmp *c) {
    printf("step %3d  %-7s  row %d  mean|d| %.3e  max|d| %.3e  peir %.3e  top1 %s\n", step, kind, row,
           c->mean_abs_diff, c->max_abs_diff, c->peir, c->top1_agree ? "yes" : "NO");
    if (c->max_abs_diff > r->worst || c->max_abs_diff != c->max_abs_diff) r->worst = c->max_abs_diff;
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

static int write_json(const char *path, report *r) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddItemToObject(root, "steps", r->steps);
    cJSON_AddNumberToObject(root, "max_abs_diff", r->worst);
    char *s = cJSON_Print(root);
    r->steps = NULL;
    FILE *f = fopen(path, "w");
    int ok = f && s && fputs(s, f) >= 0 && fputc('\n', f) != EOF;
    if (f && fclose(f)) ok = 0;
    free(s);
    cJSON_Delete(root);
    if (!ok) fprintf(stderr, "pdq verify: cannot write %s\n", path);
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
    const char *json_path = args_str(&a, "--json");
    int threads = args_threads(&a);
    if (n_prompts + n_idss == 0) args_error(&a, "one of --prompt or --ids is required (repeatable, %d rows at most)", MAX_ROWS);
    else if (n_prompts + n_idss > MAX_ROWS) args_error(&a, "%d rows given, at most %d", n_prompts + n_idss, MAX_ROWS);
    if (app && app_ids) args_error(&a, "--append and --append-ids exclude each other: give one");
    if (args_finish(&a)) return ARGS_USAGE_EXIT;
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
    report rep = {cJSON_CreateArray(), 0.0};
    if ((n_prompts || app) && !(tok = cli_load_tokenizer("verify", dir))) goto done;
    for (int b = 0; b < B; b++) {
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
    if (cli_static_runtime("verify", dir, m, B, max_seq, &o, opts_given > 0 || fill != -120.0, &rt, &ptq))
        goto done;
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
            float *ref = reference(m, seq[b], len[b], &st);
            if (!ref) { fprintf(stderr, "pdq verify: reference: %s\n", st.msg); goto done; }
            pdq_logit_cmp c;
            pdq_compare_logits(ref + (size_t)(len[b] - 1) * V, logits + (size_t)b * V, V, &c);
            record(&rep, step, step ? "decode" : "prefill", b, &c);
            free(ref);
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
            float *ref = reference(m, seq[b], len[b], &st);
            if (!ref) { free(blk); fprintf(stderr, "pdq verify: reference: %s\n", st.msg); goto done; }
            for (int t = 0; t < T; t++) {
                pdq_logit_cmp c;
                pdq_compare_logits(ref + (size_t)(len[b] - T + t) * V, all + ((size_t)b * T + t) * V, V, &c);
                record(&rep, steps + 1 + t, "append", b, &c);
            }
            free(ref);
        }
        free(blk);
    }
    printf("max |dlogit| over all steps: %.3e\n", rep.worst);
    status = 0;
    if (json_path && write_json(json_path, &rep)) status = 1;
    if (tol >= 0 && !(rep.worst <= tol)) {
        fprintf(stderr, "pdq verify: max |dlogit| %.3e exceeds --tol %.3e\n", rep.worst, tol);
        status = 1;
    }
done:
    cJSON_Delete(rep.steps);
    for (int b = 0; b < B; b++) free(seq[b]);
    free(ext);
    free(logits);
    free(all);
    pdq_rt_free(rt);
    pdq_ptq_free(ptq);
    pdq_model_free(m);
    pdq_tokenizer_free(tok);
    return status;
}
