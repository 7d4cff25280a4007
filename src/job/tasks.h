/* The quantize job's task step (pdq quantize --eval-task): task accuracy (pdq eval's scoring) of
 * the FP32 model and of the quantized one on every path quantize produced, added to report.json. */
#ifndef PDQ_JOB_TASKS_H
#define PDQ_JOB_TASKS_H

#include "job.h"

typedef struct {
    const char *tasks;  /* NAME[,NAME...] (NULL: no task evaluation) */
    const char *data;   /* --task-data PATH, as pdq eval's --data */
    long limit;         /* --task-limit N (0: every item) */
    int shots;          /* --task-shots K (mmlu) */
} quantize_tasks_opts;

/* Loads every task once so a bad name, path or layout fails before any work. 0, or 1 with the
 * error in j. */
int quantize_tasks_check(const job_ctx *j, const quantize_tasks_opts *o);

/* Scores the tasks on FP32 (fp32_dir), the quantized weights (outdir, packed kernels) and, when
 * outdir has ptq.json (act), the static graphs in fake-quant and integer mode (a context prefilled
 * once, continuations appended through buckets: NULL decode steps, else the export's list), and
 * writes report.json's "tasks": each path's metrics, and per task how many items changed answer
 * between fake-quant and integer, how many margins lie inside the integer bound (docs/eval.md)
 * and how far the log-likelihoods moved. 0, or 1 with the error in j. */
int quantize_tasks_run(const job_ctx *j, const quantize_tasks_opts *o, const char *fp32_dir, const char *outdir, int act, const char *buckets,
                       int threads);

#endif
