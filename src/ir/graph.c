/* Graph construction: tensors, constants, ops with shape inference at build time. */
#include "pdq/graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/op_def.h"

const char *pdq_op_name(pdq_op_type t) {
    const pdq_op_def *d = pdq_op_def_of(t);
    return d ? d->name : "?";
}

const char *pdq_tdtype_name(pdq_tdtype t) {
    switch (t) {
    case PDQ_TF32: return "float32";
    case PDQ_TI32: return "int32";
    case PDQ_TI16: return "int16";
    case PDQ_TU8: return "uint8";
    case PDQ_TU4: return "uint4";
    case PDQ_TI64: return "int64";
    }
    return "?";
}

size_t pdq_tdtype_size(pdq_tdtype t) {
    switch (t) {
    case PDQ_TF32: case PDQ_TI32: return 4;
    case PDQ_TI16: return 2;
    case PDQ_TU8: case PDQ_TU4: return 1;
    case PDQ_TI64: return 8;
    }
    return 0;
}

size_t pdq_tensor_count(const pdq_tensor *t) {
    size_t n = 1;
    for (int i = 0; i < t->ndim; i++) n *= (size_t)t->shape[i];
    return n;
}

size_t pdq_tensor_bytes(const pdq_tensor *t) {
    size_t n = pdq_tensor_count(t);
    return t->dtype == PDQ_TU4 ? n / 2 + (n & 1) : n * pdq_tdtype_size(t->dtype);
}

pdq_code pdq_graph_hold(pdq_graph *g, void *obj, void (*release)(void *), pdq_status *st) {
    if (g->n_holds == g->cap_holds) {
        int cap = g->cap_holds ? 2 * g->cap_holds : 4;
        void *h = realloc(g->holds, sizeof *g->holds * (size_t)cap);
        if (!h) {
            release(obj);
            return pdq_fail(st, PDQ_ERR_NOMEM, "graph %s: out of memory", g->name);
        }
        g->holds = h;
        g->cap_holds = cap;
    }
    g->holds[g->n_holds].obj = obj;
    g->holds[g->n_holds++].release = release;
    return PDQ_OK;
}

pdq_code pdq_graph_new(const char *name, pdq_graph **out, pdq_status *st) {
    pdq_graph *g = calloc(1, sizeof *g);
    if (!g || !(g->name = strdup(name ? name : "graph"))) {
        free(g);
        return pdq_fail(st, PDQ_ERR_NOMEM, "graph %s: out of memory", name ? name : "");
    }
    *out = g;
    return PDQ_OK;
}

void pdq_graph_free(pdq_graph *g) {
    if (!g) return;
    for (int i = 0; i < g->n_tensors; i++) {
        pdq_tensor *t = &g->tensors[i];
        free(t->name);
        if (t->owned) free(t->data);
        if (t->q) { free(t->q->scale); free(t->q->zero_point); free(t->q); }
    }
    for (int i = 0; i < g->n_ops; i++) { free(g->ops[i].in); free(g->ops[i].out); }
    free(g->tensors);
    free(g->ops);
    free(g->inputs);
    free(g->outputs);
    free(g->name_index);
    for (int i = g->n_holds - 1; i >= 0; i--) g->holds[i].release(g->holds[i].obj);
    free(g->holds);
    free(g->name);
    free(g);
}

/* Tensor names are looked up once per operand while a graph is built or imported: a linear
 * scan made importing a 1.1B model's 8 files quadratic (seconds of strcmp). FNV-1a into an
 * open-addressing table kept at most half full. */
static uint32_t name_hash(const char *s) {
    uint32_t h = 2166136261u;
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

static void index_put(int *tab, int cap, const pdq_graph *g, int id) {
    uint32_t i = name_hash(g->tensors[id].name) & (uint32_t)(cap - 1);
    while (tab[i] >= 0) i = (i + 1) & (uint32_t)(cap - 1);
    tab[i] = id;
}

/* Room for one more name; 0 when out of memory (the index is then left as it was). */
static int index_reserve(pdq_graph *g) {
    if (2 * (g->n_tensors + 1) <= g->cap_index) return 1;
    int cap = g->cap_index ? 2 * g->cap_index : 64;
    int *tab = malloc(sizeof(int) * (size_t)cap);
    if (!tab) return 0;
    for (int i = 0; i < cap; i++) tab[i] = -1;
    for (int id = 0; id < g->n_tensors; id++) index_put(tab, cap, g, id);
    free(g->name_index);
    g->name_index = tab;
    g->cap_index = cap;
    return 1;
}

int pdq_graph_find(const pdq_graph *g, const char *name) {
    if (!g->cap_index) return -1;
    uint32_t i = name_hash(name) & (uint32_t)(g->cap_index - 1);
    for (int id; (id = g->name_index[i]) >= 0; i = (i + 1) & (uint32_t)(g->cap_index - 1))
        if (strcmp(g->tensors[id].name, name) == 0) return id;
    return -1;
}

static int grow(void **p, int *cap, int need, size_t elem) {
    if (need <= *cap) return 1;
    int nc = *cap ? *cap * 2 : 16;
    while (nc < need) nc *= 2;
    void *np = realloc(*p, (size_t)nc * elem);
    if (!np) return 0;
    *p = np;
    *cap = nc;
    return 1;
}

/* Adds a tensor record; -1 on error. */
static int add_tensor(pdq_graph *g, const char *name, pdq_tdtype dt, pdq_tkind kind, int ndim,
                      const int *shape, pdq_status *st) {
    if (!name || !*name) { pdq_fail(st, PDQ_ERR_ARG, "graph %s: empty tensor name", g->name); return -1; }
    if (ndim < 0 || ndim > PDQ_G_MAX_DIMS) {
        pdq_fail(st, PDQ_ERR_SHAPE, "graph %s: tensor %s has rank %d (max %d)", g->name, name, ndim,
                 PDQ_G_MAX_DIMS);
        return -1;
    }
    int64_t count = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] <= 0) {
            pdq_fail(st, PDQ_ERR_SHAPE, "graph %s: tensor %s dim %d is %d", g->name, name, i, shape[i]);
            return -1;
        }
        count *= shape[i]; /* <= PDQ_G_MAX_ELEMS * INT32_MAX: no overflow */
        if (count > PDQ_G_MAX_ELEMS) {
            pdq_fail(st, PDQ_ERR_LIMIT, "graph %s: tensor %s has more than %lld elements (limit per tensor)", g->name,
                     name, (long long)PDQ_G_MAX_ELEMS);
            return -1;
        }
    }
    if (pdq_graph_find(g, name) >= 0) {
        pdq_fail(st, PDQ_ERR_ARG, "graph %s: duplicate tensor name %s", g->name, name);
        return -1;
    }
    if (!index_reserve(g) || !grow((void **)&g->tensors, &g->cap_tensors, g->n_tensors + 1, sizeof(pdq_tensor))) {
        pdq_fail(st, PDQ_ERR_NOMEM, "graph %s: out of memory", g->name);
        return -1;
    }
    pdq_tensor *t = &g->tensors[g->n_tensors];
    memset(t, 0, sizeof *t);
    if (!(t->name = strdup(name))) {
        pdq_fail(st, PDQ_ERR_NOMEM, "graph %s: out of memory", g->name);
        return -1;
    }
    t->dtype = dt;
    t->kind = kind;
    t->ndim = ndim;
    for (int i = 0; i < ndim; i++) t->shape[i] = shape[i];
    index_put(g->name_index, g->cap_index, g, g->n_tensors);
    return g->n_tensors++;
}

static int push_id(int **arr, int *n, int *cap, int id) {
    if (!grow((void **)arr, cap, *n + 1, sizeof(int))) return 0;
    (*arr)[(*n)++] = id;
    return 1;
}

int pdq_graph_input(pdq_graph *g, const char *name, pdq_tdtype dt, int ndim, const int *shape,
                    pdq_status *st) {
    int id = add_tensor(g, name, dt, PDQ_TK_INPUT, ndim, shape, st);
    if (id < 0) return -1;
    if (!push_id(&g->inputs, &g->n_inputs, &g->cap_inputs, id)) {
        pdq_fail(st, PDQ_ERR_NOMEM, "graph %s: out of memory", g->name);
        return -1;
    }
    return id;
}

int pdq_graph_const(pdq_graph *g, const char *name, pdq_tdtype dt, int ndim, const int *shape,
                    const void *data, int copy, pdq_status *st) {
    if (!data) { pdq_fail(st, PDQ_ERR_ARG, "graph %s: constant %s has no data", g->name, name); return -1; }
    int id = add_tensor(g, name, dt, PDQ_TK_CONST, ndim, shape, st);
    if (id < 0) return -1;
    pdq_tensor *t = &g->tensors[id];
    if (copy) {
        size_t nb = pdq_tensor_bytes(t);
        void *p = malloc(nb ? nb : 1);
        if (!p) { pdq_fail(st, PDQ_ERR_NOMEM, "graph %s: out of memory for %s", g->name, name); return -1; }
        memcpy(p, data, nb);
        t->data = p;
        t->owned = 1;
    } else {
        t->data = (void *)data; /* borrowed: never written through */
        t->owned = 0;
    }
    return id;
}

int pdq_graph_const_owned(pdq_graph *g, const char *name, pdq_tdtype dt, int ndim,
                          const int *shape, void *data, pdq_status *st) {
    int id = pdq_graph_const(g, name, dt, ndim, shape, data, 0, st);
    if (id < 0) { free(data); return -1; }
    g->tensors[id].owned = 1;
    return id;
}

int pdq_graph_const_i32(pdq_graph *g, const char *name, int n, const int32_t *v, pdq_status *st) {
    int shape[1] = {n};
    return pdq_graph_const(g, name, PDQ_TI32, 1, shape, v, 1, st);
}

pdq_code pdq_graph_mark_output(pdq_graph *g, int tid, pdq_status *st) {
    if (tid < 0 || tid >= g->n_tensors || g->tensors[tid].kind != PDQ_TK_INTER)
        return pdq_fail(st, PDQ_ERR_ARG, "graph %s: tensor %d cannot be an output", g->name, tid);
    g->tensors[tid].kind = PDQ_TK_OUTPUT;
    if (!push_id(&g->outputs, &g->n_outputs, &g->cap_outputs, tid))
        return pdq_fail(st, PDQ_ERR_NOMEM, "graph %s: out of memory", g->name);
    return PDQ_OK;
}

int pdq_graph_op(pdq_graph *g, pdq_op_type type, const int *in, int n_in, const pdq_op *opt,
                 const char *out_name, pdq_status *st) {
    pdq_op op;
    memset(&op, 0, sizeof op);
    const pdq_op_def *d = pdq_op_def_of(type);
    if (opt) op = *opt;
    else if (d && d->opt_default) d->opt_default(&op); /* the rest zero: axes 0, no transposes */
    op.type = type;
    op.n_in = n_in;
    op.n_out = 1;
    op.in = (int *)in; /* borrowed for inference */
    int ndim, shape[PDQ_G_MAX_DIMS];
    if (pdq_op_infer(g, &op, &ndim, shape, st) != PDQ_OK) {
        pdq_wrap(st, "graph %s: op %s -> %s", g->name, pdq_op_name(type), out_name);
        return -1;
    }
    pdq_tdtype dt = g->tensors[in[0]].dtype;
    int oid = add_tensor(g, out_name, dt, PDQ_TK_INTER, ndim, shape, st);
    if (oid < 0) return -1;
    op.in = malloc((size_t)n_in * sizeof(int));
    op.out = malloc(sizeof(int));
    if (!op.in || !op.out ||
        !grow((void **)&g->ops, &g->cap_ops, g->n_ops + 1, sizeof(pdq_op))) {
        free(op.in);
        free(op.out);
        pdq_fail(st, PDQ_ERR_NOMEM, "graph %s: out of memory", g->name);
        return -1;
    }
    memcpy(op.in, in, (size_t)n_in * sizeof(int));
    op.out[0] = oid;
    g->ops[g->n_ops++] = op;
    return oid;
}

/* A tensor record as add_tensor would have made it (graphs may be edited after building),
 * plus qparams that index inside the tensor. */
static pdq_code check_record(const pdq_graph *g, const pdq_tensor *t, pdq_status *st) {
    if (t->ndim < 0 || t->ndim > PDQ_G_MAX_DIMS || t->dtype < PDQ_TF32 || t->dtype > PDQ_TI64)
        return pdq_fail(st, PDQ_ERR_FORMAT, "graph %s: tensor %s has rank %d, dtype %d", g->name, t->name, t->ndim,
                        (int)t->dtype);
    int64_t count = 1;
    for (int d = 0; d < t->ndim; d++) {
        if (t->shape[d] <= 0)
            return pdq_fail(st, PDQ_ERR_SHAPE, "graph %s: tensor %s dim %d is %d", g->name, t->name, d, t->shape[d]);
        count *= t->shape[d];
        if (count > PDQ_G_MAX_ELEMS)
            return pdq_fail(st, PDQ_ERR_LIMIT, "graph %s: tensor %s has more than %lld elements", g->name, t->name,
                            (long long)PDQ_G_MAX_ELEMS);
    }
    const pdq_qparams *q = t->q;
    if (q && q->block) {
        if (q->block < 0 || t->ndim != 2 || q->quantized_dim != 0 || !q->scale || !q->zero_point ||
            (int64_t)q->n != (int64_t)t->shape[0] * ((t->shape[1] + q->block - 1) / q->block))
            return pdq_fail(st, PDQ_ERR_FORMAT, "graph %s: tensor %s: %d scales do not match groups of %d columns",
                            g->name, t->name, q->n, q->block);
        return PDQ_OK;
    }
    if (q && (q->n < 1 || !q->scale || !q->zero_point ||
              (q->n > 1 && (q->quantized_dim < 0 || q->quantized_dim >= t->ndim || t->shape[q->quantized_dim] != q->n))))
        return pdq_fail(st, PDQ_ERR_FORMAT, "graph %s: tensor %s: %d scales do not match quantized_dim %d", g->name,
                        t->name, q->n, q->quantized_dim);
    return PDQ_OK;
}

/* Arithmetic reads real numbers: float32, or integer codes with qparams (a quantized file);
 * the int32 axes of MEAN are a shape operand, checked by inference. */
static pdq_code check_op_dtypes(const pdq_graph *g, int o, pdq_status *st) {
    const pdq_op *op = &g->ops[o];
    if (pdq_op_is_data_move(op->type)) return PDQ_OK; /* any dtype */
    const pdq_op_def *d = pdq_op_def_of(op->type);
    int n = pdq_op_n_values(d, op);
    for (int i = 0; i < n; i++) {
        const pdq_tensor *t = &g->tensors[op->in[i]];
        if (t->dtype != PDQ_TF32 && !t->q)
            return pdq_fail(st, PDQ_ERR_ARG, "graph %s: op %d (%s): operand %s is %s without quantization parameters (float32 or quantized needed)",
                            g->name, o, pdq_op_name(op->type), t->name, pdq_tdtype_name(t->dtype));
    }
    return PDQ_OK;
}

pdq_code pdq_graph_validate(const pdq_graph *g, pdq_status *st) {
    char *produced = calloc((size_t)g->n_tensors + 1, 1);
    if (!produced) return pdq_fail(st, PDQ_ERR_NOMEM, "graph %s: out of memory", g->name);
    pdq_code rc = PDQ_OK;
    for (int i = 0; i < g->n_tensors && rc == PDQ_OK; i++) {
        pdq_tkind k = g->tensors[i].kind;
        if (k == PDQ_TK_INPUT || k == PDQ_TK_CONST) produced[i] = 1;
        if (k == PDQ_TK_CONST && !g->tensors[i].data)
            rc = pdq_fail(st, PDQ_ERR_FORMAT, "graph %s: constant %s has no data", g->name,
                          g->tensors[i].name);
        if (rc == PDQ_OK) rc = check_record(g, &g->tensors[i], st);
    }
    for (int i = 0; i < g->n_inputs && rc == PDQ_OK; i++)
        if (g->inputs[i] < 0 || g->inputs[i] >= g->n_tensors || g->tensors[g->inputs[i]].kind != PDQ_TK_INPUT)
            rc = pdq_fail(st, PDQ_ERR_FORMAT, "graph %s: input %d is not an input tensor", g->name, i);
    for (int o = 0; o < g->n_ops && rc == PDQ_OK; o++) {
        const pdq_op *op = &g->ops[o];
        for (int i = 0; i < op->n_in && rc == PDQ_OK; i++) {
            int t = op->in[i];
            if (t < 0 || t >= g->n_tensors || !produced[t])
                rc = pdq_fail(st, PDQ_ERR_FORMAT, "graph %s: op %d (%s) input %d not produced before use",
                              g->name, o, pdq_op_name(op->type), i);
        }
        if (rc != PDQ_OK) break;
        int nd, sh[PDQ_G_MAX_DIMS];
        rc = pdq_op_infer(g, op, &nd, sh, st);
        if (rc != PDQ_OK) { pdq_wrap(st, "graph %s: op %d (%s)", g->name, o, pdq_op_name(op->type)); break; }
        if ((rc = check_op_dtypes(g, o, st)) != PDQ_OK) break;
        if (op->n_out != 1 || op->out[0] < 0 || op->out[0] >= g->n_tensors) {
            rc = pdq_fail(st, PDQ_ERR_FORMAT, "graph %s: op %d has bad outputs", g->name, o);
            break;
        }
        const pdq_tensor *t = &g->tensors[op->out[0]];
        int same = t->ndim == nd;
        for (int d = 0; same && d < nd; d++) same = t->shape[d] == sh[d];
        if (!same || produced[op->out[0]]) {
            rc = pdq_fail(st, PDQ_ERR_SHAPE, "graph %s: op %d (%s) output %s: shape mismatch or produced twice",
                          g->name, o, pdq_op_name(op->type), t->name);
            break;
        }
        produced[op->out[0]] = 1;
    }
    for (int i = 0; i < g->n_outputs && rc == PDQ_OK; i++)
        if (g->outputs[i] < 0 || g->outputs[i] >= g->n_tensors || !produced[g->outputs[i]])
            rc = pdq_fail(st, PDQ_ERR_FORMAT, "graph %s: output %d is never produced", g->name, i);
    free(produced);
    return rc;
}

static void shape_str(const pdq_tensor *t, char *buf, size_t n) {
    size_t k = (size_t)snprintf(buf, n, "(");
    for (int i = 0; i < t->ndim && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, "%s%d", i ? "," : "", t->shape[i]);
    if (k < n) snprintf(buf + k, n - k, ")");
}

void pdq_graph_dump(const pdq_graph *g, void *file) {
    FILE *f = file;
    char sb[96];
    fprintf(f, "graph %s: %d tensors, %d ops\n", g->name, g->n_tensors, g->n_ops);
    for (int i = 0; i < g->n_inputs; i++) {
        shape_str(&g->tensors[g->inputs[i]], sb, sizeof sb);
        fprintf(f, "  input  %s %s\n", g->tensors[g->inputs[i]].name, sb);
    }
    for (int o = 0; o < g->n_ops; o++) {
        const pdq_op *op = &g->ops[o];
        shape_str(&g->tensors[op->out[0]], sb, sizeof sb);
        fprintf(f, "  %-15s %s %s <-", pdq_op_name(op->type), g->tensors[op->out[0]].name, sb);
        for (int i = 0; i < op->n_in; i++) fprintf(f, " %s", g->tensors[op->in[i]].name);
        fprintf(f, "\n");
    }
    for (int i = 0; i < g->n_outputs; i++) {
        shape_str(&g->tensors[g->outputs[i]], sb, sizeof sb);
        fprintf(f, "  output %s %s\n", g->tensors[g->outputs[i]].name, sb);
    }
}
