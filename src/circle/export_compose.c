/* Whole-model graphs composed of embedding + layers + head (pdq_graph_append, ir/graph_append.c)
 * and structural graph comparison (the round-trip check). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "contract/rt_contract.h"
#include "ops/op_def.h"
#include "pdq/circle_export.h"

pdq_code pdq_build_whole(const pdq_model *m, pdq_graph_mode mode, int max_seq, const pdq_static_opts *o,
                         pdq_graph **out, pdq_status *st) {
    return pdq_build_whole_q(m, mode, max_seq, 1, o, out, st);
}

pdq_code pdq_build_whole_q(const pdq_model *m, pdq_graph_mode mode, int max_seq, int Q, const pdq_static_opts *o,
                           pdq_graph **out, pdq_status *st) {
    const pdq_config *c = &m->cfg;
    int decode = mode == PDQ_MODE_APPEND;
    if (decode && (Q < 1 || Q >= max_seq))
        return pdq_fail(st, PDQ_ERR_LIMIT, "whole-model graph: append bucket %d must be in [1, max_seq-1 = %d]", Q, max_seq - 1);
    int T = decode ? Q : max_seq, L = c->n_layers;
    pdq_graph *g = NULL, *part = NULL;
    char gname[64];
    if (decode && Q > 1) snprintf(gname, sizeof gname, "model_append_prefill_q%d", Q);
    else snprintf(gname, sizeof gname, "%s", decode ? "model_decode" : "model_prefill");
    pdq_code rc = pdq_graph_new(gname, &g, st);
    if (rc != PDQ_OK) return rc;
    int *kv = malloc(sizeof(int) * (size_t)(2 * L));
    if (!kv) { pdq_graph_free(g); return pdq_fail(st, PDQ_ERR_NOMEM, "whole-model graph"); }
    /* shared inputs first: ids, one mask per attention type, cos, sin, the local cos/sin (rt_contract.h's
     * pdq_ctr_whole_io; then the per-layer past K/V as the layers add them) */
    int ring = 0;
    for (int l = 0; l < L; l++)
        if (pdq_ctr_ring(c, max_seq, l)) ring = pdq_ctr_ring(c, max_seq, l);
    int local = 0;
    for (int l = 0; l < L; l++) local |= pdq_ctr_rope_local(c, l);
    pdq_ctr_whole_io io;
    pdq_ctr_whole_io_of(pdq_ctr_has_type(c, max_seq, 0), ring > 0, local, &io);
    int is[2] = {1, T}, ms[3] = {1, T, max_seq}, rs[3] = {1, T, decode ? ring + T : max_seq};
    int cs[3] = {1, T, pdq_cfg_rotary_dim(&m->cfg)};
    int ids = pdq_graph_input(g, "input_ids", PDQ_TI32, 2, is, st), mask = -1, rmask = -1;
    int ok = ids >= 0;
    if (ok && io.mask_full >= 0) ok = (mask = pdq_graph_input(g, "attention_mask", PDQ_TF32, 3, ms, st)) >= 0;
    if (ok && io.mask_ring >= 0) ok = (rmask = pdq_graph_input(g, "sliding_attention_mask", PDQ_TF32, 3, rs, st)) >= 0;
    int cos = !ok ? -1 : pdq_graph_input(g, "cos", PDQ_TF32, 3, cs, st);
    int sin = cos < 0 ? -1 : pdq_graph_input(g, "sin", PDQ_TF32, 3, cs, st);
    int cos_l = sin < 0 || io.cos_local < 0 ? -1 : pdq_graph_input(g, "cos_local", PDQ_TF32, 3, cs, st);
    int sin_l = cos_l < 0 ? -1 : pdq_graph_input(g, "sin_local", PDQ_TF32, 3, cs, st);
    if (sin < 0 || (io.cos_local >= 0 && sin_l < 0)) { rc = st ? st->code : PDQ_ERR_ARG; goto done; }
    int h;
    if ((rc = pdq_build_embed(m, 1, T, &part, st)) != PDQ_OK) goto done;
    int map_e[1] = {ids};
    if ((rc = pdq_graph_append(g, part, map_e, &h, st)) != PDQ_OK) goto done;
    pdq_graph_free(part);
    part = NULL;
    for (int l = 0; l < L; l++) {
        if ((rc = pdq_build_layer(m, l, NULL, mode, 1, max_seq, decode ? Q : 0, o, &part, st)) != PDQ_OK) goto done;
        int map[6], outs[3], lm = pdq_ctr_ring(c, max_seq, l) ? rmask : mask;
        int lc = pdq_ctr_rope_local(c, l) ? cos_l : cos, ls = pdq_ctr_rope_local(c, l) ? sin_l : sin;
        if (decode) {
            map[PDQ_AP_IN_HIDDEN] = h; map[PDQ_AP_IN_MASK] = lm; map[PDQ_AP_IN_PAST_K] = -1;
            map[PDQ_AP_IN_PAST_V] = -1; map[PDQ_AP_IN_COS] = lc; map[PDQ_AP_IN_SIN] = ls;
        } else {
            map[PDQ_PF_IN_HIDDEN] = h; map[PDQ_PF_IN_MASK] = lm; map[PDQ_PF_IN_COS] = lc; map[PDQ_PF_IN_SIN] = ls;
        }
        if ((rc = pdq_graph_append(g, part, map, outs, st)) != PDQ_OK) goto done;
        pdq_graph_free(part);
        part = NULL;
        h = outs[PDQ_L_OUT_HIDDEN];
        kv[2 * l] = outs[PDQ_L_OUT_K];
        kv[2 * l + 1] = outs[PDQ_L_OUT_V];
    }
    if ((rc = pdq_build_head(m, 1, T, &part, st)) != PDQ_OK) goto done;
    int logits;
    if ((rc = pdq_graph_append(g, part, &h, &logits, st)) != PDQ_OK) goto done;
    rc = pdq_graph_mark_output(g, logits, st);
    for (int i = 0; i < 2 * L && rc == PDQ_OK; i++) rc = pdq_graph_mark_output(g, kv[i], st);
    if (rc == PDQ_OK) rc = pdq_graph_validate(g, st);
done:
    pdq_graph_free(part);
    free(kv);
    if (rc != PDQ_OK) {
        pdq_graph_free(g);
        return rc;
    }
    *out = g;
    return PDQ_OK;
}

/* ---------------- comparison ---------------- */

static int q_same(const pdq_qparams *a, const pdq_qparams *b) {
    if (!a || !b) return !a && !b;
    if (a->n != b->n || a->quantized_dim != b->quantized_dim || a->block != b->block) return 0;
    return !memcmp(a->scale, b->scale, sizeof(float) * (size_t)a->n) &&
           !memcmp(a->zero_point, b->zero_point, sizeof(int64_t) * (size_t)a->n);
}

static int tensor_same(const pdq_tensor *a, const pdq_tensor *b) {
    if (strcmp(a->name, b->name) || a->dtype != b->dtype || a->kind != b->kind || a->ndim != b->ndim) return 0;
    for (int d = 0; d < a->ndim; d++)
        if (a->shape[d] != b->shape[d]) return 0;
    if (a->kind == PDQ_TK_CONST && memcmp(a->data, b->data, pdq_tensor_bytes(a))) return 0;
    return q_same(a->q, b->q);
}

static int opt_same(const pdq_op *a, const pdq_op *b) {
    const pdq_op_def *d = pdq_op_def_of(a->type);
    return !d || !d->opt_same || d->opt_same(a, b);
}

#define DIFF(...) do { if (why && n) snprintf(why, n, __VA_ARGS__); return 0; } while (0)

int pdq_graph_same(const pdq_graph *a, const pdq_graph *b, char *why, size_t n) {
    if (a->n_tensors != b->n_tensors) DIFF("%d vs %d tensors", a->n_tensors, b->n_tensors);
    if (a->n_ops != b->n_ops) DIFF("%d vs %d ops", a->n_ops, b->n_ops);
    if (a->n_inputs != b->n_inputs || a->n_outputs != b->n_outputs)
        DIFF("I/O counts %d/%d vs %d/%d", a->n_inputs, a->n_outputs, b->n_inputs, b->n_outputs);
    for (int i = 0; i < a->n_tensors; i++) {
        int j = pdq_graph_find(b, a->tensors[i].name);
        if (j < 0) DIFF("tensor %s missing", a->tensors[i].name);
        if (!tensor_same(&a->tensors[i], &b->tensors[j])) DIFF("tensor %s differs", a->tensors[i].name);
    }
    for (int o = 0; o < a->n_ops; o++) {
        const pdq_op *x = &a->ops[o], *y = &b->ops[o];
        if (x->type != y->type || x->n_in != y->n_in || x->n_out != y->n_out || !opt_same(x, y))
            DIFF("op %d (%s vs %s) differs", o, pdq_op_name(x->type), pdq_op_name(y->type));
        for (int i = 0; i < x->n_in; i++)
            if (strcmp(a->tensors[x->in[i]].name, b->tensors[y->in[i]].name)) DIFF("op %d input %d differs", o, i);
        for (int i = 0; i < x->n_out; i++)
            if (strcmp(a->tensors[x->out[i]].name, b->tensors[y->out[i]].name)) DIFF("op %d output %d differs", o, i);
    }
    for (int i = 0; i < a->n_inputs; i++)
        if (strcmp(a->tensors[a->inputs[i]].name, b->tensors[b->inputs[i]].name)) DIFF("input %d differs", i);
    for (int i = 0; i < a->n_outputs; i++)
        if (strcmp(a->tensors[a->outputs[i]].name, b->tensors[b->outputs[i]].name)) DIFF("output %d differs", i);
    return 1;
}
