/* Scores a task's items through a scorer and aggregates them as the harness does
 * (lm_eval/api/task.py process_results, api/metrics.py, api/group.py). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pdq/tasks.h"
#include "task_items.h"

/* First index of the maximum of x[i] / div[i] (div NULL: 1), as numpy's argmax. */
static int argmax_div(const double *x, const double *div, int n) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if ((div ? x[i] / div[i] : x[i]) > (div ? x[best] / div[best] : x[best])) best = i;
    return best;
}

static void free_reqs(const pdq_task *t, pdq_ll_request **reqs) {
    if (!reqs) return;
    for (int i = 0; i < t->n_items; i++) {
        if (!reqs[i]) continue;
        for (int j = 0; j < t->items[i].n; j++) pdq_ll_request_free(&reqs[i][j]);
        free(reqs[i]);
    }
    free(reqs);
}

void pdq_task_result_free(const pdq_task *t, pdq_task_result *r, pdq_ll_request **reqs) {
    free_reqs(t, reqs);
    if (!r) return;
    if (r->items)
        for (int i = 0; i < t->n_items; i++) {
            free(r->items[i].ll);
            free(r->items[i].greedy);
        }
    free(r->items);
    free(r->subjects);
    memset(r, 0, sizeof *r);
}

/* Runs the item's requests: shared context in one call (CHOICE), else one call each. */
static pdq_code score_item(const pdq_task_item *it, pdq_ll_request *rq, pdq_ll_fn fn, void *fn_ctx,
                           pdq_item_result *ir, pdq_status *st) {
    int32_t *conts[it->n > 0 ? it->n : 1];
    int lens[it->n > 0 ? it->n : 1];
    for (int j = 0; j < it->n; j++) conts[j] = rq[j].cont, lens[j] = rq[j].n_cont;
    int shared = 1;
    for (int j = 1; j < it->n; j++)
        shared &= rq[j].n_ctx == rq[0].n_ctx && memcmp(rq[j].ctx, rq[0].ctx, (size_t)rq[0].n_ctx * sizeof *rq[0].ctx) == 0;
    if (shared) return fn(fn_ctx, rq[0].ctx, rq[0].n_ctx, conts, lens, it->n, ir->ll, ir->greedy, st);
    for (int j = 0; j < it->n; j++)
        if (fn(fn_ctx, rq[j].ctx, rq[j].n_ctx, &conts[j], &lens[j], 1, &ir->ll[j], &ir->greedy[j], st) != PDQ_OK)
            return st->code;
    return PDQ_OK;
}

/* llama.cpp's hellaswag score: the tails after the common prefix of the whole sequences, mean
 * log-probability per token. */
static pdq_code llamacpp_item(const pdq_task_item *it, const pdq_tokenizer *tok, pdq_ll_fn fn, void *fn_ctx,
                              pdq_item_result *ir, pdq_status *st) {
    int n = it->n;
    int32_t *seq[n], *tails[n];
    size_t len[n];
    int tail_n[n];
    double ll[n];
    int greedy[n], got = 0;
    pdq_code rc = PDQ_OK;
    for (; got < n && rc == PDQ_OK; got++) {
        char *text = task_strcat(it->ctx[got], it->cont[got]);
        rc = text ? pdq_tokenizer_encode(tok, text, strlen(text), 1, &seq[got], &len[got], st)
                  : pdq_fail(st, PDQ_ERR_NOMEM, "out of memory");
        free(text);
        if (rc != PDQ_OK) break;
    }
    size_t prefix = 0;
    if (rc == PDQ_OK) {
        for (int ok = 1; ok; prefix += ok)
            for (int j = 0; j < n; j++) ok &= prefix < len[j] && seq[j][prefix] == seq[0][prefix];
        for (int j = 0; j < n && rc == PDQ_OK; j++) {
            if (prefix == 0 || len[j] <= prefix)
                rc = pdq_fail(st, PDQ_ERR_ARG, "llama.cpp's rule: ending %d has no tokens after the common prefix", j);
            tails[j] = seq[j] + prefix;
            tail_n[j] = (int)(len[j] - prefix);
        }
    }
    if (rc == PDQ_OK) rc = fn(fn_ctx, seq[0], (int)prefix, tails, tail_n, n, ll, greedy, st);
    if (rc == PDQ_OK) {
        int best = 0;
        for (int j = 1; j < n; j++)
            if (ll[j] / tail_n[j] > ll[best] / tail_n[best]) best = j;
        ir->pred_llamacpp = best;
        ir->acc_llamacpp = best == it->gold;
    }
    for (int j = 0; j < got && j < n; j++) free(seq[j]);
    return rc;
}

static void judge(const pdq_task *t, const pdq_task_item *it, pdq_item_result *ir) {
    if (t->kind == PDQ_TASK_GREEDY) {
        ir->pred = ir->pred_norm = 0;
        ir->acc = ir->acc_norm = ir->greedy[0];
        return;
    }
    double len[it->n];
    for (int j = 0; j < it->n; j++) len[j] = (double)pdq_utf8_chars(it->choice[j]);
    ir->pred = argmax_div(ir->ll, NULL, it->n);
    ir->pred_norm = argmax_div(ir->ll, len, it->n);
    ir->acc = ir->pred == it->gold;
    ir->acc_norm = ir->pred_norm == it->gold;
}

/* Per subject, the four groups and mmlu as the harness nests them: subject -> group -> all, each
 * level size-weighted with the pooled stderr; macro = the unweighted mean of subjects. */
static pdq_code aggregate_subjects(const pdq_task *t, pdq_task_result *r, pdq_status *st) {
    int k = t->n_subjects;
    long *hits = calloc((size_t)k, sizeof *hits);
    r->subjects = calloc((size_t)k, sizeof *r->subjects);
    if (!hits || !r->subjects) {
        free(hits);
        return pdq_fail(st, PDQ_ERR_NOMEM, "out of memory for subject results");
    }
    r->n_subjects = k;
    for (int i = 0; i < t->n_items; i++) {
        const pdq_item_result *ir = &r->items[i];
        int s = t->items[i].subject;
        if (ir->refused || s < 0 || s >= k) continue;
        r->subjects[s].n++;
        hits[s] += ir->acc;
    }
    double se[k], val[k], macro = 0;
    long sz[k];
    int used = 0;
    for (int s = 0; s < k; s++) {
        r->subjects[s].subject = t->subjects[s];
        r->subjects[s].acc = pdq_metric_mean01(hits[s], r->subjects[s].n);
    }
    for (int c = 0; c < 4; c++) {
        int m = 0;
        double num = 0;
        long tot = 0;
        for (int s = 0; s < k; s++) {
            if (r->subjects[s].n == 0 || pdq_mmlu_category(t->subjects[s]) != c) continue;
            se[m] = r->subjects[s].acc.stderr_;
            sz[m++] = r->subjects[s].n;
            num += (double)hits[s];
            tot += r->subjects[s].n;
        }
        r->category_n[c] = tot;
        r->category[c].value = tot ? num / (double)tot : NAN;
        r->category[c].stderr_ = m ? pdq_pooled_stderr(se, sz, m) : NAN;
    }
    for (int s = 0; s < k; s++)
        if (r->subjects[s].n) se[used] = r->subjects[s].acc.stderr_, sz[used] = r->subjects[s].n,
                              val[used++] = r->subjects[s].acc.value;
    for (int s = 0; s < used; s++) macro += val[s];
    r->macro.value = used ? macro / used : NAN;
    r->macro.stderr_ = used ? pdq_pooled_stderr(se, sz, used) : NAN; /* the harness pools stderrs either way */
    /* mmlu itself: the groups, size-weighted, pooled */
    int m = 0;
    for (int c = 0; c < 4; c++)
        if (r->category_n[c]) se[m] = r->category[c].stderr_, sz[m++] = r->category_n[c];
    if (m) r->acc.stderr_ = pdq_pooled_stderr(se, sz, m);
    free(hits);
    return PDQ_OK;
}

static pdq_code aggregate(const pdq_task *t, pdq_task_result *r, pdq_status *st) {
    long acc = 0, accn = 0, accl = 0, n = 0;
    double *lls = malloc((size_t)(t->n_items > 0 ? t->n_items : 1) * sizeof *lls);
    if (!lls) return pdq_fail(st, PDQ_ERR_NOMEM, "out of memory for results");
    for (int i = 0; i < t->n_items; i++) {
        const pdq_item_result *ir = &r->items[i];
        if (ir->refused) continue;
        acc += ir->acc;
        accn += ir->acc_norm;
        accl += ir->acc_llamacpp;
        lls[n++] = ir->ll[0];
    }
    r->n = n;
    r->acc = pdq_metric_mean01(acc, n);
    r->acc_norm = t->has_acc_norm ? pdq_metric_mean01(accn, n) : (pdq_metric){NAN, NAN};
    r->acc_norm_llamacpp = t->llamacpp_rule ? pdq_metric_mean01(accl, n) : (pdq_metric){NAN, NAN};
    r->perplexity = t->has_perplexity ? pdq_metric_perplexity(lls, n, 100000) : (pdq_metric){NAN, NAN};
    free(lls);
    return t->n_subjects > 0 ? aggregate_subjects(t, r, st) : PDQ_OK;
}

pdq_code pdq_task_eval(const pdq_task *t, const pdq_tokenizer *tok, int add_bos, pdq_ll_fn fn, void *fn_ctx,
                       pdq_task_progress_fn progress, void *progress_ctx, pdq_task_result *out,
                       pdq_ll_request ***reqs_out, pdq_status *st) {
    memset(out, 0, sizeof *out);
    if (reqs_out) *reqs_out = NULL;
    size_t ni = (size_t)(t->n_items > 0 ? t->n_items : 1);
    pdq_ll_request **reqs = calloc(ni, sizeof *reqs);
    out->items = calloc(ni, sizeof *out->items);
    if (!reqs || !out->items) {
        free(reqs);
        return pdq_fail(st, PDQ_ERR_NOMEM, "out of memory for %d items", t->n_items);
    }
    long total = 0, done = 0;
    for (int i = 0; i < t->n_items; i++) total += t->items[i].n;
    pdq_code rc = PDQ_OK;
    for (int i = 0; i < t->n_items && rc == PDQ_OK; i++) {
        const pdq_task_item *it = &t->items[i];
        pdq_item_result *ir = &out->items[i];
        reqs[i] = calloc((size_t)it->n, sizeof *reqs[i]);
        ir->ll = calloc((size_t)it->n, sizeof *ir->ll);
        ir->greedy = calloc((size_t)it->n, sizeof *ir->greedy);
        if (!reqs[i] || !ir->ll || !ir->greedy) { rc = pdq_fail(st, PDQ_ERR_NOMEM, "out of memory for item %d", i); break; }
        for (int j = 0; j < it->n && rc == PDQ_OK; j++)
            if ((rc = pdq_ll_encode(tok, it->ctx[j], it->cont[j], add_bos, &reqs[i][j], st)) != PDQ_OK)
                pdq_wrap(st, "%s item %d (line %ld), request %d", t->name, i, it->line, j);
        if (rc != PDQ_OK) break;
        rc = score_item(it, reqs[i], fn, fn_ctx, ir, st);
        if (rc == PDQ_OK && t->llamacpp_rule) rc = llamacpp_item(it, tok, fn, fn_ctx, ir, st);
        if (rc == PDQ_ERR_LIMIT) { /* too long for a static length: counted, never truncated */
            ir->refused = 1;
            out->refused++;
            rc = PDQ_OK;
            pdq_status_clear(st);
        } else if (rc != PDQ_OK) {
            pdq_wrap(st, "%s item %d (line %ld)", t->name, i, it->line);
        } else {
            judge(t, it, ir);
        }
        done += it->n;
        if (progress) progress(progress_ctx, done, total);
    }
    if (rc == PDQ_OK) rc = aggregate(t, out, st);
    if (rc != PDQ_OK || !reqs_out) free_reqs(t, reqs);
    else *reqs_out = reqs;
    if (rc != PDQ_OK) pdq_task_result_free(t, out, NULL);
    return rc;
}
