/* Calibration: observed prefills of full max_seq windows, optional observed greedy decode steps
 * after a shortened prefill of each window, then the same replay counting clipped values.
 * Across the ranks of a distributed job each rank runs its samples (s % ranks == rank) and
 * records every observer step instead of folding it in; the steps of all ranks are then replayed
 * in the one-process order, so min/max and EMA observers end with the one-process bits. */
#include <math.h>
#include <stdlib.h>

#include "dist/dist.h"
#include "pdq/eval.h"
#include "pdq/progress.h"
#include "ptq_internal.h"

/* This rank's share and its step record: prefill steps of local sample i at row i, decode step k
 * of local sample i at row nmax + i * K + k (the same layout on every rank); a row holds each
 * group's (step min, step max), min NaN when the group saw nothing in that step. */
typedef struct {
    const pdq_dist *dist;
    int rank, size, nmax, K;
    double *rows; /* NULL: one process, steps fold in directly */
} split;

static void end_step(pdq_ptq *p, split *sp, long row) {
    if (!sp->rows) {
        pdq_ptq_step(p);
        return;
    }
    double *r = sp->rows + (size_t)row * p->n_groups * 2;
    for (int i = 0; i < p->n_groups; i++) {
        pdq_observer *o = &p->groups[i].obs;
        r[2 * i] = o->pending ? o->cur_min : NAN;
        r[2 * i + 1] = o->pending ? o->cur_max : NAN;
        o->pending = 0;
    }
}

static pdq_code run_pass(pdq_ptq *p, pdq_rt *rt, const int32_t *samples, int nsamples, int K, split *sp,
                         pdq_ptq_mode mode, float *logits, float *all, int V, pdq_progress *pg, long *done,
                         pdq_status *st) {
    int S = p->max_seq, P = S - 1 - K;
    pdq_code rc = PDQ_OK;
    for (int s = sp->rank, i = 0; s < nsamples && rc == PDQ_OK; s += sp->size, i++) {
        const int32_t *ids = samples + (size_t)s * S;
        pdq_rt_reset(rt);
        pdq_ptq_set_mode(p, mode);
        /* All positions' logits, so the head graph sees every position as in evaluation. */
        rc = pdq_rt_prefill(rt, 1, S, ids, NULL, PDQ_PAD_RIGHT, NULL, all, st);
        if (mode == PDQ_PTQ_OBSERVE) end_step(p, sp, i);
        pdq_progress_update(pg, ++*done);
    }
    for (int s = sp->rank, i = 0; K > 0 && s < nsamples && rc == PDQ_OK; s += sp->size, i++) {
        const int32_t *ids = samples + (size_t)s * S;
        /* a cleared cache: the masked slots the decode steps read (and observe, in the mask sum)
         * must not hold the previous sample's keys, which another rank never saw */
        pdq_rt_clear(rt);
        pdq_ptq_set_mode(p, PDQ_PTQ_OFF); /* this prefill repeats part of an observed one */
        rc = pdq_rt_prefill(rt, 1, P, ids, NULL, PDQ_PAD_RIGHT, logits, NULL, st);
        pdq_ptq_set_mode(p, mode);
        for (int k = 0; k < K && rc == PDQ_OK; k++) {
            int32_t tok = pdq_argmax(logits, V);
            rc = pdq_rt_decode(rt, 1, &tok, logits, st);
            if (mode == PDQ_PTQ_OBSERVE) end_step(p, sp, (long)sp->nmax + (long)i * K + k);
        }
        pdq_progress_update(pg, ++*done);
    }
    pdq_ptq_set_mode(p, PDQ_PTQ_OFF);
    return rc;
}

/* Every rank's steps folded into the observers in the one-process order (all prefills by sample,
 * then every sample's decode steps), and the values counts summed: the same on every rank. */
static pdq_code merge_steps(pdq_ptq *p, const split *sp, int nsamples, pdq_status *st) {
    int G = p->n_groups;
    size_t rows = (size_t)sp->nmax * (1 + (size_t)sp->K), per = rows * G * 2;
    double *all = malloc(per * sp->size * sizeof(double) + 1), *vals = malloc((size_t)G * sizeof(double) + 1);
    double *allv = malloc((size_t)G * sp->size * sizeof(double) + 1);
    pdq_code rc = all && vals && allv ? PDQ_OK : pdq_fail(st, PDQ_ERR_NOMEM, "ptq calibration: %zu observer steps", rows);
    for (int i = 0; !rc && i < G; i++) vals[i] = p->groups[i].obs.values;
    if (!rc) rc = pdq_dist_allgather(sp->dist, sp->rows, per * sizeof(double), all, st);
    if (!rc) rc = pdq_dist_allgather(sp->dist, vals, (size_t)G * sizeof(double), allv, st);
    for (int i = 0; !rc && i < G; i++) {
        pdq_observer *o = &p->groups[i].obs;
        if (p->groups[i].fixed) continue;
        pdq_observer_init(o, o->kind, o->momentum);
        for (int r = 0; r < sp->size; r++) o->values += allv[(size_t)r * G + i];
    }
    for (long step = 0; !rc && step < (long)nsamples * (1 + sp->K); step++) {
        long s = step < nsamples ? step : (step - nsamples) / sp->K; /* the sample and its row on its rank */
        int r = (int)(s % sp->size);
        long i = s / sp->size, row = step < nsamples ? i : sp->nmax + i * sp->K + (step - nsamples) % sp->K;
        const double *x = all + (size_t)r * per + (size_t)row * G * 2;
        for (int g = 0; g < G; g++) {
            pdq_observer *o = &p->groups[g].obs;
            if (p->groups[g].fixed || isnan(x[2 * g])) continue;
            o->pending = 1;
            o->cur_min = x[2 * g];
            o->cur_max = x[2 * g + 1];
            pdq_observer_step(o);
        }
    }
    free(all);
    free(vals);
    free(allv);
    return rc;
}

/* The clip counts of every rank, summed (whole numbers in doubles: exact in any order). */
static pdq_code merge_counts(pdq_ptq *p, const split *sp, pdq_status *st) {
    int G = p->n_groups;
    double *mine = malloc((size_t)G * 2 * sizeof(double) + 1), *all = malloc((size_t)G * 2 * sp->size * sizeof(double) + 1);
    pdq_code rc = mine && all ? PDQ_OK : pdq_fail(st, PDQ_ERR_NOMEM, "ptq calibration: clip counts");
    for (int i = 0; !rc && i < G; i++) mine[2 * i] = p->groups[i].clipped, mine[2 * i + 1] = p->groups[i].counted;
    if (!rc) rc = pdq_dist_allgather(sp->dist, mine, (size_t)G * 2 * sizeof(double), all, st);
    for (int i = 0; !rc && i < G; i++) {
        p->groups[i].clipped = p->groups[i].counted = 0;
        for (int r = 0; r < sp->size; r++) {
            p->groups[i].clipped += all[(size_t)r * G * 2 + 2 * i];
            p->groups[i].counted += all[(size_t)r * G * 2 + 2 * i + 1];
        }
    }
    free(mine);
    free(all);
    return rc;
}

pdq_code pdq_ptq_calibrate(pdq_ptq *p, pdq_rt *rt, const int32_t *samples, int nsamples,
                           const pdq_ptq_calib_opts *co, pdq_status *st) {
    int S = p->max_seq, K = co ? co->decode_steps : 0;
    if (pdq_rt_batch(rt) != 1 || pdq_rt_max_seq(rt) != S)
        return pdq_fail(st, PDQ_ERR_ARG, "ptq calibration: runtime has batch %d, max_seq %d (need 1, %d)",
                        pdq_rt_batch(rt), pdq_rt_max_seq(rt), S);
    if (nsamples < 1) return pdq_fail(st, PDQ_ERR_ARG, "ptq calibration: no samples");
    if (K < 0 || K > S - 2)
        return pdq_fail(st, PDQ_ERR_ARG, "ptq calibration: %d decode steps do not fit max_seq %d (at most %d)",
                        K, S, S - 2);
    split sp = {co ? co->dist : NULL, 0, 1, nsamples, K, NULL};
    sp.rank = pdq_dist_rank(sp.dist);
    sp.size = pdq_dist_size(sp.dist);
    sp.nmax = (nsamples + sp.size - 1) / sp.size;
    int mine = sp.rank < nsamples ? (nsamples - sp.rank + sp.size - 1) / sp.size : 0;
    int V = p->vocab;
    float *logits = malloc(sizeof(float) * (size_t)V), *all = malloc(sizeof(float) * (size_t)V * S);
    if (sp.size > 1) sp.rows = calloc((size_t)sp.nmax * (1 + (size_t)K) * p->n_groups * 2 + 1, sizeof(double));
    if (!logits || !all || (sp.size > 1 && !sp.rows)) {
        free(logits);
        free(all);
        free(sp.rows);
        return pdq_fail(st, PDQ_ERR_NOMEM, "ptq calibration: logits and observer steps");
    }
    pdq_ptq_attach(p, rt);
    int count = p->o.adtype != PDQ_ADT_FLOAT;
    long per = (long)mine * (K > 0 ? 2 : 1), done = 0;
    pdq_progress pg;
    pdq_progress_start(&pg, co && co->label ? co->label : "calibration", per * (count ? 2 : 1));
    if (!(co && co->label)) pg.enabled = 0;
    pdq_code rc = run_pass(p, rt, samples, nsamples, K, &sp, PDQ_PTQ_OBSERVE, logits, all, V, &pg, &done, st);
    if (rc == PDQ_OK && sp.rows) rc = merge_steps(p, &sp, nsamples, st);
    if (rc == PDQ_OK) rc = pdq_ptq_finalize(p, p->o.adtype, st);
    for (int i = 0; i < p->n_groups; i++) p->groups[i].clipped = p->groups[i].counted = 0;
    if (rc == PDQ_OK && count) rc = run_pass(p, rt, samples, nsamples, K, &sp, PDQ_PTQ_COUNT_CLIP, logits, all, V, &pg, &done, st);
    if (rc == PDQ_OK && count && sp.rows) rc = merge_counts(p, &sp, st);
    pdq_progress_finish(&pg);
    pdq_rt_set_hook(rt, NULL, NULL);
    pdq_ptq_forget_graphs(p);
    p->calib_samples = nsamples;
    p->calib_decode_steps = K;
    free(logits);
    free(all);
    free(sp.rows);
    return rc;
}
