/* The closing summary of pdq quantize: sizes and bits per weight, time per phase, perplexity and
 * its change, top-1 and output paths; printed, stored as report.json's "summary", or (--json)
 * printed as one JSON document. kld (may be NULL): quantized weights vs FP32 on --eval. */
#ifndef PDQ_CLI_QUANTIZE_SUMMARY_H
#define PDQ_CLI_QUANTIZE_SUMMARY_H

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
void quantize_split_export_time(const char *outdir, double seconds, quantize_times *t);

/* Reads OUTDIR/report.json, adds "summary" to it, prints the summary (text, or one JSON document
 * when json). Returns 0 on success. */
int quantize_summary(const char *model_dir, const char *outdir, const quantize_times *t, const pdq_kld_result *kld,
                     int json);

#endif
