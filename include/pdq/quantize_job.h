/* The whole `pdq quantize` job as one call: weights (GPTQ/RTN) of a model directory into OUTDIR,
 * then, as the plan asks, the float transforms before it, perplexity and KLD on an evaluation
 * text, activation PTQ, the Circle export and its check, task accuracy, report.json's summary and
 * report.html. The library prints no results: notes, progress text and results reach the caller
 * through the callbacks, and errors come back as a pdq_status naming the file, option or limit.
 * examples/quantize_model.c is a complete program. */
#ifndef PDQ_QUANTIZE_JOB_H
#define PDQ_QUANTIZE_JOB_H

#include "pdq/eval.h"
#include "pdq/ptq.h"
#include "pdq/quant.h"
#include "pdq/status.h"
#include "pdq/transform.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Everything the command line decides. Strings and arrays stay the caller's. */
typedef struct {
    const char *model_dir;      /* the float model (HF directory) */
    const char *out_dir;        /* OUTDIR: created; must not be model_dir */
    const char *calib;          /* calibration text (GPTQ, SmoothQuant, activations); NULL: none */
    pdq_quant_opts qo;          /* method, bits, groups, overrides, embedding/lm_head bits, seed */
    int nsamples;               /* GPTQ calibration windows (128) */
    int seq_len;                /* their length; 0: 2048 capped by the model and the text */
    pdq_transform_opts transform; /* float transforms before quantizing (none by default) */
    int save_transformed;       /* also write OUTDIR/transformed and quantize from it */
    int abits;                  /* activation dtype (pdq_adtype): PDQ_ADT_FLOAT skips activation PTQ */
    pdq_ptq_run_opts ptq;       /* activation PTQ: max_seq, windows, verify steps, graph options */
    const char *eval;           /* evaluation text (perplexity in report.json); NULL: none */
    int eval_len, eval_stride;  /* its windows (256 / 256) */
    long eval_tokens;           /* > 0: only its first N tokens */
    double eval_fp32_ppl;       /* > 0: a known FP32 perplexity of the same windows (not measured) */
    int kld;                    /* KL divergence of the quantized weights against FP32 on eval */
    const char *export_list;    /* "circle-full", "circle-per-layer" or both, comma separated; NULL: none */
    const char *append_buckets; /* with export: append-prefill buckets, e.g. "1,4,16"; NULL: none */
    const char *tasks;          /* task accuracy: NAME[,NAME...]; NULL: none */
    const char *task_data;      /* the task data sets (pdq eval --data) */
    long task_limit;            /* first N items of each task (0: all) */
    int task_shots;             /* mmlu dev questions before each */
    int threads;                /* <= 0: all cores */
    int quiet;                  /* no per-module table among the results */
    int profile;                /* report.json's "profile": each phase's seconds and counted FLOPs
                                 * against an sgemm probe run in the same job (about 1 s more) */
    int argc;                   /* the command line, compared across the ranks of a pdq-mpi job */
    char **argv;                /* (NULL: nothing to compare) */
} pdq_quantize_plan;

/* The defaults of `pdq quantize`: GPTQ w4 per-channel, 128 windows, no activation step (set
 * abits to PDQ_ADT_INT16 with a calibration text for the CLI's default), no export. */
void pdq_quantize_plan_default(pdq_quantize_plan *p);

/* The steps of a run, in order; a step that does not run is not reported. */
typedef enum {
    PDQ_QSTEP_FP32_EVAL = 0, /* FP32 perplexity on eval */
    PDQ_QSTEP_CALIB,         /* calibration text, windows and the layer inputs GPTQ needs */
    PDQ_QSTEP_WEIGHTS,       /* GPTQ / RTN proper (split from CALIB by the per-module times) */
    PDQ_QSTEP_SAVE,          /* writing the quantized and dequantized checkpoints */
    PDQ_QSTEP_QUANT_EVAL,    /* quantized perplexity (and KLD) on eval */
    PDQ_QSTEP_ACT,           /* activation calibration, evaluation and verify */
    PDQ_QSTEP_EXPORT,        /* Circle export */
    PDQ_QSTEP_CHECK,         /* perplexity and verify through the exported pair */
    PDQ_QSTEP_COUNT
} pdq_quantize_step;

typedef enum {
    PDQ_QMSG_NOTE,   /* a remark on the run: a cap applied, a fallback taken, a cache used (one line) */
    PDQ_QMSG_TEXT,   /* progress text as is: the configuration lines, the rank report */
    PDQ_QMSG_RESULT  /* results as text: the per-module table, perplexities, the activation, transform
                      * and export reports (pdq quantize prints them on stdout) */
} pdq_quantize_msg;

/* What the job tells its caller as it goes; any member may be NULL. Progress bars of the long
 * loops (util/progress.h: perplexity, calibration, tasks) still draw on stderr when it is a
 * terminal or PDQ_PROGRESS=1. */
typedef struct {
    void *user;
    /* NOTE: text without newline; TEXT and RESULT: whole lines, newlines included */
    void (*message)(void *user, pdq_quantize_msg kind, const char *text);
    /* a step begins (done == 0) or ends (done == 1, seconds its wall time) */
    void (*step)(void *user, pdq_quantize_step step, int done, double seconds);
} pdq_quantize_callbacks;

/* What a run measured besides the files. */
typedef struct {
    double seconds[PDQ_QSTEP_COUNT]; /* < 0: the step did not run */
    double total;
    int have_kld;                    /* plan.kld: the weights against FP32 */
    pdq_kld_result kld;
    int lead;                        /* this process wrote OUTDIR and reports (rank 0 of a pdq-mpi job,
                                      * or a job of one) */
    int usage;                       /* the error is the plan's own (options that conflict with each
                                      * other or with the model): pdq quantize exits 2 */
} pdq_quantize_result;

/* Runs the plan. OUTDIR then holds model.q.safetensors + pdq_quant.json, hf/, report.json (with
 * its "summary"), report.html and, as asked, ptq.json, circle/, transformed/. Returns PDQ_OK or
 * the first error (st names it; res->usage tells a conflicting plan from a failed step). Under
 * pdq-mpi every rank calls it with the same plan; rank 0 alone writes and reports. */
pdq_code pdq_quantize_run(const pdq_quantize_plan *plan, const pdq_quantize_callbacks *cb, pdq_quantize_result *res,
                          pdq_status *st);

/* The parts of an export list: 0, or PDQ_ERR_ARG naming the unknown kind. */
pdq_code pdq_quantize_export_parse(const char *list, int *whole, int *per_layer, pdq_status *st);

#ifdef __cplusplus
}
#endif
#endif
