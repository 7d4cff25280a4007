/* The transform step of the quantize job (transform.h). */
#include "transform.h"

#include "pdq/file.h"

#include <stdio.h>
#include <string.h>

#include "pdq/threadpool.h"

int quantize_transform_run(const job_ctx *j, const char *src_dir, const char *outdir, pdq_transform_opts *o, const int32_t *calib,
                           int ns, int T, int threads, char *dst, size_t dst_len) {
    pdq_status st = {0};
    pdq_model *m = NULL;
    if (pdq_dir_make(outdir, 0, &st) != PDQ_OK) return -job_fail(j, st.code, "%s", st.msg);
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
    if (bad) job_fail(j, st.code, "%s", st.msg);
    else {
        char name[64];
        pdq_transform_name(o, name, sizeof name);
        job_result(j, "transform %s: %.2f s%s -> %s\n", name, o->seconds, o->untied ? " (lm_head untied: R1 needs the final norm folded)" : "", dst);
    }
    pdq_pool_free(pool);
    pdq_model_free(m);
    return bad ? -1 : 0;
}

int quantize_transform_share(const job_ctx *j, const char *src_dir, pdq_transform_opts *o, const int32_t *calib, int ns, int T,
                             int threads) {
    pdq_status st = {0};
    pdq_model *m = NULL;
    quantize_view v = {0};
    int bad = pdq_model_load_lazy(src_dir, &m, &st) != PDQ_OK;
    if (bad) job_fail(j, st.code, "%s", st.msg);
    else {
        pdq_set_threads(m, threads);
        bad = quantize_transform_attach(j, m, o, calib, ns, T, threads, &v) != 0; /* the same pass, kept nowhere */
    }
    pdq_model_free(m);
    quantize_transform_detach(&v);
    return bad ? -1 : 0;
}

int quantize_transform_attach(const job_ctx *j, pdq_model *m, pdq_transform_opts *o, const int32_t *calib, int ns, int T, int threads,
                              quantize_view *v) {
    pdq_status st = {0};
    memset(v, 0, sizeof *v);
    int bad = !(v->pool = pdq_pool_create(threads, &st));
    if (!bad) {
        o->pool = v->pool;
        bad = pdq_transform_attach(m, o, calib, ns, T, &v->view, &st) != PDQ_OK;
    }
    if (bad) {
        job_fail(j, st.code, "%s", st.msg);
        quantize_transform_detach(v);
        return -1;
    }
    char name[64];
    pdq_transform_name(o, name, sizeof name);
    char ranges[64] = "";
    if (o->smooth) snprintf(ranges, sizeof ranges, ", SmoothQuant ranges %.2f s", o->seconds);
    job_result(j, "transform %s: applied to each layer as it is read%s%s\n", name,
               o->untied ? " (lm_head untied: R1 needs the final norm folded)" : "", ranges);
    return 0;
}

void quantize_transform_detach(quantize_view *v) {
    pdq_transform_view_free(v->view);
    pdq_pool_free(v->pool);
    memset(v, 0, sizeof *v);
}
