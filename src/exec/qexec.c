/* Integer executor: tensor descriptors, one arena planned by liveness (as the float interpreter),
 * graph I/O (float values quantized on entry / dequantized on exit, or raw codes), op dispatch. */
#include <stdlib.h>
#include <string.h>

#include <stdatomic.h>

#include "ir/arena_plan.h"
#include "ops/op_def.h"
#include "ops/qx_kernel.h"
#include "pdq/qexec.h"

const char *pdq_exec_mode_name(pdq_exec_mode m) {
    switch (m) {
    case PDQ_EXEC_FAKE: return "fake";
    case PDQ_EXEC_FLOAT: return "float";
    case PDQ_EXEC_INT: return "int";
    }
    return "?";
}

int pdq_exec_mode_parse(const char *s) {
    if (!strcmp(s, "float")) return PDQ_EXEC_FLOAT;
    if (!strcmp(s, "fake") || !strcmp(s, "fake-quant")) return PDQ_EXEC_FAKE;
    if (!strcmp(s, "int") || !strcmp(s, "integer")) return PDQ_EXEC_INT;
    return -1;
}

void pdq_exec_opts_default(pdq_exec_opts *o) {
    memset(o, 0, sizeof *o);
    o->mode = PDQ_EXEC_FAKE;
}

/* Descriptor of a non-constant tensor: codes with per-tensor qparams, or plain values. */
static pdq_code describe(const pdq_graph *g, int tid, qx_t *q, pdq_status *st) {
    const pdq_tensor *t = &g->tensors[tid];
    memset(q, 0, sizeof *q);
    q->dt = t->dtype;
    q->s = 1.0;
    q->lo = INT32_MIN;
    q->hi = INT32_MAX;
    switch (t->dtype) {
    case PDQ_TI16: case PDQ_TU8:
        if (!t->q || t->q->n != 1)
            return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "graph %s: integer mode: tensor %s is %s without per-tensor qparams",
                            g->name, t->name, pdq_tdtype_name(t->dtype));
        q->quant = 1;
        q->s = (double)t->q->scale[0];
        q->zp = t->q->zero_point[0];
        q->lo = t->dtype == PDQ_TI16 ? -32768 : 0;
        q->hi = t->dtype == PDQ_TI16 ? 32767 : 255;
        if (!(q->s > 0) || q->zp < q->lo || q->zp > q->hi)
            return pdq_fail(st, PDQ_ERR_FORMAT, "graph %s: tensor %s: scale %g / zero point %lld", g->name, t->name,
                            q->s, (long long)q->zp);
        return PDQ_OK;
    case PDQ_TF32: case PDQ_TI32:
        return PDQ_OK;
    default:
        return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "graph %s: integer mode: activation %s of dtype %s", g->name, t->name,
                        pdq_tdtype_name(t->dtype));
    }
}

void pdq_qexec_free(pdq_qexec *x) {
    if (!x) return;
    if (x->prep)
        for (int o = 0; o < x->g->n_ops; o++) pdq_qx_prep_free(&x->prep[o]);
    free(x->prep);
    free(x->t);
    free(x->offset);
    free(x->bound);
    free(x->ptrs);
    free(x->arena);
    free(x->dscratch);
    free(x->order);
    free(x->level_at);
    free(x->small_at);
    free(x->small);
    free(x);
}

/* An op small enough to run whole on one thread next to others of its level: no FULLY_CONNECTED,
 * no BATCH_MATMUL of 8 rows or more (those go through dgemm and the executor's one scratch), at
 * most 8192 output elements. The decode graph's per-head attention ops are such. */
static int small_op(const pdq_graph *g, const pdq_op *op) {
    const pdq_tensor *o = &g->tensors[op->out[0]];
    if (op->type == PDQ_OP_FULLY_CONNECTED) return 0;
    if (op->type == PDQ_OP_BATCH_MATMUL && o->ndim >= 2 && o->shape[o->ndim - 2] >= 8) return 0;
    return pdq_tensor_count(o) <= 8192;
}

/* Levels: an op's is one more than the highest of the ops producing its inputs; ops of one level
 * never read each other's outputs, so they may run at the same time. */
static pdq_code schedule(pdq_qexec *x, int **level_out, pdq_status *st) {
    const pdq_graph *g = x->g;
    int n_ops = g->n_ops, n = g->n_tensors;
    /* levels are < n_ops: every per-level array fits n_ops + 1 slots */
    int *prod = malloc(sizeof(int) * (size_t)(n ? n : 1)), *level = malloc(sizeof(int) * (size_t)(n_ops + 1));
    int *fill = malloc(sizeof(int) * (size_t)(n_ops + 1)), *fill_small = malloc(sizeof(int) * (size_t)(n_ops + 1));
    x->order = malloc(sizeof(int) * (size_t)(n_ops + 1));
    x->level_at = malloc(sizeof(int) * (size_t)(n_ops + 2));
    x->small_at = malloc(sizeof(int) * (size_t)(n_ops + 2));
    x->small = malloc((size_t)n_ops + 1);
    if (!prod || !level || !fill || !fill_small || !x->order || !x->level_at || !x->small_at || !x->small) {
        free(prod);
        free(level);
        free(fill);
        free(fill_small);
        return pdq_fail(st, PDQ_ERR_NOMEM, "graph %s: schedule", g->name);
    }
    for (int t = 0; t < n; t++) prod[t] = -1;
    int top = 0;
    for (int o = 0; o < n_ops; o++) {
        const pdq_op *op = &g->ops[o];
        int l = 0;
        for (int i = 0; i < op->n_in; i++) {
            int p = prod[op->in[i]];
            if (p >= 0 && level[p] + 1 > l) l = level[p] + 1;
        }
        level[o] = l;
        top = l > top ? l : top;
        for (int j = 0; j < op->n_out; j++) prod[op->out[j]] = o;
        x->small[o] = (unsigned char)small_op(g, op);
    }
    /* counting sort by level; within a level the other ops first, then the small ones, each in
     * graph order (a level's small ops are then order[small_at[l] .. level_at[l + 1])) */
    int nl = n_ops ? top + 1 : 0;
    for (int l = 0; l <= nl; l++) x->level_at[l] = x->small_at[l] = 0;
    for (int o = 0; o < n_ops; o++) {
        x->level_at[level[o] + 1]++;
        if (!x->small[o]) x->small_at[level[o]]++; /* count of the others, for now */
    }
    for (int l = 0; l < nl; l++) {
        x->level_at[l + 1] += x->level_at[l];
        fill[l] = x->level_at[l];
        x->small_at[l] += x->level_at[l];
        fill_small[l] = x->small_at[l];
    }
    for (int o = 0; o < n_ops; o++) x->order[x->small[o] ? fill_small[level[o]]++ : fill[level[o]]++] = o;
    x->n_levels = nl;
    free(prod);
    free(fill);
    free(fill_small);
    *level_out = level;
    return PDQ_OK;
}

static pdq_code plan(pdq_qexec *x, pdq_status *st) {
    const pdq_graph *g = x->g;
    int *level = NULL;
    pdq_code rc = schedule(x, &level, st);
    /* RESHAPEs alias their input's block: the executor moves no bytes for them */
    if (rc == PDQ_OK) rc = pdq_arena_plan_steps(g, 1, x->order, level, x->offset, &x->arena_bytes, st);
    free(level);
    if (rc != PDQ_OK) return rc;
    x->arena = aligned_alloc(PDQ_ARENA_ALIGN, x->arena_bytes);
    if (!x->arena) return pdq_fail(st, PDQ_ERR_NOMEM, "graph %s: arena of %zu bytes", g->name, x->arena_bytes);
    memset(x->arena, 0, x->arena_bytes);
    return PDQ_OK;
}

pdq_code pdq_qexec_create(const pdq_graph *g, const pdq_exec_opts *o, pdq_qexec **out, pdq_status *st) {
    pdq_code rc = pdq_graph_validate(g, st);
    if (rc != PDQ_OK) return rc;
    pdq_qexec *x = calloc(1, sizeof *x);
    int n = g->n_tensors;
    if (x) {
        x->t = calloc((size_t)n + 1, sizeof(qx_t));
        x->offset = calloc((size_t)n + 1, sizeof(size_t));
        x->bound = calloc((size_t)n + 1, sizeof(void *));
        x->ptrs = calloc((size_t)n + 1, sizeof(void *));
        x->prep = calloc((size_t)g->n_ops + 1, sizeof(qx_prep));
    }
    if (!x || !x->t || !x->offset || !x->bound || !x->ptrs || !x->prep) {
        pdq_qexec_free(x);
        return pdq_fail(st, PDQ_ERR_NOMEM, "graph %s: integer executor", g->name);
    }
    x->g = g;
    pdq_exec_opts d;
    if (!o) pdq_exec_opts_default(&d);
    x->pool = o ? o->pool : d.pool;
    x->force_scalar = o ? o->force_scalar : d.force_scalar;
    x->no_avx512 = o ? o->no_avx512 : d.no_avx512;
    x->level = pdq_qx_traits_at(pdq_level_allowed(x->force_scalar, x->no_avx512, 0), &x->k);
    for (int t = 0; t < n && rc == PDQ_OK; t++)
        if (g->tensors[t].kind != PDQ_TK_CONST) rc = describe(g, t, &x->t[t], st);
    if (rc == PDQ_OK) rc = plan(x, st);
    for (int i = 0; i < g->n_ops && rc == PDQ_OK; i++) {
        const pdq_op_def *d = pdq_op_def_of(g->ops[i].type);
        rc = d && d->qx.prepare ? d->qx.prepare(x, i, st)
                                : pdq_fail(st, PDQ_ERR_UNSUPPORTED, "integer mode: no kernel for %s", pdq_op_name(g->ops[i].type));
        if (rc != PDQ_OK) rc = pdq_wrap(st, "graph %s op %d (%s)", g->name, i, pdq_op_name(g->ops[i].type));
    }
    if (rc != PDQ_OK) { pdq_qexec_free(x); return rc; }
    *out = x;
    return PDQ_OK;
}

pdq_code pdq_qexec_bind(pdq_qexec *x, int tid, void *mem, pdq_status *st) {
    if (tid < 0 || tid >= x->g->n_tensors)
        return pdq_fail(st, PDQ_ERR_ARG, "graph %s: bind of tensor %d", x->g->name, tid);
    pdq_tkind k = x->g->tensors[tid].kind;
    if (k != PDQ_TK_INPUT && k != PDQ_TK_OUTPUT)
        return pdq_fail(st, PDQ_ERR_ARG, "graph %s: only inputs/outputs can be bound (%s)", x->g->name,
                        x->g->tensors[tid].name);
    x->bound[tid] = mem;
    return PDQ_OK;
}

void *pdq_qexec_codes(pdq_qexec *x, int tid) {
    if (tid < 0 || tid >= x->g->n_tensors || x->g->tensors[tid].kind == PDQ_TK_CONST) return NULL;
    return (char *)x->arena + x->offset[tid];
}

int pdq_qexec_simd(const pdq_qexec *x) { return x->level == PDQ_LEVEL_AVX512_VNNI ? 2 : x->level != PDQ_LEVEL_SCALAR; }

/* One level's small ops, one whole op per task: task i runs the i-th small op of the level. */
typedef struct {
    pdq_qexec *x;
    int at;             /* position in order of the level's first small op */
    atomic_int lock;    /* taken by the first failure, whose status is kept */
    int failed;
    pdq_status st;
} level_ctx;

static void level_task(void *vc, int task, int thread) {
    (void)thread;
    level_ctx *c = vc;
    pdq_qexec *x = c->x;
    int o = x->order[c->at + task];
    pdq_status st = {0};
    if (pdq_op_def_of(x->g->ops[o].type)->qx.run(x, o, &st) != PDQ_OK && atomic_exchange(&c->lock, 1) == 0) {
        c->st = st;
        c->failed = o;
    }
}

pdq_code pdq_qexec_run(pdq_qexec *x, pdq_status *st) {
    const pdq_graph *g = x->g;
    for (int t = 0; t < g->n_tensors; t++)
        x->ptrs[t] = g->tensors[t].kind == PDQ_TK_CONST ? g->tensors[t].data : (char *)x->arena + x->offset[t];
    /* inputs: bound float values are quantized with the input's grid, raw data copied */
    for (int i = 0; i < g->n_inputs; i++) {
        int t = g->inputs[i];
        const void *src = x->bound[t];
        if (!src) continue;
        const qx_t *q = &x->t[t];
        size_t n = pdq_tensor_count(&g->tensors[t]);
        if (q->quant)
            for (size_t k = 0; k < n; k++) qx_st(q, x->ptrs[t], k, (double)((const float *)src)[k]);
        else
            memcpy(x->ptrs[t], src, n * pdq_tdtype_size(q->dt));
    }
    for (int l = 0; l < x->n_levels; l++) {
        int a = x->level_at[l], b = x->level_at[l + 1], sa = x->small_at[l];
        /* small ops together only where there are two or more and a pool */
        int n_small = x->pool && pdq_pool_threads(x->pool) > 1 && b - sa > 1 ? b - sa : 0;
        for (int p = a; p < b - n_small; p++) {
            int o = x->order[p];
            pdq_code rc = pdq_op_def_of(g->ops[o].type)->qx.run(x, o, st); /* prepared: it has one */
            if (rc != PDQ_OK) return pdq_wrap(st, "graph %s op %d (%s)", g->name, o, pdq_op_name(g->ops[o].type));
        }
        if (n_small) {
            level_ctx c = {.x = x, .at = b - n_small, .failed = -1};
            atomic_init(&c.lock, 0);
            x->in_level = 1;
            pdq_pool_run(x->pool, n_small, level_task, &c);
            x->in_level = 0;
            if (c.failed >= 0) {
                *st = c.st;
                return pdq_wrap(st, "graph %s op %d (%s)", g->name, c.failed, pdq_op_name(g->ops[c.failed].type));
            }
        }
    }
    for (int i = 0; i < g->n_outputs; i++) {
        int t = g->outputs[i];
        void *dst = x->bound[t];
        if (!dst) continue;
        const qx_t *q = &x->t[t];
        size_t n = pdq_tensor_count(&g->tensors[t]);
        if (q->quant)
            for (size_t k = 0; k < n; k++) ((float *)dst)[k] = (float)qx_ld(q, x->ptrs[t], k);
        else
            memcpy(dst, x->ptrs[t], n * pdq_tdtype_size(q->dt));
    }
    return PDQ_OK;
}
