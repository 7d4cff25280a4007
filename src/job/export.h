/* The export step of the quantize job (`pdq quantize … --export circle-full,circle-per-layer`). */
#ifndef PDQ_JOB_EXPORT_H
#define PDQ_JOB_EXPORT_H

#include <stdint.h>

#include "job.h"
#include "pdq/ptq.h"

struct cJSON;
/* Files of dir (sorted by name) as [{name, bytes}], their total size in *total. */
struct cJSON *job_list_files(const char *dir, double *total);

/* Exports OUTDIR (the quantized checkpoint just written, with ptq.json unless activations stayed
 * float) into OUTDIR/circle, measures the exported pair (perplexity on eval ids through the prefill
 * file, verify steps against the FP32 model of src_dir) and merges an "export" section into
 * OUTDIR/report.json. Returns 0, or 1 with the error in j. */
int quantize_export(const job_ctx *j, const char *src_dir, const char *outdir, int whole, int per_layer, const char *buckets,
                    const pdq_ptq_run_opts *ro,
                    const int32_t *eval, long n_eval, int threads);

#endif
