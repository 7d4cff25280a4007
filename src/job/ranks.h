/* The quantize job as one rank of an MPI job (pdq-mpi under mpirun); in the plain binary a job of
 * one process where all of this does nothing. */
#ifndef PDQ_JOB_RANKS_H
#define PDQ_JOB_RANKS_H

#include "dist/dist.h"
#include "job.h"

typedef struct {
    pdq_dist *d;
    int rank, size;
    int lead;        /* rank 0: prints, evaluates, writes */
    const job_ctx *ctx;
} quantize_job;

/* Joins the job; ranks other than 0 get a silent stdout. 0, or 1 with the error in ctx. */
int quantize_job_start(quantize_job *j, const job_ctx *ctx);
/* Every rank runs the same binary, arguments, model and calibration text: compared up front
 * (hashes of the executable, argv, config.json and the safetensors headers and sizes, the
 * calibration and evaluation files). A difference ends the job naming the rank and what differs. */
void quantize_job_check(quantize_job *j, int argc, char **argv, const char *model_dir, const char *calib,
                        const char *eval);
/* After an error on this rank: ends the whole job (several ranks) with msg naming the rank. */
void quantize_job_fail(quantize_job *j, const char *msg);
/* Peak RSS of every rank and the calibration bytes each sent or received (and the seconds in
 * those exchanges), a note from rank 0. */
void quantize_job_report(quantize_job *j, long comm_bytes, double comm_seconds);
void quantize_job_end(quantize_job *j);

#endif
