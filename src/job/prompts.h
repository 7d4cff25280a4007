/* The verify prompts of the quantize job come from the model's own domain: the first lines of the
 * evaluation text (or of the calibration text when there is none), each cut to its first words
 * so that prefill + the verify steps fit max_seq. Without either file the activation step's
 * fixed prompts are used. */
#ifndef PDQ_JOB_PROMPTS_H
#define PDQ_JOB_PROMPTS_H

#include "job.h"
#include "pdq/ptq.h"

#define QUANTIZE_PROMPTS 4        /* lines taken */
#define QUANTIZE_PROMPT_WORDS 8   /* words kept of each */

typedef struct {
    char *text[QUANTIZE_PROMPTS];
    int n;
    const char *file;             /* where they came from (NULL: the fixed prompts) */
} quantize_prompts;

/* Reads them from `file` (NULL: none) and points ro->prompts at them. Returns 0, or 1 with why
 * in j (unreadable file); a file without a non-empty line leaves the fixed prompts. */
int quantize_prompts_load(const job_ctx *j, const char *file, quantize_prompts *qp, pdq_ptq_run_opts *ro);
void quantize_prompts_free(quantize_prompts *qp);

#endif
