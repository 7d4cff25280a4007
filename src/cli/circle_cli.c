/* pdq generate --circle OUTDIR and pdq verify --circle OUTDIR: the external-KV runtime over the
 * exported files (whole-model pair, or --per-layer files). verify runs, step by step on the same
 * greedy tokens, the exported files, the in-memory static runtime of --model with the manifest's
 * graph options (fake-quant when the dir holds ptq.json) and the FP32 reference. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "args.h"
#include "commands.h"
#include "circle/manifest_check.h"
#include "pdq/file.h"
#include "chat_cli.h"
#include "common.h"
#include "exec_args.h"
#include "pdq/circle_export.h"
#include "pdq/eval.h"
#include "pdq/ptq.h"
#include "pdq/sampling.h"
#include "verify_ref.h"
#include "gen_json.h"
#include "pdq/progress.h"

static const char *k_gen_usage =
    "usage: pdq generate --circle OUTDIR [--per-layer] (--prompt T | --ids \"1 2 3\") [--max-new N]\n"
    "                    [--temperature X --top-p P --seed S] [--ignore-eos] [--json] [--threads N] [--mode float|fake|int]\n"
    EXEC_ARGS_USAGE;
static const char *k_ver_usage =
    "usage: pdq verify --circle OUTDIR --model DIR [--prompt T | --ids \"1 2 3\" | --text FILE] [--steps K (32)]\n"
    "                  [--per-layer] [--ref DIR] [--tol X (float 1e-5, quantized 0)] [--json FILE] [--threads N]\n"
    "                  [--mode float|fake|int]\n"
    "  the exported files against the in-memory graphs of --model (within --tol, same tokens: PASS/FAIL)\n"
    "  and against the reference model (reported); both run in the mode\n"
    "  --append T | --append-ids \"...\": after the steps, a turn appended through the export's buckets (the\n"
    "  runtime's plan), every token's logits against the in-memory runtime on the same buckets and the reference\n"
    VERIFY_REF_USAGE EXEC_ARGS_USAGE;

/* Prompt ids from --prompt (tokenizer of tokdir) or --ids. */
static long prompt_ids(const char *cmd, const char *tokdir, const char *prompt, const char *ids_s, int32_t **ids,
                       pdq_tokenizer **tok_out) {
    pdq_status st = {0};
    pdq_tokenizer *tok = NULL;
    if (prompt) {
        if (!(tok = cli_load_tokenizer(cmd, tokdir))) return -1;
        size_t n;
        if (pdq_tokenizer_encode(tok, prompt, strlen(prompt), 1, ids, &n, &st) != PDQ_OK) {
            fprintf(stderr, "pdq %s: %s\n", cmd, st.msg);
            pdq_tokenizer_free(tok);
            return -1;
        }
        if (tok_out) *tok_out = tok;
        else pdq_tokenizer_free(tok);
        return (long)n;
    }
    long n = cli_parse_ids(cmd, ids_s, ids);
    if (n >= 0 && tok_out && pdq_tokenizer_load(tokdir, &tok, &st) == PDQ_OK) *tok_out = tok;
    return n;
}

static int argmax(const float *x, int n) {
    int b = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[b]) b = i;
    return b;
}

int cmd_generate_circle(int argc, char **argv) {
    pdq_args a;
    args_init(&a, "generate", argc, argv);
    if (args_flag(&a, "--help")) { fputs(k_gen_usage, stdout); return 0; }
    const char *dir = args_required(&a, "--circle"), *prompt = args_str(&a, "--prompt"), *ids_s = args_str(&a, "--ids");
    int per_layer = args_flag(&a, "--per-layer");
    int max_new = (int)args_int_range(&a, "--max-new", 32, 0, CLI_MAX_NEW_LIMIT);
    pdq_sampler smp;
    double temp = args_real(&a, "--temperature", 0.0, 0, HUGE_VAL, ARGS_CLOSED);
    double top_p = args_real(&a, "--top-p", 1.0, 0, 1, ARGS_LO_OPEN);
    pdq_sampler_init(&smp, temp, top_p, (unsigned long long)args_int_range(&a, "--seed", 0, 0, LONG_MAX));
    int ignore_eos = args_flag(&a, "--ignore-eos"), json = args_flag(&a, "--json");
    int threads = args_threads(&a);
    cli_exec ex;
    if (cli_exec_read(&a, &ex)) return ARGS_USAGE_EXIT;
    args_one_of(&a, "--prompt", prompt, "--ids", ids_s);
    if (args_finish(&a)) return ARGS_USAGE_EXIT;
    pdq_status st = {0};
    pdq_tokenizer *tok = NULL;
    int32_t *ids = NULL;
    long n = prompt_ids("generate", dir, prompt, ids_s, &ids, &tok);
    if (n <= 0) { if (n == 0) fprintf(stderr, "pdq generate: empty prompt\n"); free(ids); pdq_tokenizer_free(tok); return 1; }
    pdq_crt *rt = NULL;
    double t_load = pdq_now(), t_pre, t_dec = 0;
    long n_dec = 0;
    pdq_exec_opts eo;
    if (cli_exec_opts(&ex, "generate", threads, &eo) || pdq_crt_open_opts(dir, !per_layer, &eo, &rt, &st) != PDQ_OK) {
        if (st.code) fprintf(stderr, "pdq generate: %s\n", st.msg);
        cli_exec_free(&ex);
        free(ids);
        pdq_tokenizer_free(tok);
        return 1;
    }
    t_load = pdq_now() - t_load;
    int V = pdq_crt_vocab(rt), S = pdq_crt_max_seq(rt), status = 1;
    float *logits = malloc(sizeof(float) * (size_t)V);
    int32_t *all = malloc(sizeof(int32_t) * (size_t)(n + max_new + 1));
    int n_out = 0;
    if (!logits || !all) { fprintf(stderr, "pdq generate: out of memory\n"); goto done; }
    memcpy(all, ids, sizeof(int32_t) * (size_t)n);
    t_pre = pdq_now();
    if (pdq_crt_prefill(rt, ids, (int)n, logits, &st) != PDQ_OK) { fprintf(stderr, "pdq generate: %s\n", st.msg); goto done; }
    t_pre = pdq_now() - t_pre;
    /* eos from the export's copies of config.json and generation_config.json */
    pdq_config cfg;
    pdq_stop_ids stop = {.n = 0};
    if (pdq_config_load(dir, &cfg, &st) == PDQ_OK && cli_stop_ids(dir, &cfg, &stop, &st)) {
        fprintf(stderr, "pdq generate: %s\n", st.msg);
        goto done;
    }
    for (int i = 0; i < max_new; i++) {
        int32_t next = (int32_t)pdq_sample(&smp, logits, V);
        all[n + n_out++] = next;
        if ((pdq_stop_ids_has(&stop, next) && !ignore_eos) || i + 1 == max_new) break;
        if (n + n_out >= S) { fprintf(stderr, "pdq generate: max_seq %d reached\n", S); break; }
        double t1 = pdq_now();
        if (pdq_crt_decode(rt, next, logits, &st) != PDQ_OK) { fprintf(stderr, "pdq generate: %s\n", st.msg); goto done; }
        t_dec += pdq_now() - t1;
        n_dec++;
    }
    if (json || !tok) {
        cJSON *o = cJSON_CreateObject();
        gen_json_row(o, tok, all, (int)n, all + n, n_out);
        gen_json_timing(o, t_load, t_pre, n, t_dec, n_dec, n_out);
        gen_json_print(o);
    } else {
        char *text = NULL;
        if (pdq_tokenizer_decode(tok, all, (size_t)(n + n_out), 1, &text, &st) != PDQ_OK) {
            fprintf(stderr, "pdq generate: %s (the export's vocab_size is %d, the tokenizer has %d tokens)\n", st.msg,
                    V, pdq_tokenizer_vocab_size(tok));
            goto done;
        }
        printf("%s\n", text);
        free(text);
    }
    status = 0;
done:
    free(logits);
    free(all);
    free(ids);
    pdq_tokenizer_free(tok);
    pdq_crt_free(rt);
    cli_exec_free(&ex);
    return status;
}

/* Graph options, max_seq and quantized flag from OUTDIR/manifest.json. */
static int read_manifest(const char *dir, pdq_static_opts *o, int *max_seq, int *quant, int *hybrid) {
    char path[4096];
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    size_t len;
    char *txt = cli_read_text("verify", path, &len);
    if (!txt) return -1;
    cJSON *r = cJSON_Parse(txt);
    free(txt);
    if (!r) { fprintf(stderr, "pdq verify: %s is not JSON\n", path); return -1; }
    pdq_manifest mf;
    pdq_status st = {0};
    pdq_code rc = pdq_manifest_check(r, path, &mf, &st); /* every field in range before use */
    const cJSON *ft = cJSON_GetObjectItemCaseSensitive(r, "file_tag");
    *hybrid = cJSON_IsString(ft) && !strncmp(ft->valuestring, ".w", 2); /* weights only: float in-memory runtime */
    cJSON_Delete(r);
    if (rc) {
        fprintf(stderr, "pdq verify: %s\n", st.msg);
        return -1;
    }
    pdq_static_opts_default(o);
    *max_seq = mf.max_seq;
    *quant = mf.quantized;
    o->rope = (pdq_rope_conv)mf.rope;
    o->scale = (pdq_scale_fusion)mf.scale_fusion;
    o->layout = (pdq_attn_layout)mf.layout;
    o->mask_fill = (float)mf.fill;
    return 0;
}

/* The appended turn: the last greedy token (not yet fed) then ext[n]. Circle: pdq_crt_append (its
 * bucket plan); in memory: the same plan, bucket by bucket; FP32: the reference continuing its
 * cache. Every token is compared with FP32; with the in-memory runtime every token for whole-model
 * files (both run the head over the bucket's rows) and each bucket's last token for per-layer files
 * (lm_head takes one row, as the in-memory runtime's last-token head). Non-zero on a run failure. */
static int append_turn(pdq_crt *crt, pdq_rt *rt, int per_layer, pdq_model *m, pdq_kvcache *kv, const int32_t *ext,
                       int n_ext, const int32_t *last_tok, int V, cJSON *arr, double *worst_mem, double *worst_ref, int *mism,
                       int *top1_ref, pdq_status *st) {
    int T = n_ext + 1, S = pdq_crt_max_seq(crt), status = 1;
    int32_t *blk = malloc(sizeof(int32_t) * (size_t)T);
    int *plan = malloc(sizeof(int) * (size_t)(S + 1));
    float *a = malloc(sizeof(float) * (size_t)T * V * 3), *b = a ? a + (size_t)T * V : NULL, *r = b ? b + (size_t)T * V : NULL;
    if (!blk || !plan || !a) { pdq_fail(st, PDQ_ERR_NOMEM, "append turn"); goto out; }
    blk[0] = *last_tok;
    memcpy(blk + 1, ext, sizeof(int32_t) * (size_t)n_ext);
    int np = pdq_crt_plan(crt, T, plan, S + 1);
    if (np < 0) { pdq_fail(st, PDQ_ERR_LIMIT, "no bucket plan for %d tokens", T); goto out; }
    printf("append %d tokens at length %d: buckets", T, pdq_crt_len(crt));
    for (int i = 0; i < np; i++) printf(" %d", plan[i]);
    printf("\n");
    if (pdq_crt_append(crt, blk, T, NULL, a, st) != PDQ_OK) goto out;
    int *cmp_mem = calloc((size_t)T, sizeof(int));
    if (!cmp_mem) { pdq_fail(st, PDQ_ERR_NOMEM, "append turn"); goto out; }
    for (int i = 0, at = 0; i < np; at += plan[i++]) {
        float *last = b + (size_t)(at + plan[i] - 1) * V;
        pdq_code rc = pdq_rt_append(rt, 1, plan[i], blk + at, NULL, plan[i], per_layer ? last : NULL,
                                    per_layer ? NULL : b + (size_t)at * V, st);
        if (rc != PDQ_OK) { free(cmp_mem); goto out; }
        for (int t = per_layer ? at + plan[i] - 1 : at; t < at + plan[i]; t++) cmp_mem[t] = 1;
    }
    if (pdq_model_forward(m, kv, 1, T, blk, NULL, NULL, r, 0, st) != PDQ_OK) { free(cmp_mem); goto out; }
    for (int t = 0; t < T; t++) {
        pdq_logit_cmp cm, cr;
        const float *at = a + (size_t)t * V, *bt = b + (size_t)t * V, *rf = r + (size_t)t * V;
        pdq_compare_logits(cmp_mem[t] ? bt : at, at, V, &cm);
        pdq_compare_logits(rf, at, V, &cr);
        int ta = argmax(at, V), tb = cmp_mem[t] ? argmax(bt, V) : ta;
        *mism += ta != tb;
        *top1_ref += cr.top1_agree;
        if (cm.max_abs_diff > *worst_mem || cm.max_abs_diff != cm.max_abs_diff) *worst_mem = cm.max_abs_diff;
        if (cr.max_abs_diff > *worst_ref) *worst_ref = cr.max_abs_diff;
        if (cmp_mem[t])
            printf("append %3d  vs in-memory max|d| %.3e  token %s   vs fp32 max|d| %.3e  top1 %s\n", t, cm.max_abs_diff,
                   ta == tb ? "same" : "DIFF", cr.max_abs_diff, cr.top1_agree ? "yes" : "no");
        else
            printf("append %3d  vs in-memory (inside a bucket)        vs fp32 max|d| %.3e  top1 %s\n", t, cr.max_abs_diff,
                   cr.top1_agree ? "yes" : "no");
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "kind", "append");
        cJSON_AddNumberToObject(o, "index", t);
        if (cmp_mem[t]) cJSON_AddNumberToObject(o, "max_abs_diff_in_memory", cm.max_abs_diff);
        if (cmp_mem[t]) cJSON_AddBoolToObject(o, "same_token", ta == tb);
        cJSON_AddNumberToObject(o, "max_abs_diff_fp32", cr.max_abs_diff);
        cJSON_AddItemToArray(arr, o);
    }
    free(cmp_mem);
    status = 0;
out:
    free(blk);
    free(plan);
    free(a);
    return status;
}

int cmd_verify_circle(int argc, char **argv) {
    pdq_args a;
    args_init(&a, "verify", argc, argv);
    if (args_flag(&a, "--help")) { fputs(k_ver_usage, stdout); return 0; }
    const char *dir = args_required(&a, "--circle"), *mdir = args_required(&a, "--model");
    const char *prompt = args_str(&a, "--prompt"), *ids_s = args_str(&a, "--ids"), *json_path = args_str(&a, "--json");
    const char *ref_dir = args_str(&a, "--ref"), *text_file = args_str(&a, "--text");
    if (!text_file) text_file = args_str(&a, "--eval");
    int steps = (int)args_int_range(&a, "--steps", 32, 0, ARGS_MAX_SEQ_LIMIT), per_layer = args_flag(&a, "--per-layer");
    const char *app = args_str(&a, "--append"), *app_ids = args_str(&a, "--append-ids");
    double tol = args_real(&a, "--tol", -1, 0, HUGE_VAL, ARGS_CLOSED);
    int threads = args_threads(&a);
    cli_exec ex;
    if (cli_exec_read(&a, &ex)) return ARGS_USAGE_EXIT;
    if (prompt && ids_s) args_error(&a, "--prompt and --ids exclude each other: give one");
    if (text_file && (prompt || ids_s)) args_error(&a, "--text gives the default prompt: it excludes --prompt/--ids");
    if (app && app_ids) args_error(&a, "--append and --append-ids exclude each other: give one");
    if (args_finish(&a)) return ARGS_USAGE_EXIT;
    if (json_path && cli_check_out_file("verify", "--json", json_path)) return 1;
    pdq_static_opts so;
    int S = 0, quant = 0, hybrid = 0;
    if (read_manifest(dir, &so, &S, &quant, &hybrid)) return 1;
    if (tol < 0) tol = quant ? 0.0 : 1e-5;
    int32_t *ids = NULL;
    long n;
    if (prompt || ids_s) {
        n = prompt_ids("verify", mdir, prompt, ids_s, &ids, NULL);
    } else { /* one row: the first line of --text, or BOS alone */
        pdq_tokenizer *tok = NULL;
        pdq_status ig = {0};
        pdq_config cfg;
        if (pdq_tokenizer_load(mdir, &tok, &ig) != PDQ_OK) tok = NULL;
        int len1 = 0;
        n = pdq_config_load(mdir, &cfg, &ig) == PDQ_OK ? verify_default_prompts("verify", text_file, tok, &cfg, S - steps, &ids, &len1, 1) : -1;
        if (n < 0 && ig.code) fprintf(stderr, "pdq verify: %s\n", ig.msg);
        if (n > 0) n = len1;
        pdq_tokenizer_free(tok);
    }
    if (n <= 0) { if (n == 0) fprintf(stderr, "pdq verify: empty prompt\n"); free(ids); return 1; }
    int32_t *ext = NULL;
    long n_ext = 0;
    if (app || app_ids) {
        n_ext = prompt_ids("verify", mdir, app, app_ids, &ext, NULL);
        if (n_ext > 0 && app && ext[0] == 1) { memmove(ext, ext + 1, sizeof(int32_t) * (size_t)(n_ext - 1)); n_ext--; } /* no BOS mid-sequence */
        if (n_ext <= 0) { fprintf(stderr, "pdq verify: the appended turn is empty\n"); free(ext); free(ids); return 1; }
    }
    if (n + steps + 1 + n_ext > S) {
        fprintf(stderr, "pdq verify: %ld prompt tokens + %d steps + %ld appended exceed the export's max_seq %d\n", n, steps,
                n_ext + (n_ext > 0), S);
        free(ids);
        free(ext);
        return 1;
    }
    pdq_model *m = cli_load_model("verify", mdir, threads);
    if (!m) { free(ids); return 1; }
    pdq_status st = {0};
    pdq_crt *crt = NULL;
    pdq_rt *rt = NULL;
    pdq_ptq *ptq = NULL;
    pdq_kvcache kv = {0};
    verify_ref ref = {0};
    int V = m->cfg.vocab_size, status = 1, mism = 0;
    float *a_l = malloc(sizeof(float) * (size_t)V * 3), *b_l = a_l + V, *r_l = b_l + V;
    int32_t *seq = malloc(sizeof(int32_t) * (size_t)(n + steps + 1));
    if (!n_ext) { free(ext); ext = NULL; }
    float *all_l = malloc(sizeof(float) * (size_t)V * (size_t)n);
    cJSON *root = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(root, "steps");
    double worst_mem = 0, worst_ref = 0;
    int top1_ref = 0;
    if (!a_l || !seq || !all_l) { fprintf(stderr, "pdq verify: out of memory\n"); goto done; }
    memcpy(seq, ids, sizeof(int32_t) * (size_t)n);
    if (verify_ref_open("verify", mdir, ref_dir, m, threads, &ref)) goto done;
    printf("reference: %s\n", ref.name);
    pdq_exec_opts eo;
    if (cli_exec_opts(&ex, "verify", threads, &eo)) goto done;
    if (pdq_crt_open_opts(dir, !per_layer, &eo, &crt, &st) != PDQ_OK ||
        (hybrid ? pdq_rt_create(m, 1, S, &so, &rt, &st) : pdq_ptq_open_runtime(m, mdir, 1, S, &so, &rt, &ptq, &st)) != PDQ_OK ||
        pdq_kvcache_init(&kv, &m->cfg, 1, (int)(n + steps + n_ext) + 2, &st) != PDQ_OK) {
        fprintf(stderr, "pdq verify: %s\n", st.msg);
        goto done;
    }
    if (quant && !ptq) fprintf(stderr, "pdq verify: warning: quantized export but %s has no ptq.json\n", mdir);
    if (cli_exec_rt(&ex, "verify", mdir, rt, ptq, threads)) goto done;
    int len = (int)n;
    for (int step = 0; step <= steps; step++) {
        pdq_code rc;
        if (step == 0) {
            rc = pdq_crt_prefill(crt, seq, len, a_l, &st);
            /* the whole-model prefill graph runs the head on all max_seq rows: compare with the
             * in-memory head over all rows too (BLAS sums a 1-row product in another order) */
            if (!rc && per_layer) rc = pdq_rt_prefill(rt, 1, len, seq, NULL, PDQ_PAD_RIGHT, b_l, NULL, &st);
            if (!rc && !per_layer) rc = pdq_rt_prefill(rt, 1, len, seq, NULL, PDQ_PAD_RIGHT, NULL, all_l, &st);
            if (!rc && !per_layer) memcpy(b_l, all_l + (size_t)(len - 1) * V, sizeof(float) * (size_t)V);
            if (!rc) rc = pdq_model_forward(ref.model, &kv, 1, len, seq, NULL, NULL, r_l, 1, &st);
        } else {
            rc = pdq_crt_decode(crt, seq[len - 1], a_l, &st);
            if (!rc) rc = pdq_rt_decode(rt, 1, &seq[len - 1], b_l, &st);
            if (!rc) rc = pdq_model_forward(ref.model, &kv, 1, 1, &seq[len - 1], NULL, NULL, r_l, 1, &st);
        }
        if (rc) { fprintf(stderr, "pdq verify: step %d: %s\n", step, st.msg); goto done; }
        pdq_logit_cmp cm, cr;
        pdq_compare_logits(b_l, a_l, V, &cm);
        pdq_compare_logits(r_l, a_l, V, &cr);
        int ta = argmax(a_l, V), tb = argmax(b_l, V);
        mism += ta != tb;
        top1_ref += cr.top1_agree;
        if (cm.max_abs_diff > worst_mem || cm.max_abs_diff != cm.max_abs_diff) worst_mem = cm.max_abs_diff;
        if (cr.max_abs_diff > worst_ref) worst_ref = cr.max_abs_diff;
        printf("step %3d  %-7s  vs in-memory max|d| %.3e  token %s   vs reference max|d| %.3e  top1 %s\n", step,
               step ? "decode" : "prefill", cm.max_abs_diff, ta == tb ? "same" : "DIFF", cr.max_abs_diff,
               cr.top1_agree ? "yes" : "no");
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "step", step);
        cJSON_AddNumberToObject(o, "token", ta);
        cJSON_AddNumberToObject(o, "max_abs_diff_in_memory", cm.max_abs_diff);
        cJSON_AddBoolToObject(o, "same_token", ta == tb);
        cJSON_AddNumberToObject(o, "max_abs_diff_fp32", cr.max_abs_diff);
        cJSON_AddBoolToObject(o, "top1_agree_fp32", cr.top1_agree);
        cJSON_AddItemToArray(arr, o);
        seq[len++] = ta;
    }
    if (n_ext > 0 && append_turn(crt, rt, per_layer, ref.model, &kv, ext, (int)n_ext, &seq[len - 1], V, arr, &worst_mem, &worst_ref, &mism,
                                 &top1_ref, &st)) {
        fprintf(stderr, "pdq verify: append: %s\n", st.msg);
        goto done;
    }
    int n_checked = steps + 1 + (n_ext ? (int)n_ext + 1 : 0);
    printf("circle %s (%s): max |circle - in-memory| %.3e (tol %.1e), tokens %s; max |circle - reference| %.3e, top-1 vs reference %d/%d; mode %s\n",
           per_layer ? "per-layer" : "whole-model", quant ? "quantized" : hybrid ? "hybrid" : "float", worst_mem, tol,
           mism ? "DIFFER" : "identical", worst_ref, top1_ref, n_checked, quant ? pdq_exec_mode_name(ex.mode) : "float");
    printf("%s  max |circle - in-memory| %.3e (tol %.1e), tokens %s; top-1 %d/%d vs %s\n",
           worst_mem <= tol && !mism ? "PASS" : "FAIL", worst_mem, tol, mism ? "differ" : "identical", top1_ref, n_checked,
           ref.name);
    cJSON_AddStringToObject(root, "reference", ref.name);
    cJSON_AddNumberToObject(root, "max_abs_diff_in_memory", worst_mem);
    cJSON_AddNumberToObject(root, "max_abs_diff_fp32", worst_ref);
    cJSON_AddNumberToObject(root, "token_mismatches", mism);
    cJSON_AddNumberToObject(root, "top1_agree_fp32", top1_ref);
    if (json_path) {
        char *s = cJSON_Print(root);
        pdq_status wst = {0};
        if (pdq_file_write_text(json_path, s, 1, NULL, &wst)) { /* atomic: pdq/file.h */
            fprintf(stderr, "pdq verify: %s\n", wst.msg);
            status = 1;
            free(s);
            goto done;
        }
        free(s);
    }
    status = (worst_mem <= tol && !mism) ? 0 : 1;
done:
    cJSON_Delete(root);
    verify_ref_close(&ref);
    pdq_kvcache_free(&kv);
    pdq_ptq_free(ptq);
    pdq_rt_free(rt);
    pdq_crt_free(crt);
    cli_exec_free(&ex);
    pdq_model_free(m);
    free(a_l);
    free(all_l);
    free(seq);
    free(ids);
    free(ext);
    return status;
}
