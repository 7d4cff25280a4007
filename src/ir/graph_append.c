/* Graph composition: one graph's constants and ops copied into another (whole-model graphs from
 * embedding + layers + head, and lowering's copy of a float graph). */
#include <stdlib.h>
#include <string.h>

#include "pdq/graph.h"

static pdq_code copy_q(pdq_tensor *t, const pdq_qparams *q, pdq_status *st) {
    if (!q) return PDQ_OK;
    pdq_qparams *n = calloc(1, sizeof *n);
    if (n) {
        n->scale = malloc(sizeof(float) * (size_t)(q->n ? q->n : 1));
        n->zero_point = malloc(sizeof(int64_t) * (size_t)(q->n ? q->n : 1));
    }
    if (!n || !n->scale || !n->zero_point) {
        if (n) { free(n->scale); free(n->zero_point); free(n); }
        return pdq_fail(st, PDQ_ERR_NOMEM, "graph compose: qparams of %s", t->name);
    }
    n->n = q->n;
    n->quantized_dim = q->quantized_dim;
    n->block = q->block;
    memcpy(n->scale, q->scale, sizeof(float) * (size_t)q->n);
    memcpy(n->zero_point, q->zero_point, sizeof(int64_t) * (size_t)q->n);
    if (t->q) { free(t->q->scale); free(t->q->zero_point); free(t->q); }
    t->q = n;
    return PDQ_OK;
}

pdq_code pdq_graph_append(pdq_graph *dst, const pdq_graph *src, const int *map, int *outs, pdq_status *st) {
    int *ids = malloc(sizeof(int) * (size_t)(src->n_tensors ? src->n_tensors : 1));
    int *in = NULL;
    int max_in = 1;
    for (int o = 0; o < src->n_ops; o++)
        if (src->ops[o].n_in > max_in) max_in = src->ops[o].n_in;
    in = malloc(sizeof(int) * (size_t)max_in);
    if (!ids || !in) { free(ids); free(in); return pdq_fail(st, PDQ_ERR_NOMEM, "graph compose"); }
    pdq_code rc = PDQ_OK;
    for (int t = 0; t < src->n_tensors; t++) ids[t] = -1;
    for (int i = 0; i < src->n_inputs && rc == PDQ_OK; i++) {
        int t = src->inputs[i];
        const pdq_tensor *x = &src->tensors[t];
        if (map && map[i] >= 0) { ids[t] = map[i]; continue; }
        ids[t] = pdq_graph_input(dst, x->name, x->dtype, x->ndim, x->shape, st);
        if (ids[t] < 0) rc = st ? st->code : PDQ_ERR_ARG;
        else rc = copy_q(&dst->tensors[ids[t]], x->q, st);
    }
    /* Constants in src order, each just before the first op that reads it would be nicer for
     * readers of the file; tensor order does not change semantics, so they go first. */
    for (int t = 0; t < src->n_tensors && rc == PDQ_OK; t++) {
        const pdq_tensor *x = &src->tensors[t];
        if (x->kind != PDQ_TK_CONST) continue;
        ids[t] = pdq_graph_const(dst, x->name, x->dtype, x->ndim, x->shape, x->data, x->owned, st);
        if (ids[t] >= 0) dst->tensors[ids[t]].role = x->role;
        if (ids[t] < 0) rc = st ? st->code : PDQ_ERR_ARG;
        else rc = copy_q(&dst->tensors[ids[t]], x->q, st);
    }
    for (int o = 0; o < src->n_ops && rc == PDQ_OK; o++) {
        const pdq_op *op = &src->ops[o];
        for (int i = 0; i < op->n_in; i++) in[i] = ids[op->in[i]];
        const pdq_tensor *y = &src->tensors[op->out[0]];
        int id = pdq_graph_op(dst, op->type, in, op->n_in, op, y->name, st);
        if (id < 0) { rc = st ? st->code : PDQ_ERR_ARG; break; }
        dst->tensors[id].dtype = y->dtype;
        rc = copy_q(&dst->tensors[id], y->q, st);
        ids[op->out[0]] = id;
    }
    if (rc == PDQ_OK && outs)
        for (int i = 0; i < src->n_outputs; i++) outs[i] = ids[src->outputs[i]];
    free(ids);
    free(in);
    if (rc != PDQ_OK) return pdq_wrap(st, "appending graph %s to %s", src->name, dst->name);
    return PDQ_OK;
}
