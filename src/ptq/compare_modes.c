/* Integer mode against fake-quant: perplexity through the integer prefill graph, and the logits
 * of both runtimes step by step on the same tokens. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ptq/ptq_internal.h"
#include "pdq/eval.h"
#include "pdq/lower.h"
#include "pdq/qcompare.h"

typedef struct {
    pdq_rt *rt;
} int_steps;

static pdq_code int_prefill(void *ctx, const int32_t *ids, int n, float *logits, pdq_status *st) {
    int_steps *r = ctx;
    pdq_rt_reset(r->rt);
    return pdq_rt_prefill(r->rt, 1, n, ids, NULL, PDQ_PAD_RIGHT, logits, NULL, st);
}

static pdq_code int_decode(void *ctx, int32_t id, float *logits, pdq_status *st) {
    int_steps *r = ctx;
    return pdq_rt_decode(r->rt, 1, &id, logits, st);
}

static void acc_rows(const float *a, const float *b, int V, pdq_mode_cmp *c, double *sum) {
    for (int k = 0; k < V; k++) {
        double d = fabs((double)a[k] - (double)b[k]);
        *sum += d;
        if (d > c->max_abs || d != d) c->max_abs = d;
    }
    c->top1 += pdq_argmax(a, V) == pdq_argmax(b, V);
    c->rows++;
}

pdq_code pdq_compare_int_fake(const pdq_model *ref, const pdq_model *m, const char *qdir, pdq_ptq *p, int max_seq,
                              const pdq_static_opts *so, int threads, const int32_t *eval, long n_eval,
                              const int32_t *const *prompts, const int *lens, int n_prompts, int steps, pdq_mode_cmp *out,
                              pdq_ptq_verify_result *vint, pdq_status *st) {
    memset(out, 0, sizeof *out);
    pdq_ptq_mode saved = pdq_ptq_get_mode(p);
    pdq_rt *rf = NULL, *ri = NULL;
    pdq_lowering *lw = NULL;
    pdq_pool *pool = pdq_pool_create(threads, st);
    if (!pool) return st->code;
    int V = m->cfg.vocab_size;
    float *lf = malloc(sizeof(float) * (size_t)V), *li = malloc(sizeof(float) * (size_t)V);
    pdq_code rc = lf && li ? PDQ_OK : pdq_fail(st, PDQ_ERR_NOMEM, "integer vs fake-quant");
    if (rc == PDQ_OK) rc = pdq_rt_create(m, 1, max_seq, so, &rf, st);
    if (rc == PDQ_OK) rc = pdq_rt_create(m, 1, max_seq, so, &ri, st);
    if (rc == PDQ_OK) rc = pdq_lowering_open(qdir, p, &lw, st);
    if (rc == PDQ_OK) {
        pdq_exec_opts eo;
        pdq_exec_opts_default(&eo);
        eo.mode = PDQ_EXEC_INT;
        eo.pool = pool;
        rc = pdq_rt_set_lowering(ri, pdq_lowering_lower, lw, &eo, st);
    }
    if (rc == PDQ_OK) {
        pdq_ptq_attach(p, rf);
        pdq_ptq_set_mode(p, PDQ_PTQ_FAKEQUANT);
    }
    if (rc == PDQ_OK && eval) {
        pdq_ppl_result r;
        rc = pdq_ppl_windows(pdq_rt_window_logits, ri, V, eval, n_eval, max_seq, max_seq, "ppl integer", &r, st);
        if (rc == PDQ_OK) out->ppl_int = r.ppl;
    }
    double sum = 0;
    for (int i = 0; i < n_prompts && rc == PDQ_OK; i++) {
        if (lens[i] + steps > max_seq) { rc = pdq_fail(st, PDQ_ERR_LIMIT, "prompt %d: %d tokens + %d steps > max_seq %d", i, lens[i], steps, max_seq); break; }
        pdq_rt_reset(rf);
        pdq_rt_reset(ri);
        rc = pdq_rt_prefill(rf, 1, lens[i], prompts[i], NULL, PDQ_PAD_RIGHT, lf, NULL, st);
        if (rc == PDQ_OK) rc = pdq_rt_prefill(ri, 1, lens[i], prompts[i], NULL, PDQ_PAD_RIGHT, li, NULL, st);
        for (int k = 0; k <= steps && rc == PDQ_OK; k++) {
            acc_rows(li, lf, V, out, &sum);
            if (k == steps) break;
            int32_t t = pdq_argmax(lf, V);
            rc = pdq_rt_decode(rf, 1, &t, lf, st);
            if (rc == PDQ_OK) rc = pdq_rt_decode(ri, 1, &t, li, st);
        }
    }
    if (rc == PDQ_OK && out->rows) {
        out->mean_abs = sum / ((double)out->rows * V);
        out->top1 /= out->rows;
    }
    if (rc == PDQ_OK && vint) {
        int_steps is = {ri};
        pdq_step_runner run = {int_prefill, int_decode, &is};
        rc = pdq_verify_steps(ref, &run, prompts, lens, n_prompts, steps, vint, st);
    }
    pdq_ptq_set_mode(p, saved);
    pdq_ptq_forget_graphs(p);
    pdq_rt_free(rf);
    pdq_rt_free(ri);
    pdq_lowering_free(lw);
    pdq_pool_free(pool);
    free(lf);
    free(li);
    return rc;
}
