/* The transform and export flags of `pdq quantize` (quantize_args.h). */
#include "quantize_args.h"

#include <stdio.h>
#include <string.h>

#include "pdq/quantize_job.h"
#include "pdq/circle_export.h"

int quantize_export_parse(const char *list, int *whole, int *per_layer) {
    pdq_status st = {0};
    if (pdq_quantize_export_parse(list, whole, per_layer, &st) == PDQ_OK) return 0;
    fprintf(stderr, "pdq quantize: %s\n", st.msg);
    return -1;
}

int quantize_export_buckets_check(const char *export, const char *list, int max_seq) {
    int b[PDQ_MAX_BUCKETS], n;
    pdq_status st = {0};
    if (!export) { fprintf(stderr, "pdq quantize: --append-bucket needs --export\n"); return -1; }
    if (pdq_buckets_parse(list, max_seq, b, &n, &st) != PDQ_OK) { fprintf(stderr, "pdq quantize: --append-bucket: %s\n", st.msg); return -1; }
    return 0;
}

int quantize_transform_args(pdq_args *a, pdq_transform_opts *o, int *save) {
    pdq_transform_opts_default(o);
    *save = args_flag(a, "--save-transformed");
    pdq_status st = {0};
    if (pdq_transform_parse(args_str(a, "--transform"), o, &st)) {
        fprintf(stderr, "pdq quantize: %s\n", st.msg);
        return -1;
    }
    if (*save && !pdq_transform_any(o)) {
        fprintf(stderr, "pdq quantize: --save-transformed needs --transform LIST\n");
        return -1;
    }
    const char *k = args_str(a, "--rotation");
    if (k && strcmp(k, "auto") && strcmp(k, "hadamard") && strcmp(k, "random")) {
        fprintf(stderr, "pdq quantize: --rotation must be auto, hadamard or random, got '%s'\n", k);
        return -1;
    }
    o->kind = !k || !strcmp(k, "auto") ? PDQ_ROT_AUTO : !strcmp(k, "hadamard") ? PDQ_ROT_HADAMARD : PDQ_ROT_RANDOM;
    o->seed = (uint64_t)args_int(a, "--rotation-seed", 0);
    o->smooth_alpha = (float)args_double(a, "--smooth-alpha", 0.5);
    o->smooth_nsamples = (int)args_int(a, "--smooth-nsamples", 32);
    if (!(o->smooth_alpha >= 0.0f && o->smooth_alpha <= 1.0f)) {
        fprintf(stderr, "pdq quantize: --smooth-alpha %g outside [0, 1]\n", o->smooth_alpha);
        return -1;
    }
    if (o->smooth_nsamples < 1) {
        fprintf(stderr, "pdq quantize: --smooth-nsamples must be at least 1, got %d\n", o->smooth_nsamples);
        return -1;
    }
    return 0;
}
