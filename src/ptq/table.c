/* The activation table: edges of every static graph by name, grouped by union-find (layout ops,
 * concatenations, cross-graph aliases), one observer and grid per group. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "contract/rt_contract.h"
#include "ops/op_def.h"
#include "pdq/family.h"
#include "ptq_internal.h"

void pdq_ptq_opts_default(pdq_ptq_opts *o) {
    o->adtype = PDQ_ADT_INT16;
    o->observer = PDQ_OBS_MINMAX;
    o->ema_momentum = 0.9;
}

static uint64_t hash_str(const char *s) {
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

int pdq_ptq_edge_index(const pdq_ptq *p, const char *name) {
    if (!p->hcap) return -1;
    size_t i = hash_str(name) & (p->hcap - 1);
    while (p->hash[i] >= 0) {
        if (!strcmp(p->edges[p->hash[i]], name)) return p->hash[i];
        i = (i + 1) & (p->hcap - 1);
    }
    return -1;
}

static int rehash(pdq_ptq *p, size_t cap) {
    int *h = malloc(sizeof(int) * cap);
    if (!h) return -1;
    for (size_t i = 0; i < cap; i++) h[i] = -1;
    for (int e = 0; e < p->n_edges; e++) {
        size_t i = hash_str(p->edges[e]) & (cap - 1);
        while (h[i] >= 0) i = (i + 1) & (cap - 1);
        h[i] = e;
    }
    free(p->hash);
    p->hash = h;
    p->hcap = cap;
    return 0;
}

/* Index of the edge `name`, added when new; -1 when out of memory. */
int pdq_ptq_edge_add(pdq_ptq *p, const char *name) {
    int e = pdq_ptq_edge_index(p, name);
    if (e >= 0) return e;
    if (p->n_edges == p->cap_edges) {
        int cap = p->cap_edges ? 2 * p->cap_edges : 256;
        char **ne = realloc(p->edges, sizeof(char *) * (size_t)cap);
        if (ne) p->edges = ne;
        int *ng = realloc(p->edge_group, sizeof(int) * (size_t)cap);
        if (ng) p->edge_group = ng;
        if (!ne || !ng) return -1;
        p->cap_edges = cap;
    }
    if ((size_t)(p->n_edges + 1) * 2 > p->hcap && rehash(p, p->hcap ? 2 * p->hcap : 1024)) return -1;
    char *s = strdup(name);
    if (!s) return -1;
    e = p->n_edges++;
    p->edges[e] = s;
    p->edge_group[e] = e; /* union-find parent while building */
    size_t i = hash_str(name) & (p->hcap - 1);
    while (p->hash[i] >= 0) i = (i + 1) & (p->hcap - 1);
    p->hash[i] = e;
    return e;
}

static int find(int *par, int e) {
    while (par[e] != e) {
        par[e] = par[par[e]];
        e = par[e];
    }
    return e;
}

static void unite(int *par, int a, int b) {
    a = find(par, a);
    b = find(par, b);
    if (a == b) return;
    if (a < b) par[b] = a; /* the earliest edge names the group */
    else par[a] = b;
}

/* The op table's grid rule, GATHER's exception applied: a gather of activations moves data, of a
 * table (embedding) it does not. */
static pdq_grid_rule grid_rule(const pdq_graph *g, const pdq_op *op) {
    const pdq_op_def *d = pdq_op_def_of(op->type);
    if (!d || (op->type == PDQ_OP_GATHER && g->tensors[op->in[0]].kind == PDQ_TK_CONST)) return PDQ_GRID_OWN;
    return d->grid;
}

static int edge_tensor(const pdq_tensor *t) { return t->kind != PDQ_TK_CONST && t->dtype == PDQ_TF32; }

static pdq_code add_graph(pdq_ptq *p, const pdq_graph *g, pdq_status *st) {
    int *id = malloc(sizeof(int) * (size_t)(g->n_tensors ? g->n_tensors : 1));
    if (!id) return pdq_fail(st, PDQ_ERR_NOMEM, "ptq: edges of %s", g->name);
    for (int t = 0; t < g->n_tensors; t++) {
        id[t] = -1;
        if (!edge_tensor(&g->tensors[t])) continue;
        if ((id[t] = pdq_ptq_edge_add(p, g->tensors[t].name)) < 0) {
            free(id);
            return pdq_fail(st, PDQ_ERR_NOMEM, "ptq: edge table");
        }
    }
    for (int o = 0; o < g->n_ops; o++) {
        const pdq_op *op = &g->ops[o];
        int out = id[op->out[0]];
        if (out < 0) continue;
        pdq_grid_rule rule = grid_rule(g, op);
        int shared = rule == PDQ_GRID_OF_ALL ? op->n_in : rule == PDQ_GRID_OF_DATA ? 1 : 0;
        for (int i = 0; i < shared; i++)
            if (id[op->in[i]] >= 0) unite(p->edge_group, out, id[op->in[i]]);
    }
    free(id);
    return PDQ_OK;
}

static pdq_code alias(pdq_ptq *p, const char *a, const char *b, pdq_status *st) {
    int ea = pdq_ptq_edge_index(p, a), eb = pdq_ptq_edge_index(p, b);
    if (ea < 0 || eb < 0)
        return pdq_fail(st, PDQ_ERR_ARG, "ptq: graph edge %s not found", ea < 0 ? a : b);
    unite(p->edge_group, ea, eb);
    return PDQ_OK;
}

static pdq_code build_graphs(pdq_ptq *p, const pdq_model *m, pdq_status *st) {
    pdq_graph *g = NULL;
    pdq_code rc = pdq_build_embed(m, 1, 1, &g, st);
    if (rc == PDQ_OK) rc = add_graph(p, g, st);
    pdq_graph_free(g);
    for (int l = 0; l < m->cfg.n_layers && rc == PDQ_OK; l++)
        for (int mode = 0; mode < 2 && rc == PDQ_OK; mode++) {
            g = NULL;
            rc = pdq_build_layer(m, l, NULL, mode ? PDQ_MODE_APPEND : PDQ_MODE_PREFILL, 1, p->max_seq, 1,
                                 &p->so, &g, st);
            if (rc == PDQ_OK) rc = add_graph(p, g, st);
            pdq_graph_free(g);
        }
    g = NULL;
    if (rc == PDQ_OK) rc = pdq_build_head(m, 1, 1, &g, st);
    if (rc == PDQ_OK) rc = add_graph(p, g, st);
    pdq_graph_free(g);
    return rc;
}

/* The family's module holding layer l's o_proj (its attention: "model.layers.3.self_attn"). */
static void attn_module(const pdq_config *c, int l, char *buf, size_t cap) {
    pdq_linear_module(c, l, PDQ_LIN_O, buf, cap);
    char *d = strrchr(buf, '.');
    if (d) *d = '\0';
}

/* Runtime-level connections between graphs: hidden in/out, the KV cache, named as the graph
 * builders name them from the family's table (src/static/build_layer.c). */
static pdq_code add_aliases(pdq_ptq *p, const pdq_config *c, pdq_status *st) {
    char a[320], b[320], pre[160], prev[160], mod[160];
    pdq_code rc = PDQ_OK;
    for (int l = 0; l < c->n_layers && rc == PDQ_OK; l++) {
        pdq_family_layer_prefix(c, l, pre, sizeof pre);
        snprintf(a, sizeof a, "%shidden_states", pre);
        if (l == 0) {
            pdq_family_role_module(c, PDQ_ROLE_EMBED, -1, mod, sizeof mod);
            snprintf(b, sizeof b, "%s.out", mod);
        } else {
            snprintf(b, sizeof b, "%sout", prev);
        }
        rc = alias(p, a, b, st);
        attn_module(c, l, mod, sizeof mod);
        snprintf(a, sizeof a, "%spast_key", pre);
        snprintf(b, sizeof b, "%s.new_k", mod);
        if (rc == PDQ_OK) rc = alias(p, a, b, st);
        snprintf(a, sizeof a, "%spast_value", pre);
        snprintf(b, sizeof b, "%s.new_v", mod);
        if (rc == PDQ_OK) rc = alias(p, a, b, st);
        memcpy(prev, pre, sizeof prev);
    }
    pdq_family_layer_prefix(c, c->n_layers - 1, pre, sizeof pre);
    snprintf(b, sizeof b, "%sout", pre);
    pdq_family_role_module(c, PDQ_ROLE_FINAL_NORM, -1, mod, sizeof mod);
    snprintf(a, sizeof a, "%s.input", mod);
    if (rc == PDQ_OK) rc = alias(p, a, b, st);
    return rc;
}

/* Fixed ranges: the mask holds 0 and the fill value; cos/sin cover every position's table (the
 * rotary dims' width: partial RoPE's tables are narrower than a head). */
static pdq_code fixed_ranges(pdq_ptq *p, const pdq_model *m, pdq_status *st) {
    int S = p->max_seq, hd = pdq_cfg_rotary_dim(&m->cfg), local = 0;
    for (int l = 0; l < m->cfg.n_layers; l++) local |= pdq_ctr_rope_local(&m->cfg, l);
    size_t n = (size_t)S * hd, nt = local ? 4 : 2;
    float *c = malloc(sizeof(float) * n * nt);
    int32_t *pos = malloc(sizeof(int32_t) * (size_t)S);
    if (!c || !pos) { free(c); free(pos); return pdq_fail(st, PDQ_ERR_NOMEM, "ptq: rope tables"); }
    for (int i = 0; i < S; i++) pos[i] = i;
    /* both tables' values (the local one's too when sliding layers take it): one grid serves
     * every layer's cos / sin, as the whole-model files share them */
    pdq_ctr_rope tab = {c, c + n, local ? c + 2 * n : NULL, local ? c + 3 * n : NULL};
    pdq_ctr_rope_tables(m, S, pos, p->so.rope == PDQ_RT_ROPE_PRE_NEGATED_SIN, &tab);
    double cmin = 0, cmax = 0, smin = 0, smax = 0;
    for (size_t t = 0; t < nt; t += 2)
        for (size_t i = 0; i < n; i++) {
            double cv = c[t * n + i], sv = c[(t + 1) * n + i];
            cmin = fmin(cmin, cv); cmax = fmax(cmax, cv);
            smin = fmin(smin, sv); smax = fmax(smax, sv);
        }
    free(c); free(pos);
    char name[320], pre[160];
    for (int l = 0; l < m->cfg.n_layers; l++)
        for (int k = 0; k < 3; k++) {
            static const char *const what[3] = {"attention_mask", "cos", "sin"};
            pdq_family_layer_prefix(&m->cfg, l, pre, sizeof pre);
            snprintf(name, sizeof name, "%s%s", pre, what[k]);
            int e = pdq_ptq_edge_index(p, name);
            if (e < 0) return pdq_fail(st, PDQ_ERR_ARG, "ptq: graph input %s not found", name);
            pdq_ptq_group *G = &p->groups[p->edge_group[e]];
            G->fixed = 1;
            G->obs.have = 1;
            G->obs.min = k == 0 ? fmin(p->so.mask_fill, 0) : k == 1 ? cmin : smin;
            G->obs.max = k == 0 ? fmax(p->so.mask_fill, 0) : k == 1 ? cmax : smax;
        }
    return PDQ_OK;
}

/* Turns union-find parents into dense group indices and allocates the groups. */
static pdq_code make_groups(pdq_ptq *p, pdq_status *st) {
    int *dense = malloc(sizeof(int) * (size_t)p->n_edges);
    if (!dense) return pdq_fail(st, PDQ_ERR_NOMEM, "ptq: groups");
    int n = 0;
    for (int e = 0; e < p->n_edges; e++) dense[e] = -1;
    for (int e = 0; e < p->n_edges; e++) {
        int r = find(p->edge_group, e);
        if (dense[r] < 0) dense[r] = n++;
    }
    p->groups = calloc((size_t)n, sizeof(pdq_ptq_group));
    if (!p->groups) { free(dense); return pdq_fail(st, PDQ_ERR_NOMEM, "ptq: groups"); }
    p->n_groups = n;
    for (int e = 0; e < p->n_edges; e++) {
        int gi = dense[find(p->edge_group, e)];
        pdq_ptq_group *G = &p->groups[gi];
        if (!G->name) {
            G->name = p->edges[e];
            pdq_observer_init(&G->obs, p->o.observer, p->o.ema_momentum);
            pdq_agrid_from_range(PDQ_ADT_FLOAT, 0, 0, &G->grid);
        }
    }
    /* Roots first (find() still needs the parents), then every edge by its root. */
    for (int e = 0; e < p->n_edges; e++) dense[e] = dense[find(p->edge_group, e)];
    memcpy(p->edge_group, dense, sizeof(int) * (size_t)p->n_edges);
    free(dense);
    return PDQ_OK;
}

pdq_code pdq_ptq_create(const pdq_model *m, int max_seq, const pdq_static_opts *so,
                        const pdq_ptq_opts *po, pdq_ptq **out, pdq_status *st) {
    if (max_seq < 2) return pdq_fail(st, PDQ_ERR_ARG, "ptq: max_seq %d must be >= 2", max_seq);
    pdq_ptq *p = calloc(1, sizeof *p);
    if (!p) return pdq_fail(st, PDQ_ERR_NOMEM, "ptq");
    if (so) p->so = *so;
    else pdq_static_opts_default(&p->so);
    if (po) p->o = *po;
    else pdq_ptq_opts_default(&p->o);
    if (!(p->o.ema_momentum >= 0 && p->o.ema_momentum < 1)) {
        double mo = p->o.ema_momentum;
        free(p);
        return pdq_fail(st, PDQ_ERR_ARG, "ptq: EMA momentum %g must be in [0, 1)", mo);
    }
    p->max_seq = max_seq;
    p->n_layers = m->cfg.n_layers;
    p->vocab = m->cfg.vocab_size;
    pdq_family_layer_prefix(&m->cfg, 0, p->layer0, sizeof p->layer0);
    pdq_code rc = build_graphs(p, m, st);
    if (rc == PDQ_OK) rc = add_aliases(p, &m->cfg, st);
    if (rc == PDQ_OK) rc = make_groups(p, st);
    if (rc == PDQ_OK) rc = fixed_ranges(p, m, st);
    if (rc != PDQ_OK) { pdq_ptq_free(p); return rc; }
    *out = p;
    return PDQ_OK;
}

void pdq_ptq_forget_graphs(pdq_ptq *p) {
    for (int i = 0; i < p->n_gc; i++) free(p->gc[i].grp);
    p->n_gc = 0;
}

void pdq_ptq_free(pdq_ptq *p) {
    if (!p) return;
    pdq_ptq_forget_graphs(p);
    free(p->gc);
    for (int e = 0; e < p->n_edges; e++) free(p->edges[e]);
    free(p->edges);
    free(p->edge_group);
    free(p->hash);
    free(p->groups);
    free(p);
}

const pdq_ptq_opts *pdq_ptq_get_opts(const pdq_ptq *p) { return &p->o; }
const pdq_static_opts *pdq_ptq_static_opts(const pdq_ptq *p) { return &p->so; }
int pdq_ptq_max_seq(const pdq_ptq *p) { return p->max_seq; }
int pdq_ptq_n_groups(const pdq_ptq *p) { return p->n_groups; }
pdq_ptq_group *pdq_ptq_group_at(pdq_ptq *p, int i) { return i >= 0 && i < p->n_groups ? &p->groups[i] : NULL; }
int pdq_ptq_n_edges(const pdq_ptq *p) { return p->n_edges; }
const char *pdq_ptq_edge_name(const pdq_ptq *p, int i) { return i >= 0 && i < p->n_edges ? p->edges[i] : NULL; }
int pdq_ptq_edge_group(const pdq_ptq *p, int i) { return i >= 0 && i < p->n_edges ? p->edge_group[i] : -1; }

int pdq_ptq_find(const pdq_ptq *p, const char *edge) {
    int e = pdq_ptq_edge_index(p, edge);
    return e < 0 ? -1 : p->edge_group[e];
}

void pdq_ptq_step(pdq_ptq *p) {
    for (int i = 0; i < p->n_groups; i++)
        if (!p->groups[i].fixed) pdq_observer_step(&p->groups[i].obs);
}

pdq_code pdq_ptq_finalize(pdq_ptq *p, pdq_adtype dt, pdq_status *st) {
    for (int i = 0; i < p->n_groups; i++)
        if (!p->groups[i].obs.have)
            return pdq_fail(st, PDQ_ERR_ARG, "ptq: edge %s was never observed during calibration",
                            p->groups[i].name);
    for (int i = 0; i < p->n_groups; i++) {
        pdq_ptq_group *G = &p->groups[i];
        pdq_agrid_from_range(dt, G->obs.min, G->obs.max, &G->grid);
    }
    p->o.adtype = dt;
    return PDQ_OK;
}
