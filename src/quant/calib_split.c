/* GPTQ calibration across ranks: chunked, rank-count independent Hessian sums, owners of linears
 * and the owners' results to everyone (calib_split.h). */
#include <stdlib.h>
#include <string.h>

#include "pdq/progress.h"
#include "quant/calib_split.h"

pdq_code pdq_calib_split_init(pdq_calib_split *p, const pdq_dist *d, int ns, int chunk, pdq_status *st) {
    memset(p, 0, sizeof *p);
    p->dist = d;
    p->rank = pdq_dist_rank(d);
    p->size = pdq_dist_size(d);
    p->ns = ns;
    p->chunk = chunk > 0 ? chunk : 1;
    p->nchunks = ns > 0 ? (ns + p->chunk - 1) / p->chunk : 0;
    p->local = malloc(((size_t)ns + 1) * sizeof *p->local);
    p->load = calloc((size_t)p->size, sizeof *p->load);
    if (!p->local || !p->load) {
        pdq_calib_split_free(p);
        return pdq_fail(st, PDQ_ERR_NOMEM, "out of memory");
    }
    for (int k = p->rank; k < p->nchunks; k += p->size)
        for (int s = k * p->chunk; s < ns && s < (k + 1) * p->chunk; s++) p->local[p->nlocal++] = s;
    return PDQ_OK;
}

void pdq_calib_split_free(pdq_calib_split *p) {
    free(p->local);
    free(p->load);
    p->local = NULL;
    p->load = NULL;
}

/* Upper triangle and row count of h into buf [n(n+1)/2 + 1], and back added onto a total. */
static void pack(const pdq_hessian *h, double *buf) {
    int n = h->n;
    for (int i = 0; i < n; i++) {
        memcpy(buf, h->acc + (size_t)i * n + i, (size_t)(n - i) * sizeof *buf);
        buf += n - i;
    }
    *buf = (double)h->rows;
}

static void add_packed(pdq_hessian *h, const double *buf) {
    int n = h->n;
    for (int i = 0; i < n; i++) {
        double *a = h->acc + (size_t)i * n + i;
        for (int j = 0; j < n - i; j++) a[j] += buf[j];
        buf += n - i;
    }
    h->rows += (long)*buf;
}

pdq_code pdq_calib_split_hessians(pdq_calib_split *p, pdq_hessian *total, int nh, pdq_calib_window_fn fn, void *ctx,
                                  pdq_status *st) {
    pdq_code rc = PDQ_OK;
    if (p->size == 1 && p->chunk == 1) { /* every window straight into the total: the same sums */
        for (int w = 0; !rc && w < p->nlocal; w++) rc = fn(ctx, w, total, st);
        return rc;
    }
    pdq_hessian *c = calloc((size_t)nh, sizeof *c);
    size_t maxn = 0;
    for (int h = 0; h < nh; h++)
        if ((size_t)total[h].n > maxn) maxn = (size_t)total[h].n;
    double *buf = malloc((maxn * (maxn + 1) / 2 + 1) * sizeof *buf);
    if (!c || !buf) rc = pdq_fail(st, PDQ_ERR_NOMEM, "out of memory for chunk Hessians");
    for (int h = 0; !rc && h < nh; h++) {
        rc = pdq_hessian_init(&c[h], total[h].n, st);
        c[h].prof = total[h].prof;
    }
    for (int r = 0; !rc && r * p->size < p->nchunks; r++) {
        int k = r * p->size + p->rank;
        if (k < p->nchunks) { /* this rank's chunk of the round */
            for (int h = 0; h < nh; h++) pdq_hessian_reset(&c[h]);
            int first = k * p->chunk, end = first + p->chunk < p->ns ? first + p->chunk : p->ns;
            for (int w = r * p->chunk; !rc && w < r * p->chunk + (end - first); w++) rc = fn(ctx, w, c, st);
        }
        /* the round's chunks onto the totals, in chunk order */
        for (int j = 0; !rc && j < p->size && r * p->size + j < p->nchunks; j++)
            for (int h = 0; !rc && h < nh; h++) {
                size_t n = (size_t)total[h].n, bytes = (n * (n + 1) / 2 + 1) * sizeof *buf;
                if (j == p->rank) pack(&c[h], buf);
                double t0 = pdq_now();
                if ((rc = pdq_dist_bcast(p->dist, buf, bytes, j, st))) break;
                p->comm_s += pdq_now() - t0;
                if (p->size > 1) p->bytes += (long)bytes;
                add_packed(&total[h], buf);
            }
    }
    for (int h = 0; c && h < nh; h++) pdq_hessian_free(&c[h]);
    free(c);
    free(buf);
    return rc;
}

double pdq_calib_split_cost(int out, int in) { return (double)in * in * ((double)out + in); }

void pdq_calib_split_owners(pdq_calib_split *p, const double *costs, int n, int *owner) {
    int done[16] = {0};
    for (int t = 0; t < n && t < 16; t++) {
        int best = -1;
        for (int i = 0; i < n; i++)
            if (!done[i] && (best < 0 || costs[i] > costs[best])) best = i;
        int r = 0;
        for (int k = 1; k < p->size; k++)
            if (p->load[k] < p->load[r]) r = k;
        done[best] = 1;
        owner[best] = r;
        p->load[r] += costs[best];
    }
}

pdq_code pdq_calib_split_share(pdq_calib_split *p, pdq_qresult *r, int owner, pdq_status *st) {
    if (p->size == 1) return PDQ_OK;
    int mine = owner == p->rank;
    struct {
        int32_t rows, cols, ngroups, has_codes, has_deq, has_gidx;
        double loss, rtn_loss;
    } hd;
    memset(&hd, 0, sizeof hd);
    if (mine) {
        hd.rows = r->rows, hd.cols = r->cols, hd.ngroups = r->ngroups;
        hd.has_codes = r->codes != NULL, hd.has_deq = r->deq != NULL, hd.has_gidx = r->g_idx != NULL;
        hd.loss = r->loss, hd.rtn_loss = r->rtn_loss;
    }
    double t0 = pdq_now();
    pdq_code rc = pdq_dist_bcast(p->dist, &hd, sizeof hd, owner, st);
    if (rc) return rc;
    size_t rc_n = (size_t)hd.rows * hd.cols, rg = (size_t)hd.rows * hd.ngroups;
    if (!mine) {
        memset(r, 0, sizeof *r);
        r->rows = hd.rows, r->cols = hd.cols, r->ngroups = hd.ngroups;
        r->loss = hd.loss, r->rtn_loss = hd.rtn_loss;
        r->codes = hd.has_codes ? malloc(rc_n + 1) : NULL;
        r->deq = hd.has_deq ? malloc(rc_n * sizeof(float) + 1) : NULL;
        r->scale = malloc(rg * sizeof(float) + 1);
        r->zero = malloc(rg * sizeof(float) + 1);
        r->g_idx = hd.has_gidx ? malloc((size_t)hd.cols * sizeof(int32_t)) : NULL;
        if ((hd.has_codes && !r->codes) || (hd.has_deq && !r->deq) || !r->scale || !r->zero ||
            (hd.has_gidx && !r->g_idx)) {
            pdq_qresult_free(r);
            return pdq_fail(st, PDQ_ERR_NOMEM, "out of memory receiving a %d x %d result", hd.rows, hd.cols);
        }
    }
    struct { void *p; size_t n; } parts[5] = {
        {r->codes, hd.has_codes ? rc_n : 0}, {r->deq, hd.has_deq ? rc_n * sizeof(float) : 0},
        {r->scale, rg * sizeof(float)}, {r->zero, rg * sizeof(float)},
        {r->g_idx, hd.has_gidx ? (size_t)hd.cols * sizeof(int32_t) : 0}};
    p->bytes += (long)sizeof hd;
    for (int i = 0; !rc && i < 5; i++) {
        if (parts[i].n) rc = pdq_dist_bcast(p->dist, parts[i].p, parts[i].n, owner, st);
        p->bytes += (long)parts[i].n;
    }
    p->comm_s += pdq_now() - t0;
    if (rc && !mine) pdq_qresult_free(r);
    return rc;
}
