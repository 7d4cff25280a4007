/* The transform step of `pdq quantize --transform LIST`: the original checkpoint is transformed
 * in float (function-preserving) and written as OUTDIR/transformed, which every later step of the
 * run quantizes, calibrates, exports and verifies against. */
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
    "                       (SmoothQuant; needs --calib), or none (default). Written to OUTDIR/transformed\n" \
    "  --rotation KIND      auto (randomized Hadamard when the size is a power of two, else random\n" \
    "                       orthogonal; default), hadamard, random\n" \
    "  --rotation-seed S    seed of the R1/R2 matrices (default 0)\n" \
    "  --smooth-alpha A     SmoothQuant migration strength (default 0.5)\n" \
    "  --smooth-nsamples N  calibration windows for SmoothQuant's ranges (default 32)\n"

/* Reads the flags; returns 0, or prints the error and returns -1. */
int quantize_transform_args(pdq_args *a, pdq_transform_opts *o);

/* Transforms src_dir into OUTDIR/transformed (path returned in dst). calib: SmoothQuant windows.
 * Returns 0 on success; prints the error otherwise. */
int quantize_transform_run(const char *src_dir, const char *outdir, pdq_transform_opts *o, const int32_t *calib,
                           int ns, int T, int threads, char *dst, size_t dst_len);

#endif
