/* What `pdq quantize` prints after the job (src/job/): the closing summary from OUTDIR/report.json
 * (text, or with --json its "summary" as one JSON document) and the task lines in it. */
#ifndef PDQ_CLI_QUANTIZE_PRINT_H
#define PDQ_CLI_QUANTIZE_PRINT_H

#include <stdio.h>

#include "pdq/quantize_job.h"

/* The summary of the run that wrote outdir (res: its times and KLD). 0, or 1 after printing why. */
int quantize_summary_print(const char *outdir, const pdq_quantize_result *res, int json);

/* The summary's lines for report.json's "tasks" (r is the parsed report). */
struct cJSON;
void quantize_tasks_print(const struct cJSON *r, FILE *f);

#endif
