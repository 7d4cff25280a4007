/* pdq quantize: GPTQ or RTN weight quantization of a whole model (logic in src/quant). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "common.h"
#include "pdq/eval.h"
#include "pdq/ptq.h"
#include "pdq/quant.h"
#include "pdq/report.h"
#include "ptq_args.h"
#include "quant_args.h"
#include "quantize_export.h"
#include "quantize_summary.h"
#include "kld_cli.h"
#include "pdq/progress.h"
#include <unistd.h>

#define MAX_OVERRIDES 64

static const char *k_usage =
    "usage: pdq quantize --model DIR --out OUTDIR [--method gptq|rtn] [--calib FILE] [options]\n"
    QUANT_ARGS_USAGE
    "  --calib FILE         calibration text (GPTQ), tokenized once\n"
    "  --nsamples N         calibration windows (default 128)\n"
    "  --seq-len L          window length, BOS first (default 2048, capped by the model and the file)\n"
    "  --seed S             window sampling seed (default 0)\n"
    "  --override NAME=B    bits for modules by full name, layer-local name or suffix (repeatable)\n"
    "  --embed-bits B|none  embedding table, per-row RTN (default 8)\n"
    "  --lm-head-bits B|none  lm_head (default 8, RTN)\n"
    "  --lm-head-gptq       GPTQ for lm_head instead of RTN\n"
    "  --eval FILE          perplexity of FP32 and quantized on FILE (windows --eval-len, stride --eval-stride;\n"
    "                       default 256/256), written to report.json\n"
    "  --eval-fp32-ppl X    reuse a known FP32 perplexity of the same file and windows (sweeps)\n"
    "  --threads N          BLAS/threads (default: all cores)\n"
    "  --quiet              no per-module table\n"
    "  --json               the closing summary as one JSON document on stdout (the rest goes to stderr)\n"
    "  --eval-tokens N      evaluate on the first N tokens of --eval only (a quick look)\n"
    "  --kld                KL divergence of the quantized weights against the FP32 model on --eval (as\n"
    "                       pdq ppl --kld; FP32 logits cached per evaluation file), in report.json and the summary\n"
    PTQ_ARGS_USAGE
    QUANTIZE_EXPORT_USAGE;

/* "none" -> 0, else an integer; -1 on error. */
static int parse_bits(const char *s, int def) {
    if (!s) return def;
    if (strcmp(s, "none") == 0) return 0;
    char *end;
    long v = strtol(s, &end, 10);
    return (end == s || *end || v < 2 || v > 8) ? -1 : (int)v;
}

static pdq_code quantize_model_window(void *ctx, const int32_t *ids, int T, float *logits, pdq_status *st) {
    return pdq_model_forward((const pdq_model *)ctx, NULL, 1, T, ids, NULL, NULL, logits, 0, st);
}

static int eval_ppl(const pdq_model *m, const int32_t *ids, long n, int len, int stride, const char *label,
                    double *ppl, long *tokens) {
    pdq_status st = {0};
    pdq_ppl_result r;
    if (pdq_ppl_model(m, ids, n, len, stride, label, &r, &st)) {
        fprintf(stderr, "pdq quantize: eval: %s\n", st.msg);
        return 1;
    }
    *ppl = r.ppl;
    *tokens = r.tokens;
    return 0;
}

int cmd_quantize(int argc, char **argv) {
    pdq_args a;
    args_init(&a, "quantize", argc, argv);
    if (args_flag(&a, "--help")) { fputs(k_usage, stdout); return 0; }
    const char *dir = args_str(&a, "--model"), *out = args_str(&a, "--out"), *calib = args_str(&a, "--calib");
    const char *method = args_str(&a, "--method"), *evalf = args_str(&a, "--eval");
    pdq_quant_opts o;
    pdq_quant_opts_default(&o, 4);
    quant_args_read(&a, &o.gptq);
    int nsamples = (int)args_int(&a, "--nsamples", 128), seq_len = (int)args_int(&a, "--seq-len", 0);
    o.seed = (uint64_t)args_int(&a, "--seed", 0);
    const char *ovs[MAX_OVERRIDES];
    int nov = args_all(&a, "--override", ovs, MAX_OVERRIDES);
    const char *eb = args_str(&a, "--embed-bits"), *lb = args_str(&a, "--lm-head-bits");
    o.lm_head_gptq = args_flag(&a, "--lm-head-gptq");
    int threads = (int)args_int(&a, "--threads", 0), quiet = args_flag(&a, "--quiet"), json = args_flag(&a, "--json");
    long eval_tokens = args_int(&a, "--eval-tokens", 0);
    int want_kld = args_flag(&a, "--kld");
    int eval_len = (int)args_int(&a, "--eval-len", 256), eval_stride = (int)args_int(&a, "--eval-stride", 256);
    double known_fp32 = args_double(&a, "--eval-fp32-ppl", 0);
    const char *export = args_str(&a, "--export");
    int graph_opts_given = args_str(&a, "--rope") || args_str(&a, "--scale-fusion") || args_str(&a, "--layout");
    pdq_ptq_run_opts ro;
    int abits = ptq_args_read(&a, &ro, calib != NULL);
    if (args_finish(&a) || !dir || !out || eval_tokens < 0 || eval_tokens == 1) { fputs(k_usage, stderr); return 2; }
    if (abits < 0) return 2;
    int ex_whole = 0, ex_per = 0;
    if (export && quantize_export_parse(export, &ex_whole, &ex_per)) return 2;
    if (export && !graph_opts_given) { /* the graphs TICO exports for the NPU */
        ro.so.rope = PDQ_RT_ROPE_PRE_NEGATED_SIN;
        ro.so.scale = PDQ_RT_SCALE_K_PROJ;
        ro.so.layout = PDQ_RT_LAYOUT_UNROLLED;
    }
    if (method && strcmp(method, "gptq") != 0 && strcmp(method, "rtn") != 0) {
        fprintf(stderr, "pdq quantize: --method must be gptq or rtn, got '%s'\n", method);
        return 2;
    }
    o.method = method && strcmp(method, "rtn") == 0 ? PDQ_QM_RTN : PDQ_QM_GPTQ;
    o.embed_bits = parse_bits(eb, 8);
    o.lm_head_bits = parse_bits(lb, 8);
    if (o.embed_bits < 0 || o.lm_head_bits < 0) {
        fprintf(stderr, "pdq quantize: --embed-bits/--lm-head-bits take 2..8 or none\n");
        return 2;
    }
    if (o.method == PDQ_QM_GPTQ && !calib) {
        fprintf(stderr, "pdq quantize: GPTQ needs --calib FILE (or use --method rtn)\n");
        return 2;
    }
    pdq_qoverride ov[MAX_OVERRIDES];
    pdq_status st = {0};
    for (int i = 0; i < nov; i++)
        if (pdq_qoverride_parse(ovs[i], &ov[i], &st)) { fprintf(stderr, "pdq quantize: %s\n", st.msg); return 2; }
    o.overrides = ov;
    o.n_overrides = nov;

    /* --json: everything but the summary goes to stderr */
    int saved_stdout = -1;
    if (json) { fflush(stdout); saved_stdout = dup(1); if (saved_stdout >= 0) dup2(2, 1); }
    quantize_times tm;
    quantize_times_init(&tm);
    double t_start = pdq_now(), t0;
    int status = 1;
    int32_t *eval_ids = NULL, *text = NULL, *windows = NULL;
    size_t n_eval = 0;
    long n_text = 0;
    pdq_quant_eval ev = {0};
    pdq_qmodel q = {0};
    /* Quantization needs one layer in memory at a time (lazy model); the FP32 perplexity needs the
     * whole float model, loaded for it and freed before quantizing. */
    pdq_model *m = NULL;
    if (pdq_model_load_lazy(dir, &m, &st)) { fprintf(stderr, "pdq quantize: %s\n", st.msg); return 1; }
    pdq_set_threads(m, threads);
    if (evalf) {
        pdq_tokenizer *tok = cli_load_tokenizer("quantize", dir);
        size_t len;
        char *buf = tok ? cli_read_text("quantize", evalf, &len) : NULL;
        pdq_code rc = buf ? pdq_tokenizer_encode(tok, buf, len, 1, &eval_ids, &n_eval, &st) : PDQ_ERR_IO;
        if (rc && buf) fprintf(stderr, "pdq quantize: %s: %s\n", evalf, st.msg);
        free(buf);
        pdq_tokenizer_free(tok);
        if (rc) goto done;
        if (eval_tokens > 0 && (size_t)eval_tokens < n_eval) n_eval = (size_t)eval_tokens;
        if (eval_len > m->cfg.max_position_embeddings) eval_len = m->cfg.max_position_embeddings;
        ev.has = 1;
        ev.file = evalf;
        ev.max_len = eval_len;
        ev.stride = eval_stride;
        if (known_fp32 > 0) ev.fp32_ppl = known_fp32;
        else {
            t0 = pdq_now();
            pdq_model *fm = cli_load_model("quantize", dir, threads);
            int bad = !fm || eval_ppl(fm, eval_ids, (long)n_eval, eval_len, eval_stride, "ppl fp32", &ev.fp32_ppl, &ev.tokens);
            pdq_model_free(fm);
            tm.t[QS_FP32_EVAL] = pdq_now() - t0;
            if (bad) goto done;
        }
    }
    int bos = -1;
    t0 = pdq_now();
    if (calib && (o.method == PDQ_QM_GPTQ || abits != PDQ_ADT_FLOAT) && pdq_calib_tokenize(dir, calib, &text, &n_text, &bos, &st))
        goto fail;
    if (o.method == PDQ_QM_GPTQ) {
        int cap = m->cfg.max_position_embeddings;
        if (seq_len <= 0) {
            seq_len = 2048 < cap ? 2048 : cap;
            if (n_text + (bos >= 0) < seq_len) seq_len = (int)n_text + (bos >= 0);
        } else if (seq_len > cap) {
            fprintf(stderr, "pdq quantize: --seq-len %d capped to max_position_embeddings %d\n", seq_len, cap);
            seq_len = cap;
        }
        if (pdq_calib_windows(text, n_text, nsamples, seq_len, bos, o.seed, &windows, &st)) goto fail;
    }
    if (pdq_quantize_model(m, &o, windows, nsamples, seq_len, &q, &st)) goto fail;
    tm.t[QS_CALIB] = pdq_now() - t0; /* split with QS_WEIGHTS by the summary */
    tm.t[QS_WEIGHTS] = 0;
    if (!quiet) pdq_qmodel_print(&q, stdout);
    t0 = pdq_now();
    if (pdq_quant_save(out, dir, m, &q, &st)) goto fail;
    tm.t[QS_SAVE] = pdq_now() - t0;
    if (ev.has || abits != PDQ_ADT_FLOAT) {
        /* the steps below run the whole quantized model: loaded from OUTDIR (dequantized there
         * exactly as the quantizer computed it) */
        pdq_model_free(m);
        if (!(m = cli_load_model("quantize", out, threads))) goto done;
    }
    t0 = pdq_now();
    if (ev.has && eval_ppl(m, eval_ids, (long)n_eval, eval_len, eval_stride, "ppl quant", &ev.quant_ppl, &ev.tokens))
        goto done;
    pdq_kld_result kr;
    int have_kld = 0;
    if (ev.has && want_kld) {
        kld_opts ko = {dir, NULL, 0, 0, threads};
        int reused;
        char cache[4600];
        pdq_ppl_result pr;
        if (cli_kld("quantize", &ko, eval_ids, (long)n_eval, eval_len, eval_stride, quantize_model_window, m, m->cfg.vocab_size,
                    &kr, &pr, &reused, cache, (int)sizeof cache))
            goto done;
        have_kld = 1;
        fprintf(stderr, "pdq quantize: kld: FP32 logits %s %s\n", reused ? "reused from" : "cached in", cache);
    }
    if (ev.has) tm.t[QS_QUANT_EVAL] = pdq_now() - t0;
    char path[4096];
    snprintf(path, sizeof path, "%s/report.json", out);
    if (pdq_quant_write_report(path, &q, &ev, &st)) goto fail;
    if (ev.has) printf("perplexity fp32 %.4f  quantized %.4f  (+%.4f)\n", ev.fp32_ppl, ev.quant_ppl, ev.quant_ppl - ev.fp32_ppl);
    ro.seed = o.seed;
    t0 = pdq_now();
    if (abits != PDQ_ADT_FLOAT && pdq_ptq_quantize_dir(dir, out, m, &ro, text, n_text, bos, eval_ids, (long)n_eval, stdout, &st))
        goto fail;
    if (abits != PDQ_ADT_FLOAT) tm.t[QS_ACT] = pdq_now() - t0;
    t0 = pdq_now();
    if (export && quantize_export(dir, out, ex_whole, ex_per, &ro, eval_ids, (long)n_eval, threads)) goto done;
    if (export) quantize_split_export_time(out, pdq_now() - t0, &tm);
    tm.total = pdq_now() - t_start;
    fflush(stdout);
    if (saved_stdout >= 0) { dup2(saved_stdout, 1); close(saved_stdout); saved_stdout = -1; }
    if (quantize_summary(dir, out, &tm, have_kld ? &kr : NULL, json)) goto done;
    if (pdq_report_html(out, NULL, &st)) goto fail;
    if (!json) printf("wrote %s\n", out);
    status = 0;
    goto done;
fail:
    fprintf(stderr, "pdq quantize: %s\n", st.msg);
done:
    if (saved_stdout >= 0) { fflush(stdout); dup2(saved_stdout, 1); close(saved_stdout); }
    pdq_qmodel_free(&q);
    free(eval_ids);
    free(text);
    free(windows);
    pdq_model_free(m);
    return status;
}
