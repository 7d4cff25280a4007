/* The transform step of the quantize job (`pdq quantize --transform LIST`). By default the lazily loaded model is
 * seen through the transforms (pdq_transform_attach): the quantizer reads each layer transformed
 * as it reads it, nothing is written, and the later steps (PTQ, export, verify, KLD) compare
 * against the original model, which computes the same function. --save-transformed also writes
 * the transformed float checkpoint as OUTDIR/transformed and runs the rest of the run on it (the
 * same codes: tests/cli/transforms.sh compares the two). */
#ifndef PDQ_JOB_TRANSFORM_H
#define PDQ_JOB_TRANSFORM_H

#include <stddef.h>
#include <stdint.h>

#include "job.h"
#include "pdq/transform.h"

/* Transforms src_dir into OUTDIR/transformed (path returned in dst). calib: SmoothQuant windows.
 * Returns 0, or -1 with the error in j. */
int quantize_transform_run(const job_ctx *j, const char *src_dir, const char *outdir, pdq_transform_opts *o, const int32_t *calib,
                           int ns, int T, int threads, char *dst, size_t dst_len);

/* A rank other than 0 while rank 0 runs quantize_transform_run under pdq-mpi: the same transform
 * pass over src_dir (its share of SmoothQuant's windows), writing nothing. 0, or -1 with the error in j. */
int quantize_transform_share(const job_ctx *j, const char *src_dir, pdq_transform_opts *o, const int32_t *calib, int ns, int T,
                             int threads);

/* The view of a run: m (lazy) seen through o on a pool of `threads` (the rotations' workers). */
typedef struct {
    struct pdq_pool *pool;
    pdq_transform_view *view;
} quantize_view;

/* Attaches o to m (calib: SmoothQuant windows). Returns 0, or -1 with the error in j
 * and nothing attached. */
int quantize_transform_attach(const job_ctx *j, pdq_model *m, pdq_transform_opts *o, const int32_t *calib, int ns, int T, int threads,
                              quantize_view *v);
/* Frees v; after the model it was attached to. */
void quantize_transform_detach(quantize_view *v);

#endif
