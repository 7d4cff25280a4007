/* The transform and export flags of `pdq quantize` (the steps themselves: src/job/). */
#ifndef PDQ_CLI_QUANTIZE_ARGS_H
#define PDQ_CLI_QUANTIZE_ARGS_H

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

#define QUANTIZE_EXPORT_USAGE                                                                              \
    "  --export LIST        after quantizing, Circle files into OUTDIR/circle: circle-full (model_prefill /\n" \
    "                       model_decode) and/or circle-per-layer, comma separated; graph options default to\n" \
    "                       TICO's npu_export profile (pre_negated_sin, k_proj, unrolled); report.json gains\n" \
    "                       an export section (files, sizes, perplexity and top-1 through the exported files);\n" \
    "                       --abits none exports the hybrid form (packed weights, float activations)\n"       \
    "  --append-bucket LIST with --export: append-prefill buckets, e.g. 1,4,16 (decoder_layer_append_prefill_q<Q>_<i>)\n"

/* Reads the flags (*save: --save-transformed); returns 0, or prints the error and returns -1. */
int quantize_transform_args(pdq_args *a, pdq_transform_opts *o, int *save);
/* --export LIST (pdq_quantize_export_parse); 0, or prints the error and returns -1. */
int quantize_export_parse(const char *list, int *whole, int *per_layer);
/* --append-bucket LIST: needs --export and sizes in [1, max_seq-1]; 0 if fine, else prints and -1. */
int quantize_export_buckets_check(const char *export, const char *list, int max_seq);

#endif
