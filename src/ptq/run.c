/* The activation step of `pdq quantize`: calibrate, store ptq.json, evaluate FP32 / weight-only /
 * full quantization through the static graphs, print the table and extend report.json. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dist/dist.h"
#include "pdq/file.h"
#include "pdq/quant.h"
#include "pdq/tokenizer.h"
#include "pdq/qcompare.h"
#include "ptq_internal.h"

/* Fixed verify prompts: Bible-style openings the bundled model knows, plus a neutral one. */
static const char *const k_prompts[] = {
    "In the beginning, God created",
    "And Jesus said unto them,",
    "The LORD is my shepherd;",
    "Then the king commanded",
};
#define N_PROMPTS ((int)(sizeof k_prompts / sizeof k_prompts[0]))

int pdq_ptq_verify_prompts(const char *const **prompts) {
    *prompts = k_prompts;
    return N_PROMPTS;
}

/* The run's prompts: the caller's (the first lines of its evaluation text) or the fixed ones. */
static int run_prompts(const pdq_ptq_run_opts *o, const char *const **prompts) {
    if (o->prompts && o->n_prompts > 0) {
        *prompts = o->prompts;
        return o->n_prompts < PDQ_PTQ_MAX_PROMPTS ? o->n_prompts : PDQ_PTQ_MAX_PROMPTS;
    }
    return pdq_ptq_verify_prompts(prompts);
}

void pdq_ptq_run_opts_default(pdq_ptq_run_opts *o) {
    memset(o, 0, sizeof *o);
    pdq_ptq_opts_default(&o->po);
    pdq_static_opts_default(&o->so);
    o->max_seq = 256;
    o->nsamples = 32;
    o->decode_steps = 0;
    o->verify_steps = 32;
}

typedef struct {
    int decode_steps;
    double ppl;
    pdq_ptq_verify_result v;
    pdq_ptq *p;
} variant;

static cJSON *verify_json(const pdq_ptq_verify_result *v, int with_steps) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "mean_abs_diff", v->mean_abs);
    cJSON_AddNumberToObject(o, "max_abs_diff", v->max_abs);
    cJSON_AddNumberToObject(o, "peir", v->peir);
    cJSON_AddNumberToObject(o, "top1_agreement", v->top1);
    cJSON_AddNumberToObject(o, "steps_compared", v->n);
    if (with_steps) {
        cJSON *a = cJSON_AddArrayToObject(o, "steps");
        for (int e = 0; e < v->n; e++) {
            cJSON *s = cJSON_CreateObject();
            cJSON_AddNumberToObject(s, "prompt", v->step_prompt[e]);
            cJSON_AddNumberToObject(s, "step", v->step_index[e]);
            cJSON_AddStringToObject(s, "kind", v->step_index[e] ? "decode" : "prefill");
            cJSON_AddNumberToObject(s, "mean_abs_diff", v->step_mean[e]);
            cJSON_AddNumberToObject(s, "max_abs_diff", v->step_max[e]);
            cJSON_AddNumberToObject(s, "peir", v->step_peir[e]);
            cJSON_AddBoolToObject(s, "top1_agree", v->step_top1[e]);
            cJSON_AddItemToArray(a, s);
        }
    }
    return o;
}

static char *decode_text(const pdq_tokenizer *tok, const int32_t *ids, int n) {
    char *t = NULL;
    pdq_status st = {0};
    if (!tok || pdq_tokenizer_decode(tok, ids, (size_t)n, 1, &t, &st) != PDQ_OK) return strdup("?");
    for (char *c = t; *c; c++)
        if (*c == '\n') *c = ' ';
    return t;
}

static pdq_code merge_report(const char *outdir, cJSON *act, pdq_status *st) {
    char path[4096];
    snprintf(path, sizeof path, "%s/report.json", outdir);
    cJSON *root = NULL;
    char *buf;
    size_t n;
    if (pdq_file_read(path, PDQ_FILE_MAX_JSON, &buf, &n, NULL) == PDQ_OK) {
        root = cJSON_ParseWithLength(buf, n);
        free(buf);
    }
    if (root && !cJSON_IsObject(root)) { /* someone else's report.json: start afresh */
        cJSON_Delete(root);
        root = NULL;
    }
    if (!root) root = cJSON_CreateObject();
    cJSON_DeleteItemFromObjectCaseSensitive(root, "activations");
    cJSON_AddItemToObject(root, "activations", act);
    char *txt = cJSON_Print(root);
    cJSON_Delete(root);
    if (!txt) return pdq_fail(st, PDQ_ERR_NOMEM, "report.json");
    pdq_code rc = pdq_file_write_text(path, txt, 0, NULL, st);
    free(txt);
    return rc;
}

static pdq_code calibrate(const pdq_model *m, const pdq_ptq_run_opts *o, const int32_t *w, int K, pdq_ptq **out,
                          pdq_status *st) {
    pdq_ptq *p;
    pdq_code rc = pdq_ptq_create(m, o->max_seq, &o->so, &o->po, &p, st);
    if (rc != PDQ_OK) return rc;
    pdq_rt *rt;
    rc = pdq_rt_create(m, 1, o->max_seq, &o->so, &rt, st);
    if (rc == PDQ_OK) {
        char label[64];
        snprintf(label, sizeof label, "calibration (%d decode steps)", K);
        int lead = pdq_dist_rank(o->dist) == 0;
        pdq_ptq_calib_opts co = {.decode_steps = K, .pad = PDQ_PAD_RIGHT, .label = lead ? label : NULL, .dist = o->dist};
        rc = pdq_ptq_calibrate(p, rt, w, o->nsamples, &co, st);
        pdq_rt_free(rt);
    }
    if (rc != PDQ_OK) { pdq_ptq_free(p); return rc; }
    *out = p;
    return PDQ_OK;
}

static void variants(const pdq_ptq_run_opts *o, variant *var, int *nvar) {
    memset(var, 0, 2 * sizeof *var);
    *nvar = o->compare_calib ? 2 : 1;
    var[0].decode_steps = o->decode_steps;
    var[1].decode_steps = o->decode_steps > 0 ? 0 : 32;
}

pdq_code pdq_ptq_calibrate_share(pdq_model *m, const pdq_ptq_run_opts *o, const int32_t *calib, long n_calib, int bos,
                                 pdq_status *st) {
    variant var[2];
    int nvar;
    variants(o, var, &nvar);
    int32_t *w = NULL;
    pdq_code rc = pdq_calib_windows(calib, n_calib, o->nsamples, o->max_seq, bos, o->seed, &w, st);
    if (rc == PDQ_OK) pdq_ptq_quantize_norms(m);
    for (int k = 0; k < nvar && rc == PDQ_OK; k++) {
        rc = calibrate(m, o, w, var[k].decode_steps, &var[k].p, st);
        pdq_ptq_free(var[k].p);
    }
    free(w);
    return rc;
}

pdq_code pdq_ptq_quantize_dir(const char *src_dir, const char *outdir, pdq_model *m,
                              const pdq_ptq_run_opts *o, const int32_t *calib, long n_calib, int bos,
                              const int32_t *eval, long n_eval, void *file, pdq_status *st) {
    FILE *out = file ? file : stdout;
    pdq_model *ref = NULL;
    pdq_tokenizer *tok = NULL;
    int32_t *w = NULL, *pids[PDQ_PTQ_MAX_PROMPTS] = {0};
    int plen[PDQ_PTQ_MAX_PROMPTS] = {0};
    const char *const *prompts;
    int np = run_prompts(o, &prompts);
    variant var[2];
    int nvar;
    variants(o, var, &nvar); /* pdq_ptq_calibrate_share calibrates the same ones */
    pdq_ptq_verify_result vw;
    memset(&vw, 0, sizeof vw);
    double ppl_fp = 0, ppl_w = 0;
    cJSON *act = NULL;
    pdq_code rc = pdq_model_load(src_dir, &ref, st);
    if (rc == PDQ_OK) pdq_set_threads(ref, m->n_threads);
    if (rc == PDQ_OK) rc = pdq_tokenizer_load(src_dir, &tok, st);
    for (int i = 0; i < np && rc == PDQ_OK; i++) {
        size_t n;
        rc = pdq_tokenizer_encode(tok, prompts[i], strlen(prompts[i]), 1, &pids[i], &n, st);
        plen[i] = (int)n;
    }
    if (rc == PDQ_OK) rc = pdq_calib_windows(calib, n_calib, o->nsamples, o->max_seq, bos, o->seed, &w, st);
    /* FP32 and weight-only through the same static prefill graph. */
    if (rc == PDQ_OK && eval) rc = pdq_ptq_ppl_static(ref, o->max_seq, &o->so, NULL, eval, n_eval, "ppl fp32 static", &ppl_fp, st);
    if (rc == PDQ_OK && eval) rc = pdq_ptq_ppl_static(m, o->max_seq, &o->so, NULL, eval, n_eval, "ppl weight-only static", &ppl_w, st);
    if (rc == PDQ_OK)
        rc = pdq_ptq_verify(ref, m, o->max_seq, &o->so, NULL, (const int32_t *const *)pids, plen, np,
                            o->verify_steps, &vw, st);
    if (rc == PDQ_OK) pdq_ptq_quantize_norms(m);
    for (int k = 0; k < nvar && rc == PDQ_OK; k++) {
        rc = calibrate(m, o, w, var[k].decode_steps, &var[k].p, st);
        if (rc == PDQ_OK && eval) {
            const char *lab = k ? "ppl full (other calibration)" : "ppl full quantization";
            rc = pdq_ptq_ppl_static(m, o->max_seq, &o->so, var[k].p, eval, n_eval, lab, &var[k].ppl, st);
        }
        if (rc == PDQ_OK)
            rc = pdq_ptq_verify(ref, m, o->max_seq, &o->so, var[k].p, (const int32_t *const *)pids, plen, np,
                                o->verify_steps, &var[k].v, st);
    }
    if (rc == PDQ_OK) {
        cJSON *cal = cJSON_CreateObject();
        cJSON_AddNumberToObject(cal, "seed", (double)o->seed);
        cJSON_AddNumberToObject(cal, "window", o->max_seq);
        char path[4096];
        snprintf(path, sizeof path, "%s/ptq.json", outdir);
        rc = pdq_ptq_save(var[0].p, path, cal, st);
        cJSON_Delete(cal);
    }
    /* integer execution of the saved grids and the checkpoint's codes, against fake-quant */
    pdq_mode_cmp icmp;
    pdq_ptq_verify_result vi;
    memset(&icmp, 0, sizeof icmp);
    memset(&vi, 0, sizeof vi);
    char int_skip[512] = "";
    if (rc == PDQ_OK)
        rc = pdq_compare_int_fake(ref, m, outdir, var[0].p, o->max_seq, &o->so, m->n_threads, eval, n_eval,
                                  (const int32_t *const *)pids, plen, np, o->verify_steps, &icmp, &vi, st);
    if (rc == PDQ_ERR_UNSUPPORTED) { /* e.g. act-order groups: no integer graphs, the rest stands */
        snprintf(int_skip, sizeof int_skip, "%s", st->msg);
        rc = PDQ_OK;
        st->code = PDQ_OK;
    }
    if (rc == PDQ_OK) {
        const pdq_ptq *p = var[0].p;
        fprintf(out, "\nactivations %s (%s observer), max_seq %d, %d calibration windows, %d decode calibration steps\n",
                pdq_adtype_name(p->o.adtype), pdq_obs_name(p->o.observer), o->max_seq, o->nsamples, o->decode_steps);
        fprintf(out, "%-34s %10s %10s %10s %10s %8s\n", "configuration", "ppl", "mean|d|", "max|d|", "PEIR", "top-1");
        if (eval) fprintf(out, "%-34s %10.4f %10s %10s %10s %8s\n", "fp32 (static prefill graph)", ppl_fp, "-", "-", "-", "-");
        char lab[64];
        fprintf(out, "%-34s %10.4f %10.4g %10.4g %10.4g %7.1f%%\n", "weight-only", eval ? ppl_w : 0.0, vw.mean_abs,
                vw.max_abs, vw.peir, 100 * vw.top1);
        for (int k = 0; k < nvar; k++) {
            snprintf(lab, sizeof lab, "full, calib %s", var[k].decode_steps ? "prefill+decode" : "prefill only");
            if (var[k].decode_steps) snprintf(lab + strlen(lab), sizeof lab - strlen(lab), " (%d)", var[k].decode_steps);
            fprintf(out, "%-34s %10.4f %10.4g %10.4g %10.4g %7.1f%%\n", lab, eval ? var[k].ppl : 0.0, var[k].v.mean_abs,
                    var[k].v.max_abs, var[k].v.peir, 100 * var[k].v.top1);
        }
        if (!int_skip[0])
            fprintf(out, "%-34s %10.4f %10.4g %10.4g %10.4g %7.1f%%\n", "full, integer execution", eval ? icmp.ppl_int : 0.0,
                    vi.mean_abs, vi.max_abs, vi.peir, 100 * vi.top1);
        fprintf(out, "(verify: %d prompts x (prefill + %d decode steps) against the FP32 reference)\n", np,
                o->verify_steps);
        if (int_skip[0]) fprintf(out, "integer execution not measured: %s\n", int_skip);
        else
            fprintf(out, "integer vs fake-quant: ppl %+.4g, |dlogit| mean %.3g max %.3g, top-1 agreement %.1f%% (%d rows)\n",
                    eval ? icmp.ppl_int - var[0].ppl : 0.0, icmp.mean_abs, icmp.max_abs, 100 * icmp.top1, icmp.rows);
        act = cJSON_CreateObject();
        cJSON_AddStringToObject(act, "dtype", pdq_adtype_name(p->o.adtype));
        cJSON_AddStringToObject(act, "observer", pdq_obs_name(p->o.observer));
        cJSON_AddNumberToObject(act, "ema_momentum", p->o.ema_momentum);
        cJSON_AddNumberToObject(act, "max_seq", o->max_seq);
        cJSON_AddNumberToObject(act, "calibration_windows", o->nsamples);
        cJSON_AddNumberToObject(act, "decode_calib_steps", o->decode_steps);
        cJSON_AddStringToObject(act, "params_file", "ptq.json");
        if (eval) {
            cJSON *pp = cJSON_AddObjectToObject(act, "ppl_static");
            cJSON_AddNumberToObject(pp, "window", o->max_seq);
            cJSON_AddNumberToObject(pp, "stride", o->max_seq);
            cJSON_AddNumberToObject(pp, "fp32", ppl_fp);
            cJSON_AddNumberToObject(pp, "weight_only", ppl_w);
            cJSON_AddNumberToObject(pp, "full", var[0].ppl);
        }
        cJSON_AddItemToObject(act, "verify", verify_json(&var[0].v, 1));
        cJSON_AddItemToObject(act, "verify_weight_only", verify_json(&vw, 0));
        cJSON *ij = cJSON_AddObjectToObject(act, "integer");
        if (int_skip[0]) cJSON_AddStringToObject(ij, "unsupported", int_skip);
        cJSON_AddStringToObject(ij, "rule", "exact int64 sums for FULLY_CONNECTED/BATCH_MATMUL, other ops dequantized to "
                                "double and requantized half-to-even with saturation (include/pdq/qexec.h)");
        if (eval && !int_skip[0]) {
            cJSON_AddNumberToObject(ij, "ppl_static_int", icmp.ppl_int);
            cJSON_AddNumberToObject(ij, "ppl_static_fake", var[0].ppl);
            cJSON_AddNumberToObject(ij, "ppl_diff", icmp.ppl_int - var[0].ppl);
        }
        cJSON *vf = int_skip[0] ? cJSON_CreateObject() : cJSON_AddObjectToObject(ij, "vs_fake_quant");
        cJSON_AddNumberToObject(vf, "mean_abs_diff", icmp.mean_abs);
        cJSON_AddNumberToObject(vf, "max_abs_diff", icmp.max_abs);
        cJSON_AddNumberToObject(vf, "top1_agreement", icmp.top1);
        cJSON_AddNumberToObject(vf, "rows", icmp.rows);
        if (int_skip[0]) {
            cJSON_Delete(vf);
        } else {
            cJSON_AddItemToObject(ij, "verify_int", verify_json(&vi, 0));
            cJSON_AddItemToObject(ij, "verify_fake", verify_json(&var[0].v, 0));
        }
        cJSON *vars = cJSON_AddArrayToObject(act, "calibration_variants");
        for (int k = 0; k < nvar; k++) {
            cJSON *v = verify_json(&var[k].v, 0);
            cJSON_AddNumberToObject(v, "decode_calib_steps", var[k].decode_steps);
            if (eval) cJSON_AddNumberToObject(v, "ppl", var[k].ppl);
            cJSON_AddBoolToObject(v, "saved", k == 0);
            cJSON_AddItemToArray(vars, v);
        }
        cJSON *cont = cJSON_AddArrayToObject(act, "continuations");
        fprintf(out, "\ngreedy continuations (%d tokens): FP32 reference | quantized static\n", o->verify_steps + 1);
        for (int i = 0; i < np; i++) {
            char *a = decode_text(tok, var[0].v.tok_ref[i], o->verify_steps + 1);
            char *b = decode_text(tok, var[0].v.tok_quant[i], o->verify_steps + 1);
            fprintf(out, "  %s\n    fp32: %s\n    quant: %s\n", prompts[i], a, b);
            cJSON *c = cJSON_CreateObject();
            cJSON_AddStringToObject(c, "prompt", prompts[i]);
            cJSON_AddStringToObject(c, "fp32", a);
            cJSON_AddStringToObject(c, "quantized", b);
            cJSON_AddItemToArray(cont, c);
            free(a);
            free(b);
        }
        rc = merge_report(outdir, act, st);
    }
    for (int k = 0; k < 2; k++) {
        pdq_ptq_free(var[k].p);
        pdq_ptq_verify_free(&var[k].v);
    }
    pdq_ptq_verify_free(&vw);
    pdq_ptq_verify_free(&vi);
    for (int i = 0; i < np; i++) free(pids[i]);
    free(w);
    pdq_tokenizer_free(tok);
    pdq_model_free(ref);
    return rc;
}
