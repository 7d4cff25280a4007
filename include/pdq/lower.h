/* Lowering: a float static graph made into the quantized IR the integer executor runs and the
 * quantized exporter writes -- file dtypes and qparams, activation grids from the PTQ table,
 * weight codes from a quantized checkpoint. It lives beside PTQ (src/ptq/lower*.c); the Circle
 * exporter and the integer runtimes call it. */
#ifndef PDQ_LOWER_H
#define PDQ_LOWER_H

#include "pdq/graph.h"
#include "pdq/ptq.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Copy of a float graph with the file dtypes and qparams of a quantized export (activation grids
 * from the PTQ table, weight codes from a quantized checkpoint dir): what the exporter writes,
 * without writing it. */
typedef struct pdq_qweights pdq_qweights;
pdq_code pdq_lower_graph(const pdq_graph *g, pdq_ptq *p, pdq_qweights *w, pdq_graph **out, pdq_status *st);

/* The lowering of a quantized checkpoint dir (its weight codes) with its PTQ table p (borrowed):
 * pdq_lowering_lower is a pdq_rt_lower_fn (runtime.h) with this as ctx. */
typedef struct pdq_lowering pdq_lowering;
pdq_code pdq_lowering_open(const char *qdir, pdq_ptq *p, pdq_lowering **out, pdq_status *st);
void pdq_lowering_free(pdq_lowering *l);
pdq_code pdq_lowering_lower(void *ctx, const pdq_graph *g, pdq_graph **qg, pdq_status *st);

#ifdef __cplusplus
}
#endif
#endif
