/* Static runtime: lifetime, the graph stacks (built on first use, one shared arena), running the
 * layer stack and writing K/V deltas into the external cache. */
#include <stdlib.h>
#include <string.h>

#include "contract/layer_loop.h"
#include "contract/rt_contract.h"
#include "rt_internal.h"

static void stack_free(rt_stack *s) {
    if (!s) return;
    for (int i = 0; i < s->n; i++) {
        if (s->ip) pdq_interp_free(s->ip[i]);
        if (s->g) pdq_graph_free(s->g[i]);
        if (s->qx) pdq_qexec_free(s->qx[i]);
        if (s->qg) pdq_graph_free(s->qg[i]);
    }
    free(s->qx);
    free(s->qg);
    free(s->ip);
    free(s->g);
    free(s);
}

void pdq_rt_free(pdq_rt *rt) {
    if (!rt) return;
    for (int i = 0; i < rt->n_stacks; i++) stack_free(rt->stacks[i]);
    free(rt->stacks);
    pdq_kv_free(&rt->kv);
    free(rt->len);
    free(rt->tab.cos);
    free(rt->tab.sin);
    free(rt->tab.cos_local);
    free(rt->tab.sin_local);
    free(rt->arena);
    free(rt->hid_a);
    free(rt->hid_b);
    free(rt->mask);
    free(rt->rmask);
    free(rt->row.cos);
    free(rt->row.sin);
    free(rt->row.cos_local);
    free(rt->row.sin_local);
    free(rt->past_k);
    free(rt->past_v);
    free(rt->new_k);
    free(rt->new_v);
    free(rt->ids);
    free(rt->pos);
    free(rt->last_h);
    free(rt->logit_buf);
    free(rt);
}

pdq_code pdq_rt_create(const pdq_model *m, int B, int max_seq, const pdq_static_opts *o,
                       pdq_rt **out, pdq_status *st) {
    const pdq_config *c = &m->cfg;
    pdq_code frc = pdq_family_require(c, PDQ_PATH_STATIC, st);
    if (frc) return frc;
    if (B < 1) return pdq_fail(st, PDQ_ERR_ARG, "static runtime: batch %d must be >= 1", B);
    if (c->rope_type == PDQ_ROPE_LONGROPE && max_seq > c->rope_original_max_pos)
        return pdq_fail(st, PDQ_ERR_UNSUPPORTED,
                        "static runtime: max_seq %d exceeds longrope's original_max_position_embeddings %d (HF then "
                        "switches to the long factors mid-sequence; one static RoPE table cannot)",
                        max_seq, c->rope_original_max_pos);
    if (max_seq < 2) return pdq_fail(st, PDQ_ERR_ARG, "static runtime: max_seq %d must be >= 2", max_seq);
    if (max_seq > c->max_position_embeddings && c->max_position_embeddings > 0)
        return pdq_fail(st, PDQ_ERR_LIMIT, "static runtime: max_seq %d exceeds max_position_embeddings %d",
                        max_seq, c->max_position_embeddings);
    pdq_rt *rt = calloc(1, sizeof *rt);
    if (!rt) return pdq_fail(st, PDQ_ERR_NOMEM, "static runtime");
    rt->m = m;
    if (o) rt->o = *o;
    else pdq_static_opts_default(&rt->o);
    rt->B = B;
    rt->max_seq = max_seq;
    rt->C = max_seq - 1;
    rt->n_layers = c->n_layers;
    rt->KV = c->n_kv_heads;
    rt->hd = c->head_dim;
    rt->rd = pdq_cfg_rotary_dim(c);
    rt->D = c->hidden_size;
    rt->V = c->vocab_size;
    size_t S = (size_t)max_seq, Bz = (size_t)B, hd = (size_t)rt->hd, kvsz = Bz * rt->KV * rt->C * hd;
    size_t rd = (size_t)rt->rd;
    int ring[PDQ_MAX_LAYERS];
    for (int l = 0; l < rt->n_layers; l++) {
        ring[l] = pdq_ctr_ring(c, max_seq, l);
        if (ring[l]) rt->ring = ring[l];
    }
    rt->window = rt->ring ? c->sliding_window : 0;
    rt->has_full = pdq_ctr_has_type(c, max_seq, 0);
    /* a ring layer's mask: (S, S) in prefill, (Q, ring + Q) in an append of Q < S */
    size_t rm = rt->ring ? (S * S > (S - 1) * (rt->ring + S - 1) ? S * S : (S - 1) * (rt->ring + S - 1)) : 1;
    int ok = pdq_kv_init(&rt->kv, rt->n_layers, B, rt->KV, rt->C, rt->hd, NULL, ring, st) == PDQ_OK;
    ok = ok && (rt->rmask = malloc(Bz * rm * sizeof(float)));
    ok = ok && (rt->len = calloc(Bz, sizeof(int)));
    int local = 0;
    for (int l = 0; l < rt->n_layers; l++) local |= pdq_ctr_rope_local(c, l);
    ok = ok && (rt->tab.cos = malloc(S * rd * sizeof(float)));
    ok = ok && (rt->tab.sin = malloc(S * rd * sizeof(float)));
    ok = ok && (!local || (rt->tab.cos_local = malloc(S * rd * sizeof(float))));
    ok = ok && (!local || (rt->tab.sin_local = malloc(S * rd * sizeof(float))));
    ok = ok && (rt->hid_a = malloc(Bz * S * rt->D * sizeof(float)));
    ok = ok && (rt->hid_b = malloc(Bz * S * rt->D * sizeof(float)));
    ok = ok && (rt->mask = malloc(Bz * S * S * sizeof(float)));
    ok = ok && (rt->row.cos = malloc(Bz * S * rd * sizeof(float)));
    ok = ok && (rt->row.sin = malloc(Bz * S * rd * sizeof(float)));
    ok = ok && (!local || (rt->row.cos_local = malloc(Bz * S * rd * sizeof(float))));
    ok = ok && (!local || (rt->row.sin_local = malloc(Bz * S * rd * sizeof(float))));
    ok = ok && (rt->past_k = malloc(kvsz * sizeof(float)));
    ok = ok && (rt->past_v = malloc(kvsz * sizeof(float)));
    ok = ok && (rt->new_k = malloc(Bz * rt->KV * S * hd * sizeof(float)));
    ok = ok && (rt->new_v = malloc(Bz * rt->KV * S * hd * sizeof(float)));
    ok = ok && (rt->ids = malloc(Bz * S * sizeof(int32_t)));
    ok = ok && (rt->pos = malloc(Bz * S * sizeof(int)));
    ok = ok && (rt->last_h = malloc(Bz * rt->D * sizeof(float)));
    if (!ok) {
        pdq_rt_free(rt);
        return pdq_fail(st, PDQ_ERR_NOMEM, "static runtime: buffers for batch %d, max_seq %d", B, max_seq);
    }
    int32_t *pos = malloc(S * sizeof(int32_t));
    if (!pos) { pdq_rt_free(rt); return pdq_fail(st, PDQ_ERR_NOMEM, "static runtime: rope tables"); }
    for (int i = 0; i < max_seq; i++) pos[i] = i;
    pdq_ctr_rope_tables(m, max_seq, pos, rt->o.rope == PDQ_RT_ROPE_PRE_NEGATED_SIN, &rt->tab);
    free(pos);
    /* Build the prefill stack now: shape errors surface at creation. */
    rt_stack *s;
    pdq_code rc = pdq_rt_stack(rt, RT_PREFILL, max_seq, &s, st);
    if (rc != PDQ_OK) { pdq_rt_free(rt); return rc; }
    *out = rt;
    return PDQ_OK;
}

int pdq_rt_batch(const pdq_rt *rt) { return rt->B; }
int pdq_rt_max_seq(const pdq_rt *rt) { return rt->max_seq; }
int pdq_rt_len(const pdq_rt *rt, int b) { return (b >= 0 && b < rt->B) ? rt->len[b] : -1; }

void pdq_rt_reset(pdq_rt *rt) {
    memset(rt->len, 0, sizeof(int) * (size_t)rt->B);
}

void pdq_rt_clear(pdq_rt *rt) {
    pdq_rt_reset(rt);
    pdq_kv_zero(&rt->kv);
}

pdq_code pdq_rt_rewind(pdq_rt *rt, int b, int len, pdq_status *st) {
    if (b < 0 || b >= rt->B) return pdq_fail(st, PDQ_ERR_ARG, "rewind: row %d of a batch of %d", b, rt->B);
    if (len < 0 || len > rt->len[b])
        return pdq_fail(st, PDQ_ERR_ARG, "rewind: row %d holds %d tokens, cannot rewind to %d", b, rt->len[b], len);
    if (!pdq_ctr_rewind_exact(rt->ring, rt->len[b], len))
        return pdq_fail(st, PDQ_ERR_UNSUPPORTED,
                        "rewind: row %d from %d to %d tokens: the sliding layers' rings of %d slots were overwritten "
                        "past position %d (prefill again)", b, rt->len[b], len, rt->ring, len);
    rt->len[b] = len;
    return PDQ_OK;
}

void pdq_rt_set_hook(pdq_rt *rt, pdq_edge_hook hook, void *ctx) {
    rt->hook = hook;
    rt->hook_ctx = ctx;
    for (int i = 0; i < rt->n_stacks; i++)
        for (int j = 0; j < rt->stacks[i]->n; j++) pdq_interp_set_hook(rt->stacks[i]->ip[j], hook, ctx);
}

static pdq_code build_one(pdq_rt *rt, rt_kind kind, int T, int layer, pdq_graph **g, pdq_status *st) {
    switch (kind) {
    case RT_PREFILL:
        return pdq_build_layer(rt->m, layer, NULL, PDQ_MODE_PREFILL, rt->B, rt->max_seq, 0, &rt->o, g, st);
    case RT_APPEND:
        return pdq_build_layer(rt->m, layer, NULL, PDQ_MODE_APPEND, rt->B, rt->max_seq, T, &rt->o, g, st);
    case RT_EMBED: return pdq_build_embed(rt->m, rt->B, T, g, st);
    case RT_HEAD: return pdq_build_head(rt->m, rt->B, T, g, st);
    }
    return pdq_fail(st, PDQ_ERR_ARG, "unknown graph kind");
}

pdq_code pdq_rt_stack(pdq_rt *rt, rt_kind kind, int T, rt_stack **out, pdq_status *st) {
    for (int i = 0; i < rt->n_stacks; i++)
        if (rt->stacks[i]->kind == kind && rt->stacks[i]->T == T) { *out = rt->stacks[i]; return PDQ_OK; }
    if (kind == RT_APPEND && (T < 1 || T >= rt->max_seq))
        return pdq_fail(st, PDQ_ERR_LIMIT, "bucket of %d tokens too large: must be in [1, max_seq-1 = %d]", T,
                        rt->max_seq - 1);
    int n = (kind == RT_PREFILL || kind == RT_APPEND) ? rt->n_layers : 1;
    rt_stack *s = calloc(1, sizeof *s);
    rt_stack **ns = realloc(rt->stacks, sizeof(rt_stack *) * (size_t)(rt->n_stacks + 1));
    if (ns) rt->stacks = ns;
    if (s) { s->g = calloc((size_t)n, sizeof(pdq_graph *)); s->ip = calloc((size_t)n, sizeof(pdq_interp *)); }
    if (s && rt->lower) { s->qg = calloc((size_t)n, sizeof(pdq_graph *)); s->qx = calloc((size_t)n, sizeof(pdq_qexec *)); }
    if (!s || !ns || !s->g || !s->ip || (rt->lower && (!s->qg || !s->qx))) { stack_free(s); return pdq_fail(st, PDQ_ERR_NOMEM, "graph stack"); }
    s->kind = kind;
    s->T = T;
    s->n = n;
    pdq_code rc = PDQ_OK;
    size_t need = rt->arena_bytes;
    for (int i = 0; i < n && rc == PDQ_OK; i++) {
        rc = build_one(rt, kind, T, i, &s->g[i], st);
        if (rc == PDQ_OK) rc = pdq_interp_create(s->g[i], &s->ip[i], st);
        if (rc == PDQ_OK && rt->lower) rc = rt->lower(rt->lower_ctx, s->g[i], &s->qg[i], st);
        if (rc == PDQ_OK && rt->lower) rc = pdq_qexec_create(s->qg[i], &rt->eo, &s->qx[i], st);
        if (rc == PDQ_OK) {
            size_t b = pdq_interp_arena_bytes(s->ip[i]);
            if (b > need) need = b;
            pdq_interp_set_hook(s->ip[i], rt->hook, rt->hook_ctx);
        }
    }
    if (rc != PDQ_OK) { stack_free(s); return rc; }
    if (need > rt->arena_bytes) {
        void *a = aligned_alloc(64, (need + 63) / 64 * 64);
        if (!a) { stack_free(s); return pdq_fail(st, PDQ_ERR_NOMEM, "interpreter arena of %zu bytes", need); }
        free(rt->arena);
        rt->arena = a;
        rt->arena_bytes = need;
        for (int i = 0; i < rt->n_stacks; i++)
            for (int j = 0; j < rt->stacks[i]->n; j++) pdq_interp_set_arena(rt->stacks[i]->ip[j], a);
    }
    for (int j = 0; j < n; j++) pdq_interp_set_arena(s->ip[j], rt->arena);
    rt->stacks[rt->n_stacks++] = s;
    *out = s;
    return PDQ_OK;
}

pdq_code pdq_rt_layer_graph(pdq_rt *rt, pdq_graph_mode mode, int Q, int layer, const pdq_graph **g,
                            pdq_status *st) {
    rt_stack *s;
    pdq_code rc = mode == PDQ_MODE_PREFILL ? pdq_rt_stack(rt, RT_PREFILL, rt->max_seq, &s, st)
                                           : pdq_rt_stack(rt, RT_APPEND, Q, &s, st);
    if (rc != PDQ_OK) return rc;
    if (layer < 0 || layer >= s->n) return pdq_fail(st, PDQ_ERR_ARG, "layer %d out of range", layer);
    *g = s->g[layer];
    return PDQ_OK;
}

pdq_code pdq_rt_set_lowering(pdq_rt *rt, pdq_rt_lower_fn lower, void *ctx, const pdq_exec_opts *eo, pdq_status *st) {
    for (int i = 0; i < rt->n_stacks; i++) stack_free(rt->stacks[i]);
    rt->n_stacks = 0;
    rt->lower = lower;
    rt->lower_ctx = ctx;
    if (eo) rt->eo = *eo;
    else pdq_exec_opts_default(&rt->eo);
    rt_stack *s;
    return pdq_rt_stack(rt, RT_PREFILL, rt->max_seq, &s, st);
}

const float *pdq_rt_cache(const pdq_rt *rt, int layer, int which) {
    if (layer < 0 || layer >= rt->n_layers || which < 0 || which > 1) return NULL;
    return pdq_kv_data(&rt->kv, layer, which);
}

size_t pdq_rt_kv_bytes(const pdq_rt *rt) { return pdq_kv_bytes(&rt->kv); }

/* Graph i of a stack: the float interpreter, or the integer executor of its lowered copy. */
static pdq_code bind_io(rt_stack *s, int i, int which, int is_out, void *mem, pdq_status *st) {
    if (s->qx) {
        const pdq_graph *q = s->qg[i];
        return pdq_qexec_bind(s->qx[i], is_out ? q->outputs[which] : q->inputs[which], mem, st);
    }
    const pdq_graph *g = s->g[i];
    int tid = is_out ? g->outputs[which] : g->inputs[which];
    return pdq_interp_bind(s->ip[i], tid, mem, st);
}

static pdq_code stack_run(rt_stack *s, int i, pdq_status *st) {
    return s->qx ? pdq_qexec_run(s->qx[i], st) : pdq_interp_run(s->ip[i], st);
}

pdq_code pdq_rt_embed(pdq_rt *rt, int T, const int32_t *ids, float *out, pdq_status *st) {
    rt_stack *s;
    pdq_code rc = pdq_rt_stack(rt, RT_EMBED, T, &s, st);
    if (rc == PDQ_OK) rc = bind_io(s, 0, 0, 0, (void *)ids, st);
    if (rc == PDQ_OK) rc = bind_io(s, 0, 0, 1, out, st);
    if (rc == PDQ_OK) rc = stack_run(s, 0, st);
    return rc;
}

pdq_code pdq_rt_head(pdq_rt *rt, int T, const float *x, float *logits, pdq_status *st) {
    rt_stack *s;
    pdq_code rc = pdq_rt_stack(rt, RT_HEAD, T, &s, st);
    if (rc == PDQ_OK) rc = bind_io(s, 0, 0, 0, (void *)x, st);
    if (rc == PDQ_OK) rc = bind_io(s, 0, 0, 1, logits, st);
    if (rc == PDQ_OK) rc = stack_run(s, 0, st);
    return rc;
}

typedef struct {
    pdq_rt *rt;
    rt_stack *s;
} layer_ctx;

/* Layer l of the stack on h (rt->hid_a or rt->hid_b; the output goes to the other), the step's
 * mask of the layer's type / its RoPE table's cos / sin, and the past: the whole cache for decode (P = C) and for
 * a ring, else its first P slots. */
static pdq_code run_layer(void *vc, int l, const float *h, const float **h_out, const float **k, const float **v,
                          pdq_status *st) {
    layer_ctx *c = vc;
    pdq_rt *rt = c->rt;
    rt_stack *s = c->s;
    float *nxt = h == rt->hid_a ? rt->hid_b : rt->hid_a;
    int ring = rt->kv.ring[l], append = s->kind == RT_APPEND, P = pdq_ctr_past_slots(ring, rt->max_seq, s->T);
    float *mask = ring ? rt->rmask : rt->mask, *cos, *sin;
    pdq_ctr_rope_pick(&rt->row, pdq_ctr_rope_local(&rt->m->cfg, l), &cos, &sin);
    pdq_code rc;
    if (append) {
        void *pk = pdq_kv_data(&rt->kv, l, 0), *pv = pdq_kv_data(&rt->kv, l, 1);
        if (P != pdq_kv_slots(&rt->kv, l)) {
            pdq_kv_past(&rt->kv, l, 0, P, rt->past_k);
            pdq_kv_past(&rt->kv, l, 1, P, rt->past_v);
            pk = rt->past_k;
            pv = rt->past_v;
        }
        rc = bind_io(s, l, PDQ_AP_IN_HIDDEN, 0, (void *)h, st);
        if (!rc) rc = bind_io(s, l, PDQ_AP_IN_MASK, 0, mask, st);
        if (!rc) rc = bind_io(s, l, PDQ_AP_IN_PAST_K, 0, pk, st);
        if (!rc) rc = bind_io(s, l, PDQ_AP_IN_PAST_V, 0, pv, st);
        if (!rc) rc = bind_io(s, l, PDQ_AP_IN_COS, 0, cos, st);
        if (!rc) rc = bind_io(s, l, PDQ_AP_IN_SIN, 0, sin, st);
    } else {
        rc = bind_io(s, l, PDQ_PF_IN_HIDDEN, 0, (void *)h, st);
        if (!rc) rc = bind_io(s, l, PDQ_PF_IN_MASK, 0, mask, st);
        if (!rc) rc = bind_io(s, l, PDQ_PF_IN_COS, 0, cos, st);
        if (!rc) rc = bind_io(s, l, PDQ_PF_IN_SIN, 0, sin, st);
    }
    if (!rc) rc = bind_io(s, l, PDQ_L_OUT_HIDDEN, 1, nxt, st);
    if (!rc) rc = bind_io(s, l, PDQ_L_OUT_K, 1, rt->new_k, st);
    if (!rc) rc = bind_io(s, l, PDQ_L_OUT_V, 1, rt->new_v, st);
    if (!rc) rc = stack_run(s, l, st);
    *h_out = nxt;
    *k = rt->new_k;
    *v = rt->new_v;
    return rc;
}

pdq_code pdq_rt_run_layers(pdq_rt *rt, rt_stack *s, float **result, pdq_status *st) {
    layer_ctx c = {rt, s};
    const float *h = NULL;
    pdq_code rc = pdq_ctr_run_layers(&rt->kv, s->T, rt->pos, run_layer, &c, rt->hid_a, &h, st);
    *result = (float *)h; /* rt->hid_a or rt->hid_b */
    return rc;
}
