/* The transform step of `pdq quantize --transform LIST`. By default the lazily loaded model is
 * seen through the transforms (pdq_transform_attach): the quantizer reads each layer transformed
 * as it reads it, nothing is written, and the later steps (PTQ, export, verify, KLD) compare
 * against the original model, which computes the same function. --save-transformed also writes
 * the transformed float checkpoint as OUTDIR/transformed and runs the rest of the run on it (the
 * same codes: tests/cli/transforms.sh compares the two). */
#ifndef PDQ_CLI_QUANTIZE_TRANSFORM_H
#define PDQ_CLI_QUANTIZE_TRANSFORM_H

#include <stddef.h>
#include <stdint.h>

#include "args.h"
#include "pdq/transform.h"

#define QUANTIZE_TRANSFORM_USAGE \
    "  --transform LIST     function-preserving float transforms before quantization, comma separated:\n" \
    "                       fold (RMSNorm weights into the linears), r1 (residual rotation; implies fold),\n" \
    "                       r2 (per-head v->o rotation), cle (equalization up->down, v->o), smooth\n" \
    "                       (SmoothQuant; needs --calib), or none (default), applied as each layer is read\n" \
    "  --save-transformed   also write the transformed f32 checkpoint as OUTDIR/transformed (and\n" \
    "                       quantize from it)\n" \
    "  --rotation KIND      auto (randomized Hadamard when the size is a power of two, else random\n" \
    "                       orthogonal; default), hadamard, random\n" \
    "  --rotation-seed S    seed of the R1/R2 matrices (default 0)\n" \
    "  --smooth-alpha A     SmoothQuant migration strength (default 0.5)\n" \
    "  --smooth-nsamples N  calibration windows for SmoothQuant's ranges (default 32)\n"

/* Reads the flags (*save: --save-transformed); returns 0, or prints the error and returns -1. */
int quantize_transform_args(pdq_args *a, pdq_transform_opts *o, int *save);

/* Transforms src_dir into OUTDIR/transformed (path returned in dst). calib: SmoothQuant windows.
 * Returns 0 on success; prints the error otherwise. */
int quantize_transform_run(const char *src_dir, const char *outdir, pdq_transform_opts *o, const int32_t *calib,
                           int ns, int T, int threads, char *dst, size_t dst_len);

/* A rank other than 0 while rank 0 runs quantize_transform_run under pdq-mpi: the same transform
 * pass over src_dir (its share of SmoothQuant's windows), writing nothing. 0, or prints and -1. */
int quantize_transform_share(const char *src_dir, pdq_transform_opts *o, const int32_t *calib, int ns, int T,
                             int threads);

/* The view of a run: m (lazy) seen through o on a pool of `threads` (the rotations' workers). */
typedef struct {
    struct pdq_pool *pool;
    pdq_transform_view *view;
} quantize_view;

/* Attaches o to m (calib: SmoothQuant windows). Returns 0, or prints the error and returns -1
 * with nothing attached. */
int quantize_transform_attach(pdq_model *m, pdq_transform_opts *o, const int32_t *calib, int ns, int T, int threads,
                              quantize_view *v);
/* Frees v; after the model it was attached to. */
void quantize_transform_detach(quantize_view *v);

#endif
