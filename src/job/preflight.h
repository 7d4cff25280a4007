/* The quantize job checks everything it can before computing anything (a typo in --calib or an
 * export that cannot hold group-wise weights is found in milliseconds, not after GPTQ), then
 * prints a short configuration summary, as TICO does. */
#ifndef PDQ_JOB_PREFLIGHT_H
#define PDQ_JOB_PREFLIGHT_H

#include <stdio.h>

#include "pdq/model.h"
#include "pdq/ptq.h"
#include "pdq/quant.h"
#include "job.h"

typedef struct {
    const char *src, *out, *calib, *eval, *export_list; /* out NULL: not checked (a rank that does not write) */
    int export_whole, export_per;
    pdq_quant_opts *qo;            /* overrides' `used` flags are reset by the check */
    const pdq_ptq_run_opts *ro;
    int abits;                     /* PDQ_ADT_* of the activation step (FLOAT: none) */
    int nsamples, seq_len;         /* GPTQ windows (seq_len 0: automatic) */
    int eval_len, eval_stride;
    double known_fp32;             /* --eval-fp32-ppl, 0 when not given */
    int threads;
} quantize_plan;

/* Options against the model's config and each other, the input files, and --out (created, and
 * shown writable). Returns 0, or 1 with the error in j: PDQ_ERR_ARG for a conflict of options,
 * another code for an unusable file or dir. Only m->cfg is used (a lazy model is enough). */
int quantize_preflight(const job_ctx *j, quantize_plan *p, const pdq_model *m);
/* The activation and export steps compare verify_steps greedy steps after each fixed verify
 * prompt within max_seq: checked with src's tokenizer. 0, or 1 with the error in j. */
int quantize_check_verify(const job_ctx *j, const char *src, const pdq_ptq_run_opts *ro);
/* The configuration as it will run, a few lines of text through j. */
void quantize_print_config(const job_ctx *j, const quantize_plan *p, const pdq_model *m);

#endif
