/* pdq quantize: GPTQ or RTN weight quantization of a whole model (logic in src/quant). */
#include <errno.h>
#include <limits.h>
#include <math.h>
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
#include "quantize_transform.h"
#include "quantize_summary.h"
#include "kld_cli.h"
#include "pdq/progress.h"
#include <unistd.h>
#include "quantize_preflight.h"
#include "quantize_prompts.h"
#include "quantize_job.h"
#include "quantize_tasks.h"

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
    "  --gptq-orig-inputs   Hessians from the float model's activations (TICO gptq_use_orig_model_inference)\n"
    "  --calib-chunk N      windows per Hessian chunk (default 1): Hessians are chunk sums added in window\n"
    "                       order, identical for any number of MPI ranks (pdq-mpi); N > 1 sends fewer, larger\n"
    "                       sums between ranks and changes the summation order\n"
    "  --eval FILE          perplexity of FP32 and quantized on FILE (windows --eval-len, stride --eval-stride;\n"
    "                       default 256/256), written to report.json\n"
    "  --eval-fp32-ppl X    reuse a known FP32 perplexity of the same file and windows (sweeps)\n"
    "  --threads N          BLAS/threads (default: all cores)\n"
    "  --quiet              no per-module table\n"
    "  --json               the closing summary as one JSON document on stdout (the rest goes to stderr)\n"
    "  --eval-tokens N      evaluate on the first N tokens of --eval only (a quick look)\n"
    "  --kld                KL divergence of the quantized weights against the FP32 model on --eval (as\n"
    "                       pdq ppl --kld; FP32 logits cached per evaluation file), in report.json and the summary\n"
    "  --eval-task NAME[,NAME...]  task accuracy as pdq eval scores it (lm-evaluation-harness's rules) of FP32,\n"
    "                       the quantized weights and, with activations, the static graphs in fake-quant and\n"
    "                       integer mode, in report.json (\"tasks\"), the summary and report.html\n"
    "  --task-data PATH     the task data sets (pdq eval --data; required with --eval-task)\n"
    "  --task-limit N       the first N items of each task (default: all)\n"
    "  --task-shots K       mmlu: K dev questions before each (default 0)\n"
    QUANTIZE_TRANSFORM_USAGE
    PTQ_ARGS_USAGE
    QUANTIZE_EXPORT_USAGE;

/* --embed-bits / --lm-head-bits: "none" -> 0, else 2..8; a bad value is a usage error. */
static int parse_bits(pdq_args *a, const char *flag, int def) {
    const char *s = args_str(a, flag);
    if (!s) return def;
    if (strcmp(s, "none") == 0) return 0;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < 2 || v > 8) {
        args_error(a, "%s takes 2..8 or none, got '%s'", flag, s);
        return def;
    }
    return (int)v;
}

static pdq_code quantize_model_window(void *ctx, const int32_t *ids, int T, float *logits, pdq_status *st) {
    return pdq_model_forward((const pdq_model *)ctx, NULL, 1, T, ids, NULL, NULL, logits, 0, st);
}

/* Split over the job's ranks (every rank calls it; the numbers do not depend on how many). */
static int eval_ppl(const quantize_job *job, const pdq_model *m, const int32_t *ids, long n, int len, int stride,
                    const char *label, double *ppl, long *tokens) {
    pdq_status st = {0};
    pdq_ppl_result r;
    if (pdq_ppl_model_split(job->d, m, ids, n, len, stride, label, &r, &st)) {
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
    const char *dir = args_required(&a, "--model"), *fp32_dir = dir, *out = args_required(&a, "--out"), *calib = args_str(&a, "--calib");
    const char *method = args_str(&a, "--method"), *evalf = args_str(&a, "--eval");
    pdq_quant_opts o;
    pdq_quant_opts_default(&o, 4);
    quant_args_read(&a, &o.gptq, PDQ_QSCALE_F16);
    int nsamples = (int)args_int_range(&a, "--nsamples", 128, 1, 1 << 20);
    int seq_len = (int)args_int_range(&a, "--seq-len", 0, 2, 1 << 20);
    o.seed = (uint64_t)args_int_range(&a, "--seed", 0, 0, LONG_MAX);
    const char *ovs[MAX_OVERRIDES];
    int nov = args_all(&a, "--override", ovs, MAX_OVERRIDES);
    o.embed_bits = parse_bits(&a, "--embed-bits", 8);
    o.lm_head_bits = parse_bits(&a, "--lm-head-bits", 8);
    o.lm_head_gptq = args_flag(&a, "--lm-head-gptq");
    o.orig_inputs = args_flag(&a, "--gptq-orig-inputs");
    o.calib_chunk = (int)args_int_range(&a, "--calib-chunk", 1, 1, 1 << 20);
    int threads = args_threads(&a), quiet = args_flag(&a, "--quiet"), json = args_flag(&a, "--json");
    long eval_tokens = args_int_range(&a, "--eval-tokens", 0, 2, LONG_MAX);
    int eval_len = (int)args_int_range(&a, "--eval-len", 256, 2, 1 << 20);
    int eval_stride = (int)args_int_range(&a, "--eval-stride", 256, 1, 1 << 20);
    double known_fp32 = args_real(&a, "--eval-fp32-ppl", 0, 1, HUGE_VAL, ARGS_CLOSED);
    const char *export = args_str(&a, "--export"), *buckets = args_str(&a, "--append-bucket");
    int want_kld = args_flag(&a, "--kld");
    quantize_tasks_opts tko = {args_str(&a, "--eval-task"), args_str(&a, "--task-data"),
                               args_int_range(&a, "--task-limit", 0, 1, 1L << 30), (int)args_int_range(&a, "--task-shots", 0, 0, 64)};
    if (tko.tasks && !tko.data) args_error(&a, "--eval-task needs --task-data PATH (the task data sets, as pdq eval's --data)");
    if (!tko.tasks && (tko.data || tko.limit || tko.shots)) args_error(&a, "--task-data/--task-limit/--task-shots go with --eval-task NAME");
    if (want_kld && !evalf) args_error(&a, "--kld needs --eval FILE (the text it compares the two models on)");
    int graph_opts_given = args_str(&a, "--rope") || args_str(&a, "--scale-fusion") || args_str(&a, "--layout");
    pdq_ptq_run_opts ro;
    int abits = ptq_args_read(&a, &ro, calib != NULL);
    pdq_transform_opts tro;
    int save_transformed;
    if (quantize_transform_args(&a, &tro, &save_transformed)) a.bad = 1;
    int ex_whole = 0, ex_per = 0;
    if (export && quantize_export_parse(export, &ex_whole, &ex_per)) a.bad = 1;
    if (buckets && quantize_export_buckets_check(export, buckets, ro.max_seq)) a.bad = 1;
    if (method && strcmp(method, "gptq") != 0 && strcmp(method, "rtn") != 0)
        args_error(&a, "--method must be gptq or rtn, got '%s'", method);
    o.method = method && strcmp(method, "rtn") == 0 ? PDQ_QM_RTN : PDQ_QM_GPTQ;
    if (o.method == PDQ_QM_GPTQ && !calib) args_error(&a, "GPTQ needs --calib FILE (or use --method rtn)");
    pdq_qoverride ov[MAX_OVERRIDES];
    pdq_status st = {0};
    for (int i = 0; i < nov; i++)
        if (pdq_qoverride_parse(ovs[i], &ov[i], &st)) args_error(&a, "--override: %s", st.msg);
    if (args_finish(&a) || abits < 0) return ARGS_USAGE_EXIT;
    if (tro.smooth && !calib) {
        fprintf(stderr, "pdq quantize: --transform smooth needs --calib FILE (activation ranges)\n");
        return ARGS_USAGE_EXIT;
    }
    if (pdq_transform_any(&tro)) o.transforms = &tro;
    tro.dist = NULL; /* set to the job's ranks once it has started */
    char tdir[4096];
    if (export && !graph_opts_given) { /* the graphs TICO exports for the NPU */
        ro.so.rope = PDQ_RT_ROPE_PRE_NEGATED_SIN;
        ro.so.scale = PDQ_RT_SCALE_K_PROJ;
        ro.so.layout = PDQ_RT_LAYOUT_UNROLLED;
    }
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
    quantize_prompts prompts = {0};
    /* Quantization needs one layer in memory at a time (lazy model); the FP32 perplexity needs the
     * whole float model, loaded for it and freed before quantizing. */
    pdq_model *m = NULL;
    quantize_view tview = {0};
    quantize_job job; /* under mpirun: this rank of the job (pdq-mpi); else a job of one */
    if (quantize_job_start(&job)) return 1;
    o.dist = job.d;
    tro.dist = job.d;
    if (pdq_model_load_lazy(dir, &m, &st)) {
        quantize_job_fail(&job, st.msg);
        fprintf(stderr, "pdq quantize: %s\n", st.msg);
        quantize_job_end(&job);
        return 1;
    }
    quantize_job_check(&job, argc, argv, dir, calib, evalf);
    pdq_set_threads(m, threads);
    if (evalf && eval_len > m->cfg.max_position_embeddings) {
        fprintf(stderr, "pdq quantize: note: --eval-len %d capped to max_position_embeddings %d\n", eval_len,
                m->cfg.max_position_embeddings);
        eval_len = m->cfg.max_position_embeddings;
        if (eval_stride > eval_len) eval_stride = eval_len;
    }
    /* ranks other than 0 calibrate only: no --out, evaluation or later steps */
    quantize_plan plan = {dir, job.lead ? out : NULL, calib, evalf, export, ex_whole, ex_per, &o, &ro, abits, nsamples,
                          seq_len, eval_len, eval_stride, known_fp32, threads};
    /* Everything that can fail without computing fails here, before the FP32 evaluation and GPTQ.
     * Under mpirun rank 0 checks first and the others follow once it passed (one message). */
    if (!job.lead && pdq_dist_barrier(job.d, &st)) goto fail;
    if ((status = quantize_preflight(&plan, m)) != 0) goto done;
    if (job.lead && tko.tasks && (status = quantize_tasks_check(&tko)) != 0) goto done;
    if (!job.lead) export = NULL; /* --eval stays: the perplexities are split over the ranks */
    if ((abits != PDQ_ADT_FLOAT || export) && job.lead && quantize_prompts_load(evalf ? evalf : calib, &prompts, &ro))
        goto done;
    if ((abits != PDQ_ADT_FLOAT || export) && job.lead && (status = quantize_check_verify(dir, &ro)) != 0) goto done;
    status = 1;
    int bos = -1;
    t0 = pdq_now();
    if (calib && (o.method == PDQ_QM_GPTQ || abits != PDQ_ADT_FLOAT || tro.smooth) &&
        pdq_calib_tokenize(dir, calib, &text, &n_text, &bos, &st))
        goto fail;
    if (o.method == PDQ_QM_GPTQ || tro.smooth) {
        int cap = m->cfg.max_position_embeddings;
        if (seq_len <= 0) {
            seq_len = 2048 < cap ? 2048 : cap;
            if (n_text + (bos >= 0) < seq_len) seq_len = (int)n_text + (bos >= 0);
        } else if (seq_len > cap) {
            fprintf(stderr, "pdq quantize: --seq-len %d capped to max_position_embeddings %d\n", seq_len, cap);
            seq_len = cap;
        }
        plan.seq_len = seq_len;
        if (pdq_calib_windows(text, n_text, nsamples, seq_len, bos, o.seed, &windows, &st)) goto calib_fail;
    }
    if (abits != PDQ_ADT_FLOAT) { /* the activation step's windows, drawn now only to check they fit */
        int32_t *w = NULL;
        pdq_code rc = pdq_calib_windows(text, n_text, ro.nsamples, ro.max_seq, bos, o.seed, &w, &st);
        free(w);
        if (rc) goto calib_fail;
    }
    if (job.lead && pdq_dist_barrier(job.d, &st)) goto fail;
    if (evalf) {
        pdq_tokenizer *tok = cli_load_tokenizer("quantize", dir);
        size_t len;
        char *buf = tok ? cli_read_text("quantize", evalf, &len) : NULL;
        pdq_code rc = buf ? pdq_tokenizer_encode(tok, buf, len, 1, &eval_ids, &n_eval, &st) : PDQ_ERR_IO;
        if (rc && buf) fprintf(stderr, "pdq quantize: %s: %s\n", evalf, st.msg);
        free(buf);
        pdq_tokenizer_free(tok);
        if (rc) goto done;
        if (n_eval < 2) {
            fprintf(stderr, "pdq quantize: --eval %s: %zu token(s), perplexity needs at least 2\n", evalf, n_eval);
            goto done;
        }
        if (eval_tokens > 0 && (size_t)eval_tokens < n_eval) n_eval = (size_t)eval_tokens;
    }
    if (job.lead) quantize_print_config(&plan, m, stderr);
    if (prompts.file)
        fprintf(stderr, "  verify       the first %d line%s of %s (%d words each) as prompts\n", prompts.n,
                prompts.n > 1 ? "s" : "", prompts.file, QUANTIZE_PROMPT_WORDS);
    if (evalf) {
        ev.has = 1;
        ev.file = evalf;
        ev.max_len = eval_len;
        ev.stride = eval_stride;
        if (known_fp32 > 0) ev.fp32_ppl = known_fp32;
        else {
            double te = pdq_now();
            pdq_model *fm = cli_load_model("quantize", dir, threads);
            int bad = !fm || eval_ppl(&job, fm, eval_ids, (long)n_eval, eval_len, eval_stride, "ppl fp32", &ev.fp32_ppl,
                                      &ev.tokens);
            pdq_model_free(fm);
            tm.t[QS_FP32_EVAL] = pdq_now() - te;
            if (bad) goto done;
        }
    }
    if (o.transforms && save_transformed) { /* from here on the run works on the transformed checkpoint */
        pdq_model_free(m);
        m = NULL;
        /* rank 0 writes the transformed checkpoint, the others then read it */
        if (job.lead && quantize_transform_run(dir, out, &tro, windows, nsamples, seq_len, threads, tdir, sizeof tdir))
            goto done;
        /* the others take their share of SmoothQuant's windows in the same pass, writing nothing */
        if (!job.lead && tro.smooth && quantize_transform_share(dir, &tro, windows, nsamples, seq_len, threads)) goto done;
        if (!job.lead) snprintf(tdir, sizeof tdir, "%s/transformed", out);
        if (pdq_dist_barrier(job.d, &st)) goto fail;
        dir = tdir;
        if (pdq_model_load_lazy(dir, &m, &st)) goto fail;
        pdq_set_threads(m, threads);
    } else if (o.transforms && quantize_transform_attach(m, &tro, windows, nsamples, seq_len, threads, &tview)) {
        goto done;
    }
    if (pdq_quantize_model(m, &o, windows, nsamples, seq_len, &q, &st)) goto fail;
    quantize_job_report(&job, q.comm_bytes, q.comm_seconds);
    ro.seed = o.seed;
    ro.dist = job.d;
    if (!job.lead) { /* rank 0 alone writes; the others then read OUTDIR for their share of the evaluation
                      * and of the activation calibration */
        if (ev.has || abits != PDQ_ADT_FLOAT) {
            if (pdq_dist_barrier(job.d, &st)) goto fail;
            pdq_model_free(m);
            if (!(m = cli_load_model("quantize", out, threads))) {
                char msg[4400];
                snprintf(msg, sizeof msg, "cannot read the checkpoint rank 0 wrote to %s (--eval and --abits read it on "
                         "every rank: OUTDIR must be on a file system all ranks share)", out);
                quantize_job_fail(&job, msg);
                goto done;
            }
        }
        double qp;
        long qt;
        if (ev.has && eval_ppl(&job, m, eval_ids, (long)n_eval, eval_len, eval_stride, NULL, &qp, &qt)) goto done;
        if (ev.has && want_kld) { /* the same KLD call as rank 0's below: its share of both sides */
            kld_opts ko = {dir, NULL, 0, 0, threads, job.d};
            int reused;
            char cache[4600];
            pdq_kld_result kr;
            pdq_ppl_result pr;
            if (cli_kld("quantize", &ko, eval_ids, (long)n_eval, eval_len, eval_stride, quantize_model_window, m,
                        m->cfg.vocab_size, &kr, &pr, &reused, cache, (int)sizeof cache))
                goto done;
        }
        if (abits != PDQ_ADT_FLOAT && pdq_ptq_calibrate_share(m, &ro, text, n_text, bos, &st)) goto fail;
        status = 0;
        goto done;
    }
    tm.t[QS_CALIB] = pdq_now() - t0 - tm.t[QS_FP32_EVAL]; /* split with QS_WEIGHTS by the summary */
    tm.t[QS_WEIGHTS] = 0;
    if (!quiet) pdq_qmodel_print(&q, stdout);
    t0 = pdq_now();
    if (pdq_quant_save(out, dir, m, &q, &st)) goto fail;
    tm.t[QS_SAVE] = pdq_now() - t0;
    /* the checkpoint is complete: the other ranks may read it */
    if ((ev.has || abits != PDQ_ADT_FLOAT) && pdq_dist_barrier(job.d, &st)) goto fail;
    if (ev.has || abits != PDQ_ADT_FLOAT) {
        /* the steps below run the whole quantized model: loaded from OUTDIR (dequantized there
         * exactly as the quantizer computed it) */
        pdq_model_free(m);
        if (!(m = cli_load_model("quantize", out, threads))) goto done;
    }
    t0 = pdq_now();
    if (ev.has && eval_ppl(&job, m, eval_ids, (long)n_eval, eval_len, eval_stride, "ppl quant", &ev.quant_ppl, &ev.tokens))
        goto done;
    pdq_kld_result kr;
    int have_kld = 0;
    if (ev.has && want_kld) {
        kld_opts ko = {dir, NULL, 0, 0, threads, job.d};
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
    t0 = pdq_now();
    if (abits != PDQ_ADT_FLOAT && pdq_ptq_quantize_dir(dir, out, m, &ro, text, n_text, bos, eval_ids, (long)n_eval, stdout, &st))
        goto fail;
    if (abits != PDQ_ADT_FLOAT) tm.t[QS_ACT] = pdq_now() - t0;
    t0 = pdq_now();
    if (export && quantize_export(dir, out, ex_whole, ex_per, buckets, &ro, eval_ids, (long)n_eval, threads)) goto done;
    if (export) quantize_split_export_time(out, pdq_now() - t0, &tm);
    if (tko.tasks) { /* one model at a time from here */
        pdq_model_free(m);
        m = NULL;
        if (quantize_tasks_run(&tko, fp32_dir, out, abits != PDQ_ADT_FLOAT, buckets, threads)) goto done;
    }
    tm.total = pdq_now() - t_start;
    fflush(stdout);
    if (saved_stdout >= 0) { dup2(saved_stdout, 1); close(saved_stdout); saved_stdout = -1; }
    if (quantize_summary(dir, out, &tm, have_kld ? &kr : NULL, json)) goto done;
    if (pdq_report_html(out, NULL, &st)) goto fail;
    if (!json) printf("wrote %s\n", out);
    status = 0;
    goto done;
calib_fail:
    fprintf(stderr, "pdq quantize: --calib %s: %s\n", calib, st.msg);
    goto done;
fail:
    quantize_job_fail(&job, st.msg);
    fprintf(stderr, "pdq quantize: %s\n", st.msg);
done:
    if (status) quantize_job_fail(&job, "failed: the message above");
    quantize_job_end(&job);
    if (saved_stdout >= 0) { fflush(stdout); dup2(saved_stdout, 1); close(saved_stdout); }
    pdq_qmodel_free(&q);
    quantize_prompts_free(&prompts);
    free(eval_ids);
    free(text);
    free(windows);
    pdq_model_free(m);
    quantize_transform_detach(&tview);
    return status;
}
