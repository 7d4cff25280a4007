/* Task accuracy per path on the report page (see html_tasks.h). */
#include "html_tasks.h"

#include <math.h>
#include <string.h>

#include "svg.h"

static const cJSON *get(const cJSON *o, const char *k) { return cJSON_GetObjectItemCaseSensitive(o, k); }
static const char *str(const cJSON *o, const char *k) {
    const cJSON *x = get(o, k);
    return cJSON_IsString(x) ? x->valuestring : NULL;
}

#define MAX_PATHS 8
static const char *const k_metrics[] = {"acc", "acc_norm", "perplexity", "acc_norm_llamacpp", "macro_acc"};

/* The entry of (task, path) in results, or NULL. */
static const cJSON *find(const cJSON *res, const char *task, const char *path) {
    const cJSON *e;
    cJSON_ArrayForEach(e, res) {
        const char *t = str(e, "task"), *p = str(e, "path");
        if (t && p && !strcmp(t, task) && !strcmp(p, path)) return e;
    }
    return NULL;
}

static void cell(FILE *f, const cJSON *e, const char *metric) {
    char k[64];
    snprintf(k, sizeof k, "%s_stderr", metric);
    const cJSON *v = get(e, metric), *se = get(e, k);
    if (!cJSON_IsNumber(v)) { fputs("<td></td>", f); return; }
    fprintf(f, "<td data-value=\"%.17g\">%.4f", v->valuedouble, v->valuedouble);
    if (cJSON_IsNumber(se)) fprintf(f, " ± %.4f", se->valuedouble);
    else fputs(" ± N/A", f);
    double refused = cJSON_GetNumberValue(get(e, "refused"));
    if (refused > 0) fprintf(f, " (%g refused)", refused);
    fputs("</td>", f);
}

void html_tasks(FILE *f, const cJSON *r) {
    const cJSON *tj = get(r, "tasks"), *res = get(tj, "results"), *e;
    if (!cJSON_IsArray(res) || !cJSON_GetArraySize(res)) return;
    const char *paths[MAX_PATHS], *tasks[64];
    int np = 0, nt = 0;
    cJSON_ArrayForEach(e, res) {
        const char *t = str(e, "task"), *p = str(e, "path");
        if (!t || !p) continue;
        int seen = 0;
        for (int i = 0; i < np; i++) seen |= !strcmp(paths[i], p);
        if (!seen && np < MAX_PATHS) paths[np++] = p;
        seen = 0;
        for (int i = 0; i < nt; i++) seen |= !strcmp(tasks[i], t);
        if (!seen && nt < 64) tasks[nt++] = t;
    }
    fputs("<h2>Task accuracy per path (lm-evaluation-harness rules)</h2>\n<p>Data ", f);
    html_esc(f, str(tj, "data") ? str(tj, "data") : "?");
    double limit = cJSON_GetNumberValue(get(tj, "limit"));
    if (limit > 0) fprintf(f, ", the first %g items of each task", limit);
    fputs(". Static paths prefill each context once and append its continuations; a request over max_seq is "
          "refused and left out.</p>\n<table class=\"tasks\">\n<tr><th>task</th><th>metric</th>", f);
    for (int p = 0; p < np; p++) {
        fputs("<th>", f);
        html_esc(f, paths[p]);
        fputs("</th>", f);
    }
    fputs("<th>n</th></tr>\n", f);
    for (int t = 0; t < nt; t++)
        for (size_t k = 0; k < sizeof k_metrics / sizeof *k_metrics; k++) {
            const cJSON *first = NULL; /* the first path with the metric: a row when any has it */
            for (int p = 0; p < np && !first; p++)
                if (cJSON_IsNumber(get(find(res, tasks[t], paths[p]), k_metrics[k]))) first = find(res, tasks[t], paths[p]);
            if (!first) continue;
            fputs("<tr><td>", f);
            html_esc(f, tasks[t]);
            fprintf(f, "</td><td>%s</td>", k_metrics[k]);
            for (int p = 0; p < np; p++) cell(f, find(res, tasks[t], paths[p]), k_metrics[k]);
            fprintf(f, "<td>%g</td></tr>\n", cJSON_GetNumberValue(get(first, "n")));
        }
    fputs("</table>\n", f);
    const cJSON *iv = get(tj, "int_vs_fake");
    if (!cJSON_IsArray(iv) || !cJSON_GetArraySize(iv)) return;
    fputs("<p>Integer against fake-quant: with each continuation's log-likelihood within b nats per token of "
          "fake-quant's (the integer bound), an item can change answer only when fake-quant's margin between its choice a "
          "and another b is at most b(n<sub>a</sub> + n<sub>b</sub>) tokens.</p>\n<table class=\"tasks\">\n<tr><th>task</th>"
          "<th>bound b</th><th>max |&Delta;ll| per token</th><th>items</th><th>inside the bound</th><th>changed answer</th>"
          "<th>changed outside the bound</th></tr>\n", f);
    cJSON_ArrayForEach(e, iv) {
        fputs("<tr><td>", f);
        html_esc(f, str(e, "task") ? str(e, "task") : "?");
        double out = cJSON_GetNumberValue(get(e, "changed_outside_bound")), over = cJSON_GetNumberValue(get(e, "requests_over_bound"));
        fprintf(f, "</td><td>%g</td><td%s>%.4f</td><td>%g</td><td>%g</td><td>%g</td><td%s>%g</td></tr>\n",
                cJSON_GetNumberValue(get(e, "bound_per_token")), over > 0 || isnan(over) ? " class=\"bad\"" : "",
                cJSON_GetNumberValue(get(e, "max_dll_per_token")), cJSON_GetNumberValue(get(e, "items")),
                cJSON_GetNumberValue(get(e, "inside_bound")), cJSON_GetNumberValue(get(e, "changed")),
                out > 0 || isnan(out) ? " class=\"bad\"" : "", out);
    }
    fputs("</table>\n", f);
}
