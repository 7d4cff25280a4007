/* One decoder layer as a static graph: prefill (S = max_seq, no past) or append of Q tokens
 * (decode = Q 1) against a past of max_seq - Q slots, or a sliding layer's ring (rt_contract.h). Options follow TICO's attention config:
 * RoPE convention, where 1/sqrt(hd) goes, batched or per-head (unrolled) attention. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "build_util.h"
#include "contract/rt_contract.h"
#include "pdq/runtime.h"

void pdq_static_opts_default(pdq_static_opts *o) {
    o->rope = PDQ_RT_ROPE_HF;
    o->scale = PDQ_RT_SCALE_LOGITS;
    o->layout = PDQ_RT_LAYOUT_BATCHED;
    o->mask_fill = -120.0f;
}

int pdq_rope_conv_parse(const char *s) {
    if (!strcmp(s, "hf")) return PDQ_RT_ROPE_HF;
    if (!strcmp(s, "pre_negated_sin")) return PDQ_RT_ROPE_PRE_NEGATED_SIN;
    return -1;
}

int pdq_scale_fusion_parse(const char *s) {
    if (!strcmp(s, "none") || !strcmp(s, "logits")) return PDQ_RT_SCALE_LOGITS;
    if (!strcmp(s, "k_proj")) return PDQ_RT_SCALE_K_PROJ;
    return -1;
}

int pdq_attn_layout_parse(const char *s) {
    if (!strcmp(s, "batched")) return PDQ_RT_LAYOUT_BATCHED;
    if (!strcmp(s, "unrolled")) return PDQ_RT_LAYOUT_UNROLLED;
    return -1;
}

/* The family's names of a layer's modules after the layer prefix (pdq_bld.prefix), from its
 * role table: the graphs' constants and edges are named after them, as HF names the tensors. */
typedef struct {
    char lin[PDQ_LIN_COUNT][96]; /* "self_attn.q_proj"; Phi-3: "self_attn.qkv_proj.q" */
    char attn[96], mlp[96];      /* the modules holding o and down: attention / MLP internals */
    char norm[PDQ_ROLE_COUNT][96]; /* each per-layer norm role's module: "input_layernorm" */
} lnames;

/* snprintf for names: a name past its buffer is cut (the builders' buffers hold any HF name). */
static void name_fmt(char *buf, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void name_fmt(char *buf, size_t cap, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, cap, fmt, ap);
    va_end(ap);
}

static void local_name(const char *prefix, const char *full, char *buf, size_t cap) {
    size_t n = strlen(prefix);
    name_fmt(buf, cap, "%s", strncmp(full, prefix, n) == 0 ? full + n : full);
}

static void parent_of(const char *name, char *buf, size_t cap) {
    const char *d = strrchr(name, '.');
    name_fmt(buf, cap, "%.*s", d ? (int)(d - name) : 0, name);
}

static void layer_names(const pdq_config *c, int layer, const char *prefix, lnames *n) {
    char full[256];
    memset(n, 0, sizeof *n);
    for (int i = 0; i < PDQ_LIN_COUNT; i++) {
        pdq_linear_module(c, layer, (pdq_linear_id)i, full, sizeof full);
        local_name(prefix, full, n->lin[i], sizeof n->lin[i]);
    }
    parent_of(n->lin[PDQ_LIN_O], n->attn, sizeof n->attn);
    parent_of(n->lin[PDQ_LIN_DOWN], n->mlp, sizeof n->mlp);
    static const pdq_role_kind norms[] = {PDQ_ROLE_ATTN_NORM, PDQ_ROLE_FFN_NORM, PDQ_ROLE_Q_NORM, PDQ_ROLE_K_NORM,
                                          PDQ_ROLE_POST_ATTN_NORM, PDQ_ROLE_POST_FFN_NORM};
    for (size_t i = 0; i < sizeof norms / sizeof norms[0]; i++) {
        pdq_family_role_module(c, norms[i], layer, full, sizeof full);
        local_name(prefix, full, n->norm[norms[i]], sizeof n->norm[0]);
    }
}

typedef struct {
    pdq_bld *b;
    const pdq_config *c;
    const lnames *nm;
    const pdq_layer *w;      /* the layer's weights (q/k norms) */
    float kfold;             /* k_norm's gamma factor: 1/sqrt(hd) when the scale folds into k, else 1 */
    const pdq_static_opts *o;
    int B, S, L, P;          /* batch, new tokens, key length P + S, past slots (0 in prefill; a ring's R) */
    int cos, sin, mask, past_k, past_v;
    int scale;               /* const [1] = 1/sqrt(hd) or -1 */
} lctx;

/* x's last axis cut at k: *lo = x[..., :k] named base.lo_name, *hi = x[..., k:] base.hi_name. */
static void split_last(pdq_bld *b, int x, int k, const char *base, const char *lo_name, const char *hi_name, int *lo,
                       int *hi) {
    /* the shape is copied first: adding the slices may move the graph's tensor array */
    int nd = b->g->tensors[x].ndim, full = b->g->tensors[x].shape[nd - 1];
    int beg[PDQ_G_MAX_DIMS] = {0}, end[PDQ_G_MAX_DIMS];
    memcpy(end, b->g->tensors[x].shape, sizeof(int) * (size_t)nd);
    end[nd - 1] = k;
    *lo = pdq_b_slice(b, x, beg, end, "%s.%s", base, lo_name);
    beg[nd - 1] = k;
    end[nd - 1] = full;
    *hi = pdq_b_slice(b, x, beg, end, "%s.%s", base, hi_name);
}

/* y = x*cos + rot(x)*sin over the last axis; cos/sin already broadcastable to x. */
static int rope_full(lctx *l, int x, int cos, int sin, const char *base) {
    pdq_bld *b = l->b;
    if (b->err) return -1;
    int nd = b->g->tensors[x].ndim, x1, x2;
    split_last(b, x, b->g->tensors[x].shape[nd - 1] / 2, base, "x1", "x2", &x1, &x2);
    int first = l->o->rope == PDQ_RT_ROPE_HF ? pdq_b_op1(b, PDQ_OP_NEG, x2, "%s.neg_x2", base) : x2;
    int parts[2] = {first, x1};
    int rot = pdq_b_concat(b, parts, 2, nd - 1, "%s.rot", base);
    int xc = pdq_b_op2(b, PDQ_OP_MUL, x, cos, "%s.x_cos", base);
    int rs = pdq_b_op2(b, PDQ_OP_MUL, rot, sin, "%s.rot_sin", base);
    return pdq_b_op2(b, PDQ_OP_ADD, xc, rs, "%s", base);
}

/* RoPE on the first rotary_dim dims of the last axis; the rest pass (partial_rotary_factor). */
static int rope(lctx *l, int x, int cos, int sin, const char *base) {
    pdq_bld *b = l->b;
    int rd = pdq_cfg_rotary_dim(l->c);
    if (b->err || rd == l->c->head_dim) return rope_full(l, x, cos, sin, base);
    int xr, xp;
    split_last(b, x, rd, base, "rot_part", "pass_part", &xr, &xp);
    char rb[200];
    name_fmt(rb, sizeof rb, "%s.rotated", base);
    int parts[2] = {rope_full(l, xr, cos, sin, rb), xp};
    return pdq_b_concat(b, parts, 2, b->g->tensors[x].ndim - 1, "%s", base);
}

/* Qwen3's per-head RMSNorm over head_dim (x is [..., heads, hd]); x itself without q/k norms.
 * The k_proj scale fold lands in k_norm's gamma (fold = the attention scale), since a norm after
 * k_proj would undo a scaled weight. */
static int head_norm(lctx *l, int x, const float *gamma, float fold, const char *name) {
    if (!gamma || l->b->err) return x;
    char gname[160];
    name_fmt(gname, sizeof gname, "%s.weight", name);
    int g = pdq_b_gamma(l->b, l->c, l->c->head_dim, gamma, fold, gamma == l->w->q_norm ? PDQ_ROLE_Q_NORM : PDQ_ROLE_K_NORM,
                        gname);
    pdq_op rms;
    memset(&rms, 0, sizeof rms);
    rms.opt.rms.epsilon = l->c->rms_norm_eps;
    int in[2] = {x, g};
    return pdq_b_op(l->b, PDQ_OP_RMS_NORM, in, 2, &rms, "%s.out", name);
}

/* softmax(q·Kᵀ (·scale) + mask)·V for one batched or per-head chain; mask broadcastable. */
static int attend(lctx *l, int q, int K, int V, int mask, const char *base) {
    pdq_bld *b = l->b;
    if (b->err) return -1;
    int nd = b->g->tensors[K].ndim;
    int32_t perm[PDQ_G_MAX_DIMS];
    for (int i = 0; i < nd; i++) perm[i] = i;
    perm[nd - 2] = nd - 1;
    perm[nd - 1] = nd - 2;
    int kt = pdq_b_transpose(b, K, perm, "%s.k_t", base);
    pdq_op bmm;
    memset(&bmm, 0, sizeof bmm);
    int in[2] = {q, kt};
    int lg = pdq_b_op(b, PDQ_OP_BATCH_MATMUL, in, 2, &bmm, "%s.logits", base);
    if (l->scale >= 0) lg = pdq_b_op2(b, PDQ_OP_MUL, lg, l->scale, "%s.logits_scaled", base);
    lg = pdq_b_op2(b, PDQ_OP_ADD, lg, mask, "%s.mask_add", base);
    pdq_op sm;
    memset(&sm, 0, sizeof sm);
    sm.opt.softmax.beta = 1.0f;
    int p = pdq_b_op(b, PDQ_OP_SOFTMAX, &lg, 1, &sm, "%s.softmax", base);
    int in2[2] = {p, V};
    return pdq_b_op(b, PDQ_OP_BATCH_MATMUL, in2, 2, &bmm, "%s.attn_out", base);
}

/* Batched: heads as a dimension, GQA through GATHER of kv heads. Returns attn (B,S,H*hd). */
static int attn_batched(lctx *l, int q, int k, int v, int *new_k, int *new_v) {
    pdq_bld *b = l->b;
    const pdq_config *c = l->c;
    int B = l->B, S = l->S, H = c->n_heads, KV = c->n_kv_heads, hd = c->head_dim;
    static const int32_t p0213[4] = {0, 2, 1, 3};
    int s4[4] = {B, S, H, hd};
    int q4 = head_norm(l, pdq_b_reshape(b, q, 4, s4, "%s.q_heads", l->nm->attn), l->w->q_norm, 1.0f, l->nm->norm[PDQ_ROLE_Q_NORM]);
    int qt = pdq_b_transpose(b, q4, p0213, "%s.q_heads_t", l->nm->attn);
    s4[2] = KV;
    int k4 = head_norm(l, pdq_b_reshape(b, k, 4, s4, "%s.k_heads", l->nm->attn), l->w->k_norm, l->kfold, l->nm->norm[PDQ_ROLE_K_NORM]);
    int kt = pdq_b_transpose(b, k4, p0213, "%s.k_heads_t", l->nm->attn);
    int vt = pdq_b_transpose(b, pdq_b_reshape(b, v, 4, s4, "%s.v_heads", l->nm->attn), p0213, "%s.new_v", l->nm->attn);
    int cs[4] = {B, 1, S, pdq_cfg_rotary_dim(c)};
    int cos4 = pdq_b_reshape(b, l->cos, 4, cs, "%s.cos_heads", l->nm->attn);
    int sin4 = pdq_b_reshape(b, l->sin, 4, cs, "%s.sin_heads", l->nm->attn);
    char base[160];
    name_fmt(base, sizeof base, "%s.q_rope", l->nm->attn);
    int qr = rope(l, qt, cos4, sin4, base);
    name_fmt(base, sizeof base, "%s.new_k", l->nm->attn);
    int kr = rope(l, kt, cos4, sin4, base);
    *new_k = kr;
    *new_v = vt;
    int K = kr, V = vt;
    if (l->P > 0) {
        int ink[2] = {l->past_k, kr}, inv[2] = {l->past_v, vt};
        K = pdq_b_concat(b, ink, 2, 2, "%s.k_all", l->nm->attn);
        V = pdq_b_concat(b, inv, 2, 2, "%s.v_all", l->nm->attn);
    }
    if (H != KV && !b->err) {
        int32_t *idx = malloc(sizeof(int32_t) * (size_t)H);
        if (!idx) { b->err = 1; pdq_fail(b->st, PDQ_ERR_NOMEM, "gqa indices"); return -1; }
        for (int h = 0; h < H; h++) idx[h] = h / (H / KV); /* repeat_interleave */
        char name[200];
        name_fmt(name, sizeof name, "%s%s.kv_repeat_index", b->prefix, l->nm->attn);
        int ix = pdq_graph_const_i32(b->g, name, H, idx, b->st);
        free(idx);
        if (ix < 0) { b->err = 1; return -1; }
        pdq_op go;
        memset(&go, 0, sizeof go);
        go.opt.gather.axis = 1;
        int gk[2] = {K, ix}, gv[2] = {V, ix};
        K = pdq_b_op(b, PDQ_OP_GATHER, gk, 2, &go, "%s.k_repeat", l->nm->attn);
        V = pdq_b_op(b, PDQ_OP_GATHER, gv, 2, &go, "%s.v_repeat", l->nm->attn);
    }
    int ms[4] = {B, 1, S, l->L};
    int mask4 = pdq_b_reshape(b, l->mask, 4, ms, "%s.mask_heads", l->nm->attn);
    int o = attend(l, qr, K, V, mask4, l->nm->attn);
    int ot = pdq_b_transpose(b, o, p0213, "%s.attn_out_t", l->nm->attn);
    int s3[3] = {B, S, H * hd};
    return pdq_b_reshape(b, ot, 3, s3, "%s.attn_out_flat", l->nm->attn);
}

/* Unrolled: per kv head j, K_j/V_j are shared by its query heads (TICO _forward_unrolled). */
static int attn_unrolled(lctx *l, int q, int k, int v, int *new_k, int *new_v) {
    pdq_bld *b = l->b;
    const pdq_config *c = l->c;
    int B = l->B, S = l->S, H = c->n_heads, KV = c->n_kv_heads, hd = c->head_dim, rep = H / KV;
    int *heads = malloc(sizeof(int) * (size_t)(H + 2 * KV));
    if (!heads) { b->err = 1; pdq_fail(b->st, PDQ_ERR_NOMEM, "unrolled heads"); return -1; }
    int *ks = heads + H, *vs = ks + KV;
    int s4[4] = {B, S, H, hd};
    int q4 = head_norm(l, pdq_b_reshape(b, q, 4, s4, "%s.q_heads", l->nm->attn), l->w->q_norm, 1.0f, l->nm->norm[PDQ_ROLE_Q_NORM]);
    s4[2] = KV;
    int k4 = head_norm(l, pdq_b_reshape(b, k, 4, s4, "%s.k_heads", l->nm->attn), l->w->k_norm, l->kfold, l->nm->norm[PDQ_ROLE_K_NORM]);
    int v4 = pdq_b_reshape(b, v, 4, s4, "%s.v_heads", l->nm->attn);
    int s3[3] = {B, S, hd}, s4h[4] = {B, 1, S, hd};
    char base[160];
    for (int j = 0; j < KV; j++) {
        int beg[4] = {0, 0, j, 0}, end[4] = {B, S, j + 1, hd};
        int kj = pdq_b_reshape(b, pdq_b_slice(b, k4, beg, end, "%s.k%d.slice", l->nm->attn, j), 3, s3, "%s.k%d", l->nm->attn, j);
        int vj = pdq_b_reshape(b, pdq_b_slice(b, v4, beg, end, "%s.v%d.slice", l->nm->attn, j), 3, s3, "%s.v%d", l->nm->attn, j);
        name_fmt(base, sizeof base, "%s.k%d.rope", l->nm->attn, j);
        int kjr = rope(l, kj, l->cos, l->sin, base);
        int Kj = kjr, Vj = vj;
        if (l->P > 0) {
            int pb[4] = {0, j, 0, 0}, pe[4] = {B, j + 1, l->P, hd}, ps[3] = {B, l->P, hd};
            int pk = pdq_b_reshape(b, pdq_b_slice(b, l->past_k, pb, pe, "%s.past_k%d.slice", l->nm->attn, j), 3, ps,
                                   "%s.past_k%d", l->nm->attn, j);
            int pv = pdq_b_reshape(b, pdq_b_slice(b, l->past_v, pb, pe, "%s.past_v%d.slice", l->nm->attn, j), 3, ps,
                                   "%s.past_v%d", l->nm->attn, j);
            int ik[2] = {pk, kjr}, iv[2] = {pv, vj};
            Kj = pdq_b_concat(b, ik, 2, 1, "%s.k%d.all", l->nm->attn, j);
            Vj = pdq_b_concat(b, iv, 2, 1, "%s.v%d.all", l->nm->attn, j);
        }
        for (int r = 0; r < rep; r++) {
            int i = j * rep + r;
            int qb[4] = {0, 0, i, 0}, qe[4] = {B, S, i + 1, hd};
            int qi = pdq_b_reshape(b, pdq_b_slice(b, q4, qb, qe, "%s.q%d.slice", l->nm->attn, i), 3, s3, "%s.q%d", l->nm->attn, i);
            name_fmt(base, sizeof base, "%s.q%d.rope", l->nm->attn, i);
            int qir = rope(l, qi, l->cos, l->sin, base);
            name_fmt(base, sizeof base, "%s.h%d", l->nm->attn, i);
            int oi = attend(l, qir, Kj, Vj, l->mask, base);
            int o4[4] = {B, S, 1, hd};
            heads[i] = pdq_b_reshape(b, oi, 4, o4, "%s.h%d.attn_out_4d", l->nm->attn, i);
        }
        ks[j] = pdq_b_reshape(b, kjr, 4, s4h, "%s.k%d.stack", l->nm->attn, j);
        vs[j] = pdq_b_reshape(b, vj, 4, s4h, "%s.v%d.stack", l->nm->attn, j);
    }
    *new_k = pdq_b_concat(b, ks, KV, 1, "%s.new_k", l->nm->attn);
    *new_v = pdq_b_concat(b, vs, KV, 1, "%s.new_v", l->nm->attn);
    int att = pdq_b_concat(b, heads, H, 2, "%s.attn_heads", l->nm->attn);
    free(heads);
    int sf[3] = {B, S, H * hd};
    return pdq_b_reshape(b, att, 3, sf, "%s.attn_out_flat", l->nm->attn);
}

/* A decoder linear: FULLY_CONNECTED of x with weight ws[id] and, when present, bias bs[id]. */
static int linear(pdq_bld *b, const lnames *nm, const pdq_op *fc, int x, const int *ws, const int *bs,
                  pdq_linear_id id) {
    int in[3] = {x, ws[id], bs[id]};
    return pdq_b_op(b, PDQ_OP_FULLY_CONNECTED, in, bs[id] >= 0 ? 3 : 2, fc, "%s.out", nm->lin[id]);
}

pdq_code pdq_build_layer(const pdq_model *m, int layer, const pdq_layer *w, pdq_graph_mode mode,
                         int B, int max_seq, int Q, const pdq_static_opts *o, pdq_graph **out,
                         pdq_status *st) {
    const pdq_config *c = &m->cfg;
    pdq_code frc = pdq_family_require(c, PDQ_PATH_STATIC, st);
    if (frc) return frc;
    pdq_static_opts def;
    if (!o) { pdq_static_opts_default(&def); o = &def; }
    if (layer < 0 || layer >= c->n_layers)
        return pdq_fail(st, PDQ_ERR_ARG, "build layer: index %d out of range [0,%d)", layer, c->n_layers);
    if (B < 1 || max_seq < 2)
        return pdq_fail(st, PDQ_ERR_ARG, "build layer: batch %d / max_seq %d (need >= 1 / >= 2)", B, max_seq);
    if (mode == PDQ_MODE_APPEND && (Q < 1 || Q >= max_seq))
        return pdq_fail(st, PDQ_ERR_LIMIT, "build layer: bucket Q=%d must be in [1, max_seq-1=%d]", Q, max_seq - 1);
    if (c->head_dim % 2 || c->n_heads % c->n_kv_heads)
        return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "build layer: head_dim %d odd or heads %d not a multiple of kv heads %d",
                        c->head_dim, c->n_heads, c->n_kv_heads);
    if (!w) w = &m->layers[layer];
    int D = c->hidden_size, H = c->n_heads, KV = c->n_kv_heads, hd = c->head_dim, F = c->intermediate_size;
    int S = mode == PDQ_MODE_PREFILL ? max_seq : Q;
    char gname[96];
    name_fmt(gname, sizeof gname, "decoder_layer_%s_%d", mode == PDQ_MODE_PREFILL ? "prefill" : "append", layer);
    if (mode == PDQ_MODE_APPEND && Q == 1) name_fmt(gname, sizeof gname, "decoder_layer_decode_%d", layer);
    pdq_graph *g;
    pdq_code rc = pdq_graph_new(gname, &g, st);
    if (rc != PDQ_OK) return rc;
    pdq_bld b = {.g = g, .st = st};
    pdq_family_layer_prefix(c, layer, b.prefix, sizeof b.prefix);
    lnames nm;
    layer_names(c, layer, b.prefix, &nm);
    /* the attention scale: head_dim^-0.5, or Gemma's query_pre_attn_scalar^-0.5 */
    float qk_scale = c->attn_scale != 0.0f ? c->attn_scale : 1.0f / sqrtf((float)hd);
    /* a sliding layer's append graphs take its whole ring as past (rt_contract.h) */
    int P = mode == PDQ_MODE_PREFILL ? 0 : pdq_ctr_past_slots(pdq_ctr_ring(c, max_seq, layer), max_seq, Q);
    lctx l = {.b = &b, .c = c, .nm = &nm, .w = w, .o = o, .kfold = o->scale == PDQ_RT_SCALE_K_PROJ ? qk_scale : 1.0f, .B = B, .S = S, .L = P + S,
              .P = P, .past_k = -1, .past_v = -1, .scale = -1};

    /* Inputs in contract order. */
    int sh[4] = {B, S, D};
    int x = pdq_b_input(&b, PDQ_TF32, 3, sh, "hidden_states");
    int ms[3] = {B, S, l.L};
    l.mask = pdq_b_input(&b, PDQ_TF32, 3, ms, "attention_mask");
    if (l.P > 0) {
        int ps[4] = {B, KV, l.P, hd};
        l.past_k = pdq_b_input(&b, PDQ_TF32, 4, ps, "past_key");
        l.past_v = pdq_b_input(&b, PDQ_TF32, 4, ps, "past_value");
    }
    int cs[3] = {B, S, pdq_cfg_rotary_dim(c)};
    l.cos = pdq_b_input(&b, PDQ_TF32, 3, cs, "cos");
    l.sin = pdq_b_input(&b, PDQ_TF32, 3, cs, "sin");

    /* Weights (borrowed), the k_proj one scaled (owned) when the scale is folded into it. */
    int ws[PDQ_LIN_COUNT];
    for (int i = 0; i < PDQ_LIN_COUNT; i++) {
        int shp[2];
        pdq_linear_shape(c, (pdq_linear_id)i, &shp[0], &shp[1]);
        const float *wd = w->w[i];
        float *scaled = NULL;
        /* with q/k norms the fold goes into k_norm's gamma instead (a norm undoes a scaled input) */
        if (i == PDQ_LIN_K && o->scale == PDQ_RT_SCALE_K_PROJ && !w->k_norm && !b.err) {
            size_t n = (size_t)shp[0] * shp[1];
            scaled = malloc(n * sizeof(float));
            if (!scaled) { pdq_graph_free(g); return pdq_fail(st, PDQ_ERR_NOMEM, "scaled k_proj"); }
            float s = qk_scale;
            if (w->wk_scale) {
                /* quantized rows (or groups): the fold scales the float32 scale, codes unchanged */
                int G = w->wk_group ? w->wk_group : shp[1], ng = (shp[1] + G - 1) / G;
                for (int r = 0; r < shp[0]; r++) {
                    for (int cc = 0; cc < shp[1]; cc++) {
                        float sc = w->wk_scale[(size_t)r * ng + cc / G], fs = sc * s;
                        size_t k = (size_t)r * shp[1] + cc;
                        double code = sc != 0.0f ? nearbyint((double)wd[k] / (double)sc) : 0.0;
                        scaled[k] = (float)(code * (double)fs);
                    }
                }
            } else {
                for (size_t k = 0; k < n; k++) scaled[k] = wd[k] * s;
            }
        }
        char name[200];
        name_fmt(name, sizeof name, "%s%s.weight", b.prefix, nm.lin[i]);
        if (b.err) { free(scaled); ws[i] = -1; continue; }
        ws[i] = scaled ? pdq_graph_const_owned(g, name, PDQ_TF32, 2, shp, scaled, st)
                       : pdq_graph_const(g, name, PDQ_TF32, 2, shp, wd, 0, st);
        if (ws[i] < 0) b.err = 1;
        else pdq_b_role(&b, ws[i], PDQ_ROLE_WEIGHT);
    }
    /* Biases (Qwen2's q/k/v, Llama's attention_bias / mlp_bias): FULLY_CONNECTED's third operand;
     * k's bias takes the k_proj scale fold with its weight. */
    int bs[PDQ_LIN_COUNT];
    float kfold = qk_scale;
    for (int i = 0; i < PDQ_LIN_COUNT; i++) {
        int shp[2];
        pdq_linear_shape(c, (pdq_linear_id)i, &shp[0], &shp[1]);
        int fold = i == PDQ_LIN_K && o->scale == PDQ_RT_SCALE_K_PROJ && !w->k_norm;
        char bname[128];
        name_fmt(bname, sizeof bname, "%s.bias", nm.lin[i]);
        bs[i] = !w->bias[i] ? -1 : fold ? pdq_b_scaled_const(&b, shp[0], w->bias[i], 0.0f, kfold, bname)
                              : pdq_b_const(&b, 1, shp, w->bias[i], 0, "%s", bname);
        if (bs[i] >= 0) pdq_b_role(&b, bs[i], PDQ_ROLE_BIAS);
    }
    /* the block's norms: Llama's two pre-norms, or Gemma's four (sandwich: each branch's output
     * normed before its residual add), named as HF names them */
    int sandwich = pdq_family_of(c)->block == PDQ_BLOCK_SANDWICH;
    char gn[4][128];
    static const pdq_role_kind gk[4] = {PDQ_ROLE_ATTN_NORM, PDQ_ROLE_FFN_NORM, PDQ_ROLE_POST_ATTN_NORM,
                                        PDQ_ROLE_POST_FFN_NORM};
    for (int i = 0; i < 4; i++) name_fmt(gn[i], sizeof gn[i], "%s.weight", nm.norm[gk[i]]);
    int g_in = pdq_b_gamma(&b, c, D, w->attn_norm, 1.0f, PDQ_ROLE_ATTN_NORM, gn[0]);
    int g_post = pdq_b_gamma(&b, c, D, w->ffn_norm, 1.0f, PDQ_ROLE_FFN_NORM, gn[1]);
    int g_attn_out = sandwich ? pdq_b_gamma(&b, c, D, w->post_attn_norm, 1.0f, PDQ_ROLE_POST_ATTN_NORM, gn[2]) : -1;
    int g_ffn_out = sandwich ? pdq_b_gamma(&b, c, D, w->post_ffn_norm, 1.0f, PDQ_ROLE_POST_FFN_NORM, gn[3]) : -1;
    if (o->scale == PDQ_RT_SCALE_LOGITS) {
        int one[1] = {1};
        l.scale = pdq_b_const(&b, 1, one, &qk_scale, 1, "%s.scale", l.nm->attn);
    }

    pdq_op rms;
    memset(&rms, 0, sizeof rms);
    rms.opt.rms.epsilon = c->rms_norm_eps;
    pdq_op fc;
    memset(&fc, 0, sizeof fc);
    fc.opt.fc.keep_num_dims = 1;
    int in2[2] = {x, g_in};
    int h1 = pdq_b_op(&b, PDQ_OP_RMS_NORM, in2, 2, &rms, "%s.out", nm.norm[PDQ_ROLE_ATTN_NORM]);
    int q = linear(&b, &nm, &fc, h1, ws, bs, PDQ_LIN_Q);
    int k = linear(&b, &nm, &fc, h1, ws, bs, PDQ_LIN_K);
    int v = linear(&b, &nm, &fc, h1, ws, bs, PDQ_LIN_V);
    int new_k = -1, new_v = -1;
    int att = o->layout == PDQ_RT_LAYOUT_UNROLLED ? attn_unrolled(&l, q, k, v, &new_k, &new_v)
                                                  : attn_batched(&l, q, k, v, &new_k, &new_v);
    int ao = linear(&b, &nm, &fc, att, ws, bs, PDQ_LIN_O);
    if (sandwich) {
        int ina[2] = {ao, g_attn_out};
        ao = pdq_b_op(&b, PDQ_OP_RMS_NORM, ina, 2, &rms, "%s.out", nm.norm[PDQ_ROLE_POST_ATTN_NORM]);
    }
    int h = pdq_b_op2(&b, PDQ_OP_ADD, x, ao, "attn_residual");
    int in3[2] = {h, g_post};
    int h2 = pdq_b_op(&b, PDQ_OP_RMS_NORM, in3, 2, &rms, "%s.out", nm.norm[PDQ_ROLE_FFN_NORM]);
    int gt = linear(&b, &nm, &fc, h2, ws, bs, PDQ_LIN_GATE);
    int act;
    if (c->act == PDQ_ACT_GELU_TANH) {
        pdq_op ge;
        memset(&ge, 0, sizeof ge);
        ge.opt.gelu.approximate = 1;
        act = pdq_b_op(&b, PDQ_OP_GELU, &gt, 1, &ge, "%s.act_fn.out", nm.mlp);
    } else {
        int sg = pdq_b_op1(&b, PDQ_OP_LOGISTIC, gt, "%s.act_fn.sigmoid", nm.mlp);
        act = pdq_b_op2(&b, PDQ_OP_MUL, gt, sg, "%s.act_fn.out", nm.mlp);
    }
    int up = linear(&b, &nm, &fc, h2, ws, bs, PDQ_LIN_UP);
    int mm = pdq_b_op2(&b, PDQ_OP_MUL, act, up, "%s.mul", nm.mlp);
    int dn = linear(&b, &nm, &fc, mm, ws, bs, PDQ_LIN_DOWN);
    if (sandwich) {
        int inf[2] = {dn, g_ffn_out};
        dn = pdq_b_op(&b, PDQ_OP_RMS_NORM, inf, 2, &rms, "%s.out", nm.norm[PDQ_ROLE_POST_FFN_NORM]);
    }
    int y = pdq_b_op2(&b, PDQ_OP_ADD, h, dn, "out");
    (void)F;
    (void)H;
    pdq_b_output(&b, y);
    pdq_b_output(&b, new_k);
    pdq_b_output(&b, new_v);
    if (b.err) {
        pdq_graph_free(g);
        if (st && st->code == PDQ_OK) pdq_fail(st, PDQ_ERR_ARG, "build layer %d failed", layer);
        return st ? st->code : PDQ_ERR_ARG;
    }
    if ((rc = pdq_graph_validate(g, st)) != PDQ_OK) { pdq_graph_free(g); return rc; }
    *out = g;
    return PDQ_OK;
}
