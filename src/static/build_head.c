/* The pieces outside the decoder layers as graphs too (embedding, final norm + lm_head), so the
 * observer and export steps treat them like the layers; Gemma's embedding scale (a MUL by the
 * float32 sqrt(hidden)) and final logit softcap (DIV, TANH, MUL: cap * tanh(x / cap), HF's order)
 * are ops of these graphs. */
#include <stdio.h>
#include <string.h>

#include "build_util.h"
#include "pdq/runtime.h"

static pdq_code finish(pdq_bld *b, int y, pdq_graph **out, pdq_status *st) {
    pdq_b_output(b, y);
    if (b->err) {
        if (st && st->code == PDQ_OK) pdq_fail(st, PDQ_ERR_ARG, "build %s failed", b->g->name);
        pdq_graph_free(b->g);
        return st ? st->code : PDQ_ERR_ARG;
    }
    *out = b->g;
    return PDQ_OK;
}

pdq_code pdq_build_embed(const pdq_model *m, int B, int T, pdq_graph **out, pdq_status *st) {
    const pdq_config *c = &m->cfg;
    if (B < 1 || T < 1) return pdq_fail(st, PDQ_ERR_ARG, "build embed: batch %d length %d", B, T);
    pdq_graph *g;
    pdq_code rc = pdq_graph_new("token_embedding", &g, st);
    if (rc != PDQ_OK) return rc;
    pdq_bld b = {.g = g, .st = st};
    char e_name[160]; /* the family's embedding module: "model.embed_tokens" */
    pdq_family_role_module(c, PDQ_ROLE_EMBED, -1, e_name, sizeof e_name);
    int is[2] = {B, T};
    int ids = pdq_b_input(&b, PDQ_TI32, 2, is, "input_ids");
    int es[2] = {c->vocab_size, c->hidden_size};
    int e = pdq_b_role(&b, pdq_b_const(&b, 2, es, m->embed, 0, "%s.weight", e_name), PDQ_ROLE_EMBED);
    pdq_op go;
    memset(&go, 0, sizeof go);
    go.opt.gather.axis = 0;
    int in[2] = {e, ids};
    int y = pdq_b_op(&b, PDQ_OP_GATHER, in, 2, &go, "%s.out", e_name);
    if (c->embed_scale != 0.0f) {
        int one[1] = {1};
        int s = pdq_b_const(&b, 1, one, &c->embed_scale, 1, "%s.scale", e_name);
        y = pdq_b_op2(&b, PDQ_OP_MUL, y, s, "%s.scaled", e_name);
    }
    return finish(&b, y, out, st);
}

pdq_code pdq_build_head(const pdq_model *m, int B, int T, pdq_graph **out, pdq_status *st) {
    const pdq_config *c = &m->cfg;
    if (B < 1 || T < 1) return pdq_fail(st, PDQ_ERR_ARG, "build head: batch %d length %d", B, T);
    pdq_graph *g;
    pdq_code rc = pdq_graph_new("lm_head", &g, st);
    if (rc != PDQ_OK) return rc;
    pdq_bld b = {.g = g, .st = st};
    char n_name[160], h_name[160], gname[200]; /* the family's "model.norm", "lm_head" */
    pdq_family_role_module(c, PDQ_ROLE_FINAL_NORM, -1, n_name, sizeof n_name);
    pdq_family_role_module(c, PDQ_ROLE_LM_HEAD, -1, h_name, sizeof h_name);
    snprintf(gname, sizeof gname, "%s.weight", n_name);
    int hs[3] = {B, T, c->hidden_size};
    int x = pdq_b_input(&b, PDQ_TF32, 3, hs, "%s.input", n_name);
    int gamma = pdq_b_gamma(&b, c, c->hidden_size, m->norm, 1.0f, PDQ_ROLE_FINAL_NORM, gname);
    int ws[2] = {c->vocab_size, c->hidden_size};
    int w = pdq_b_role(&b, pdq_b_const(&b, 2, ws, m->lm_head, 0, "%s.weight", h_name), PDQ_ROLE_LM_HEAD);
    pdq_op rms;
    memset(&rms, 0, sizeof rms);
    rms.opt.rms.epsilon = c->rms_norm_eps;
    int in[2] = {x, gamma};
    int h = pdq_b_op(&b, PDQ_OP_RMS_NORM, in, 2, &rms, "%s.out", n_name);
    pdq_op fc;
    memset(&fc, 0, sizeof fc);
    fc.opt.fc.keep_num_dims = 1;
    int in2[2] = {h, w};
    int y = pdq_b_op(&b, PDQ_OP_FULLY_CONNECTED, in2, 2, &fc, "%s.out", h_name);
    if (c->final_softcap != 0.0f) {
        int one[1] = {1};
        int cap = pdq_b_const(&b, 1, one, &c->final_softcap, 1, "%s.softcap", h_name);
        y = pdq_b_op2(&b, PDQ_OP_DIV, y, cap, "%s.softcap_div", h_name);
        y = pdq_b_op1(&b, PDQ_OP_TANH, y, "%s.softcap_tanh", h_name);
        y = pdq_b_op2(&b, PDQ_OP_MUL, y, cap, "%s.softcap_out", h_name);
    }
    return finish(&b, y, out, st);
}
