/* GPTQ's Hessian side (gptq_hinv.c): act-order permutation and the upper Cholesky factor of
 * inv(H), into a pdq_gptq_hcache (pdq/quant.h). */
#ifndef PDQ_QUANT_GPTQ_HINV_H
#define PDQ_QUANT_GPTQ_HINV_H

#include "pdq/quant.h"

/* c->perm, c->hinv for H (kept when c already holds them for the same H, cols, actorder and
 * percdamp): dead inputs (zero diagonal) get a 1, columns by descending diagonal when actorder,
 * percdamp times the mean diagonal added, hinv = U [cols][cols] float (zeros below the
 * diagonal). Times PREPARE and CHOLESKY into pf when computed. Not positive definite ->
 * PDQ_ERR_NUMERIC, c emptied. */
pdq_code gptq_hinv(pdq_gptq_hcache *c, const float *H, int cols, int actorder, float percdamp, pdq_qprof *pf,
                   const char *name, pdq_status *st);

#endif
