/* pdq generate --static: generation through the static prefill/decode graphs, one prompt or a
 * batch (--batch-prompts FILE, one prompt per line, rows padded on --padding's side). */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "commands.h"
#include "chat_cli.h"
#include "common.h"
#include "exec_args.h"
#include "dir_defaults.h"
#include "ptq_args.h"
#include "pdq/eval.h"
#include "pdq/runtime.h"
#include "pdq/progress.h"
#include "pdq/sampling.h"
#include "gen_json.h"

#define MAX_ROWS 64

static const char *k_usage =
    "usage: pdq generate --static --model DIR [--max-seq N (ptq.json's, else 256)] (--prompt T | --ids \"1 2\" | --batch-prompts FILE)\n"
    "                    [--max-new N] [--padding left|right] [--temperature X --top-p P --seed S] [--ignore-eos]\n"
    "                    [--rope hf|pre_negated_sin] [--scale-fusion none|k_proj] [--layout batched|unrolled]\n"
    "                    [--json] [--threads N] [--mode float|fake|int]\n" EXEC_ARGS_USAGE;

static void print_ids(const int32_t *ids, int n) {
    for (int i = 0; i < n; i++) printf("%s%d", i ? ", " : "", ids[i]);
}

int cmd_generate_static(int argc, char **argv) {
    pdq_args a;
    args_init(&a, "generate", argc, argv);
    if (args_flag(&a, "--help")) { fputs(k_usage, stdout); return 0; }
    (void)args_flag(&a, "--static");
    const char *dir = args_required(&a, "--model"), *prompt = args_str(&a, "--prompt"), *ids_s = args_str(&a, "--ids");
    const char *file = args_str(&a, "--batch-prompts");
    int max_seq = (int)args_int_range(&a, "--max-seq", 0, 2, ARGS_MAX_SEQ_LIMIT);
    int max_new = (int)args_int_range(&a, "--max-new", 64, 0, CLI_MAX_NEW_LIMIT);
    pdq_sampler smp;
    double temp = args_real(&a, "--temperature", 0.0, 0, HUGE_VAL, ARGS_CLOSED);
    double top_p = args_real(&a, "--top-p", 1.0, 0, 1, ARGS_LO_OPEN);
    unsigned long long seed = (unsigned long long)args_int_range(&a, "--seed", 0, 0, LONG_MAX);
    int ignore_eos = args_flag(&a, "--ignore-eos"), json = args_flag(&a, "--json");
    int threads = args_threads(&a);
    cli_exec ex;
    if (cli_exec_read(&a, &ex)) return ARGS_USAGE_EXIT;
    pdq_static_opts o;
    pdq_padding pad;
    int opts_given = cli_static_opts(&a, &o, &pad);
    if (!!prompt + !!ids_s + !!file != 1) args_error(&a, "give exactly one of --prompt, --ids or --batch-prompts");
    if (args_finish(&a)) return ARGS_USAGE_EXIT;
    max_seq = cli_resolve_max_seq(dir, max_seq); /* ptq.json's when stored, else the default */

    int status = 1, B = 0;
    pdq_status st = {0};
    pdq_tokenizer *tok = NULL;
    pdq_model *m = NULL;
    pdq_rt *rt = NULL;
    pdq_ptq *ptq = NULL;
    int32_t *rows[MAX_ROWS] = {0}, *out = NULL;
    int lens[MAX_ROWS] = {0}, *n_out = NULL, *done_row = NULL;
    float *logits = NULL;
    char *text = NULL;
    if (ids_s) {
        long n = cli_parse_ids("generate", ids_s, &rows[0]);
        if (n <= 0) { if (n == 0) fprintf(stderr, "pdq generate: empty --ids\n"); goto done; }
        lens[0] = (int)n;
        B = 1;
        pdq_status ignore = {0};
        if (pdq_tokenizer_load(dir, &tok, &ignore) != PDQ_OK) tok = NULL;
    } else {
        if (!(tok = cli_load_tokenizer("generate", dir))) goto done;
        size_t tl = 0;
        if (file && !(text = cli_read_text("generate", file, &tl))) goto done;
        char *p = file ? text : (char *)prompt;
        while (p && *p) {
            size_t ll = file ? strcspn(p, "\r\n") : strlen(p);
            if (ll > 0) {
                if (B == MAX_ROWS) { fprintf(stderr, "pdq generate: more than %d prompts\n", MAX_ROWS); goto done; }
                size_t nn;
                if (pdq_tokenizer_encode(tok, p, ll, 1, &rows[B], &nn, &st) != PDQ_OK) {
                    fprintf(stderr, "pdq generate: %s\n", st.msg);
                    goto done;
                }
                lens[B++] = (int)nn;
            }
            p += ll;
            while (*p == '\r' || *p == '\n') p++;
        }
        if (B == 0) { fprintf(stderr, "pdq generate: no prompt\n"); goto done; }
    }
    double t_load = pdq_now(), t_pre = 0, t_dec = 0;
    long n_dec = 0, n_pre = 0;
    if (!(m = cli_load_model("generate", dir, threads))) goto done;
    int V = m->cfg.vocab_size;
    for (int b = 0; b < B; b++) {
        char what[32];
        snprintf(what, sizeof what, "row %d", b);
        if (cli_check_ids("generate", what, rows[b], lens[b], V)) goto done;
    }
    /* A quantized checkpoint with ptq.json runs fake-quant graphs (pdq/ptq.h). */
    if (cli_static_runtime("generate", dir, m, B, max_seq, &o, opts_given > 0, &rt, &ptq) ||
        cli_exec_rt(&ex, "generate", dir, rt, ptq, threads))
        goto done;
    t_load = pdq_now() - t_load;
    logits = malloc(sizeof(float) * (size_t)B * V);
    out = malloc(sizeof(int32_t) * (size_t)B * (max_new + 1));
    n_out = calloc((size_t)B, sizeof(int));
    done_row = calloc((size_t)B, sizeof(int));
    if (!logits || !out || !n_out || !done_row) { fprintf(stderr, "pdq generate: out of memory\n"); goto done; }
    pdq_stop_ids stop;
    if (cli_stop_ids(dir, &m->cfg, &stop, &st)) { fprintf(stderr, "pdq generate: %s\n", st.msg); goto done; }
    t_pre = pdq_now();
    if (pdq_rt_prefill_rows(rt, B, (const int32_t *const *)rows, lens, pad, logits, &st) != PDQ_OK) {
        fprintf(stderr, "pdq generate: %s\n", st.msg);
        goto done;
    }
    t_pre = pdq_now() - t_pre;
    for (int b = 0; b < B; b++) n_pre += lens[b];
    pdq_sampler_init(&smp, temp, top_p, seed);
    for (int i = 0; i < max_new; i++) {
        int32_t next[MAX_ROWS];
        int live = 0;
        for (int b = 0; b < B; b++) {
            next[b] = (int32_t)pdq_sample(&smp, logits + (size_t)b * V, V);
            if (!done_row[b]) {
                out[(size_t)b * (max_new + 1) + n_out[b]++] = next[b];
                if (!ignore_eos && pdq_stop_ids_has(&stop, next[b])) done_row[b] = 1;
            }
            live += !done_row[b];
        }
        if (!live || i + 1 == max_new) break;
        int full = 0;
        for (int b = 0; b < B; b++) full |= pdq_rt_len(rt, b) >= max_seq;
        if (full) { fprintf(stderr, "pdq generate: static context full (max_seq %d)\n", max_seq); break; }
        double t1 = pdq_now();
        if (pdq_rt_decode(rt, B, next, logits, &st) != PDQ_OK) { fprintf(stderr, "pdq generate: %s\n", st.msg); goto done; }
        t_dec += pdq_now() - t1;
        n_dec += live;
    }
    if (json) {
        cJSON *root = cJSON_CreateObject(), *arr = B > 1 ? cJSON_AddArrayToObject(root, "rows") : NULL;
        long n_new = 0;
        for (int b = 0; b < B; b++) {
            cJSON *r = B > 1 ? cJSON_CreateObject() : root;
            gen_json_row(r, tok, rows[b], lens[b], out + (size_t)b * (max_new + 1), n_out[b]);
            if (B > 1) cJSON_AddItemToArray(arr, r);
            n_new += n_out[b];
        }
        gen_json_timing(root, t_load, t_pre, n_pre, t_dec, n_dec, n_new);
        gen_json_print(root);
    } else {
        for (int b = 0; b < B; b++) {
            int32_t *all = malloc(sizeof(int32_t) * (size_t)(lens[b] + n_out[b]));
            char *s = NULL;
            if (all && tok) {
                memcpy(all, rows[b], sizeof(int32_t) * (size_t)lens[b]);
                memcpy(all + lens[b], out + (size_t)b * (max_new + 1), sizeof(int32_t) * (size_t)n_out[b]);
            }
            if (all && tok && pdq_tokenizer_decode(tok, all, (size_t)(lens[b] + n_out[b]), 1, &s, &st) == PDQ_OK)
                printf("%s\n", s);
            else {
                print_ids(out + (size_t)b * (max_new + 1), n_out[b]);
                printf("\n");
            }
            free(s);
            free(all);
        }
    }
    status = 0;
done:
    for (int b = 0; b < MAX_ROWS; b++) free(rows[b]);
    free(text);
    free(out);
    free(n_out);
    free(done_row);
    free(logits);
    pdq_rt_free(rt);
    cli_exec_free(&ex);
    pdq_ptq_free(ptq);
    pdq_model_free(m);
    pdq_tokenizer_free(tok);
    return status;
}
