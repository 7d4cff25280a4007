/* pdq quantize: GPTQ or RTN weight quantization of a whole model (logic in src/quant). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "common.h"
#include "pdq/eval.h"
#include "pdq/ptq.h"
#include "pdq/quant.h"
#include "ptq_args.h"
#include "quant_args.h"
#include "quantize_export.h"

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
    int threads = (int)args_int(&a, "--threads", 0), quiet = args_flag(&a, "--quiet");
    int eval_len = (int)args_int(&a, "--eval-len", 256), eval_stride = (int)args_int(&a, "--eval-stride", 256);
    double known_fp32 = args_double(&a, "--eval-fp32-ppl", 0);
    const char *export = args_str(&a, "--export"), *buckets = args_str(&a, "--append-bucket");
    int graph_opts_given = args_str(&a, "--rope") || args_str(&a, "--scale-fusion") || args_str(&a, "--layout");
    pdq_ptq_run_opts ro;
    int abits = ptq_args_read(&a, &ro, calib != NULL);
    if (args_finish(&a) || !dir || !out) { fputs(k_usage, stderr); return 2; }
    if (abits < 0) return 2;
    int ex_whole = 0, ex_per = 0;
    if (export && quantize_export_parse(export, &ex_whole, &ex_per)) return 2;
    if (buckets && quantize_export_buckets_check(export, buckets, ro.max_seq)) return 2;
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
        if (eval_len > m->cfg.max_position_embeddings) eval_len = m->cfg.max_position_embeddings;
        ev.has = 1;
        ev.file = evalf;
        ev.max_len = eval_len;
        ev.stride = eval_stride;
        if (known_fp32 > 0) ev.fp32_ppl = known_fp32;
        else {
            pdq_model *fm = cli_load_model("quantize", dir, threads);
            int bad = !fm || eval_ppl(fm, eval_ids, (long)n_eval, eval_len, eval_stride, "ppl fp32", &ev.fp32_ppl, &ev.tokens);
            pdq_model_free(fm);
            if (bad) goto done;
        }
    }
    int bos = -1;
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
    if (!quiet) pdq_qmodel_print(&q, stdout);
    if (pdq_quant_save(out, dir, m, &q, &st)) goto fail;
    if (ev.has || abits != PDQ_ADT_FLOAT) {
        /* the steps below run the whole quantized model: loaded from OUTDIR (dequantized there
         * exactly as the quantizer computed it) */
        pdq_model_free(m);
        if (!(m = cli_load_model("quantize", out, threads))) goto done;
    }
    if (ev.has && eval_ppl(m, eval_ids, (long)n_eval, eval_len, eval_stride, "ppl quant", &ev.quant_ppl, &ev.tokens))
        goto done;
    char path[4096];
    snprintf(path, sizeof path, "%s/report.json", out);
    if (pdq_quant_write_report(path, &q, &ev, &st)) goto fail;
    if (ev.has) printf("perplexity fp32 %.4f  quantized %.4f  (+%.4f)\n", ev.fp32_ppl, ev.quant_ppl, ev.quant_ppl - ev.fp32_ppl);
    ro.seed = o.seed;
    if (abits != PDQ_ADT_FLOAT && pdq_ptq_quantize_dir(dir, out, m, &ro, text, n_text, bos, eval_ids, (long)n_eval, stdout, &st))
        goto fail;
    if (export && quantize_export(dir, out, ex_whole, ex_per, buckets, &ro, eval_ids, (long)n_eval, threads)) goto done;
    printf("wrote %s\n", out);
    status = 0;
    goto done;
fail:
    fprintf(stderr, "pdq quantize: %s\n", st.msg);
done:
    pdq_qmodel_free(&q);
    free(eval_ids);
    free(text);
    free(windows);
    pdq_model_free(m);
    return status;
}
