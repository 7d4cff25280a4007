/* The closing summary of the quantize job: sizes and bits per weight, time per phase, perplexity
 * and its change, top-1 and output paths, stored as report.json's "summary" (pdq quantize prints
 * it from there). kld (may be NULL): quantized weights vs FP32 on --eval. */
#ifndef PDQ_JOB_SUMMARY_H
#define PDQ_JOB_SUMMARY_H

#include "job.h"
#include "pdq/eval.h"

enum {
    QS_FP32_EVAL = 0, /* FP32 perplexity on --eval */
    QS_CALIB,         /* calibration text, windows and the layer inputs GPTQ needs */
    QS_WEIGHTS,       /* GPTQ / RTN proper: pass the quantizer's wall time split anyhow between
                         QS_CALIB and QS_WEIGHTS; the summary splits it by report.json's per-module
                         times */
    QS_SAVE,          /* writing the quantized and dequantized checkpoints */
    QS_QUANT_EVAL,    /* quantized perplexity on --eval */
    QS_ACT,           /* activation calibration, evaluation and verify */
    QS_EXPORT,        /* Circle export */
    QS_CHECK,         /* perplexity and verify through the exported pair */
    QS_COUNT
};

typedef struct {
    double t[QS_COUNT]; /* seconds; < 0: the phase did not run */
    double total;
} quantize_times;

void quantize_times_init(quantize_times *t);
/* The export step took `seconds`: report.json's export.seconds of it were the export, the rest the
 * exported-pair check. */
void quantize_split_export_time(const job_ctx *j, const char *outdir, double seconds, quantize_times *t);

/* Reads OUTDIR/report.json and adds "summary" to it (and "profile" when prof is not NULL:
 * profile.h); t gets QS_CALIB and QS_WEIGHTS as split there. 0, or 1 with the error in j. */
struct quantize_profile;
int quantize_summary(const job_ctx *j, const char *model_dir, const char *outdir, quantize_times *t,
                     const pdq_kld_result *kld, const struct quantize_profile *prof);

#endif
