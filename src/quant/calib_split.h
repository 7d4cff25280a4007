/* GPTQ calibration split across the ranks of a job (src/dist), with results that do not depend
 * on the number of ranks.
 *
 * The windows form fixed chunks of `chunk` windows; chunk k belongs to rank k mod N. A Hessian
 * is the sum of its chunk sums added in chunk order, each chunk sum accumulated in double from
 * zero in window order -- the same numbers for any N. With chunk 1 that is exactly the
 * one-process accumulation (every window's float SYRK added in window order). Every rank ends a
 * pass with the same total Hessians. The linears of a layer go to owner ranks by cost; an owner
 * runs GPTQ and broadcasts its result. */
#ifndef PDQ_CALIB_SPLIT_H
#define PDQ_CALIB_SPLIT_H

#include "dist/dist.h"
#include "pdq/quant.h"

typedef struct {
    const pdq_dist *dist;
    int rank, size;
    int ns, chunk, nchunks;
    int nlocal;      /* this rank's windows */
    int *local;      /* [nlocal]: their global indices, ascending */
    double *load;    /* [size]: GPTQ cost assigned to each rank so far */
    long bytes;      /* bytes this rank received or sent in reductions and broadcasts */
    double comm_s;   /* seconds in them, waiting for slower ranks included */
} pdq_calib_split;

pdq_code pdq_calib_split_init(pdq_calib_split *p, const pdq_dist *d, int ns, int chunk, pdq_status *st);
void pdq_calib_split_free(pdq_calib_split *p);

/* Adds local window w's contribution to the nh Hessians hs. */
typedef pdq_code (*pdq_calib_window_fn)(void *ctx, int w, pdq_hessian *hs, pdq_status *st);

/* Runs fn over this rank's windows and leaves in total[nh] (initialized, empty) the sums over
 * all windows of all ranks, in chunk order. */
pdq_code pdq_calib_split_hessians(pdq_calib_split *p, pdq_hessian *total, int nh, pdq_calib_window_fn fn, void *ctx,
                                  pdq_status *st);

/* Owner rank of each of n linears (costs[n]), balanced: the costliest first, each to the least
 * loaded rank so far (the lowest on a tie). */
void pdq_calib_split_owners(pdq_calib_split *p, const double *costs, int n, int *owner);
/* GPTQ cost of an [out, in] linear: the O(out in^2) sweep and the O(in^3) factorization. */
double pdq_calib_split_cost(int out, int in);

/* The owner's result r to every rank (non-owners: r is filled, caller frees). */
pdq_code pdq_calib_split_share(pdq_calib_split *p, pdq_qresult *r, int owner, pdq_status *st);

#endif
