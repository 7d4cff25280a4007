/* The edge hook: observe, count clipping, or fake-quantize each edge with its group's grid. */
#include <stdlib.h>

#include "ptq_internal.h"

void pdq_ptq_set_mode(pdq_ptq *p, pdq_ptq_mode mode) { p->mode = mode; }
pdq_ptq_mode pdq_ptq_get_mode(const pdq_ptq *p) { return p->mode; }

void pdq_ptq_attach(pdq_ptq *p, pdq_rt *rt) {
    pdq_ptq_forget_graphs(p);
    pdq_rt_set_hook(rt, pdq_ptq_hook, p);
}

static const int *graph_map(pdq_ptq *p, const pdq_graph *g, pdq_status *st) {
    for (int i = 0; i < p->n_gc; i++)
        if (p->gc[i].g == g && p->gc[i].n == g->n_tensors) return p->gc[i].grp;
    if (p->n_gc == p->cap_gc) {
        int cap = p->cap_gc ? 2 * p->cap_gc : 16;
        ptq_gmap *n = realloc(p->gc, sizeof(ptq_gmap) * (size_t)cap);
        if (!n) { pdq_fail(st, PDQ_ERR_NOMEM, "ptq: graph map"); return NULL; }
        p->gc = n;
        p->cap_gc = cap;
    }
    int *grp = malloc(sizeof(int) * (size_t)(g->n_tensors ? g->n_tensors : 1));
    if (!grp) { pdq_fail(st, PDQ_ERR_NOMEM, "ptq: graph map"); return NULL; }
    for (int t = 0; t < g->n_tensors; t++) {
        const pdq_tensor *x = &g->tensors[t];
        if (x->kind == PDQ_TK_CONST || x->dtype != PDQ_TF32) { grp[t] = -1; continue; }
        int gi = pdq_ptq_find(p, x->name);
        grp[t] = gi >= 0 ? gi : -2;
    }
    p->gc[p->n_gc++] = (ptq_gmap){g, g->n_tensors, grp};
    return grp;
}

pdq_code pdq_ptq_hook(void *ctx, const pdq_graph *g, int op_index, int tensor_id, float *data,
                      pdq_status *st) {
    pdq_ptq *p = ctx;
    (void)op_index;
    if (p->mode == PDQ_PTQ_OFF) return PDQ_OK;
    const int *map = graph_map(p, g, st);
    if (!map) return st ? st->code : PDQ_ERR_NOMEM;
    int gi = map[tensor_id];
    if (gi == -1) return PDQ_OK;
    if (gi < 0)
        return pdq_fail(st, PDQ_ERR_ARG, "ptq: edge %s of graph %s has no activation parameters "
                        "(calibrated with other graph options?)", g->tensors[tensor_id].name, g->name);
    pdq_ptq_group *G = &p->groups[gi];
    size_t n = pdq_tensor_count(&g->tensors[tensor_id]);
    switch (p->mode) {
    case PDQ_PTQ_OBSERVE:
        if (!G->fixed) pdq_observer_see(&G->obs, data, n);
        break;
    case PDQ_PTQ_COUNT_CLIP:
        G->clipped += (double)pdq_agrid_clipped(&G->grid, data, n);
        G->counted += (double)n;
        break;
    case PDQ_PTQ_FAKEQUANT:
        pdq_agrid_fq(&G->grid, data, n);
        break;
    case PDQ_PTQ_OFF:
        break;
    }
    return PDQ_OK;
}
