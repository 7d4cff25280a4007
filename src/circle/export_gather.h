/* Standard GATHER form for quantized tables and the consumer requirements of a file (private). */
#ifndef PDQ_CIRCLE_EXPORT_GATHER_H
#define PDQ_CIRCLE_EXPORT_GATHER_H

#include <cjson/cJSON.h>

#include "pdq/circle.h"
#include "pdq/graph.h"

/* 1 if op is a GATHER from a quantized constant table (written in the standard form). */
int pdq_circle_gather_needs_std(const pdq_graph *g, const pdq_op *op);
/* Appends DEQUANTIZE -> GATHER (float32) [-> QUANTIZE] for op to m (tensor ids are g's). */
pdq_code pdq_circle_add_gather_std(pdq_circle_model *m, const pdq_graph *g, const pdq_op *op, const pdq_circle_options *o,
                                   pdq_status *st);
/* Distinct "OP in,in -> out" lines (types; [const], [per-channel]) over m's operators. */
cJSON *pdq_circle_requirements(const pdq_circle_model *m);

#endif
