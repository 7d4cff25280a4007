/* Private state of the activation table, shared by the ptq files. */
#ifndef PDQ_PTQ_INTERNAL_H
#define PDQ_PTQ_INTERNAL_H

#include "pdq/ptq.h"

/* Per-graph map tensor id -> group (-1: not an edge, -2: an edge missing from the table). */
typedef struct {
    const pdq_graph *g;
    int n;
    int *grp;
} ptq_gmap;

struct pdq_ptq {
    pdq_ptq_opts o;
    pdq_static_opts so;
    int max_seq, n_layers, vocab;
    char layer0[128];      /* the family's layer-0 prefix ("model.layers.0."): whole-model inputs' grids */
    int calib_samples, calib_decode_steps; /* 0 until calibrated (or as loaded) */
    char **edges;          /* [n_edges] names */
    int *edge_group;       /* [n_edges] group index (union-find parents while building) */
    int n_edges, cap_edges;
    int *hash;             /* open addressing: edge index or -1 */
    size_t hcap;
    pdq_ptq_group *groups;
    int n_groups;
    pdq_ptq_mode mode;
    ptq_gmap *gc;
    int n_gc, cap_gc;
};

int pdq_ptq_edge_index(const pdq_ptq *p, const char *name);
int pdq_ptq_edge_add(pdq_ptq *p, const char *name);
void pdq_ptq_forget_graphs(pdq_ptq *p);

#endif
