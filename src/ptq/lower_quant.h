/* Lowering's helpers (private): the checkpoint's weight codes and the graph annotation that the
 * integer executor and the quantized exporter share. */
#ifndef PDQ_PTQ_LOWER_QUANT_H
#define PDQ_PTQ_LOWER_QUANT_H

#include "pdq/graph.h"
#include "pdq/ptq.h"

typedef struct pdq_qweights pdq_qweights;

/* Opens dir/pdq_quant.json and dir/model.q.safetensors. */
pdq_code pdq_qweights_open(const char *dir, pdq_qweights **out, pdq_status *st);
void pdq_qweights_free(pdq_qweights *w);
/* Rows / channels whose stored scale could not reproduce the in-memory weight bit for bit. */
long pdq_qweights_inexact(const pdq_qweights *w);
/* Sets file dtypes and qparams on g (activations from p, weights from w); graph weights must be
 * the in-memory ones (dequantized, norms fake-quantized). */
pdq_code pdq_export_quantize_graph(pdq_graph *g, pdq_ptq *p, pdq_qweights *w, pdq_status *st);
/* Hybrid export: only the linear / embedding / lm_head weights get their codes and per-channel
 * qparams; activations and norms stay float32. */
pdq_code pdq_export_quantize_weights(pdq_graph *g, pdq_qweights *w, pdq_status *st);
/* Lowest bit width among the checkpoint's quantized weights (0: none). */
int pdq_qweights_min_bits(const pdq_qweights *w);
/* 1 when a weight has more than one group of columns (scales [rows, groups > 1]). */
int pdq_qweights_grouped(const pdq_qweights *w);

#endif
