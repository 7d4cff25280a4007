/* Layer-by-layer quantization of a whole model.
 *
 * GPTQ: the embedding is quantized first (so calibration sees it), the layer-0 inputs of every
 * calibration window are cached, then per layer the linears are quantized in four sequential
 * groups -- q/k/v (one input), o, gate/up (one input), down -- each group's Hessian collected by
 * running the layer (with the earlier groups already quantized) over all windows, each pass only
 * as far as the group's input (pdq_model_layer_inputs); finally the
 * fully quantized layer turns the cache into the next layer's inputs. lm_head last (RTN, or GPTQ
 * on the final-norm outputs). RTN needs no calibration. Weights are replaced in place by their
 * dequantized values; codes/grids/losses go to pdq_qmodel. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pdq/progress.h"
#include "pdq/quant.h"
#include "model/load_roles.h"
#include "quant/calib_split.h"

void pdq_quant_opts_default(pdq_quant_opts *o, int bits) {
    memset(o, 0, sizeof *o);
    o->method = PDQ_QM_GPTQ;
    pdq_gptq_opts_default(&o->gptq, bits);
    o->embed_bits = 8;
    o->lm_head_bits = 8;
    o->nsamples = 128;
    o->seq_len = 2048;
}

void pdq_qmodel_free(pdq_qmodel *q) {
    for (int i = 0; i < q->n; i++) {
        pdq_qresult_free(&q->mods[i].r);
        free(q->mods[i].qweight);
    }
    free(q->mods);
    memset(q, 0, sizeof *q);
}

static pdq_qmodule *add_module(pdq_qmodel *q, const char *name, pdq_status *st) {
    if (q->n == q->cap) {
        int cap = q->cap ? q->cap * 2 : 32;
        pdq_qmodule *nm = realloc(q->mods, (size_t)cap * sizeof *nm);
        if (!nm) { pdq_fail(st, PDQ_ERR_NOMEM, "out of memory"); return NULL; }
        q->mods = nm;
        q->cap = cap;
    }
    pdq_qmodule *m = &q->mods[q->n++];
    memset(m, 0, sizeof *m);
    snprintf(m->name, sizeof m->name, "%s", name);
    return m;
}

/* Stores a result: the weight takes the dequantized values; the module keeps grids and the codes
 * as the checkpoint stores them (4-bit ones packed: the whole model's codes stay small). */
static pdq_code commit(pdq_qmodule *mod, pdq_qresult *r, float *w, const pdq_qscheme *s, int actorder,
                       double secs, pdq_status *st) {
    size_t rows = (size_t)r->rows, cols = (size_t)r->cols;
    memcpy(w, r->deq, rows * cols * sizeof(float));
    free(r->deq);
    r->deq = NULL;
    if (s->bits <= 4) {
        size_t pc = (cols + 1) / 2;
        uint8_t *p = malloc(rows * pc + 1);
        if (!p) { pdq_qresult_free(r); return pdq_fail(st, PDQ_ERR_NOMEM, "%s: out of memory packing codes", mod->name); }
        for (size_t rr = 0; rr < rows; rr++) pdq_pack4(r->codes + rr * cols, cols, p + rr * pc);
        free(r->codes);
        mod->qweight = p;
    } else {
        mod->qweight = r->codes;
    }
    r->codes = NULL;
    mod->r = *r;
    mod->bits = s->bits;
    mod->group = s->group;
    mod->sym = s->sym;
    mod->actorder = actorder;
    mod->seconds = secs;
    return PDQ_OK;
}

/* Per-row (or per-group) k_proj scales on the model (pdq_layer.wk_scale), so a k_proj scale fold
 * in the static graphs scales the float32 scales instead of the dequantized weights. Act-order
 * groups keep none (the fold then scales the weights). */
static pdq_code keep_k_scales(pdq_model *m, const pdq_qmodel *q, pdq_status *st) {
    for (int i = 0; i < q->n; i++) {
        const pdq_qresult *r = &q->mods[i].r;
        int l = m->cfg.n_layers;
        char nm[160];
        while (l-- > 0) {
            pdq_linear_module(&m->cfg, l, PDQ_LIN_K, nm, sizeof nm);
            if (!strcmp(nm, q->mods[i].name)) break;
        }
        if (l < 0 || !r->scale) continue;
        int G = pdq_gidx_group(r->g_idx, r->cols, r->ngroups);
        if (!G) continue;
        float *s = malloc(sizeof(float) * (size_t)r->rows * r->ngroups);
        if (!s) return pdq_fail(st, PDQ_ERR_NOMEM, "k_proj scales");
        memcpy(s, r->scale, sizeof(float) * (size_t)r->rows * r->ngroups);
        free(m->layers[l].wk_scale);
        m->layers[l].wk_scale = s;
        m->layers[l].wk_group = r->ngroups > 1 ? G : 0;
    }
    return PDQ_OK;
}

static void linear_full_name(const pdq_config *c, char *buf, size_t n, int layer, int id) {
    pdq_linear_module(c, layer, (pdq_linear_id)id, buf, n);
}

/* Scheme of every quantized tensor is checked before any work starts. */
static pdq_code check_opts(const pdq_model *m, pdq_quant_opts *o, pdq_status *st) {
    const pdq_config *c = &m->cfg;
    char name[128];
    pdq_code frc = pdq_family_require(c, PDQ_PATH_QUANTIZE, st);
    if (frc) return frc;
    for (int i = 0; i < o->n_overrides; i++) o->overrides[i].used = 0;
    for (int l = 0; l < c->n_layers; l++)
        for (int i = 0; i < PDQ_LIN_COUNT; i++) {
            int out, in;
            pdq_linear_shape(c, (pdq_linear_id)i, &out, &in);
            linear_full_name(c, name, sizeof name, l, i);
            pdq_qscheme s = o->gptq.scheme;
            s.bits = pdq_qoverride_bits(o->overrides, o->n_overrides, name, s.bits);
            pdq_code rc = pdq_qscheme_check(&s, out, in, name, st);
            if (rc) return rc;
        }
    for (int i = 0; i < o->n_overrides; i++)
        if (!o->overrides[i].used) {
            char pre[128], down[160];
            pdq_family_layer_prefix(c, 0, pre, sizeof pre);
            pdq_linear_module(c, 0, PDQ_LIN_DOWN, down, sizeof down);
            const char *local = strncmp(down, pre, strlen(pre)) == 0 ? down + strlen(pre) : down;
            const char *last = strrchr(down, '.') ? strrchr(down, '.') + 1 : down;
            return pdq_fail(st, PDQ_ERR_ARG, "override '%s=%d' matches no decoder linear (try e.g. %s, %s or %s)",
                            o->overrides[i].name, o->overrides[i].bits, last, local, down);
        }
    if (o->embed_bits && (o->embed_bits < 2 || o->embed_bits > 8))
        return pdq_fail(st, PDQ_ERR_ARG, "embedding bits %d out of range (2..8, or none)", o->embed_bits);
    if (o->lm_head_bits && (o->lm_head_bits < 2 || o->lm_head_bits > 8))
        return pdq_fail(st, PDQ_ERR_ARG, "lm_head bits %d out of range (2..8, or none)", o->lm_head_bits);
    if (c->tie_word_embeddings) {
        if (o->embed_bits != o->lm_head_bits)
            return pdq_fail(st, PDQ_ERR_ARG,
                            "tied embeddings: lm_head and the embedding are one tensor, so --embed-bits and "
                            "--lm-head-bits must be equal (got %d and %d; 0 = none)", o->embed_bits, o->lm_head_bits);
        if (o->lm_head_gptq)
            return pdq_fail(st, PDQ_ERR_ARG, "tied embeddings: GPTQ on lm_head would change the embedding; use RTN");
    }
    if (o->lm_head_gptq && o->lm_head_bits) {
        pdq_qscheme s = o->gptq.scheme;
        s.bits = o->lm_head_bits;
        pdq_code rc = pdq_qscheme_check(&s, c->vocab_size, c->hidden_size, "lm_head", st);
        if (rc) return rc;
    }
    return PDQ_OK;
}

static pdq_code rtn_table(pdq_qmodel *q, const char *name, float *w, int rows, int cols, int bits, pdq_qprof *prof,
                          pdq_status *st) {
    pdq_qscheme s;
    pdq_qscheme_default(&s, bits);
    double t0 = pdq_now();
    pdq_qresult r;
    pdq_code rc = pdq_rtn_result(&s, w, rows, cols, NULL, name, &r, st);
    if (rc) return rc;
    pdq_qmodule *mod = add_module(q, name, st);
    if (!mod) { pdq_qresult_free(&r); return st ? st->code : PDQ_ERR_NOMEM; }
    rc = commit(mod, &r, w, &s, 0, pdq_now() - t0, st);
    pdq_qprof_add(prof, PDQ_QP_RTN, pdq_now() - t0, 0);
    return rc;
}

typedef struct {
    pdq_hessian *h;
    pdq_linear_id which;
    pdq_status *st;
    pdq_code rc;
} hook_ctx;

static void hessian_hook(void *ctx, int layer, pdq_linear_id which, const float *x, int rows, int cols) {
    hook_ctx *c = ctx;
    (void)layer;
    if (which != c->which || c->rc) return;
    if (cols != c->h->n) { c->rc = pdq_fail(c->st, PDQ_ERR_SHAPE, "hook: %d columns, Hessian has %d", cols, c->h->n); return; }
    c->rc = pdq_hessian_add(c->h, x, rows, c->st);
}

typedef struct {
    pdq_progress p;
    char label[64];
    long done;
} progress_t;

static void step(progress_t *pg, long n) {
    pg->done += n;
    pdq_progress_update(&pg->p, pg->done);
}

/* Four Hessians at once (inputs of q/k/v, o, gate/up, down), for float-model calibration. */
typedef struct {
    pdq_hessian h[4];
    pdq_status *st;
    pdq_code rc;
} hook4_ctx;

static int group_of(pdq_linear_id which) {
    return which == PDQ_LIN_Q ? 0 : which == PDQ_LIN_O ? 1 : which == PDQ_LIN_GATE ? 2 : 3;
}

static void hessian4_hook(void *ctx, int layer, pdq_linear_id which, const float *x, int rows, int cols) {
    hook4_ctx *c = ctx;
    (void)layer;
    if (c->rc) return;
    pdq_hessian *h = &c->h[group_of(which)];
    if (cols != h->n) { c->rc = pdq_fail(c->st, PDQ_ERR_SHAPE, "hook: %d columns, Hessian has %d", cols, h->n); return; }
    c->rc = pdq_hessian_add(h, x, rows, c->st);
}

/* --gptq-orig-inputs (TICO's gptq_use_orig_model_inference): every linear's Hessian comes from
 * the float model's activations, not from a model whose earlier linears are already quantized.
 * One float pass per layer collects the four Hessians and turns x into the next layer's float
 * inputs; then the seven linears are quantized. */
typedef struct {
    pdq_model *m;
    int l, T;
    float *x, *tmp;
    pdq_linear_id which;
    progress_t *pg;
    pdq_qprof *prof;
} window_ctx;

/* A calibration forward began at t0 with h0 Hessian seconds counted: its own time (the Hessians
 * its hooks added are theirs) and FLOPs. */
static void forward_done(pdq_qprof *prof, double t0, double h0, const pdq_config *c, int T, pdq_linear_id stop) {
    if (prof)
        pdq_qprof_add(prof, PDQ_QP_FORWARD, pdq_now() - t0 - (prof->seconds[PDQ_QP_HESSIAN] - h0),
                      pdq_layer_forward_flops(c, T, stop));
}

static double hessian_seconds(const pdq_qprof *prof) { return prof ? prof->seconds[PDQ_QP_HESSIAN] : 0; }

static pdq_code orig_window(void *ctx, int w, pdq_hessian *hs, pdq_status *st) {
    window_ctx *c = ctx;
    hook4_ctx hc;
    memcpy(hc.h, hs, sizeof hc.h);
    hc.st = st;
    hc.rc = PDQ_OK;
    double t0 = pdq_now(), h0 = hessian_seconds(c->prof);
    pdq_code rc = pdq_model_layer_forward(c->m, c->l, &c->m->layers[c->l], NULL, 1, c->T,
                                          c->x + (size_t)w * c->T * c->m->cfg.hidden_size, NULL, NULL, hessian4_hook, &hc, st);
    forward_done(c->prof, t0, h0, &c->m->cfg, c->T, PDQ_LIN_COUNT);
    memcpy(hs, hc.h, sizeof hc.h); /* the row counts */
    step(c->pg, 5);
    return rc ? rc : hc.rc;
}

/* GPTQ of the linears ids[n] of layer l (Hessian of each: hs[hidx[k]]), each on its owner rank,
 * then every result on every rank, committed in the order given. */
static pdq_code gptq_owned(pdq_model *m, const pdq_quant_opts *o, pdq_calib_split *sp, int l, const pdq_linear_id *ids,
                           int n, float *const *H, const int *hidx, double tcal, pdq_qmodel *q, progress_t *pg,
                           pdq_status *st) {
    const pdq_config *c = &m->cfg;
    pdq_layer *L = &m->layers[l];
    pdq_qresult r[PDQ_LIN_COUNT];
    int owner[PDQ_LIN_COUNT];
    double cost[PDQ_LIN_COUNT] = {0}, secs[PDQ_LIN_COUNT] = {0};
    pdq_gptq_opts go[PDQ_LIN_COUNT];
    char name[128];
    memset(r, 0, sizeof r);
    for (int k = 0; k < n; k++) {
        int out, in;
        pdq_linear_shape(c, ids[k], &out, &in);
        cost[k] = pdq_calib_split_cost(out, in);
        linear_full_name(c, name, sizeof name, l, ids[k]);
        go[k] = o->gptq;
        go[k].scheme.bits = pdq_qoverride_bits(o->overrides, o->n_overrides, name, go[k].scheme.bits);
    }
    pdq_calib_split_owners(sp, cost, n, owner);
    /* linears one after another on one H (q/k/v, gate/up) share its permutation and factor */
    pdq_gptq_hcache hcache = {0};
    for (int k = 0; k < n; k++) go[k].hcache = &hcache;
    pdq_code rc = PDQ_OK;
    for (int k = 0; !rc && k < n; k++) {
        if (owner[k] != sp->rank) continue;
        int out, in;
        pdq_linear_shape(c, ids[k], &out, &in);
        linear_full_name(c, name, sizeof name, l, ids[k]);
        snprintf(pg->label, sizeof pg->label, "layer %d/%d %s", l + 1, c->n_layers, pdq_linear_name(ids[k]));
        double t1 = pdq_now();
        rc = pdq_gptq(&go[k], L->w[ids[k]], out, in, H[hidx[k]], name, &r[k], st);
        secs[k] = pdq_now() - t1;
    }
    pdq_gptq_hcache_free(&hcache);
    for (int k = 0; !rc && k < n; k++) {
        double t1 = pdq_now();
        if ((rc = pdq_calib_split_share(sp, &r[k], owner[k], st))) break;
        if (owner[k] != sp->rank) secs[k] = pdq_now() - t1;
        linear_full_name(c, name, sizeof name, l, ids[k]);
        pdq_qmodule *mod = add_module(q, name, st);
        if (!mod) { rc = PDQ_ERR_NOMEM; break; }
        if ((rc = commit(mod, &r[k], L->w[ids[k]], &go[k].scheme, go[k].actorder, tcal + secs[k], st))) break;
        memset(&r[k], 0, sizeof r[k]);
        step(pg, sp->ns);
    }
    for (int k = 0; k < n; k++) pdq_qresult_free(&r[k]);
    return rc;
}

static pdq_code gptq_layers_orig(pdq_model *m, const pdq_quant_opts *o, pdq_calib_split *sp, float *x, int T,
                                 pdq_qmodel *q, progress_t *pg, pdq_status *st) {
    const pdq_config *c = &m->cfg;
    pdq_code rc = PDQ_OK;
    for (int l = 0; !rc && l < c->n_layers; l++) {
        if ((rc = pdq_model_layer_acquire(m, l, st))) break;
        hook4_ctx hc;
        memset(&hc, 0, sizeof hc);
        hc.st = st;
        static const pdq_linear_id first[4] = {PDQ_LIN_Q, PDQ_LIN_O, PDQ_LIN_GATE, PDQ_LIN_DOWN};
        for (int g = 0; !rc && g < 4; g++) {
            int out, in;
            pdq_linear_shape(c, first[g], &out, &in);
            rc = pdq_hessian_init(&hc.h[g], in, st);
            hc.h[g].prof = o->prof;
        }
        snprintf(pg->label, sizeof pg->label, "layer %d/%d float pass", l + 1, c->n_layers);
        double t0 = pdq_now();
        window_ctx wc = {m, l, T, x, NULL, PDQ_LIN_COUNT, pg, o->prof};
        pdq_model_blas_serial(m, 1); /* the forwards' heads and the Hessians' bands on the pool */
        for (int g = 0; g < 4; g++) hc.h[g].pool = m->pool;
        if (!rc) rc = pdq_calib_split_hessians(sp, hc.h, 4, orig_window, &wc, st);
        for (int g = 0; g < 4; g++) hc.h[g].pool = NULL;
        pdq_model_blas_serial(m, 0);
        double tcal = (pdq_now() - t0) / PDQ_LIN_COUNT;
        float *H[4] = {NULL, NULL, NULL, NULL};
        for (int g = 0; !rc && g < 4; g++) {
            int n = hc.h[g].n;
            if (!(H[g] = malloc((size_t)n * n * sizeof(float)))) rc = pdq_fail(st, PDQ_ERR_NOMEM, "out of memory");
            else pdq_hessian_get(&hc.h[g], H[g]);
        }
        pdq_linear_id ids[PDQ_LIN_COUNT];
        int hidx[PDQ_LIN_COUNT];
        for (int i = 0; i < PDQ_LIN_COUNT; i++) {
            ids[i] = (pdq_linear_id)i;
            hidx[i] = group_of(i == PDQ_LIN_K || i == PDQ_LIN_V ? PDQ_LIN_Q : i == PDQ_LIN_UP ? PDQ_LIN_GATE : (pdq_linear_id)i);
        }
        if (!rc) rc = gptq_owned(m, o, sp, l, ids, PDQ_LIN_COUNT, H, hidx, tcal, q, pg, st);
        for (int g = 0; g < 4; g++) {
            free(H[g]);
            pdq_hessian_free(&hc.h[g]);
        }
        pdq_model_layer_release(m, l);
    }
    return rc;
}

/* GPTQ of the decoder layers on cached inputs x [ns*T*D]. */
static pdq_code group_window(void *ctx, int w, pdq_hessian *hs, pdq_status *st) {
    window_ctx *c = ctx;
    size_t TD = (size_t)c->T * c->m->cfg.hidden_size;
    double t0 = pdq_now(), h0 = hessian_seconds(c->prof);
    memcpy(c->tmp, c->x + (size_t)w * TD, TD * sizeof(float));
    hook_ctx hc = {hs, c->which, st, PDQ_OK};
    /* only as far as the group's input: the rest of the layer would be thrown away */
    pdq_code rc = pdq_model_layer_inputs(c->m, c->l, &c->m->layers[c->l], c->T, c->tmp, c->which, hessian_hook, &hc, st);
    forward_done(c->prof, t0, h0, &c->m->cfg, c->T, c->which);
    step(c->pg, 1);
    return rc ? rc : hc.rc;
}

static pdq_code gptq_layers(pdq_model *m, const pdq_quant_opts *o, pdq_calib_split *sp, float *x, int T,
                            pdq_qmodel *q, progress_t *pg, pdq_status *st) {
    const pdq_config *c = &m->cfg;
    int D = c->hidden_size;
    static const pdq_linear_id groups[4][3] = {
        {PDQ_LIN_Q, PDQ_LIN_K, PDQ_LIN_V}, {PDQ_LIN_O, PDQ_LIN_COUNT, PDQ_LIN_COUNT},
        {PDQ_LIN_GATE, PDQ_LIN_UP, PDQ_LIN_COUNT}, {PDQ_LIN_DOWN, PDQ_LIN_COUNT, PDQ_LIN_COUNT}};
    float *tmp = malloc((size_t)T * D * sizeof(float));
    /* one Hessian and one H per input size, kept from layer to layer: fresh n x n buffers per group
     * cost a page fault per 4 KiB on first touch */
    pdq_hessian hpool[4];
    float *Hpool[4] = {NULL, NULL, NULL, NULL};
    int npool = 0;
    memset(hpool, 0, sizeof hpool);
    pdq_code rc = tmp ? PDQ_OK : pdq_fail(st, PDQ_ERR_NOMEM, "out of memory");
    for (int l = 0; !rc && l < c->n_layers; l++) {
        pdq_layer *L = &m->layers[l];
        if ((rc = pdq_model_layer_acquire(m, l, st))) break;
        for (int g = 0; !rc && g < 4; g++) {
            int out, in;
            pdq_linear_shape(c, groups[g][0], &out, &in);
            int pi = 0;
            while (pi < npool && hpool[pi].n != in) pi++;
            if (pi == npool) {
                if ((rc = pdq_hessian_init(&hpool[pi], in, st))) break;
                npool++;
                hpool[pi].prof = o->prof;
                if (!(Hpool[pi] = malloc((size_t)in * in * sizeof(float)))) {
                    rc = pdq_fail(st, PDQ_ERR_NOMEM, "out of memory");
                    break;
                }
            } else {
                pdq_hessian_reset(&hpool[pi]);
            }
            pdq_hessian *hs = &hpool[pi];
            float *H = Hpool[pi];
            snprintf(pg->label, sizeof pg->label, "layer %d/%d %s", l + 1, c->n_layers, pdq_linear_name(groups[g][0]));
            double t0 = pdq_now();
            window_ctx wc = {m, l, T, x, tmp, groups[g][0], pg, o->prof};
            /* the forwards' heads and the Hessian's bands on the pool; GPTQ gets BLAS's threads */
            pdq_model_blas_serial(m, 1);
            hs->pool = m->pool;
            rc = pdq_calib_split_hessians(sp, hs, 1, group_window, &wc, st);
            hs->pool = NULL;
            pdq_model_blas_serial(m, 0);
            if (!rc) pdq_hessian_get(hs, H);
            if (rc) { pdq_wrap(st, "layer %d calibration", l); break; }
            int nlin = 0;
            while (nlin < 3 && groups[g][nlin] != PDQ_LIN_COUNT) nlin++;
            double tcal = (pdq_now() - t0) / nlin;
            static const int hidx[3] = {0, 0, 0};
            rc = gptq_owned(m, o, sp, l, groups[g], nlin, &H, hidx, tcal, q, pg, st);
        }
        /* the quantized layer produces the next layer's inputs */
        snprintf(pg->label, sizeof pg->label, "layer %d/%d output", l + 1, c->n_layers);
        pdq_model_blas_serial(m, 1);
        for (int s = 0; !rc && s < sp->nlocal; s++) {
            double t0 = pdq_now();
            rc = pdq_model_layer_forward(m, l, L, NULL, 1, T, x + (size_t)s * T * D, NULL, NULL, NULL, NULL, st);
            forward_done(o->prof, t0, hessian_seconds(o->prof), c, T, PDQ_LIN_COUNT);
            step(pg, 1);
        }
        pdq_model_blas_serial(m, 0);
        pdq_model_layer_release(m, l);
    }
    free(tmp);
    for (int i = 0; i < npool; i++) {
        pdq_hessian_free(&hpool[i]);
        free(Hpool[i]);
    }
    return rc;
}

/* GPTQ of lm_head on the final-norm outputs of the last layer. */
static pdq_code head_window(void *ctx, int w, pdq_hessian *hs, pdq_status *st) {
    window_ctx *c = ctx;
    const pdq_config *cf = &c->m->cfg;
    size_t TD = (size_t)c->T * cf->hidden_size;
    pdq_rmsnorm(c->tmp, c->x + (size_t)w * TD, c->m->norm, c->T, cf->hidden_size, cf->rms_norm_eps);
    return pdq_hessian_add(hs, c->tmp, c->T, st);
}

static pdq_code gptq_head(pdq_model *m, const pdq_quant_opts *o, pdq_calib_split *sp, float *x, int T, pdq_qmodel *q,
                          progress_t *pg, pdq_status *st) {
    const pdq_config *c = &m->cfg;
    int D = c->hidden_size, V = c->vocab_size;
    pdq_hessian hs;
    pdq_code rc = pdq_hessian_init(&hs, D, st);
    if (rc) return rc;
    hs.prof = o->prof;
    float *tmp = malloc((size_t)T * D * sizeof(float)), *H = malloc((size_t)D * D * sizeof(float));
    if (!tmp || !H) rc = pdq_fail(st, PDQ_ERR_NOMEM, "out of memory");
    double t0 = pdq_now();
    window_ctx wc = {m, 0, T, x, tmp, PDQ_LIN_COUNT, pg, o->prof};
    if (!rc) rc = pdq_calib_split_hessians(sp, &hs, 1, head_window, &wc, st);
    if (!rc) rc = pdq_model_lm_head_acquire(m, st);
    if (!rc) {
        pdq_hessian_get(&hs, H);
        pdq_gptq_opts go = o->gptq;
        go.scheme.bits = o->lm_head_bits;
        pdq_qresult r;
        memset(&r, 0, sizeof r);
        if (sp->rank == 0) rc = pdq_gptq(&go, m->lm_head, V, D, H, "lm_head", &r, st);
        if (!rc) rc = pdq_calib_split_share(sp, &r, 0, st);
        if (!rc) {
            char nm[160];
            pdq_model_role_module(&m->cfg, PDQ_ROLE_LM_HEAD, -1, nm, sizeof nm);
            pdq_qmodule *mod = add_module(q, nm, st);
            if (!mod) { pdq_qresult_free(&r); rc = PDQ_ERR_NOMEM; }
            else rc = commit(mod, &r, m->lm_head, &go.scheme, go.actorder, pdq_now() - t0, st);
        }
        pdq_model_lm_head_release(m);
    }
    pdq_hessian_free(&hs);
    free(tmp);
    free(H);
    return rc;
}

pdq_code pdq_quant_opts_check(const pdq_model *m, pdq_quant_opts *o, pdq_status *st) { return check_opts(m, o, st); }

pdq_code pdq_quantize_model(pdq_model *m, const pdq_quant_opts *opts, const int32_t *calib, int ns, int T,
                            pdq_qmodel *q, pdq_status *st) {
    memset(q, 0, sizeof *q);
    pdq_quant_opts o = *opts;
    o.gptq.prof = o.prof;
    o.gptq.pool = m->pool;
    q->opts = o;
    q->opts.prof = q->opts.gptq.prof = NULL; /* the caller's, not the result's */
    q->opts.gptq.pool = NULL;
    const pdq_config *c = &m->cfg;
    pdq_code rc = check_opts(m, &o, st);
    if (rc) return rc;
    int gptq = o.method == PDQ_QM_GPTQ;
    if (gptq && (!calib || ns <= 0 || T <= 0))
        return pdq_fail(st, PDQ_ERR_ARG, "GPTQ needs calibration windows");
    if (gptq && T > c->max_position_embeddings)
        return pdq_fail(st, PDQ_ERR_ARG, "calibration length %d exceeds max_position_embeddings %d", T,
                        c->max_position_embeddings);
    q->nsamples = gptq ? ns : 0;
    q->seq_len = gptq ? T : 0;
    double t_start = pdq_now();
    int D = c->hidden_size, V = c->vocab_size;
    char name[128];

    /* embedding (and lm_head when tied: one tensor) first, so calibration sees it */
    if ((o.embed_bits || gptq) && (rc = pdq_model_embed_acquire(m, st))) goto fail;
    pdq_model_role_module(c, PDQ_ROLE_EMBED, -1, name, sizeof name);
    if (o.embed_bits && (rc = rtn_table(q, name, m->embed, V, D, o.embed_bits, o.prof, st))) goto fail;

    if (!gptq) {
        pdq_model_embed_release(m);
        for (int l = 0; l < c->n_layers; l++) {
            if ((rc = pdq_model_layer_acquire(m, l, st))) goto fail;
            for (int i = 0; i < PDQ_LIN_COUNT; i++) {
                int out, in;
                pdq_linear_shape(c, (pdq_linear_id)i, &out, &in);
                linear_full_name(c, name, sizeof name, l, i);
                pdq_qscheme s = o.gptq.scheme;
                s.bits = pdq_qoverride_bits(o.overrides, o.n_overrides, name, s.bits);
                double t0 = pdq_now();
                pdq_qresult r;
                if ((rc = pdq_rtn_result(&s, m->layers[l].w[i], out, in, NULL, name, &r, st))) goto fail;
                pdq_qmodule *mod = add_module(q, name, st);
                if (!mod) { pdq_qresult_free(&r); rc = PDQ_ERR_NOMEM; goto fail; }
                if ((rc = commit(mod, &r, m->layers[l].w[i], &s, 0, pdq_now() - t0, st))) goto fail;
                pdq_qprof_add(o.prof, PDQ_QP_RTN, pdq_now() - t0, 0);
            }
            pdq_model_layer_release(m, l);
        }
    } else {
        /* this rank's windows only (all of them in one process) */
        pdq_calib_split sp;
        if ((rc = pdq_calib_split_init(&sp, o.dist, ns, o.calib_chunk, st))) goto fail;
        size_t nx = (size_t)sp.nlocal * T * D;
        float *x = malloc(nx * sizeof(float) + 1);
        if (!x) {
            pdq_calib_split_free(&sp);
            rc = pdq_fail(st, PDQ_ERR_NOMEM, "out of memory caching %d x %d activations", sp.nlocal, T);
            goto fail;
        }
        for (int s = 0; !rc && s < sp.nlocal; s++)
            rc = pdq_model_embed(m, T, calib + (size_t)sp.local[s] * T, x + (size_t)s * T * D, st);
        pdq_model_embed_release(m);
        progress_t pg;
        memset(&pg, 0, sizeof pg);
        long total = (long)c->n_layers * (5 * sp.nlocal + PDQ_LIN_COUNT * ns);
        pdq_progress_start(&pg.p, pg.label, total);
        if (sp.rank != 0) pg.p.enabled = 0; /* shown once, by rank 0 */
        if (!rc) rc = o.orig_inputs ? gptq_layers_orig(m, &o, &sp, x, T, q, &pg, st) : gptq_layers(m, &o, &sp, x, T, q, &pg, st);
        if (!rc && o.lm_head_bits && o.lm_head_gptq && !c->tie_word_embeddings) {
            snprintf(pg.label, sizeof pg.label, "lm_head");
            rc = gptq_head(m, &o, &sp, x, T, q, &pg, st);
        }
        pdq_progress_finish(&pg.p);
        q->comm_bytes = sp.bytes;
        q->comm_seconds = sp.comm_s;
        pdq_calib_split_free(&sp);
        free(x);
        if (rc) goto fail;
    }
    if (o.lm_head_bits && !o.lm_head_gptq && !c->tie_word_embeddings) {
        pdq_model_role_module(c, PDQ_ROLE_LM_HEAD, -1, name, sizeof name);
        if ((rc = pdq_model_lm_head_acquire(m, st)) ||
            (rc = rtn_table(q, name, m->lm_head, V, D, o.lm_head_bits, o.prof, st)))
            goto fail;
        pdq_model_lm_head_release(m);
    }
    if ((rc = keep_k_scales(m, q, st))) goto fail;
    q->seconds = pdq_now() - t_start;
    return PDQ_OK;
fail:
    pdq_qmodel_free(q);
    return rc;
}

void pdq_qmodel_print(const pdq_qmodel *q, void *file) {
    FILE *f = file;
    fprintf(f, "%-36s %4s %5s %14s %14s %8s %8s\n", "module", "bits", "group", "gptq loss", "rtn loss", "ratio", "time s");
    for (int i = 0; i < q->n; i++) {
        const pdq_qmodule *m = &q->mods[i];
        int has = q->opts.method == PDQ_QM_GPTQ && m->r.rtn_loss > 0;
        if (has)
            fprintf(f, "%-36s %4d %5d %14.6g %14.6g %8.3f %8.3f\n", m->name, m->bits, m->group, m->r.loss,
                    m->r.rtn_loss, m->r.loss / m->r.rtn_loss, m->seconds);
        else
            fprintf(f, "%-36s %4d %5d %14s %14s %8s %8.3f\n", m->name, m->bits, m->group, "-", "-", "-", m->seconds);
    }
    fprintf(f, "total %.2fs\n", q->seconds);
}
