/* pdq quantize's closing summary (see quantize_summary.h). */
#include "quantize_summary.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "pdq/config.h"
#include "pdq/family.h"
#include "pdq/file.h"
#include "quantize_tasks.h"

static const char *const k_phase[QS_COUNT] = {"fp32_eval", "calibration", "weights", "save", "quant_eval",
                                              "activations", "export", "export_check"};
static const char *const k_phase_text[QS_COUNT] = {"FP32 eval", "calibration", "GPTQ/RTN", "save", "quant eval",
                                                   "activations", "export", "exported-pair check"};

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

static const cJSON *at(const cJSON *j, const char *a, const char *b, const char *c) {
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(j, a);
    if (x && b) x = cJSON_GetObjectItemCaseSensitive(x, b);
    if (x && c) x = cJSON_GetObjectItemCaseSensitive(x, c);
    return x;
}
static double num(const cJSON *j, const char *a, const char *b, const char *c) {
    const cJSON *x = at(j, a, b, c);
    return cJSON_IsNumber(x) ? x->valuedouble : -1;
}

static cJSON *read_json(const char *path) {
    size_t len;
    char *txt = cli_read_text("quantize", path, &len);
    cJSON *j = txt ? cJSON_ParseWithLength(txt, len) : NULL;
    free(txt);
    return j;
}

void quantize_split_export_time(const char *outdir, double seconds, quantize_times *t) {
    char path[4200];
    snprintf(path, sizeof path, "%s/report.json", outdir);
    cJSON *r = read_json(path);
    double ex = num(r, "export", "seconds", NULL);
    cJSON_Delete(r);
    if (ex < 0 || ex > seconds) ex = seconds;
    t->t[QS_EXPORT] = ex;
    t->t[QS_CHECK] = seconds - ex;
}

static double mib(double b) { return b / 1048576.0; }

int quantize_summary(const char *model_dir, const char *outdir, const quantize_times *t, const pdq_kld_result *kld,
                     int json) {
    char path[4200], p2[4300];
    snprintf(path, sizeof path, "%s/report.json", outdir);
    cJSON *r = read_json(path);
    if (!r) { fprintf(stderr, "pdq quantize: %s: cannot read it back\n", path); return 1; }
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
    t = &tt;
    cJSON *tm = cJSON_AddObjectToObject(s, "seconds");
    for (int i = 0; i < QS_COUNT; i++)
        if (t->t[i] >= 0) cJSON_AddNumberToObject(tm, k_phase[i], t->t[i]);
    cJSON_AddNumberToObject(tm, "total", t->total);
    double f32 = num(r, "eval", "fp32_ppl", NULL), qp = num(r, "eval", "quant_ppl", NULL);
    double s_f = num(r, "activations", "ppl_static", "fp32"), s_w = num(r, "activations", "ppl_static", "weight_only");
    double s_full = num(r, "activations", "ppl_static", "full");
    double top1 = num(r, "activations", "verify", "top1_agreement"), nsteps = num(r, "activations", "verify", "steps_compared");
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
    char *txt = cJSON_Print(r);
    pdq_status_clear(&st);
    pdq_code wrc = pdq_file_write_text(path, txt, 0, NULL, &st); /* atomic: pdq/file.h */
    free(txt);
    if (wrc) { fprintf(stderr, "pdq quantize: %s\n", st.msg); cJSON_Delete(r); return 1; }
    if (json) {
        char *js = cJSON_Print(s);
        if (js) printf("%s\n", js);
        free(js);
        cJSON_Delete(r);
        return 0;
    }
    printf("\n== summary ==\n");
    const cJSON *method = at(r, "method", NULL, NULL);
    printf("weights      %s w%g%s -> %s/model.q.safetensors %.2f MiB", cJSON_IsString(method) ? method->valuestring : "?",
           num(r, "wbits", NULL, NULL), num(r, "group", NULL, NULL) > 0 ? " (grouped)" : "", outdir, mib(qb));
    if (bpw > 0) printf(", %.2f bits per weight over %.1fM parameters", bpw, params / 1e6);
    printf("\n             %s/hf/ %.2f MiB (dequantized f32, any HF tool loads it)\n", outdir, mib(hb));
    if (cb >= 0) printf("circle       %s/circle/ %.2f MiB in %d files\n", outdir, mib(cb), nc);
    printf("time         ");
    for (int i = 0, first = 1; i < QS_COUNT; i++)
        if (t->t[i] >= 0) { printf("%s%s %.2f s", first ? "" : " | ", k_phase_text[i], t->t[i]); first = 0; }
    printf(" | total %.2f s\n", t->total);
    if (f32 > 0) printf("perplexity   FP32 %.4f -> quantized weights %.4f (%+.4f, %+.2f%%)\n", f32, qp, qp - f32, 100 * (qp - f32) / f32);
    if (s_f > 0 && s_full > 0)
        printf("             static graph: FP32 %.4f, weights only %.4f, weights + activations %.4f (%+.4f)\n", s_f, s_w, s_full,
               s_full - s_f);
    if (kld)
        printf("KLD          mean %.6f +/- %.6f, 99%% %.6f, max %.6f; same top-1 %.2f%% over %ld tokens (weights vs FP32%s)\n",
               kld->kld_mean, kld->kld_se, kld->kld_p99, kld->kld_max, 100 * kld->top1, kld->tokens,
               kld->k < kld->vocab ? ", top-k lower bound" : "");
    if (top1 >= 0) printf("top-1        %.2f%% of %.0f steps vs FP32 (fake-quant)", 100 * top1, nsteps);
    if (etop1 >= 0) printf(", %.2f%% through the exported pair", 100 * etop1);
    if (top1 >= 0 || etop1 >= 0) printf("\n");
    quantize_tasks_print(r, stdout);
    snprintf(p2, sizeof p2, "%s/ptq.json", outdir);
    printf("outputs      %s/: report.json, report.html, pdq_quant.json + model.q.safetensors, hf/%s%s\n", outdir,
           file_bytes(p2) >= 0 ? ", ptq.json" : "", cb >= 0 ? ", circle/" : "");
    cJSON_Delete(r);
    return 0;
}
