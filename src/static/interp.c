/* Float32 graph interpreter: ops run in order; intermediates share one arena planned by
 * liveness (first fit), graph inputs/outputs have their own slots unless bound to caller memory. */
#include <stdlib.h>
#include <string.h>

#include "ops.h"

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

#define ALIGN 64

typedef struct { size_t off, size; } block;

/* First-fit placement among live blocks kept sorted by offset. */
static size_t place(block *live, int *n_live, size_t size, size_t *high) {
    size_t at = 0;
    int i = 0;
    for (; i < *n_live; i++) {
        if (live[i].off >= at + size) break;
        size_t end = live[i].off + live[i].size;
        if (end > at) at = end;
    }
    memmove(&live[i + 1], &live[i], sizeof(block) * (size_t)(*n_live - i));
    live[i].off = at;
    live[i].size = size;
    (*n_live)++;
    if (at + size > *high) *high = at + size;
    return at;
}

static void release(block *live, int *n_live, size_t off) {
    for (int i = 0; i < *n_live; i++)
        if (live[i].off == off) {
            memmove(&live[i], &live[i + 1], sizeof(block) * (size_t)(*n_live - i - 1));
            (*n_live)--;
            return;
        }
}

static size_t tensor_bytes(const pdq_tensor *t) {
    size_t b = pdq_tensor_count(t) * pdq_tdtype_size(t->dtype);
    return (b + ALIGN - 1) / ALIGN * ALIGN;
}

static int is_float_op(pdq_op_type t) {
    return !(t == PDQ_OP_RESHAPE || t == PDQ_OP_TRANSPOSE || t == PDQ_OP_CONCATENATION ||
             t == PDQ_OP_STRIDED_SLICE || t == PDQ_OP_SLICE || t == PDQ_OP_GATHER);
}

pdq_code pdq_interp_create(const pdq_graph *g, pdq_interp **out, pdq_status *st) {
    pdq_code rc = pdq_graph_validate(g, st);
    if (rc != PDQ_OK) return rc;
    for (int o = 0; o < g->n_ops; o++) {
        const pdq_op *op = &g->ops[o];
        if (is_float_op(op->type))
            for (int i = 0; i < op->n_in; i++)
                if (g->tensors[op->in[i]].dtype != PDQ_TF32 && !(op->type == PDQ_OP_MEAN && i == 1))
                    return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "graph %s: float interpreter: %s input %s is %s",
                                    g->name, pdq_op_name(op->type), g->tensors[op->in[i]].name,
                                    pdq_tdtype_name(g->tensors[op->in[i]].dtype));
        if (op->type == PDQ_OP_GATHER && g->tensors[op->in[1]].dtype != PDQ_TI32)
            return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "graph %s: GATHER indices must be int32", g->name);
    }
    int n = g->n_tensors;
    pdq_interp *ip = calloc(1, sizeof *ip);
    int *last = malloc(sizeof(int) * (size_t)(n ? n : 1));
    block *live = malloc(sizeof(block) * (size_t)(n + 1));
    if (ip) {
        ip->offset = calloc((size_t)n + 1, sizeof(size_t));
        ip->bound = calloc((size_t)n + 1, sizeof(void *));
        ip->ptrs = calloc((size_t)n + 1, sizeof(void *));
    }
    if (!ip || !last || !live || !ip->offset || !ip->bound || !ip->ptrs) {
        free(last);
        free(live);
        pdq_interp_free(ip);
        return pdq_fail(st, PDQ_ERR_NOMEM, "graph %s: out of memory for the interpreter", g->name);
    }
    ip->g = g;
    for (int t = 0; t < n; t++) last[t] = -1;
    for (int o = 0; o < g->n_ops; o++)
        for (int i = 0; i < g->ops[o].n_in; i++) last[g->ops[o].in[i]] = o;
    int n_live = 0;
    size_t high = 0;
    /* Inputs and outputs stay alive for the whole run (callers read/write them around it). */
    for (int t = 0; t < n; t++) {
        pdq_tkind k = g->tensors[t].kind;
        if (k == PDQ_TK_INPUT || k == PDQ_TK_OUTPUT)
            ip->offset[t] = place(live, &n_live, tensor_bytes(&g->tensors[t]), &high);
    }
    for (int o = 0; o < g->n_ops; o++) {
        const pdq_op *op = &g->ops[o];
        for (int j = 0; j < op->n_out; j++) {
            int t = op->out[j];
            if (g->tensors[t].kind == PDQ_TK_INTER)
                ip->offset[t] = place(live, &n_live, tensor_bytes(&g->tensors[t]), &high);
        }
        /* Free intermediates whose last reader is this op, and dead outputs of this op. */
        for (int i = 0; i < op->n_in; i++) {
            int t = op->in[i];
            if (g->tensors[t].kind == PDQ_TK_INTER && last[t] == o) {
                release(live, &n_live, ip->offset[t]);
                last[t] = -2; /* freed once even if read twice by this op */
            }
        }
        for (int j = 0; j < op->n_out; j++) {
            int t = op->out[j];
            if (g->tensors[t].kind == PDQ_TK_INTER && last[t] == -1) release(live, &n_live, ip->offset[t]);
        }
    }
    free(last);
    free(live);
    /* first fit never places past the sum of the sizes, each <= 16 GiB, so high cannot wrap */
    if (high > PDQ_G_MAX_ARENA_BYTES) {
        pdq_interp_free(ip);
        return pdq_fail(st, PDQ_ERR_LIMIT, "graph %s: the interpreter needs an arena of %zu bytes (limit %llu)", g->name,
                        high, (unsigned long long)PDQ_G_MAX_ARENA_BYTES);
    }
    ip->arena_bytes = high ? high : ALIGN;
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
    if (!ip->own_arena) ip->own_arena = aligned_alloc(ALIGN, ip->arena_bytes);
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
        pdq_code rc;
        switch (op->type) {
        case PDQ_OP_FULLY_CONNECTED: case PDQ_OP_BATCH_MATMUL:
            rc = pdq_k_linalg(g, op, ip->ptrs, st);
            break;
        case PDQ_OP_RESHAPE: case PDQ_OP_TRANSPOSE: case PDQ_OP_CONCATENATION:
        case PDQ_OP_STRIDED_SLICE: case PDQ_OP_SLICE: case PDQ_OP_GATHER:
            rc = pdq_k_shape(g, op, ip->ptrs, st);
            break;
        default:
            rc = pdq_k_elementwise(g, op, ip->ptrs, st);
            break;
        }
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
