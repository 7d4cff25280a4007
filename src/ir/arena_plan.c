/* Liveness arena plan (see arena_plan.h): blocks kept sorted by offset, first fit. */
#include "arena_plan.h"

#include <stdlib.h>
#include <string.h>

typedef struct { size_t off, size; } block;

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
    return (b + PDQ_ARENA_ALIGN - 1) / PDQ_ARENA_ALIGN * PDQ_ARENA_ALIGN;
}

pdq_code pdq_arena_plan_steps(const pdq_graph *g, int alias_reshape, const int *order, const int *step, size_t *offset,
                              size_t *bytes, pdq_status *st) {
    int n = g->n_tensors, n_ops = g->n_ops;
    int *last = malloc(sizeof(int) * (size_t)(n ? n : 1));       /* step of the last reader */
    int *lastpos = malloc(sizeof(int) * (size_t)(n ? n : 1));    /* its position in order */
    int *rel = malloc(sizeof(int) * (size_t)(n ? n : 1));        /* blocks freed at the step's end */
    block *live = malloc(sizeof(block) * (size_t)(n + 1));
    if (!last || !lastpos || !rel || !live) {
        free(last);
        free(lastpos);
        free(rel);
        free(live);
        return pdq_fail(st, PDQ_ERR_NOMEM, "graph %s: out of memory planning the arena", g->name);
    }
#define OP_AT(p) (order ? order[p] : (p))
#define STEP_OF(o) (step ? step[o] : (o))
    for (int t = 0; t < n; t++) last[t] = lastpos[t] = -1;
    for (int p = 0; p < n_ops; p++) {
        const pdq_op *op = &g->ops[OP_AT(p)];
        for (int i = 0; i < op->n_in; i++) {
            last[op->in[i]] = STEP_OF(OP_AT(p));
            lastpos[op->in[i]] = p;
        }
    }
    int n_live = 0;
    size_t high = 0;
    for (int t = 0; t < n; t++) {
        pdq_tkind k = g->tensors[t].kind;
        if (k == PDQ_TK_INPUT || k == PDQ_TK_OUTPUT) offset[t] = place(live, &n_live, tensor_bytes(&g->tensors[t]), &high);
    }
    for (int p0 = 0; p0 < n_ops;) {
        int s = STEP_OF(OP_AT(p0)), p1 = p0, n_rel = 0;
        while (p1 < n_ops && STEP_OF(OP_AT(p1)) == s) p1++;
        /* place every output of the step first: its ops run together */
        for (int p = p0; p < p1; p++) {
            const pdq_op *op = &g->ops[OP_AT(p)];
            /* same dtype only: a RESHAPE that converts (an imported QUANTIZE/DEQUANTIZE) may widen */
            if (alias_reshape && op->type == PDQ_OP_RESHAPE && g->tensors[op->in[0]].kind == PDQ_TK_INTER &&
                g->tensors[op->out[0]].kind == PDQ_TK_INTER && lastpos[op->in[0]] == p &&
                g->tensors[op->in[0]].dtype == g->tensors[op->out[0]].dtype) {
                offset[op->out[0]] = offset[op->in[0]];
                last[op->in[0]] = -2;
                if (last[op->out[0]] == -1) rel[n_rel++] = op->out[0];
                continue;
            }
            for (int j = 0; j < op->n_out; j++) {
                int t = op->out[j];
                if (g->tensors[t].kind != PDQ_TK_INTER) continue;
                offset[t] = place(live, &n_live, tensor_bytes(&g->tensors[t]), &high);
                if (last[t] == -1) rel[n_rel++] = t; /* nobody reads it */
            }
        }
        /* then free intermediates whose last reader is in this step (once, even if read twice) */
        for (int p = p0; p < p1; p++) {
            const pdq_op *op = &g->ops[OP_AT(p)];
            for (int i = 0; i < op->n_in; i++) {
                int t = op->in[i];
                if (g->tensors[t].kind == PDQ_TK_INTER && last[t] == s) {
                    rel[n_rel++] = t;
                    last[t] = -2;
                }
            }
        }
        for (int r = 0; r < n_rel; r++) release(live, &n_live, offset[rel[r]]);
        p0 = p1;
    }
#undef OP_AT
#undef STEP_OF
    free(last);
    free(lastpos);
    free(rel);
    free(live);
    *bytes = high ? high : PDQ_ARENA_ALIGN;
    return PDQ_OK;
}

pdq_code pdq_arena_plan(const pdq_graph *g, int alias_reshape, size_t *offset, size_t *bytes, pdq_status *st) {
    return pdq_arena_plan_steps(g, alias_reshape, NULL, NULL, offset, bytes, st);
}
