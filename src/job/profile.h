/* --profile: the quantize job's phases by wall time and counted FLOPs against the sgemm rate
 * the machine reaches in the same run (report.json's "profile"; docs/speed.md). */
#ifndef PDQ_JOB_PROFILE_H
#define PDQ_JOB_PROFILE_H

#include "job.h"
#include "pdq/quant.h"
#include "summary.h"

typedef struct quantize_profile {
    int threads;
    double sgemm_start, sgemm_end; /* GFLOP/s of the probe before the weights and after the last step */
    double dgemm_start, dgemm_end; /* the same in double, the ceiling of the Cholesky phase */
    double tokenize_s;             /* tokenizing the calibration text (part of the calibration step) */
    pdq_qprof q;                   /* the quantizer's phases (pdq_quant_opts.prof points here) */
} quantize_profile;

/* Probes the sgemm and dgemm rates on `threads` BLAS threads (<= 0: all cores) before the work
 * starts (start) or after it (end). 0, or 1 with the error in j. */
int quantize_profile_probe(const job_ctx *j, quantize_profile *p, int threads, int end);

/* report.json's "profile": sgemm_gflops and dgemm_gflops (the higher of each's two probes),
 * threads, and per phase name, seconds, gflop, gflop_s and fraction_of_sgemm (null where no
 * FLOPs are counted), and fraction_of_dgemm for the phase that computes in double (null for the
 * others). t: the job's step times as the summary split them. */
struct cJSON *quantize_profile_json(const quantize_profile *p, const quantize_times *t);

#endif
