/* The MPI world (Open MPI): one rank per process, MPI_COMM_WORLD. Errors of MPI calls come back
 * as values (MPI_ERRORS_RETURN); the caller ends the job with pdq_dist_abort. */
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dist/dist.h"

struct pdq_dist {
    int rank, size, owns_init;
};

static pdq_code mpi_fail(pdq_status *st, int err, const char *what) {
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(err, text, &len) != MPI_SUCCESS) snprintf(text, sizeof text, "error %d", err);
    return pdq_fail(st, PDQ_ERR_IO, "MPI %s: %s", what, text);
}

pdq_code pdq_dist_init(pdq_dist **out, pdq_status *st) {
    *out = NULL;
    pdq_dist *d = calloc(1, sizeof *d);
    if (!d) return pdq_fail(st, PDQ_ERR_NOMEM, "out of memory");
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited) {
        int err = MPI_Init(NULL, NULL);
        if (err != MPI_SUCCESS) { free(d); return mpi_fail(st, err, "init"); }
        d->owns_init = 1;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &d->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &d->size);
    *out = d;
    return PDQ_OK;
}

void pdq_dist_finish(pdq_dist *d) {
    if (!d) return;
    if (d->owns_init) MPI_Finalize();
    free(d);
}

int pdq_dist_rank(const pdq_dist *d) { return d ? d->rank : 0; }
int pdq_dist_size(const pdq_dist *d) { return d ? d->size : 1; }
const char *pdq_dist_kind(void) { return "MPI"; }

pdq_code pdq_dist_bcast(const pdq_dist *d, void *buf, size_t bytes, int root, pdq_status *st) {
    if (!d || d->size == 1) return PDQ_OK;
    for (size_t off = 0; off < bytes;) { /* MPI counts are int */
        size_t n = bytes - off < (size_t)1 << 30 ? bytes - off : (size_t)1 << 30;
        int err = MPI_Bcast((char *)buf + off, (int)n, MPI_BYTE, root, MPI_COMM_WORLD);
        if (err != MPI_SUCCESS) return mpi_fail(st, err, "broadcast");
        off += n;
    }
    return PDQ_OK;
}

pdq_code pdq_dist_allgather_u64(const pdq_dist *d, const uint64_t *mine, int n, uint64_t *all, pdq_status *st) {
    if (!d || d->size == 1) {
        for (int i = 0; i < n; i++) all[i] = mine[i];
        return PDQ_OK;
    }
    int err = MPI_Allgather(mine, n, MPI_UINT64_T, all, n, MPI_UINT64_T, MPI_COMM_WORLD);
    return err == MPI_SUCCESS ? PDQ_OK : mpi_fail(st, err, "allgather");
}

pdq_code pdq_dist_allgather(const pdq_dist *d, const void *mine, size_t bytes, void *all, pdq_status *st) {
    if (!d || d->size == 1) {
        if (bytes) memmove(all, mine, bytes);
        return PDQ_OK;
    }
    /* in pieces of at most 1 GiB a rank (MPI counts are int), each gathered into a scratch block
     * and spread to the ranks' slots */
    size_t piece = bytes < (size_t)1 << 30 ? bytes : (size_t)1 << 30;
    char *tmp = piece ? malloc(piece * (size_t)d->size) : NULL;
    if (piece && !tmp) return pdq_fail(st, PDQ_ERR_NOMEM, "MPI allgather: out of memory for %zu bytes", piece * d->size);
    for (size_t off = 0; off < bytes; off += piece) {
        size_t n = bytes - off < piece ? bytes - off : piece;
        int err = MPI_Allgather((const char *)mine + off, (int)n, MPI_BYTE, tmp, (int)n, MPI_BYTE, MPI_COMM_WORLD);
        if (err != MPI_SUCCESS) { free(tmp); return mpi_fail(st, err, "allgather"); }
        for (int r = 0; r < d->size; r++) memcpy((char *)all + (size_t)r * bytes + off, tmp + (size_t)r * n, n);
    }
    free(tmp);
    return PDQ_OK;
}

pdq_code pdq_dist_barrier(const pdq_dist *d, pdq_status *st) {
    if (!d || d->size == 1) return PDQ_OK;
    int err = MPI_Barrier(MPI_COMM_WORLD);
    return err == MPI_SUCCESS ? PDQ_OK : mpi_fail(st, err, "barrier");
}

void pdq_dist_abort(const pdq_dist *d, const char *prefix, const char *msg) {
    if (!d || d->size == 1) return; /* alone: the caller's error path reports and exits */
    if (msg) fprintf(stderr, "%s: rank %d of %d: %s\n", prefix, d->rank, d->size, msg);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
}
