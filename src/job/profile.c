/* The quantize job's --profile table (profile.h). */
#include "profile.h"

#include <cjson/cJSON.h>

#include "pdq/model.h"

enum { PROBE_N = 1024 };
#define PROBE_SECONDS 0.5

int quantize_profile_probe(const job_ctx *j, quantize_profile *p, int threads, int end) {
    if (threads <= 0) threads = pdq_default_threads();
    p->threads = threads;
    /* the last model loaded may be packed (BLAS then set to one thread): the job's count again */
    pdq_set_threads(NULL, threads);
    pdq_status st = {0};
    double g, d;
    if (pdq_sgemm_probe(PROBE_N, PROBE_SECONDS, &g, &st) || pdq_dgemm_probe(PROBE_N, PROBE_SECONDS, &d, &st))
        return job_fail(j, st.code, "--profile: %s", st.msg);
    *(end ? &p->sgemm_end : &p->sgemm_start) = g;
    *(end ? &p->dgemm_end : &p->dgemm_start) = d;
    return 0;
}

/* One phase's entry; dgemm > 0: the phase computes in double, its fraction of that rate too. */
static void phase(cJSON *arr, const char *name, double seconds, double flops, double sgemm, double dgemm) {
    if (seconds < 0) return; /* did not run */
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", name);
    cJSON_AddNumberToObject(o, "seconds", seconds);
    if (flops > 0) {
        double rate = seconds > 0 ? flops / seconds / 1e9 : 0;
        cJSON_AddNumberToObject(o, "gflop", flops / 1e9);
        cJSON_AddNumberToObject(o, "gflop_s", rate);
        cJSON_AddNumberToObject(o, "fraction_of_sgemm", sgemm > 0 ? rate / sgemm : 0);
        if (dgemm > 0) cJSON_AddNumberToObject(o, "fraction_of_dgemm", rate / dgemm);
        else cJSON_AddNullToObject(o, "fraction_of_dgemm");
    } else { /* no FLOPs counted for it (memory, I/O or element-wise work) */
        cJSON_AddNullToObject(o, "gflop");
        cJSON_AddNullToObject(o, "gflop_s");
        cJSON_AddNullToObject(o, "fraction_of_sgemm");
        cJSON_AddNullToObject(o, "fraction_of_dgemm");
    }
    cJSON_AddItemToArray(arr, o);
}

cJSON *quantize_profile_json(const quantize_profile *p, const quantize_times *t) {
    double sgemm = p->sgemm_start > p->sgemm_end ? p->sgemm_start : p->sgemm_end;
    double dgemm = p->dgemm_start > p->dgemm_end ? p->dgemm_start : p->dgemm_end;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "sgemm_gflops", sgemm);
    cJSON_AddNumberToObject(o, "sgemm_gflops_start", p->sgemm_start);
    cJSON_AddNumberToObject(o, "sgemm_gflops_end", p->sgemm_end);
    cJSON_AddNumberToObject(o, "dgemm_gflops", dgemm);
    cJSON_AddNumberToObject(o, "dgemm_gflops_start", p->dgemm_start);
    cJSON_AddNumberToObject(o, "dgemm_gflops_end", p->dgemm_end);
    cJSON_AddNumberToObject(o, "threads", p->threads);
    cJSON *arr = cJSON_AddArrayToObject(o, "phases");
    phase(arr, "fp32_eval", t->t[QS_FP32_EVAL], 0, sgemm, 0);
    /* the quantizer's step (calibration + weights) by its phases; the rest of it (windows,
     * loading each layer, the embedding, packing codes) as quantize_other */
    phase(arr, "calib_tokenize", p->tokenize_s, 0, sgemm, 0);
    double counted = p->tokenize_s;
    for (int i = 0; i < PDQ_QP_COUNT; i++) {
        if (p->q.seconds[i] <= 0 && p->q.flops[i] <= 0) continue;
        phase(arr, pdq_qphase_name((pdq_qphase)i), p->q.seconds[i], p->q.flops[i], sgemm, i == PDQ_QP_CHOLESKY ? dgemm : 0);
        counted += p->q.seconds[i];
    }
    double step = (t->t[QS_CALIB] > 0 ? t->t[QS_CALIB] : 0) + (t->t[QS_WEIGHTS] > 0 ? t->t[QS_WEIGHTS] : 0);
    phase(arr, "quantize_other", step > counted ? step - counted : 0, 0, sgemm, 0);
    phase(arr, "save", t->t[QS_SAVE], 0, sgemm, 0);
    phase(arr, "quant_eval", t->t[QS_QUANT_EVAL], 0, sgemm, 0);
    phase(arr, "activations", t->t[QS_ACT], 0, sgemm, 0);
    phase(arr, "export", t->t[QS_EXPORT], 0, sgemm, 0);
    phase(arr, "export_check", t->t[QS_CHECK], 0, sgemm, 0);
    cJSON_AddNumberToObject(o, "total_seconds", t->total);
    return o;
}
