/* The one-process world: the build without MPI. */
#include <string.h>

#include "dist/dist.h"

pdq_code pdq_dist_init(pdq_dist **out, pdq_status *st) {
    (void)st;
    *out = NULL;
    return PDQ_OK;
}

void pdq_dist_finish(pdq_dist *d) { (void)d; }
int pdq_dist_rank(const pdq_dist *d) { (void)d; return 0; }
int pdq_dist_size(const pdq_dist *d) { (void)d; return 1; }
const char *pdq_dist_kind(void) { return "none"; }

pdq_code pdq_dist_bcast(const pdq_dist *d, void *buf, size_t bytes, int root, pdq_status *st) {
    (void)d, (void)buf, (void)bytes, (void)root, (void)st;
    return PDQ_OK;
}

pdq_code pdq_dist_allgather_u64(const pdq_dist *d, const uint64_t *mine, int n, uint64_t *all, pdq_status *st) {
    (void)d, (void)st;
    for (int i = 0; i < n; i++) all[i] = mine[i];
    return PDQ_OK;
}

pdq_code pdq_dist_allgather(const pdq_dist *d, const void *mine, size_t bytes, void *all, pdq_status *st) {
    (void)d, (void)st;
    if (bytes) memmove(all, mine, bytes);
    return PDQ_OK;
}

pdq_code pdq_dist_barrier(const pdq_dist *d, pdq_status *st) {
    (void)d, (void)st;
    return PDQ_OK;
}

void pdq_dist_abort(const pdq_dist *d, const char *prefix, const char *msg) { (void)d, (void)prefix, (void)msg; }
