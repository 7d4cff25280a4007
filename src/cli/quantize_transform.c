#include "pdq/file.h"
#include "quantize_transform.h"

#include <stdio.h>
#include <string.h>

#include "pdq/threadpool.h"

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

int quantize_transform_run(const char *src_dir, const char *outdir, pdq_transform_opts *o, const int32_t *calib,
                           int ns, int T, int threads, char *dst, size_t dst_len) {
    pdq_status st = {0};
    pdq_model *m = NULL;
    if (pdq_dir_make(outdir, 0, &st) != PDQ_OK) {
        fprintf(stderr, "pdq quantize: %s\n", st.msg);
        return -1;
    }
    snprintf(dst, dst_len, "%s/transformed", outdir);
    /* streamed: one layer in memory at a time, the rotations on the process's threads */
    pdq_pool *pool = NULL;
    int bad = pdq_model_load_lazy(src_dir, &m, &st) != PDQ_OK;
    if (!bad) {
        pdq_set_threads(m, threads);
        bad = !(pool = pdq_pool_create(threads, &st));
    }
    if (!bad) {
        o->pool = pool;
        bad = pdq_transform_write(m, o, calib, ns, T, src_dir, dst, &st) != PDQ_OK;
        o->pool = NULL;
    }
    if (bad) fprintf(stderr, "pdq quantize: %s\n", st.msg);
    else {
        char name[64];
        pdq_transform_name(o, name, sizeof name);
        printf("transform %s: %.2f s%s -> %s\n", name, o->seconds, o->untied ? " (lm_head untied: R1 needs the final norm folded)" : "", dst);
    }
    pdq_pool_free(pool);
    pdq_model_free(m);
    return bad ? -1 : 0;
}

int quantize_transform_share(const char *src_dir, pdq_transform_opts *o, const int32_t *calib, int ns, int T,
                             int threads) {
    pdq_status st = {0};
    pdq_model *m = NULL;
    quantize_view v = {0};
    int bad = pdq_model_load_lazy(src_dir, &m, &st) != PDQ_OK;
    if (bad) fprintf(stderr, "pdq quantize: %s\n", st.msg);
    else {
        pdq_set_threads(m, threads);
        bad = quantize_transform_attach(m, o, calib, ns, T, threads, &v) != 0; /* the same pass, kept nowhere */
    }
    pdq_model_free(m);
    quantize_transform_detach(&v);
    return bad ? -1 : 0;
}

int quantize_transform_attach(pdq_model *m, pdq_transform_opts *o, const int32_t *calib, int ns, int T, int threads,
                              quantize_view *v) {
    pdq_status st = {0};
    memset(v, 0, sizeof *v);
    int bad = !(v->pool = pdq_pool_create(threads, &st));
    if (!bad) {
        o->pool = v->pool;
        bad = pdq_transform_attach(m, o, calib, ns, T, &v->view, &st) != PDQ_OK;
    }
    if (bad) {
        fprintf(stderr, "pdq quantize: %s\n", st.msg);
        quantize_transform_detach(v);
        return -1;
    }
    char name[64];
    pdq_transform_name(o, name, sizeof name);
    printf("transform %s: applied to each layer as it is read%s", name,
           o->untied ? " (lm_head untied: R1 needs the final norm folded)" : "");
    if (o->smooth) printf(", SmoothQuant ranges %.2f s", o->seconds);
    printf("\n");
    return 0;
}

void quantize_transform_detach(quantize_view *v) {
    pdq_transform_view_free(v->view);
    pdq_pool_free(v->pool);
    memset(v, 0, sizeof *v);
}
