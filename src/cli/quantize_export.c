/* The export step of pdq quantize: the quantized checkpoint just written (OUTDIR) -> OUTDIR/circle,
 * then quality through the exported files themselves, next to the in-memory numbers of the
 * activation step (they must be the same numbers: the files compute exactly the fake-quant). */
#include <dirent.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "common.h"
#include "pdq/circle_export.h"
#include "pdq/tokenizer.h"
#include "quantize_export.h"

int quantize_export_parse(const char *list, int *whole, int *per_layer) {
    *whole = *per_layer = 0;
    const char *p = list;
    while (*p) {
        const char *e = strchr(p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n == 11 && !strncmp(p, "circle-full", n)) *whole = 1;
        else if (n == 16 && !strncmp(p, "circle-per-layer", n)) *per_layer = 1;
        else {
            fprintf(stderr, "pdq quantize: --export takes circle-full and/or circle-per-layer, got '%.*s'\n", (int)n, p);
            return -1;
        }
        p += n + (e != NULL);
    }
    if (!*whole && !*per_layer) {
        fprintf(stderr, "pdq quantize: --export needs circle-full and/or circle-per-layer\n");
        return -1;
    }
    return 0;
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

cJSON *list_files(const char *dir, double *total) {
    cJSON *arr = cJSON_CreateArray();
    *total = 0;
    DIR *d = opendir(dir);
    if (!d) return arr;
    char *names[4096];
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 4096)
        if (e->d_name[0] != '.') names[n++] = strdup(e->d_name);
    closedir(d);
    qsort(names, (size_t)n, sizeof names[0], by_name);
    for (int i = 0; i < n; i++) {
        if (!names[i]) continue;
        char path[8192];
        int k = snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        struct stat sb;
        if (k > 0 && (size_t)k < sizeof path && stat(path, &sb) == 0 && S_ISREG(sb.st_mode)) {
            cJSON *f = cJSON_CreateObject();
            cJSON_AddStringToObject(f, "name", names[i]);
            cJSON_AddNumberToObject(f, "bytes", (double)sb.st_size);
            cJSON_AddItemToArray(arr, f);
            *total += (double)sb.st_size;
        }
        free(names[i]);
    }
    return arr;
}

static cJSON *read_json(const char *path) {
    size_t len;
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fclose(f);
    char *txt = cli_read_text("quantize", path, &len);
    cJSON *j = txt ? cJSON_ParseWithLength(txt, len) : NULL;
    free(txt);
    return j;
}

static int write_json(const char *path, const cJSON *j) {
    char *txt = cJSON_Print(j);
    FILE *f = txt ? fopen(path, "wb") : NULL;
    int ok = f && fputs(txt, f) >= 0;
    if (f) ok &= fclose(f) == 0;
    free(txt);
    if (!ok) fprintf(stderr, "pdq quantize: cannot write %s\n", path);
    return ok ? 0 : -1;
}

/* a == b for a number read back from report.json: cJSON prints 15 significant digits whenever they
 * read back within DBL_EPSILON, so the last bit of a stored double is not kept. */
static int same_num(double a, double b) { return a == b || fabs(a - b) <= 4 * DBL_EPSILON * fabs(b); }

/* Number at a path of object keys, or NAN-free flag *have = 0. */
static double jget(const cJSON *j, const char *a, const char *b, const char *c, int *have) {
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(j, a);
    if (x && b) x = cJSON_GetObjectItemCaseSensitive(x, b);
    if (x && c) x = cJSON_GetObjectItemCaseSensitive(x, c);
    *have = cJSON_IsNumber(x);
    return *have ? x->valuedouble : 0;
}

/* Verify over the exported files on the activation step's prompts. */
static int verify_export(const char *src_dir, const char *cdir, int whole, int steps, int threads,
                         pdq_ptq_verify_result *v) {
    pdq_status st = {0};
    const char *const *texts;
    int np = pdq_ptq_verify_prompts(&texts), status = 1;
    int32_t *ids[16] = {0};
    int lens[16] = {0};
    if (np > 16) np = 16;
    pdq_model *ref = cli_load_model("quantize", src_dir, threads);
    pdq_tokenizer *tok = ref ? cli_load_tokenizer("quantize", src_dir) : NULL;
    pdq_crt *rt = NULL;
    pdq_code rc = tok ? PDQ_OK : PDQ_ERR_IO;
    for (int i = 0; i < np && rc == PDQ_OK; i++) {
        size_t n;
        rc = pdq_tokenizer_encode(tok, texts[i], strlen(texts[i]), 1, &ids[i], &n, &st);
        lens[i] = (int)n;
    }
    if (rc == PDQ_OK) rc = pdq_crt_open(cdir, whole, &rt, &st);
    if (rc == PDQ_OK) rc = pdq_crt_verify(rt, ref, (const int32_t *const *)ids, lens, np, steps, v, &st);
    if (rc == PDQ_OK) status = 0;
    else if (tok) fprintf(stderr, "pdq quantize: export verify: %s\n", st.msg);
    pdq_crt_free(rt);
    for (int i = 0; i < np; i++) free(ids[i]);
    pdq_tokenizer_free(tok);
    pdq_model_free(ref);
    return status;
}

int quantize_export(const char *src_dir, const char *outdir, int whole, int per_layer, const pdq_ptq_run_opts *ro,
                    const int32_t *eval, long n_eval, int threads) {
    pdq_status st = {0};
    char cdir[4096], path[4096];
    snprintf(cdir, sizeof cdir, "%s/circle", outdir);
    pdq_export_opts o;
    pdq_export_opts_default(&o);
    o.max_seq = ro->max_seq;
    o.whole = whole;
    o.per_layer = per_layer;
    o.so = ro->so;
    o.quiet = 1;
    /* The checkpoint as a later `pdq export --model OUTDIR` sees it: dequantized weights, Wk row
     * scales, norms fake-quantized when activations are quantized. */
    pdq_model *m = cli_load_model("quantize", outdir, threads);
    if (!m) return 1;
    int quant = pdq_ptq_in_dir(outdir);
    if (quant) {
        o.quant_dir = outdir;
        pdq_ptq_quantize_norms(m);
    }
    printf("\nexport: %s files (max_seq %d) -> %s\n", quant ? "quantized .q.circle" : "float .circle", o.max_seq, cdir);
    fflush(stdout);
    double t0 = now_s();
    pdq_code rc = pdq_export_model(m, cdir, &o, &st);
    double secs = now_s() - t0;
    pdq_model_free(m);
    if (rc != PDQ_OK) { fprintf(stderr, "pdq quantize: export: %s\n", st.msg); return 1; }

    /* Quality through the files: the whole-model pair when exported, else the per-layer files. */
    double ppl = 0;
    int have_ppl = 0;
    if (eval) {
        if (pdq_crt_ppl(cdir, !whole, eval, n_eval, "ppl exported prefill", &ppl, &st) != PDQ_OK) {
            fprintf(stderr, "pdq quantize: export ppl: %s\n", st.msg);
            return 1;
        }
        have_ppl = 1;
    }
    pdq_ptq_verify_result v;
    if (verify_export(src_dir, cdir, whole, ro->verify_steps, threads, &v)) return 1;

    snprintf(path, sizeof path, "%s/report.json", outdir);
    cJSON *root = read_json(path);
    if (!root) root = cJSON_CreateObject();
    int h_ppl, h_top;
    double mem_ppl = jget(root, "activations", "ppl_static", "full", &h_ppl);
    double mem_top = jget(root, "activations", "verify", "top1_agreement", &h_top);
    cJSON *ex = cJSON_CreateObject();
    cJSON_AddStringToObject(ex, "dir", "circle");
    cJSON_AddBoolToObject(ex, "quantized", quant);
    cJSON_AddNumberToObject(ex, "max_seq", o.max_seq);
    cJSON *lay = cJSON_AddArrayToObject(ex, "layouts");
    if (whole) cJSON_AddItemToArray(lay, cJSON_CreateString("circle-full"));
    if (per_layer) cJSON_AddItemToArray(lay, cJSON_CreateString("circle-per-layer"));
    cJSON_AddNumberToObject(ex, "seconds", secs);
    double total;
    cJSON_AddItemToObject(ex, "files", list_files(cdir, &total));
    cJSON_AddNumberToObject(ex, "total_bytes", total);
    cJSON *q = cJSON_AddObjectToObject(ex, "quality");
    cJSON_AddStringToObject(q, "through", whole ? "model_prefill / model_decode" : "per-layer files");
    if (have_ppl) {
        cJSON_AddNumberToObject(q, "ppl", ppl);
        cJSON_AddNumberToObject(q, "ppl_window", o.max_seq);
    }
    cJSON_AddNumberToObject(q, "top1_agreement", v.top1);
    cJSON_AddNumberToObject(q, "mean_abs_diff", v.mean_abs);
    cJSON_AddNumberToObject(q, "max_abs_diff", v.max_abs);
    cJSON_AddNumberToObject(q, "steps_compared", v.n);
    int same = 1;
    if (have_ppl && h_ppl) {
        cJSON_AddNumberToObject(q, "in_memory_ppl", mem_ppl);
        same &= same_num(ppl, mem_ppl);
    }
    if (h_top) {
        int h_mean, h_max;
        double mem_mean = jget(root, "activations", "verify", "mean_abs_diff", &h_mean);
        double mem_max = jget(root, "activations", "verify", "max_abs_diff", &h_max);
        cJSON_AddNumberToObject(q, "in_memory_top1_agreement", mem_top);
        /* identical logits at every step give identical statistics, not only the same top-1 */
        same &= same_num(v.top1, mem_top) && h_mean && same_num(v.mean_abs, mem_mean) && h_max && same_num(v.max_abs, mem_max);
    }
    if ((have_ppl && h_ppl) || h_top) cJSON_AddBoolToObject(q, "equal_in_memory", same);
    cJSON_DeleteItemFromObjectCaseSensitive(root, "export");
    cJSON_AddItemToObject(root, "export", ex);
    int status = write_json(path, root);
    cJSON_Delete(root);
    double top1 = v.top1;
    pdq_ptq_verify_free(&v);
    if (status) return 1;
    printf("export: %.2f s, %.1f MB in %s\n", secs, total / 1e6, cdir);
    if (have_ppl)
        printf("exported pair: ppl %.4f (in memory %s), top-1 vs fp32 %.4f (in memory %s)\n", ppl,
               h_ppl ? (same_num(ppl, mem_ppl) ? "identical" : "DIFFERENT") : "n/a", top1,
               h_top ? (same_num(top1, mem_top) ? "identical" : "DIFFERENT") : "n/a");
    else
        printf("exported pair: top-1 vs fp32 %.4f (in memory %s)\n", top1,
               h_top ? (same_num(top1, mem_top) ? "identical" : "DIFFERENT") : "n/a");
    return 0;
}
