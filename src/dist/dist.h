/* The processes of one job (MPI ranks) behind one small interface. The MPI build links
 * dist_mpi.c, every other build dist_none.c: a world of one process, where every collective is a
 * no-op. Library code calls these and never includes MPI itself. A NULL handle is a one-process
 * world too. */
#ifndef PDQ_DIST_H
#define PDQ_DIST_H

#include <stddef.h>
#include <stdint.h>

#include "pdq/status.h"

typedef struct pdq_dist pdq_dist;

/* Joins the job (MPI_Init in the MPI build); *out NULL in the one-process build. */
pdq_code pdq_dist_init(pdq_dist **out, pdq_status *st);
/* Leaves the job after a success (MPI_Finalize); NULL allowed. */
void pdq_dist_finish(pdq_dist *d);
int pdq_dist_rank(const pdq_dist *d);
int pdq_dist_size(const pdq_dist *d);
/* "MPI" or "none": what the binary was built with. */
const char *pdq_dist_kind(void);

/* bytes from root to every rank (large buffers in pieces). */
pdq_code pdq_dist_bcast(const pdq_dist *d, void *buf, size_t bytes, int root, pdq_status *st);
/* Every rank's n values, rank by rank, into all [size * n] on every rank. */
pdq_code pdq_dist_allgather_u64(const pdq_dist *d, const uint64_t *mine, int n, uint64_t *all, pdq_status *st);
/* Every rank's `bytes` bytes, rank by rank, into all [size * bytes] on every rank (large buffers in
 * pieces). The caller combines them in a fixed order, so results do not depend on MPI's reduction
 * order. */
pdq_code pdq_dist_allgather(const pdq_dist *d, const void *mine, size_t bytes, void *all, pdq_status *st);
pdq_code pdq_dist_barrier(const pdq_dist *d, pdq_status *st);
/* Ends the whole job: prints "PREFIX: rank R of N: MSG" (msg NULL: nothing) and aborts every rank. A
 * one-process world returns (the caller then exits with its error as usual). */
void pdq_dist_abort(const pdq_dist *d, const char *prefix, const char *msg);

#endif
