/* The export step of `pdq quantize … --export circle-full,circle-per-layer`. */
#ifndef PDQ_CLI_QUANTIZE_EXPORT_H
#define PDQ_CLI_QUANTIZE_EXPORT_H

#include <stdint.h>

#include "pdq/ptq.h"

struct cJSON;
/* Files of dir (sorted by name) as [{name, bytes}], their total size in *total. */
struct cJSON *list_files(const char *dir, double *total);

#define QUANTIZE_EXPORT_USAGE                                                                              \
    "  --export LIST        after quantizing, Circle files into OUTDIR/circle: circle-full (model_prefill /\n" \
    "                       model_decode) and/or circle-per-layer, comma separated; graph options default to\n" \
    "                       TICO's npu_export profile (pre_negated_sin, k_proj, unrolled); report.json gains\n" \
    "                       an export section (files, sizes, perplexity and top-1 through the exported files);\n" \
    "                       --abits none exports the hybrid form (packed weights, float activations)\n"       \
    "  --append-bucket LIST with --export: append-prefill buckets, e.g. 1,4,16 (decoder_layer_append_prefill_q<Q>_<i>)\n"

/* Parses LIST; 0 on success (whole / per_layer set), else prints the error and returns -1. */
int quantize_export_parse(const char *list, int *whole, int *per_layer);
/* --append-bucket LIST: needs --export and sizes in [1, max_seq-1]; 0 if fine, else prints and -1. */
int quantize_export_buckets_check(const char *export, const char *list, int max_seq);

/* Exports OUTDIR (the quantized checkpoint just written, with ptq.json unless activations stayed
 * float) into OUTDIR/circle, measures the exported pair (perplexity on eval ids through the prefill
 * file, verify steps against the FP32 model of src_dir) and merges an "export" section into
 * OUTDIR/report.json. Returns 0 on success. */
int quantize_export(const char *src_dir, const char *outdir, int whole, int per_layer, const char *buckets,
                    const pdq_ptq_run_opts *ro,
                    const int32_t *eval, long n_eval, int threads);

#endif
