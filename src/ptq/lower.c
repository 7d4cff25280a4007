/* In-memory lowering: a copy of a float static graph annotated exactly as the quantized exporter
 * annotates it (pdq_export_quantize_graph), so the integer executor runs the same IR in memory
 * that it runs from an imported .q.circle file. */
#include <stdlib.h>

#include "ptq/lower_quant.h"
#include "pdq/lower.h"

pdq_code pdq_lower_graph(const pdq_graph *g, pdq_ptq *p, pdq_qweights *w, pdq_graph **out, pdq_status *st) {
    pdq_graph *q;
    pdq_code rc = pdq_graph_new(g->name, &q, st);
    if (rc != PDQ_OK) return rc;
    int *outs = malloc(sizeof(int) * (size_t)(g->n_outputs ? g->n_outputs : 1));
    if (!outs) { pdq_graph_free(q); return pdq_fail(st, PDQ_ERR_NOMEM, "lowering %s", g->name); }
    rc = pdq_graph_append(q, g, NULL, outs, st);
    for (int i = 0; i < g->n_outputs && rc == PDQ_OK; i++) rc = pdq_graph_mark_output(q, outs[i], st);
    free(outs);
    if (rc == PDQ_OK) rc = pdq_export_quantize_graph(q, p, w, st);
    if (rc == PDQ_OK) rc = pdq_graph_validate(q, st);
    if (rc != PDQ_OK) { pdq_graph_free(q); return pdq_wrap(st, "lowering %s for integer execution", g->name); }
    *out = q;
    return PDQ_OK;
}

struct pdq_lowering {
    pdq_ptq *p;
    pdq_qweights *w;
};

pdq_code pdq_lowering_open(const char *qdir, pdq_ptq *p, pdq_lowering **out, pdq_status *st) {
    pdq_lowering *l = calloc(1, sizeof *l);
    if (!l) return pdq_fail(st, PDQ_ERR_NOMEM, "integer mode");
    l->p = p;
    pdq_code rc = pdq_qweights_open(qdir, &l->w, st);
    if (rc != PDQ_OK) { free(l); return pdq_wrap(st, "integer mode needs the quantized checkpoint's codes"); }
    *out = l;
    return PDQ_OK;
}

void pdq_lowering_free(pdq_lowering *l) {
    if (!l) return;
    pdq_qweights_free(l->w);
    free(l);
}

pdq_code pdq_lowering_lower(void *ctx, const pdq_graph *g, pdq_graph **qg, pdq_status *st) {
    pdq_lowering *l = ctx;
    return pdq_lower_graph(g, l->p, l->w, qg, st);
}
