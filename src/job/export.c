/* The export step of the quantize job: the quantized checkpoint just written (OUTDIR) -> OUTDIR/circle,
 * then quality through the exported files themselves, next to the in-memory numbers of the
 * activation step (they must be the same numbers: the files compute exactly the fake-quant). */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "pdq/family.h"
#include "pdq/file.h"
#include "pdq/circle_export.h"
#include "pdq/eval.h"
#include "pdq/runtime.h"
#include "pdq/tokenizer.h"
#include "export.h"

pdq_code pdq_quantize_export_parse(const char *list, int *whole, int *per_layer, pdq_status *st) {
    *whole = *per_layer = 0;
    const char *p = list;
    while (*p) {
        const char *e = strchr(p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n == 11 && !strncmp(p, "circle-full", n)) *whole = 1;
        else if (n == 16 && !strncmp(p, "circle-per-layer", n)) *per_layer = 1;
        else return pdq_fail(st, PDQ_ERR_ARG, "--export takes circle-full and/or circle-per-layer, got '%.*s'", (int)n, p);
        p += n + (e != NULL);
    }
    if (!*whole && !*per_layer) return pdq_fail(st, PDQ_ERR_ARG, "--export needs circle-full and/or circle-per-layer");
    return PDQ_OK;
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

cJSON *job_list_files(const char *dir, double *total) {
    cJSON *arr = cJSON_CreateArray();
    *total = 0;
    char **names;
    int n;
    pdq_status st = {0};
    if (pdq_dir_names(dir, 4096, &names, &n, &st) != PDQ_OK) return arr;
    for (int i = 0; i < n; i++) {
        if (names[i][0] == '.') continue;
        char path[8192];
        long long size;
        int k = snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        if (k > 0 && (size_t)k < sizeof path && pdq_path_stat(path, &size, NULL) == PDQ_PATH_FILE) {
            cJSON *f = cJSON_CreateObject();
            cJSON_AddStringToObject(f, "name", names[i]);
            cJSON_AddNumberToObject(f, "bytes", (double)size);
            cJSON_AddItemToArray(arr, f);
            *total += (double)size;
        }
    }
    pdq_dir_names_free(names, n);
    return arr;
}


static int write_json(const job_ctx *j, const char *path, const cJSON *json) {
    char *txt = cJSON_Print(json);
    pdq_status st = {0};
    int ok = pdq_file_write_text(path, txt, 0, NULL, &st) == PDQ_OK; /* atomic: pdq/file.h */
    free(txt);
    if (!ok) job_fail(j, st.code, "%s", st.msg);
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

/* One pass over the eval windows through the exported prefill and the in-memory runtime side by
 * side: every logit compared (equal floats on one grid = equal codes), each token's NLL from both in
 * the same fixed order, so "identical" means identical numbers, not two sums that happen to agree. */
typedef struct {
    pdq_crt *crt;
    pdq_rt *rt;
    const pdq_agrid *grid;   /* logits grid (quantized) or NULL; valid during the pass */
    int have_grid;
    float *mem;              /* max_seq x V */
    const int32_t *base;     /* eval ids, to report positions */
    int V;
    long window, n_diff, first_pos;
    int first_col;
    float first_file, first_mem;
    double max_abs, max_dnll, nll_mem;
    int64_t max_steps;
} pair_ctx;

static pdq_code pair_window(void *ctx, const int32_t *ids, int T, float *logits, pdq_status *st) {
    pair_ctx *p = ctx;
    int V = p->V;
    pdq_code rc = pdq_crt_window_logits(p->crt, ids, T, logits, st);
    if (rc == PDQ_OK) rc = pdq_rt_window_logits(p->rt, ids, T, p->mem, st);
    if (rc != PDQ_OK) return rc;
    for (int r = 0; r < T; r++) {
        const float *a = logits + (size_t)r * V, *b = p->mem + (size_t)r * V;
        for (int c = 0; c < V; c++) {
            if (a[c] == b[c]) continue;
            double d = fabs((double)a[c] - (double)b[c]);
            if (p->n_diff++ == 0) {
                p->first_pos = (long)(ids - p->base) + r;
                p->first_col = c;
                p->first_file = a[c];
                p->first_mem = b[c];
            }
            if (d > p->max_abs || d != d) p->max_abs = d;
            if (p->grid) {
                int64_t k = pdq_agrid_code(p->grid, a[c]) - pdq_agrid_code(p->grid, b[c]);
                if (k < 0) k = -k;
                if (k > p->max_steps) p->max_steps = k;
            }
        }
        if (r + 1 < T) { /* windows of stride max_seq score rows 0..T-2 (pdq_ppl_windows) */
            double na = pdq_nll_rows(a, ids + r + 1, 1, V), nb = pdq_nll_rows(b, ids + r + 1, 1, V);
            if (fabs(na - nb) > p->max_dnll) p->max_dnll = fabs(na - nb);
        }
    }
    if (T > 1) p->nll_mem += pdq_nll_rows(p->mem, ids + 1, T - 1, V);
    p->window++;
    return PDQ_OK;
}

/* report.json keeps the activation step's numbers as cJSON prints them: 15 significant digits
 * whenever those read back within a few ulps, so a number read back is not always the same double
 * (two equal statistics compared exactly after that round trip looked DIFFERENT). */
static int same_json(double a, double b) { return fabs(a - b) <= 1e-14 * fmax(fabs(a), fabs(b)); }

/* Verify over the exported files on the activation step's prompts. */
static int verify_export(const job_ctx *j, const char *src_dir, const char *cdir, int whole, const pdq_ptq_run_opts *ro, int threads,
                         pdq_ptq_verify_result *v) {
    pdq_status st = {0};
    const char *const *texts = ro->prompts;
    int np = ro->prompts ? ro->n_prompts : pdq_ptq_verify_prompts(&texts), status = 1, steps = ro->verify_steps;
    int32_t *ids[16] = {0};
    int lens[16] = {0};
    if (np > 16) np = 16;
    pdq_model *ref = job_load_model(j, src_dir, threads);
    pdq_tokenizer *tok = ref ? job_load_tokenizer(j, src_dir) : NULL;
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
    else if (tok) job_fail(j, st.code, "export verify: %s", st.msg);
    pdq_crt_free(rt);
    for (int i = 0; i < np; i++) free(ids[i]);
    pdq_tokenizer_free(tok);
    pdq_model_free(ref);
    return status;
}

int quantize_export(const job_ctx *j, const char *src_dir, const char *outdir, int whole, int per_layer, const char *buckets,
                    const pdq_ptq_run_opts *ro,
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
    if (buckets && pdq_buckets_parse(buckets, o.max_seq, o.buckets, &o.n_buckets, &st) != PDQ_OK) {
        return job_fail(j, st.code, "--append-bucket: %s", st.msg);
    }
    /* The checkpoint as a later `pdq export --model OUTDIR` sees it: dequantized weights, Wk row
     * scales, norms fake-quantized when activations are quantized. */
    pdq_model *m = job_load_model(j, outdir, threads);
    if (!m) return 1;
    int quant = pdq_ptq_in_dir(outdir);
    o.quant_dir = outdir;
    if (quant) pdq_ptq_quantize_norms(m);
    else o.hybrid = 1; /* weights only: the packed codes with float activations */
    job_result(j, "\nexport: %s files (max_seq %d) -> %s\n", quant ? "quantized .q.circle" : "hybrid .w4/.w8.circle", o.max_seq,
               cdir);
    double t0 = now_s();
    pdq_code rc = pdq_export_model(m, cdir, &o, &st);
    if (rc == PDQ_ERR_UNSUPPORTED && o.hybrid) { /* e.g. act-order groups: Circle blocks are contiguous columns */
        job_result(j, "export: no hybrid form (%s); float .circle files with the dequantized weights instead\n", st.msg);
        o.hybrid = 0;
        o.quant_dir = NULL;
        rc = pdq_export_model(m, cdir, &o, &st);
    }
    double secs = now_s() - t0;
    pdq_model_free(m);
    if (rc != PDQ_OK) return job_fail(j, st.code, "export: %s", st.msg);

    /* Quality through the files: the whole-model pair when exported, else the per-layer files,
     * side by side with the in-memory runtime they must reproduce. */
    double ppl = 0, ppl_mem = 0;
    int have_ppl = 0;
    pair_ctx pc;
    memset(&pc, 0, sizeof pc);
    if (eval) {
        pdq_model *mm = job_load_model(j, outdir, threads);
        pdq_ptq *ptq = NULL;
        pdq_ppl_result r;
        rc = mm ? PDQ_OK : PDQ_ERR_IO;
        if (rc == PDQ_OK) rc = pdq_crt_open(cdir, whole, &pc.crt, &st);
        if (rc == PDQ_OK)
            rc = quant ? pdq_ptq_open_runtime(mm, outdir, 1, o.max_seq, &o.so, &pc.rt, &ptq, &st)
                       : pdq_rt_create(mm, 1, o.max_seq, &o.so, &pc.rt, &st);
        char head_out[192] = ""; /* the head graph's output edge: the family's "lm_head.out" */
        if (mm) pdq_family_role_module(&mm->cfg, PDQ_ROLE_LM_HEAD, -1, head_out, sizeof head_out - 4);
        strcat(head_out, ".out");
        int gi = ptq ? pdq_ptq_find(ptq, head_out) : -1;
        pc.grid = gi >= 0 ? &pdq_ptq_group_at(ptq, gi)->grid : NULL;
        pc.have_grid = pc.grid != NULL;
        pc.V = mm ? mm->cfg.vocab_size : 0;
        pc.base = eval;
        if (rc == PDQ_OK && !(pc.mem = malloc(sizeof(float) * (size_t)o.max_seq * pc.V))) rc = pdq_fail(&st, PDQ_ERR_NOMEM, "logits");
        if (rc == PDQ_OK) rc = pdq_ppl_windows(pair_window, &pc, pc.V, eval, n_eval, o.max_seq, o.max_seq, "ppl exported prefill", &r, &st);
        if (rc == PDQ_OK) { ppl = r.ppl; ppl_mem = exp(pc.nll_mem / (double)r.tokens); have_ppl = 1; }
        free(pc.mem);
        pdq_rt_free(pc.rt);
        pdq_ptq_free(ptq);
        pdq_crt_free(pc.crt);
        pdq_model_free(mm);
        if (rc != PDQ_OK) {
            if (mm) job_fail(j, st.code, "export ppl: %s", st.msg);
            return 1;
        }
    }
    pdq_ptq_verify_result v;
    if (verify_export(j, src_dir, cdir, whole, ro, threads, &v)) return 1;

    snprintf(path, sizeof path, "%s/report.json", outdir);
    cJSON *root = job_read_json(j, path, 1);
    if (!root) root = cJSON_CreateObject();
    int h_ppl, h_top;
    double mem_ppl = jget(root, "activations", "ppl_static", "full", &h_ppl);
    double mem_top = jget(root, "activations", "verify", "top1_agreement", &h_top);
    cJSON *ex = cJSON_CreateObject();
    cJSON_AddStringToObject(ex, "dir", "circle");
    cJSON_AddBoolToObject(ex, "quantized", quant);
    cJSON_AddStringToObject(ex, "form", quant ? "int16 activations (.q)"
                                        : o.hybrid ? "hybrid: float activations, packed weights"
                                                   : "float: dequantized weights (no per-channel form)");
    cJSON_AddNumberToObject(ex, "max_seq", o.max_seq);
    cJSON *lay = cJSON_AddArrayToObject(ex, "layouts");
    if (whole) cJSON_AddItemToArray(lay, cJSON_CreateString("circle-full"));
    if (per_layer) cJSON_AddItemToArray(lay, cJSON_CreateString("circle-per-layer"));
    cJSON_AddNumberToObject(ex, "seconds", secs);
    double total;
    cJSON_AddItemToObject(ex, "files", job_list_files(cdir, &total));
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
    if (have_ppl) {
        /* the in-memory numbers of this very pass (the activation step's ppl for reference) */
        cJSON_AddNumberToObject(q, "in_memory_ppl", ppl_mem);
        if (h_ppl) cJSON_AddNumberToObject(q, "activation_step_ppl", mem_ppl);
        cJSON *d = cJSON_AddObjectToObject(q, "logits_vs_in_memory");
        cJSON_AddNumberToObject(d, "windows", (double)pc.window);
        cJSON_AddNumberToObject(d, "differing_logits", (double)pc.n_diff);
        cJSON_AddNumberToObject(d, "max_abs_diff", pc.max_abs);
        if (pc.have_grid) cJSON_AddNumberToObject(d, "max_code_steps", (double)pc.max_steps);
        cJSON_AddNumberToObject(d, "max_token_nll_diff", pc.max_dnll);
        if (pc.n_diff) {
            cJSON_AddNumberToObject(d, "first_position", (double)pc.first_pos);
            cJSON_AddNumberToObject(d, "first_vocab_index", pc.first_col);
            cJSON_AddNumberToObject(d, "first_file_value", pc.first_file);
            cJSON_AddNumberToObject(d, "first_in_memory_value", pc.first_mem);
        }
        same = pc.n_diff == 0;
    }
    int vsame = 1;
    if (h_top) {
        int h_mean, h_max;
        double mem_mean = jget(root, "activations", "verify", "mean_abs_diff", &h_mean);
        double mem_max = jget(root, "activations", "verify", "max_abs_diff", &h_max);
        cJSON_AddNumberToObject(q, "in_memory_top1_agreement", mem_top);
        vsame = v.top1 == mem_top && h_mean && same_json(v.mean_abs, mem_mean) && h_max && same_json(v.max_abs, mem_max);
        cJSON_AddBoolToObject(q, "verify_stats_equal", vsame);
        if (!have_ppl) same = vsame; /* no eval set: the verify steps are the comparison */
    }
    if (have_ppl || h_top) cJSON_AddBoolToObject(q, "equal_in_memory", same);
    cJSON_DeleteItemFromObjectCaseSensitive(root, "export");
    cJSON_AddItemToObject(root, "export", ex);
    int status = write_json(j, path, root);
    cJSON_Delete(root);
    double top1 = v.top1;
    pdq_ptq_verify_free(&v);
    if (status) return 1;
    job_result(j, "export: %.2f s, %.1f MB in %s\n", secs, total / 1e6, cdir);
    if (have_ppl && same)
        job_result(j, "exported pair: ppl %.4f, every logit of %ld windows identical to the in-memory runtime; top-1 vs fp32 %.4f "
               "(in memory %s)\n", ppl, pc.window, top1, h_top ? (top1 == mem_top ? "identical" : "DIFFERENT") : "n/a");
    else if (have_ppl)
        job_result(j, "exported pair: ppl %.6f vs in memory %.6f: %ld logits DIFFERENT, first at token %ld vocab %d (file %.9g, "
               "memory %.9g), max |d| %.3g%s, max token NLL |d| %.3g\n", ppl, ppl_mem, pc.n_diff, pc.first_pos, pc.first_col,
               pc.first_file, pc.first_mem, pc.max_abs, pc.have_grid ? " (see max_code_steps)" : "", pc.max_dnll);
    else
        job_result(j, "exported pair: top-1 vs fp32 %.4f (in memory %s)\n", top1,
               h_top ? (same_num(top1, mem_top) ? "identical" : "DIFFERENT") : "n/a");
    return 0;
}
