/* pdq ppl: perplexity (with its standard error) of a text or id file with strided sliding
 * windows, and with --kld FP32DIR the KL divergence against the FP32 model over the same windows. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "commands.h"
#include "common.h"
#include "kld_cli.h"
#include "exec_args.h"
#include "pdq/circle_export.h"
#include "pdq/eval.h"
#include "pdq/file.h"
#include "ptq_args.h"

static const char *k_usage =
    "usage: pdq ppl --model DIR (--text FILE | --ids-file F) [--max-len N] [--stride N] [--json] [--threads N]\n"
    "               [--static [--max-seq N]]  (static prefill graph, windows of max_seq; fake-quant with ptq.json)\n"
    "       pdq ppl --circle OUTDIR [--per-layer] (--text FILE | --ids-file F) [--json] [--threads N]\n"
    "               (through the exported prefill file: windows and stride of the export's max_seq)\n"
    "  --eval-tokens N      only the first N tokens of the file (a quick look)\n"
    "  [--mode float|fake|int] with --static / --circle:\n" EXEC_ARGS_USAGE
    KLD_USAGE;

static pdq_code model_window(void *ctx, const int32_t *ids, int T, float *logits, pdq_status *st) {
    return pdq_model_forward((const pdq_model *)ctx, NULL, 1, T, ids, NULL, NULL, logits, 0, st);
}

static void json_str(const char *s) {
    putchar('"');
    for (; s && *s; s++) {
        if (*s == '"' || *s == '\\') putchar('\\');
        if ((unsigned char)*s >= 0x20) putchar(*s);
    }
    putchar('"');
}

/* Perplexity (and KLD) through fn; prints the result. */
static int evaluate(pdq_window_logits_fn fn, void *ctx, int vocab, const int32_t *ids, long n, int max_len, int stride,
                    const char *label, const char *what, const kld_opts *ko, int json) {
    pdq_status st = {0};
    pdq_ppl_result r;
    pdq_kld_result k;
    int reused = 0;
    char cache[4600] = "";
    if (ko->base_dir) {
        if (cli_kld("ppl", ko, ids, n, max_len, stride, fn, ctx, vocab, &k, &r, &reused, cache, (int)sizeof cache)) return 1;
        if (!json) fprintf(stderr, "pdq ppl: FP32 logits %s %s\n", reused ? "reused from" : cache[0] ? "cached in" : "computed (not cached)", cache);
    } else if (pdq_ppl_windows(fn, ctx, vocab, ids, n, max_len, stride, label, &r, &st) != PDQ_OK) {
        fprintf(stderr, "pdq ppl: %s\n", st.msg);
        return 1;
    }
    if (json) {
        printf("{\"ppl\": %.17g, \"ppl_se\": %.9g, \"tokens\": %ld, \"nll\": %.17g, \"windows\": %d, \"max_len\": %d, \"stride\": %d",
               r.ppl, r.ppl_se, r.tokens, r.nll, r.windows, max_len, stride);
        if (ko->base_dir) {
            printf(", ");
            cli_kld_print_json(&k, reused);
            printf(", \"kld_cache\": ");
            json_str(cache);
        }
        printf("}\n");
    } else {
        printf("perplexity %.4f +/- %.4f over %ld tokens (%d windows of %d, stride %d%s)\n", r.ppl, r.ppl_se, r.tokens,
               r.windows, max_len, stride, what);
        if (ko->base_dir) cli_kld_print(&k);
    }
    return 0;
}

int cmd_ppl(int argc, char **argv) {
    pdq_args a;
    args_init(&a, "ppl", argc, argv);
    if (args_flag(&a, "--help")) { fputs(k_usage, stdout); return 0; }
    const char *dir = args_str(&a, "--model"), *text = args_str(&a, "--text"), *ids_file = args_str(&a, "--ids-file");
    long max_len = args_int_range(&a, "--max-len", 0, 2, CLI_PPL_LEN_LIMIT);
    long stride = args_int_range(&a, "--stride", 0, 1, CLI_PPL_LEN_LIMIT);
    int json = args_flag(&a, "--json"), threads = args_threads(&a);
    int use_static = args_flag(&a, "--static");
    int max_seq = (int)args_int_range(&a, "--max-seq", 0, 2, ARGS_MAX_SEQ_LIMIT);
    const char *cdir = args_str(&a, "--circle");
    int per_layer = args_flag(&a, "--per-layer");
    long eval_tokens = args_int_range(&a, "--eval-tokens", 0, 2, LONG_MAX);
    kld_opts ko = {args_str(&a, "--kld"), args_str(&a, "--kld-cache"), (int)args_int_range(&a, "--kld-top", 0, 1, 1 << 20),
                   args_flag(&a, "--no-kld-cache"), threads, NULL};
    cli_exec ex;
    if (cli_exec_read(&a, &ex)) return ARGS_USAGE_EXIT;
    args_one_of(&a, "--model", dir, "--circle", cdir);
    args_one_of(&a, "--text", text, "--ids-file", ids_file);
    if (cdir && (use_static || max_len || stride || max_seq))
        args_error(&a, "--circle uses the export's max_seq as window and stride: drop --static/--max-len/--stride/--max-seq");
    if (per_layer && !cdir) args_error(&a, "--per-layer needs --circle OUTDIR");
    if (max_seq && !use_static) args_error(&a, "--max-seq is the static graph length: it needs --static");
    if (max_len && stride > max_len) args_error(&a, "--stride %ld exceeds --max-len %ld: tokens between windows would not be scored", stride, max_len);
    if (args_finish(&a)) return ARGS_USAGE_EXIT;
    if (cdir) { /* the export copies the tokenizer */
        char mp[4096];
        snprintf(mp, sizeof mp, "%s/manifest.json", cdir);
        if (!pdq_file_exists(mp)) { fprintf(stderr, "pdq ppl: %s is not a Circle export (no manifest.json)\n", cdir); return 1; }
        dir = cdir;
    }

    pdq_status st = {0};
    int32_t *ids = NULL;
    long n = 0;
    if (text) {
        pdq_tokenizer *tok = cli_load_tokenizer("ppl", dir);
        if (!tok) return 1;
        size_t len, nn;
        char *buf = cli_read_text("ppl", text, &len);
        pdq_code rc = buf ? pdq_tokenizer_encode(tok, buf, len, 1, &ids, &nn, &st) : PDQ_ERR_IO;
        free(buf);
        pdq_tokenizer_free(tok);
        if (rc != PDQ_OK) {
            if (buf) fprintf(stderr, "pdq ppl: %s: %s\n", text, st.msg);
            return 1;
        }
        n = (long)nn;
        if (n < 2) { /* BOS alone: say which file, not only the count */
            fprintf(stderr, "pdq ppl: %s: %ld token(s) with BOS, perplexity needs at least 2 (is the file empty?)\n", text, n);
            free(ids);
            return 1;
        }
    } else if (cli_check_in_file("ppl", "--ids-file", ids_file)) {
        return 1;
    } else if (pdq_read_ids_file(ids_file, &ids, &n, &st) != PDQ_OK) {
        fprintf(stderr, "pdq ppl: %s\n", st.msg);
        return 1;
    } else if (n < 2) {
        fprintf(stderr, "pdq ppl: %s: %ld token id(s), perplexity needs at least 2\n", ids_file, n);
        free(ids);
        return 1;
    }
    if (eval_tokens > 0 && eval_tokens < n) {
        if (!json) fprintf(stderr, "pdq ppl: the first %ld of %ld tokens (--eval-tokens)\n", eval_tokens, n);
        n = eval_tokens;
    }
    if (cdir) {
        pdq_set_threads(NULL, threads); /* BLAS sums in a thread-count dependent order */
        pdq_crt *crt;
        pdq_exec_opts eo;
        int rc = 1;
        if (cli_exec_opts(&ex, "ppl", threads, &eo)) {
        } else if (pdq_crt_open_opts(cdir, !per_layer, &eo, &crt, &st) != PDQ_OK) {
            fprintf(stderr, "pdq ppl: %s\n", st.msg);
        } else {
            int S = pdq_crt_max_seq(crt);
            rc = evaluate(pdq_crt_window_logits, crt, pdq_crt_vocab(crt), ids, n, S, S, "perplexity (circle)",
                          per_layer ? ", exported per-layer files" : ", exported model_prefill", &ko, json);
            pdq_crt_free(crt);
        }
        cli_exec_free(&ex);
        free(ids);
        return rc;
    }
    pdq_model *m = use_static ? cli_load_model("ppl", dir, threads) : cli_load_model_packed("ppl", dir, threads);
    if (!m) { free(ids); return 1; }
    pdq_rt *rt = NULL;
    pdq_ptq *ptq = NULL;
    if (use_static) {
        /* max_seq: --max-seq, else --max-len, else the calibrated one (ptq.json), else 256. */
        if (max_seq <= 0) max_seq = (int)max_len;
        if (max_seq <= 0 && !pdq_ptq_in_dir(dir)) max_seq = ARGS_MAX_SEQ_DEFAULT;
        if (cli_static_runtime("ppl", dir, m, 1, max_seq, NULL, 0, &rt, &ptq) || cli_exec_rt(&ex, "ppl", dir, rt, ptq, threads)) {
            free(ids);
            pdq_rt_free(rt);
            cli_exec_free(&ex);
            pdq_ptq_free(ptq);
            pdq_model_free(m);
            return 1;
        }
        max_len = pdq_rt_max_seq(rt);
    }
    if (max_len <= 0) max_len = m->cfg.max_position_embeddings < 2048 ? m->cfg.max_position_embeddings : 2048;
    if (stride <= 0) stride = max_len;
    int status = 1;
    if (max_len > m->cfg.max_position_embeddings) {
        fprintf(stderr, "pdq ppl: --max-len %ld exceeds the model's max_position_embeddings %d\n", max_len, m->cfg.max_position_embeddings);
    } else if (rt) {
        status = evaluate(pdq_rt_window_logits, rt, m->cfg.vocab_size, ids, n, (int)max_len, (int)stride, "perplexity (static)",
                          ptq ? ", static graph, fake-quant" : ", static graph", &ko, json);
    } else {
        status = evaluate(model_window, m, m->cfg.vocab_size, ids, n, (int)max_len, (int)stride, "perplexity", "", &ko, json);
    }
    free(ids);
    pdq_rt_free(rt);
    cli_exec_free(&ex);
    pdq_ptq_free(ptq);
    pdq_model_free(m);
    return status;
}
