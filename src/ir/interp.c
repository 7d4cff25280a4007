/* Float32 graph interpreter: ops run in order; intermediates share one arena planned by
 * liveness (first fit), graph inputs/outputs have their own slots unless bound to caller memory. */
#include <stdlib.h>
#include <string.h>

#include "arena_plan.h"
#include "layout.h"
#include "ops/op_def.h"

struct pdq_interp {
    const pdq_graph *g;
    size_t *offset;     /* [n_tensors] arena offset of non-constant tensors */
    void **bound;       /* [n_tensors] caller memory, or NULL */
    void **ptrs;        /* [n_tensors] resolved at run */
    size_t arena_bytes;
    void *own_arena;
    void *shared_arena;
    pdq_edge_hook hook;
    void *hook_ctx;
};


/* The float interpreter runs float32 values: an op that computes (not a layout op) takes float32
 * operands, its int32 shape parameters aside. */
static pdq_code check_float(const pdq_graph *g, pdq_status *st) {
    for (int o = 0; o < g->n_ops; o++) {
        const pdq_op *op = &g->ops[o];
        const pdq_op_def *d = pdq_op_def_of(op->type);
        if (d->kind == PDQ_OPK_DATA_MOVE) continue;
        int n = pdq_op_n_values(d, op);
        for (int i = 0; i < n; i++)
            if (g->tensors[op->in[i]].dtype != PDQ_TF32)
                return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "graph %s: float interpreter: %s input %s is %s", g->name,
                                pdq_op_name(op->type), g->tensors[op->in[i]].name,
                                pdq_tdtype_name(g->tensors[op->in[i]].dtype));
    }
    return PDQ_OK;
}

pdq_code pdq_interp_create(const pdq_graph *g, pdq_interp **out, pdq_status *st) {
    pdq_code rc = pdq_graph_validate(g, st);
    if (rc == PDQ_OK) rc = check_float(g, st);
    if (rc != PDQ_OK) return rc;
    int n = g->n_tensors;
    pdq_interp *ip = calloc(1, sizeof *ip);
    if (ip) {
        ip->offset = calloc((size_t)n + 1, sizeof(size_t));
        ip->bound = calloc((size_t)n + 1, sizeof(void *));
        ip->ptrs = calloc((size_t)n + 1, sizeof(void *));
    }
    if (!ip || !ip->offset || !ip->bound || !ip->ptrs) {
        pdq_interp_free(ip);
        return pdq_fail(st, PDQ_ERR_NOMEM, "graph %s: out of memory for the interpreter", g->name);
    }
    ip->g = g;
    size_t high;
    if ((rc = pdq_arena_plan(g, 0, ip->offset, &high, st)) != PDQ_OK) {
        pdq_interp_free(ip);
        return rc;
    }
    /* first fit never places past the sum of the sizes, each <= 16 GiB, so high cannot wrap */
    if (high > PDQ_G_MAX_ARENA_BYTES) {
        pdq_interp_free(ip);
        return pdq_fail(st, PDQ_ERR_LIMIT, "graph %s: the interpreter needs an arena of %zu bytes (limit %llu)", g->name,
                        high, (unsigned long long)PDQ_G_MAX_ARENA_BYTES);
    }
    ip->arena_bytes = high;
    *out = ip;
    return PDQ_OK;
}

void pdq_interp_free(pdq_interp *ip) {
    if (!ip) return;
    free(ip->offset);
    free(ip->bound);
    free(ip->ptrs);
    free(ip->own_arena);
    free(ip);
}

size_t pdq_interp_arena_bytes(const pdq_interp *ip) { return ip->arena_bytes; }

void pdq_interp_set_arena(pdq_interp *ip, void *mem) { ip->shared_arena = mem; }

pdq_code pdq_interp_bind(pdq_interp *ip, int tid, void *mem, pdq_status *st) {
    if (tid < 0 || tid >= ip->g->n_tensors)
        return pdq_fail(st, PDQ_ERR_ARG, "graph %s: bind of tensor %d", ip->g->name, tid);
    pdq_tkind k = ip->g->tensors[tid].kind;
    if (k != PDQ_TK_INPUT && k != PDQ_TK_OUTPUT)
        return pdq_fail(st, PDQ_ERR_ARG, "graph %s: only inputs/outputs can be bound (%s)", ip->g->name,
                        ip->g->tensors[tid].name);
    ip->bound[tid] = mem;
    return PDQ_OK;
}

static char *arena(pdq_interp *ip) {
    if (ip->shared_arena) return ip->shared_arena;
    if (!ip->own_arena) ip->own_arena = aligned_alloc(PDQ_ARENA_ALIGN, ip->arena_bytes);
    return ip->own_arena;
}

void *pdq_interp_data(pdq_interp *ip, int tid) {
    if (tid < 0 || tid >= ip->g->n_tensors) return NULL;
    const pdq_tensor *t = &ip->g->tensors[tid];
    if (t->kind == PDQ_TK_CONST) return t->data;
    if (ip->bound[tid]) return ip->bound[tid];
    char *a = arena(ip);
    return a ? a + ip->offset[tid] : NULL;
}

void pdq_interp_set_hook(pdq_interp *ip, pdq_edge_hook hook, void *ctx) {
    ip->hook = hook;
    ip->hook_ctx = ctx;
}

pdq_code pdq_interp_run(pdq_interp *ip, pdq_status *st) {
    const pdq_graph *g = ip->g;
    if (!arena(ip)) return pdq_fail(st, PDQ_ERR_NOMEM, "graph %s: arena of %zu bytes", g->name, ip->arena_bytes);
    for (int t = 0; t < g->n_tensors; t++) ip->ptrs[t] = pdq_interp_data(ip, t);
    /* Graph inputs reach the hook first (op_index -1), so fake quantization covers them too. */
    if (ip->hook)
        for (int i = 0; i < g->n_inputs; i++) {
            int t = g->inputs[i];
            if (g->tensors[t].dtype != PDQ_TF32) continue;
            pdq_code rc = ip->hook(ip->hook_ctx, g, -1, t, ip->ptrs[t], st);
            if (rc != PDQ_OK) return rc;
        }
    for (int o = 0; o < g->n_ops; o++) {
        const pdq_op *op = &g->ops[o];
        const pdq_op_def *d = pdq_op_def_of(op->type);
        pdq_code rc = d ? d->f32(g, op, ip->ptrs, st) : pdq_fail(st, PDQ_ERR_UNSUPPORTED, "op type %d", (int)op->type);
        if (rc != PDQ_OK) return pdq_wrap(st, "graph %s op %d (%s)", g->name, o, pdq_op_name(op->type));
        if (ip->hook)
            for (int j = 0; j < op->n_out; j++) {
                int t = op->out[j];
                if (g->tensors[t].dtype != PDQ_TF32) continue;
                rc = ip->hook(ip->hook_ctx, g, o, t, ip->ptrs[t], st);
                if (rc != PDQ_OK) return rc;
            }
    }
    return PDQ_OK;
}
