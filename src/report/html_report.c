/* pdq_report_html: report.json (+ ptq.json) -> one self-contained HTML page (see report.h). */
#include "pdq/report.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pdq/file.h"
#include "html_tasks.h"
#include "svg.h"

static cJSON *read_json(const char *path, int required, pdq_status *st) {
    if (!pdq_file_exists(path)) {
        if (required) pdq_fail(st, PDQ_ERR_IO, "%s: cannot open", path);
        return NULL;
    }
    char *buf;
    size_t len;
    if (pdq_file_read(path, PDQ_FILE_MAX_JSON, &buf, &len, st)) return NULL;
    cJSON *j = cJSON_ParseWithLength(buf, len);
    free(buf);
    if (!j) pdq_fail(st, PDQ_ERR_FORMAT, "%s: not valid JSON", path);
    return j;
}

static const cJSON *get(const cJSON *o, const char *k) { return cJSON_GetObjectItemCaseSensitive(o, k); }
static double num(const cJSON *o, const char *k, double def) {
    const cJSON *x = get(o, k);
    return cJSON_IsNumber(x) ? x->valuedouble : def;
}
static const char *str(const cJSON *o, const char *k) {
    const cJSON *x = get(o, k);
    return cJSON_IsString(x) ? x->valuestring : NULL;
}

static void row(FILE *f, const char *k, const char *fmt, double v) {
    fprintf(f, "<tr><th>%s</th><td>", k);
    fprintf(f, fmt, v);
    fputs("</td></tr>\n", f);
}

static void summary(FILE *f, const cJSON *r) {
    const cJSON *ev = get(r, "eval"), *act = get(r, "activations"), *ex = get(r, "export");
    fputs("<h2>Summary</h2>\n<table class=\"summary\">\n", f);
    fprintf(f, "<tr><th>weights</th><td>");
    html_esc(f, str(r, "method") ? str(r, "method") : "?");
    char grp[32] = "per-channel";
    if (num(r, "group", 0) > 0) snprintf(grp, sizeof grp, "group %g", num(r, "group", 0));
    char eb[24] = "float", lb[24] = "float";
    if (cJSON_IsNumber(get(r, "embed_bits"))) snprintf(eb, sizeof eb, "uint%g", num(r, "embed_bits", 0));
    if (cJSON_IsNumber(get(r, "lm_head_bits"))) snprintf(lb, sizeof lb, "uint%g", num(r, "lm_head_bits", 0));
    fprintf(f, " w%g, %s, embedding %s, lm_head %s</td></tr>\n", num(r, "wbits", 0), grp, eb, lb);
    if (act) {
        fputs("<tr><th>activations</th><td>", f);
        html_esc(f, str(act, "dtype") ? str(act, "dtype") : "?");
        fprintf(f, ", %s observer, %g calibration windows, max_seq %g</td></tr>\n", str(act, "observer") ? str(act, "observer") : "?",
                num(act, "calibration_windows", 0), num(act, "max_seq", 0));
    }
    if (ev) row(f, "perplexity FP32 (reference model)", "%.4f", num(ev, "fp32_ppl", NAN));
    if (ev && cJSON_IsNumber(get(ev, "quant_ppl"))) {
        row(f, "perplexity weight-quantized", "%.4f", num(ev, "quant_ppl", NAN));
        row(f, "change", "%+.4f", num(ev, "quant_ppl", NAN) - num(ev, "fp32_ppl", NAN));
    }
    const cJSON *v = get(act, "verify");
    if (v) row(f, "top-1 vs FP32 (fake-quant, per step)", "%.4f", num(v, "top1_agreement", NAN));
    if (ex) {
        row(f, "exported files (MiB)", "%.2f", num(ex, "total_bytes", 0) / 1048576.0);
        const cJSON *q = get(ex, "quality");
        if (q) row(f, "top-1 vs FP32 through the exported pair", "%.4f", num(q, "top1_agreement", NAN));
    }
    row(f, "weight quantization time (s)", "%.2f", num(r, "seconds", 0));
    const cJSON *sm = get(r, "summary"), *ph;
    if (cJSON_IsNumber(get(sm, "bits_per_weight"))) row(f, "bits per weight (model.q.safetensors)", "%.3f", num(sm, "bits_per_weight", 0));
    if (cJSON_IsObject(get(sm, "seconds"))) {
        fputs("<tr><th>time per phase (s)</th><td>", f);
        int first = 1;
        cJSON_ArrayForEach(ph, get(sm, "seconds")) {
            if (!cJSON_IsNumber(ph)) continue;
            fprintf(f, "%s", first ? "" : ", ");
            html_esc(f, ph->string);
            fprintf(f, " %.2f", ph->valuedouble);
            first = 0;
        }
        fputs("</td></tr>\n", f);
    }
    fputs("</table>\n", f);
}

/* Per-module GPTQ vs RTN loss tr(dW H dW^T), log axis: they span orders of magnitude. */
static int module_losses(FILE *f, const cJSON *r) {
    const cJSON *mods = get(r, "modules"), *m;
    int n = 0;
    cJSON_ArrayForEach(m, mods) if (cJSON_IsNumber(get(m, "gptq_loss")) && cJSON_IsNumber(get(m, "rtn_loss"))) n++;
    fputs("<h2>Per-module weight loss: GPTQ vs RTN</h2>\n", f);
    if (!n) {
        fputs("<p class=\"none\">No layer-wise losses in report.json (an RTN run has no Hessian).</p>\n", f);
        return 0;
    }
    svg_bar_row *rows = calloc((size_t)n, sizeof *rows);
    if (!rows) return -1;
    int i = 0;
    cJSON_ArrayForEach(m, mods) {
        if (!cJSON_IsNumber(get(m, "gptq_loss")) || !cJSON_IsNumber(get(m, "rtn_loss"))) continue;
        rows[i].label = str(m, "name") ? str(m, "name") : "?";
        rows[i].v[0] = num(m, "gptq_loss", 0);
        rows[i].v[1] = num(m, "rtn_loss", 0);
        i++;
    }
    fprintf(f, "<p>tr(&Delta;W H &Delta;W<sup>T</sup>) on the calibration Hessian, log scale; summed: GPTQ %.4g, RTN %.4g.</p>\n",
            num(r, "total_gptq_loss", NAN), num(r, "total_rtn_loss", NAN));
    const char *series[] = {"GPTQ", "RTN"};
    svg_hbars(f, "losses", rows, n, 2, series, 1);
    free(rows);
    return 0;
}

typedef struct {
    const cJSON *g;
    double clip, amax;
} edge_row;

static int edge_cmp(const void *a, const void *b) {
    const edge_row *x = a, *y = b;
    if (x->clip != y->clip) return x->clip < y->clip ? 1 : -1;
    if (x->amax != y->amax) return x->amax < y->amax ? 1 : -1;
    return 0;
}

/* Activation groups from ptq.json, worst first: clipped fraction, then the widest range. */
static int edges(FILE *f, const cJSON *p) {
    fputs("<h2>Activation ranges and clipping per edge</h2>\n", f);
    const cJSON *gs = get(p, "groups"), *g;
    int n = cJSON_GetArraySize(gs);
    if (!p || n <= 0) {
        fputs("<p class=\"none\">No ptq.json: activations were not quantized.</p>\n", f);
        return 0;
    }
    edge_row *rows = calloc((size_t)n, sizeof *rows);
    if (!rows) return -1;
    int i = 0;
    double amax = 0;
    cJSON_ArrayForEach(g, gs) {
        double counted = num(g, "counted", 0), mn = num(g, "min", 0), mx = num(g, "max", 0);
        rows[i].g = g;
        rows[i].clip = counted > 0 ? num(g, "clipped", 0) / counted : 0;
        rows[i].amax = fmax(fabs(mn), fabs(mx));
        if (rows[i].amax > amax) amax = rows[i].amax;
        i++;
    }
    qsort(rows, (size_t)n, sizeof *rows, edge_cmp);
    fprintf(f, "<p>%d edge groups (edges that share one grid), sorted by clipped fraction, then by range; bars on a "
               "symmetric axis of &plusmn;%.4g.</p>\n", n, amax);
    fputs("<table class=\"edges\">\n<tr><th>#</th><th>edge</th><th>dtype</th><th>min</th><th>max</th><th>range</th>"
          "<th>scale</th><th>clipped</th></tr>\n", f);
    for (i = 0; i < n; i++) {
        const cJSON *e = rows[i].g;
        fprintf(f, "<tr class=\"edge\" data-clipped=\"%.9g\" data-amax=\"%.9g\"><td>%d</td><td>", rows[i].clip, rows[i].amax, i + 1);
        html_esc(f, str(e, "name") ? str(e, "name") : "?");
        fputs(cJSON_IsTrue(get(e, "fixed")) ? " <i>(fixed)</i>" : "", f);
        fputs("</td><td>", f);
        html_esc(f, str(e, "dtype") ? str(e, "dtype") : "?");
        fprintf(f, "</td><td>%.4g</td><td>%.4g</td><td>", num(e, "min", 0), num(e, "max", 0));
        svg_range_cell(f, num(e, "min", 0), num(e, "max", 0), amax);
        fprintf(f, "</td><td>%.3g</td><td%s>%.3g%%</td></tr>\n", num(e, "scale", 0), rows[i].clip > 0 ? " class=\"bad\"" : "",
                100 * rows[i].clip);
    }
    fputs("</table>\n", f);
    free(rows);
    return 0;
}

/* |dlogit| per step of the verify run (x: step 0 = prefill), one line per prompt, crosses where
 * top-1 disagrees with FP32. */
static int steps(FILE *f, const cJSON *r) {
    fputs("<h2>Logit error per decode step (fake-quant vs FP32)</h2>\n", f);
    const cJSON *st = get(get(get(r, "activations"), "verify"), "steps"), *s;
    int n = cJSON_GetArraySize(st), np = 0;
    if (n <= 0) {
        fputs("<p class=\"none\">No verify steps in report.json.</p>\n", f);
        return 0;
    }
    cJSON_ArrayForEach(s, st) if ((int)num(s, "prompt", 0) + 1 > np) np = (int)num(s, "prompt", 0) + 1;
    double *x = calloc((size_t)n, sizeof *x), *ymax = calloc((size_t)n, sizeof *ymax), *ymean = calloc((size_t)n, sizeof *ymean);
    int *bad = calloc((size_t)n, sizeof *bad), misses = 0;
    svg_series *ser = calloc((size_t)np * 2, sizeof *ser);
    char (*names)[48] = calloc((size_t)np * 2, sizeof *names);
    if (!x || !ymax || !ymean || !bad || !ser || !names) { free(x); free(ymax); free(ymean); free(bad); free(ser); free(names); return -1; }
    /* steps are grouped by prompt in report.json; rebuild the groups without assuming it */
    int k = 0;
    for (int p = 0; p < np; p++) {
        int start = k;
        cJSON_ArrayForEach(s, st) {
            if ((int)num(s, "prompt", 0) != p) continue;
            x[k] = num(s, "step", 0);
            ymax[k] = num(s, "max_abs_diff", 0);
            ymean[k] = num(s, "mean_abs_diff", 0);
            bad[k] = !cJSON_IsTrue(get(s, "top1_agree"));
            misses += bad[k];
            k++;
        }
        snprintf(names[2 * p], 48, "prompt %d max", p);
        snprintf(names[2 * p + 1], 48, "prompt %d mean", p);
        ser[2 * p] = (svg_series){names[2 * p], x + start, ymax + start, bad + start, k - start};
        ser[2 * p + 1] = (svg_series){names[2 * p + 1], x + start, ymean + start, NULL, k - start};
    }
    fprintf(f, "<p>%d steps over %d prompts (step 0 is the prefill), log scale; top-1 disagreements: %d "
               "(red crosses).</p>\n", n, np, misses);
    svg_lines(f, "steps", ser, 2 * np, "decode step", "|dlogit|", 1);
    free(x); free(ymax); free(ymean); free(bad); free(ser); free(names);
    return 0;
}

/* Every perplexity report.json knows, one bar each. */
static void ppls(FILE *f, const cJSON *r) {
    svg_bar_row rows[16];
    char labels[16][96];
    int n = 0;
    const cJSON *ev = get(r, "eval"), *act = get(r, "activations"), *pp = get(act, "ppl_static"), *q = get(get(r, "export"), "quality");
#define ADD(lab, VAL) do { double x_ = (VAL); if (n < 16 && isfinite(x_) && x_ > 0) { \
        snprintf(labels[n], sizeof labels[n], "%s", lab); rows[n].label = labels[n]; rows[n].v[0] = x_; n++; } } while (0)
    ADD("FP32 reference model", num(ev, "fp32_ppl", NAN));
    ADD("weights quantized (reference model)", num(ev, "quant_ppl", NAN));
    ADD("FP32, static prefill graph", num(pp, "fp32", NAN));
    ADD("weights only, static graph", num(pp, "weight_only", NAN));
    ADD("weights + activations (fake-quant)", num(pp, "full", NAN));
    const cJSON *v;
    cJSON_ArrayForEach(v, get(act, "calibration_variants")) {
        char lab[96];
        snprintf(lab, sizeof lab, "calibration with %g decode steps", num(v, "decode_calib_steps", 0));
        ADD(lab, num(v, "ppl", NAN));
    }
    ADD("exported Circle prefill", num(q, "ppl", NAN));
#undef ADD
    fputs("<h2>Perplexity per configuration</h2>\n", f);
    if (!n) {
        fputs("<p class=\"none\">No perplexity in report.json (run quantize with --eval FILE).</p>\n", f);
        return;
    }
    if (ev) {
        fputs("<p>Reference-model rows: ", f);
        html_esc(f, str(ev, "file") ? str(ev, "file") : "?");
        fprintf(f, ", windows %g stride %g, %g tokens.", num(ev, "max_len", 0), num(ev, "stride", 0), num(ev, "tokens", 0));
        if (pp) fprintf(f, " Static-graph rows: windows of max_seq %g.", num(pp, "window", 0));
        fputs("</p>\n", f);
    }
    const char *series[] = {"perplexity"};
    svg_hbars(f, "ppl", rows, n, 1, series, 2);
}

/* Optional sweep: [{method, wbits|bits, ppl|quant_ppl}], one line per method. */
static int sweep(FILE *f, const cJSON *r) {
    const cJSON *sw = get(r, "sweep"), *e;
    int n = cJSON_GetArraySize(sw);
    if (!cJSON_IsArray(sw) || n <= 0) return 0;
    const char *meth[8];
    int nm = 0;
    cJSON_ArrayForEach(e, sw) {
        const char *m = str(e, "method") ? str(e, "method") : "run";
        int seen = 0;
        for (int i = 0; i < nm; i++) seen |= strcmp(meth[i], m) == 0;
        if (!seen && nm < 8) meth[nm++] = m;
    }
    double *x = calloc((size_t)n, sizeof *x), *y = calloc((size_t)n, sizeof *y);
    svg_series ser[8];
    if (!x || !y) { free(x); free(y); return -1; }
    int k = 0;
    for (int i = 0; i < nm; i++) {
        int start = k;
        cJSON_ArrayForEach(e, sw) {
            const char *m = str(e, "method") ? str(e, "method") : "run";
            double b = num(e, "wbits", num(e, "bits", NAN)), p = num(e, "ppl", num(e, "quant_ppl", NAN));
            if (strcmp(m, meth[i]) || !isfinite(b) || !isfinite(p)) continue;
            /* sorted by bits for the line */
            int j = k++;
            while (j > start && x[j - 1] > b) { x[j] = x[j - 1]; y[j] = y[j - 1]; j--; }
            x[j] = b;
            y[j] = p;
        }
        ser[i] = (svg_series){meth[i], x + start, y + start, NULL, k - start};
    }
    fputs("<h2>Sweep: perplexity vs weight bits</h2>\n", f);
    svg_lines(f, "sweep", ser, nm, "weight bits", "perplexity", 0);
    free(x);
    free(y);
    return 0;
}

static const char *k_style =
    "body{font-family:sans-serif;margin:24px;max-width:1150px;color:#222}h1{font-size:22px}h2{font-size:17px;"
    "margin-top:28px;border-bottom:1px solid #ddd}table{border-collapse:collapse;font-size:12px}td,th{padding:2px 8px;"
    "text-align:left;border-bottom:1px solid #eee}table.summary th{width:320px}td.bad{color:#d62728;font-weight:bold}"
    ".none{color:#888}svg.range{vertical-align:middle}";

pdq_code pdq_report_html(const char *outdir, const char *html_path, pdq_status *st) {
    char rpath[4096], ppath[4096], out[4096];
    snprintf(rpath, sizeof rpath, "%s/report.json", outdir);
    snprintf(ppath, sizeof ppath, "%s/ptq.json", outdir);
    snprintf(out, sizeof out, "%s", html_path ? html_path : "");
    if (!html_path) snprintf(out, sizeof out, "%s/report.html", outdir);
    cJSON *r = read_json(rpath, 1, st);
    if (!r) return st ? st->code : PDQ_ERR_IO;
    if (!cJSON_IsObject(r)) {
        cJSON_Delete(r);
        return pdq_fail(st, PDQ_ERR_FORMAT, "%s: not a JSON object", rpath);
    }
    pdq_status pst = {0};
    cJSON *p = read_json(ppath, 0, &pst);
    if (!p && pst.code) {
        cJSON_Delete(r);
        return pdq_fail(st, pst.code, "%s", pst.msg);
    }
    pdq_file_writer *w;
    pdq_code rc = pdq_file_begin(out, NULL, &w, st); /* temp + rename: pdq/file.h */
    FILE *f = rc ? NULL : pdq_file_stream(w);
    if (!f) {
        cJSON_Delete(r);
        cJSON_Delete(p);
        pdq_file_abort(w);
        return rc ? rc : pdq_fail(st, PDQ_ERR_NOMEM, "%s: out of memory", out);
    }
    fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>pdq report: ");
    html_esc(f, outdir);
    fprintf(f, "</title><style>%s</style></head>\n<body>\n<h1>pdq quantization report: ", k_style);
    html_esc(f, outdir);
    fputs("</h1>\n", f);
    summary(f, r);
    int bad = 0;
    ppls(f, r);
    html_tasks(f, r);
    bad |= sweep(f, r);
    bad |= module_losses(f, r);
    bad |= steps(f, r);
    bad |= edges(f, p);
    fputs("</body></html>\n", f);
    cJSON_Delete(r);
    cJSON_Delete(p);
    if (bad) { /* a chart's own allocation failed: the page would be incomplete */
        pdq_file_abort(w);
        return pdq_fail(st, PDQ_ERR_NOMEM, "%s: out of memory while building the page", out);
    }
    return pdq_file_commit(w, st);
}
