/* The quantize job's closing summary in report.json (see summary.h). */
#include "summary.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pdq/config.h"
#include "pdq/family.h"
#include "pdq/file.h"
#include "io/json_field.h"
#include "profile.h"

static const char *const k_phase[QS_COUNT] = {"fp32_eval", "calibration", "weights", "save", "quant_eval",
                                              "activations", "export", "export_check"};

void quantize_times_init(quantize_times *t) {
    for (int i = 0; i < QS_COUNT; i++) t->t[i] = -1;
    t->total = 0;
}

static double file_bytes(const char *path) {
    long long size;
    return pdq_path_stat(path, &size, NULL) == PDQ_PATH_FILE ? (double)size : -1;
}

static double dir_bytes(const char *dir, int *files) {
    char **names;
    int n;
    double total = 0;
    *files = 0;
    pdq_status st = {0};
    if (pdq_dir_names(dir, 1 << 16, &names, &n, &st) != PDQ_OK) return -1;
    for (int i = 0; i < n; i++) {
        if (names[i][0] == '.') continue;
        char p[8192];
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        double b = file_bytes(p);
        if (b >= 0) { total += b; (*files)++; }
    }
    pdq_dir_names_free(names, n);
    return total;
}

static const cJSON *at(const cJSON *j, const char *a, const char *b, const char *c) { return pdq_jf_get(j, a, b, c); }
static double num(const cJSON *j, const char *a, const char *b, const char *c) { return pdq_jf_get_num(j, a, b, c, -1); }


void quantize_split_export_time(const job_ctx *j, const char *outdir, double seconds, quantize_times *t) {
    char path[4200];
    snprintf(path, sizeof path, "%s/report.json", outdir);
    cJSON *r = job_read_json(j, path, 0);
    double ex = num(r, "export", "seconds", NULL);
    cJSON_Delete(r);
    if (ex < 0 || ex > seconds) ex = seconds;
    t->t[QS_EXPORT] = ex;
    t->t[QS_CHECK] = seconds - ex;
}

int quantize_summary(const job_ctx *j, const char *model_dir, const char *outdir, quantize_times *t,
                     const pdq_kld_result *kld, const struct quantize_profile *prof) {
    char path[4200], p2[4300];
    snprintf(path, sizeof path, "%s/report.json", outdir);
    cJSON *r = job_read_json(j, path, 0);
    if (!r) return job_fail(j, PDQ_ERR_IO, "%s: cannot read it back", path);
    pdq_config cfg;
    pdq_status st = {0};
    double params = pdq_config_load(model_dir, &cfg, &st) == PDQ_OK ? (double)pdq_family_param_count(&cfg) : -1;
    cJSON *s = cJSON_CreateObject();
    cJSON_AddNumberToObject(s, "parameters", params);
    /* sizes and bits per weight (the quantized checkpoint over every parameter of the model) */
    cJSON *files = cJSON_AddObjectToObject(s, "files");
    snprintf(p2, sizeof p2, "%s/model.q.safetensors", outdir);
    double qb = file_bytes(p2);
    cJSON_AddNumberToObject(files, "model.q.safetensors", qb);
    snprintf(p2, sizeof p2, "%s/hf/model.safetensors", outdir);
    double hb = file_bytes(p2);
    cJSON_AddNumberToObject(files, "hf/model.safetensors", hb);
    int nc = 0;
    snprintf(p2, sizeof p2, "%s/circle", outdir);
    double cb = dir_bytes(p2, &nc);
    if (cb >= 0) cJSON_AddNumberToObject(files, "circle", cb);
    double bpw = qb > 0 && params > 0 ? 8.0 * qb / params : -1;
    cJSON_AddNumberToObject(s, "bits_per_weight", bpw);
    /* the quantizer's wall time minus the per-module GPTQ/RTN times is calibration (layer inputs) */
    quantize_times tt = *t;
    const cJSON *mods = at(r, "modules", NULL, NULL), *mo;
    if (tt.t[QS_WEIGHTS] >= 0 && tt.t[QS_CALIB] >= 0) {
        double w = 0;
        cJSON_ArrayForEach(mo, mods) w += num(mo, "seconds", NULL, NULL) > 0 ? num(mo, "seconds", NULL, NULL) : 0;
        double all = tt.t[QS_CALIB] + tt.t[QS_WEIGHTS];
        tt.t[QS_WEIGHTS] = w < all ? w : all;
        tt.t[QS_CALIB] = all - tt.t[QS_WEIGHTS];
    }
    *t = tt; /* the caller sees the split too */
    cJSON *tm = cJSON_AddObjectToObject(s, "seconds");
    for (int i = 0; i < QS_COUNT; i++)
        if (t->t[i] >= 0) cJSON_AddNumberToObject(tm, k_phase[i], t->t[i]);
    cJSON_AddNumberToObject(tm, "total", t->total);
    double f32 = num(r, "eval", "fp32_ppl", NULL), qp = num(r, "eval", "quant_ppl", NULL);
    double s_f = num(r, "activations", "ppl_static", "fp32"), s_w = num(r, "activations", "ppl_static", "weight_only");
    double s_full = num(r, "activations", "ppl_static", "full");
    double top1 = num(r, "activations", "verify", "top1_agreement");
    double etop1 = num(r, "export", "quality", "top1_agreement");
    cJSON *pp = cJSON_AddObjectToObject(s, "perplexity");
    if (f32 > 0) {
        cJSON_AddNumberToObject(pp, "fp32", f32);
        cJSON_AddNumberToObject(pp, "quantized_weights", qp);
        cJSON_AddNumberToObject(pp, "change", qp - f32);
    }
    if (s_f > 0 && s_full > 0) {
        cJSON_AddNumberToObject(pp, "static_fp32", s_f);
        cJSON_AddNumberToObject(pp, "static_weight_only", s_w);
        cJSON_AddNumberToObject(pp, "static_full", s_full);
        cJSON_AddNumberToObject(pp, "static_change", s_full - s_f);
    }
    if (kld) {
        cJSON *k = cJSON_AddObjectToObject(s, "kld");
        cJSON_AddNumberToObject(k, "tokens", (double)kld->tokens);
        cJSON_AddNumberToObject(k, "mean", kld->kld_mean);
        cJSON_AddNumberToObject(k, "se", kld->kld_se);
        cJSON_AddNumberToObject(k, "p99", kld->kld_p99);
        cJSON_AddNumberToObject(k, "max", kld->kld_max);
        cJSON_AddNumberToObject(k, "top1", kld->top1);
        cJSON_AddNumberToObject(k, "dp_rms", kld->dp_rms);
        cJSON_AddNumberToObject(k, "top_k", kld->k);
        cJSON_AddNumberToObject(k, "vocab", kld->vocab);
    }
    if (top1 >= 0) cJSON_AddNumberToObject(s, "top1_agreement", top1);
    if (etop1 >= 0) cJSON_AddNumberToObject(s, "export_top1_agreement", etop1);
    cJSON *out = cJSON_AddObjectToObject(s, "outputs");
    cJSON_AddStringToObject(out, "dir", outdir);
    snprintf(p2, sizeof p2, "%s/report.json", outdir);
    cJSON_AddStringToObject(out, "report_json", p2);
    snprintf(p2, sizeof p2, "%s/report.html", outdir);
    cJSON_AddStringToObject(out, "report_html", p2);
    snprintf(p2, sizeof p2, "%s/ptq.json", outdir);
    if (file_bytes(p2) >= 0) cJSON_AddStringToObject(out, "ptq_json", p2);
    snprintf(p2, sizeof p2, "%s/hf", outdir);
    cJSON_AddStringToObject(out, "dequantized_hf", p2);
    snprintf(p2, sizeof p2, "%s/circle", outdir);
    if (cb >= 0) cJSON_AddStringToObject(out, "circle", p2);

    cJSON_DeleteItemFromObjectCaseSensitive(r, "summary");
    cJSON_AddItemToObject(r, "summary", s);
    cJSON_DeleteItemFromObjectCaseSensitive(r, "profile");
    if (prof) cJSON_AddItemToObject(r, "profile", quantize_profile_json(prof, t));
    char *txt = cJSON_Print(r);
    pdq_status_clear(&st);
    pdq_code wrc = pdq_file_write_text(path, txt, 0, NULL, &st); /* atomic: pdq/file.h */
    free(txt);
    if (wrc) { cJSON_Delete(r); return job_fail(j, st.code, "%s", st.msg); }
    cJSON_Delete(r);
    return 0;
}
