/* What every step of the quantize job shares: where its messages go and where its first error
 * is kept (pdq/quantize_job.h). The steps print nothing themselves. */
#ifndef PDQ_JOB_JOB_H
#define PDQ_JOB_JOB_H

#include <stdio.h>

#include "pdq/model.h"
#include "pdq/quantize_job.h"
#include "pdq/tokenizer.h"

typedef struct {
    const pdq_quantize_callbacks *cb; /* may be NULL */
    pdq_status *st;                   /* the first error of the run */
    int quiet_results;                /* a rank other than 0: results once, from rank 0 */
} job_ctx;

/* A note (no newline), text lines as they are, results (dropped on ranks other than 0). */
void job_note(const job_ctx *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void job_text(const job_ctx *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void job_result(const job_ctx *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Records an error when none is recorded yet; returns 1 (the steps' "failed"). */
int job_fail(const job_ctx *j, pdq_code code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* A stream for library calls that print their results to a FILE*: what they wrote goes out as
 * one result when closed. NULL when it cannot be opened (the results are then lost, not the run). */
typedef struct {
    FILE *f;
    char *buf;
    size_t len;
} job_stream;
FILE *job_stream_open(job_stream *s);
void job_stream_close(const job_ctx *j, job_stream *s);

/* Loading with the error recorded in j (NULL then). threads <= 0: all cores. */
pdq_model *job_load_model(const job_ctx *j, const char *dir, int threads);
/* A quantized OUTDIR keeps its weights packed (pdq_model_load_packed). */
pdq_model *job_load_model_packed(const job_ctx *j, const char *dir, int threads);
pdq_tokenizer *job_load_tokenizer(const job_ctx *j, const char *dir);
/* The whole file, NUL-terminated (a directory is an error, not 0 bytes). */
char *job_read_text(const job_ctx *j, const char *path, size_t *len);

/* A JSON file pdq wrote, parsed (NULL when it cannot be read or parsed). A file that cannot be read
 * is a note, not an error: the callers go on without it or say what is missing. absent_ok: a
 * missing file is no note either. */
struct cJSON;
struct cJSON *job_read_json(const job_ctx *j, const char *path, int absent_ok);

#endif
