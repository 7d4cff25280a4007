/* pdq quantize: GPTQ or RTN weight quantization of a whole model. The arguments become a plan,
 * the job runs in the library (src/job/, pdq/quantize_job.h), the summary is printed here. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "common.h"
#include "pdq/quantize_job.h"
#include "ptq_args.h"
#include "quant_args.h"
#include "quantize_args.h"
#include "quantize_print.h"

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
    "  --profile            time and counted FLOPs of each phase against an sgemm probe of this run\n"
    "                       (about 1 s more), in report.json (\"profile\") and a table after the summary\n"
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

/* The job's messages as pdq quantize has always printed them: notes and progress text on stderr,
 * results on stdout. */
static void on_message(void *user, pdq_quantize_msg kind, const char *text) {
    (void)user;
    if (kind == PDQ_QMSG_NOTE) fprintf(stderr, "pdq quantize: %s\n", text);
    else if (kind == PDQ_QMSG_TEXT) fputs(text, stderr);
    else {
        fputs(text, stdout);
        fflush(stdout);
    }
}

int cmd_quantize(int argc, char **argv) {
    pdq_args a;
    args_init(&a, "quantize", argc, argv);
    if (args_flag(&a, "--help")) { fputs(k_usage, stdout); return 0; }
    const char *dir = args_required(&a, "--model"), *out = args_required(&a, "--out"), *calib = args_str(&a, "--calib");
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
    int profile = args_flag(&a, "--profile");
    long eval_tokens = args_int_range(&a, "--eval-tokens", 0, 2, LONG_MAX);
    int eval_len = (int)args_int_range(&a, "--eval-len", 256, 2, 1 << 20);
    int eval_stride = (int)args_int_range(&a, "--eval-stride", 256, 1, 1 << 20);
    double known_fp32 = args_real(&a, "--eval-fp32-ppl", 0, 1, HUGE_VAL, ARGS_CLOSED);
    const char *export = args_str(&a, "--export"), *buckets = args_str(&a, "--append-bucket");
    int want_kld = args_flag(&a, "--kld");
    const char *tasks = args_str(&a, "--eval-task"), *task_data = args_str(&a, "--task-data");
    long task_limit = args_int_range(&a, "--task-limit", 0, 1, 1L << 30);
    int task_shots = (int)args_int_range(&a, "--task-shots", 0, 0, 64);
    if (tasks && !task_data) args_error(&a, "--eval-task needs --task-data PATH (the task data sets, as pdq eval's --data)");
    if (!tasks && (task_data || task_limit || task_shots)) args_error(&a, "--task-data/--task-limit/--task-shots go with --eval-task NAME");
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
    if (export && !graph_opts_given) { /* the graphs TICO exports for the NPU */
        ro.so.rope = PDQ_RT_ROPE_PRE_NEGATED_SIN;
        ro.so.scale = PDQ_RT_SCALE_K_PROJ;
        ro.so.layout = PDQ_RT_LAYOUT_UNROLLED;
    }
    o.overrides = ov;
    o.n_overrides = nov;
    pdq_quantize_plan plan;
    pdq_quantize_plan_default(&plan);
    plan.model_dir = dir;
    plan.out_dir = out;
    plan.calib = calib;
    plan.qo = o;
    plan.nsamples = nsamples;
    plan.seq_len = seq_len;
    plan.transform = tro;
    plan.save_transformed = save_transformed;
    plan.abits = abits;
    plan.ptq = ro;
    plan.eval = evalf;
    plan.eval_len = eval_len;
    plan.eval_stride = eval_stride;
    plan.eval_tokens = eval_tokens;
    plan.eval_fp32_ppl = known_fp32;
    plan.kld = want_kld;
    plan.export_list = export;
    plan.append_buckets = buckets;
    plan.tasks = tasks;
    plan.task_data = task_data;
    plan.task_limit = task_limit;
    plan.task_shots = task_shots;
    plan.threads = threads;
    plan.quiet = quiet;
    plan.profile = profile;
    plan.argc = argc;
    plan.argv = argv;

    /* --json: everything but the summary goes to stderr */
    int saved_stdout = -1;
    if (json) { fflush(stdout); saved_stdout = dup(1); if (saved_stdout >= 0) dup2(2, 1); }
    pdq_quantize_callbacks cb = {NULL, on_message, NULL};
    pdq_quantize_result res;
    pdq_code rc = pdq_quantize_run(&plan, &cb, &res, &st);
    fflush(stdout);
    if (saved_stdout >= 0) { dup2(saved_stdout, 1); close(saved_stdout); }
    if (rc != PDQ_OK) {
        fprintf(stderr, "pdq quantize: %s\n", st.msg);
        return res.usage ? ARGS_USAGE_EXIT : 1;
    }
    if (!res.lead) return 0; /* pdq-mpi: rank 0 alone reports */
    if (quantize_summary_print(out, &res, json)) return 1;
    if (!json) printf("wrote %s\n", out);
    return 0;
}
