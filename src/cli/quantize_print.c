/* pdq quantize's closing summary and task lines, printed from OUTDIR/report.json (quantize_print.h). */
#include "quantize_print.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "pdq/file.h"
#include "io/json_field.h"

enum { P_FP32, P_WEIGHTS, P_FAKE, P_INT, P_COUNT };
static const char *const k_path[P_COUNT] = {"fp32", "weights", "static-fake", "static-int"};
static const char *const k_path_text[P_COUNT] = {"FP32", "quantized weights", "fake-quant", "integer"};
static const char *const k_phase[PDQ_QSTEP_COUNT] = {"fp32_eval", "calibration", "weights", "save", "quant_eval",
                                                     "activations", "export", "export_check"};
static const char *const k_phase_text[PDQ_QSTEP_COUNT] = {"FP32 eval", "calibration", "GPTQ/RTN", "save", "quant eval",
                                                          "activations", "export", "exported-pair check"};

static const cJSON *at(const cJSON *j, const char *a, const char *b, const char *c) { return pdq_jf_get(j, a, b, c); }
static double num(const cJSON *j, const char *a, const char *b, const char *c) { return pdq_jf_get_num(j, a, b, c, -1); }

static double file_bytes(const char *path) {
    long long size;
    return pdq_path_stat(path, &size, NULL) == PDQ_PATH_FILE ? (double)size : -1;
}

/* Files in dir (names not starting with '.'), as the summary counted their bytes. */
static int dir_files(const char *dir) {
    char **names;
    int n, files = 0;
    pdq_status st = {0};
    if (pdq_dir_names(dir, 1 << 16, &names, &n, &st) != PDQ_OK) return 0;
    for (int i = 0; i < n; i++) {
        if (names[i][0] == '.') continue;
        char p[8192];
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        files += file_bytes(p) >= 0;
    }
    pdq_dir_names_free(names, n);
    return files;
}

static double mib(double b) { return b / 1048576.0; }

/* --profile's table: one line per phase, GFLOP/s where FLOPs were counted. */
static void profile_print(const cJSON *p) {
    if (!cJSON_IsObject(p)) return;
    double total = num(p, "total_seconds", NULL, NULL), sg = num(p, "sgemm_gflops", NULL, NULL);
    printf("\n== profile == sgemm %.1f GFLOP/s on %.0f thread(s) (probes %.1f, %.1f), dgemm %.1f\n", sg,
           num(p, "threads", NULL, NULL), num(p, "sgemm_gflops_start", NULL, NULL), num(p, "sgemm_gflops_end", NULL, NULL),
           num(p, "dgemm_gflops", NULL, NULL));
    printf("%-18s %10s %7s %10s %9s %8s %8s\n", "phase", "seconds", "share", "GFLOP", "GFLOP/s", "of sgemm", "of dgemm");
    const cJSON *e;
    cJSON_ArrayForEach(e, at(p, "phases", NULL, NULL)) {
        const cJSON *name = at(e, "name", NULL, NULL);
        double sec = num(e, "seconds", NULL, NULL), gf = num(e, "gflop", NULL, NULL);
        printf("%-18s %10.2f %6.1f%%", cJSON_IsString(name) ? name->valuestring : "?", sec, total > 0 ? 100 * sec / total : 0);
        double fd = num(e, "fraction_of_dgemm", NULL, NULL); /* the phase in double: against that rate too */
        if (gf >= 0) printf(" %10.1f %9.1f %7.1f%%", gf, num(e, "gflop_s", NULL, NULL), 100 * num(e, "fraction_of_sgemm", NULL, NULL));
        else printf(" %10s %9s %8s", "-", "-", "-");
        if (fd >= 0) printf(" %7.1f%%\n", 100 * fd);
        else printf(" %8s\n", "-");
    }
    printf("%-18s %10.2f\n", "total", total);
}

int quantize_summary_print(const char *outdir, const pdq_quantize_result *res, int json) {
    char path[4200], p2[4300];
    snprintf(path, sizeof path, "%s/report.json", outdir);
    size_t len;
    char *txt = cli_read_text("quantize", path, &len);
    cJSON *r = txt ? cJSON_ParseWithLength(txt, len) : NULL;
    free(txt);
    const cJSON *s = at(r, "summary", NULL, NULL);
    if (!cJSON_IsObject(s)) {
        fprintf(stderr, "pdq quantize: %s: no summary in it\n", path);
        cJSON_Delete(r);
        return 1;
    }
    if (json) { /* the summary, with the profile when there is one */
        cJSON *pr = cJSON_DetachItemFromObjectCaseSensitive(r, "profile");
        if (pr) cJSON_AddItemToObject((cJSON *)s, "profile", pr);
        char *js = cJSON_Print(s);
        if (js) printf("%s\n", js);
        free(js);
        cJSON_Delete(r);
        return 0;
    }
    const pdq_kld_result *kld = res->have_kld ? &res->kld : NULL;
    double params = num(s, "parameters", NULL, NULL), bpw = num(s, "bits_per_weight", NULL, NULL);
    double qb = num(s, "files", "model.q.safetensors", NULL), hb = num(s, "files", "hf/model.safetensors", NULL);
    double cb = num(s, "files", "circle", NULL);
    snprintf(p2, sizeof p2, "%s/circle", outdir);
    int nc = cb >= 0 ? dir_files(p2) : 0;
    double f32 = num(r, "eval", "fp32_ppl", NULL), qp = num(r, "eval", "quant_ppl", NULL);
    double s_f = num(r, "activations", "ppl_static", "fp32"), s_w = num(r, "activations", "ppl_static", "weight_only");
    double s_full = num(r, "activations", "ppl_static", "full");
    double top1 = num(r, "activations", "verify", "top1_agreement"), nsteps = num(r, "activations", "verify", "steps_compared");
    double etop1 = num(r, "export", "quality", "top1_agreement");
    printf("\n== summary ==\n");
    const cJSON *method = at(r, "method", NULL, NULL);
    printf("weights      %s w%g%s -> %s/model.q.safetensors %.2f MiB", cJSON_IsString(method) ? method->valuestring : "?",
           num(r, "wbits", NULL, NULL), num(r, "group", NULL, NULL) > 0 ? " (grouped)" : "", outdir, mib(qb));
    if (bpw > 0) printf(", %.2f bits per weight over %.1fM parameters", bpw, params / 1e6);
    printf("\n             %s/hf/ %.2f MiB (dequantized f32, any HF tool loads it)\n", outdir, mib(hb));
    if (cb >= 0) printf("circle       %s/circle/ %.2f MiB in %d files\n", outdir, mib(cb), nc);
    printf("time         ");
    for (int i = 0, first = 1; i < PDQ_QSTEP_COUNT; i++) {
        const cJSON *x = at(s, "seconds", k_phase[i], NULL);
        if (cJSON_IsNumber(x)) { printf("%s%s %.2f s", first ? "" : " | ", k_phase_text[i], x->valuedouble); first = 0; }
    }
    printf(" | total %.2f s\n", num(s, "seconds", "total", NULL));
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
    profile_print(at(r, "profile", NULL, NULL));
    cJSON_Delete(r);
    return 0;
}

static const cJSON *get(const cJSON *o, const char *k) { return cJSON_GetObjectItemCaseSensitive(o, k); }

void quantize_tasks_print(const cJSON *r, FILE *f) {
    const cJSON *tj = get(r, "tasks"), *e;
    const char *last = "";
    cJSON_ArrayForEach(e, get(tj, "results")) {
        const cJSON *task = get(e, "task"), *path = get(e, "path");
        if (!cJSON_IsString(task) || !cJSON_IsString(path)) continue;
        const char *metric = get(e, "acc_norm") ? "acc_norm" : "acc";
        const cJSON *v = get(e, metric), *se = get(e, strcmp(metric, "acc") ? "acc_norm_stderr" : "acc_stderr");
        if (strcmp(last, task->valuestring)) fprintf(f, "%stask         %s %s:", *last ? "\n" : "", task->valuestring, metric);
        const char *name = path->valuestring;
        for (int p = 0; p < P_COUNT; p++)
            if (!strcmp(name, k_path[p])) name = k_path_text[p];
        double refused = cJSON_GetNumberValue(get(e, "refused"));
        fprintf(f, "%s %s", strcmp(last, task->valuestring) ? "" : ",", name);
        if (cJSON_IsNumber(v)) fprintf(f, " %.4f", v->valuedouble);
        if (cJSON_IsNumber(v) && cJSON_IsNumber(se)) fprintf(f, " ± %.4f", se->valuedouble);
        if (refused > 0) fprintf(f, cJSON_IsNumber(v) ? " (%g refused)" : " all %g refused (over max_seq)", refused);
        last = task->valuestring;
    }
    if (*last) fputc('\n', f);
    cJSON_ArrayForEach(e, get(tj, "int_vs_fake"))
        fprintf(f, "             %s: %g of %g items changed answer integer vs fake-quant; %g margins inside the bound, %g "
                   "changed outside it; max |dll| %.4f per token (bound %g)\n",
                get(e, "task") && cJSON_IsString(get(e, "task")) ? get(e, "task")->valuestring : "?",
                cJSON_GetNumberValue(get(e, "changed")), cJSON_GetNumberValue(get(e, "items")),
                cJSON_GetNumberValue(get(e, "inside_bound")), cJSON_GetNumberValue(get(e, "changed_outside_bound")),
                cJSON_GetNumberValue(get(e, "max_dll_per_token")), cJSON_GetNumberValue(get(e, "bound_per_token")));
}
