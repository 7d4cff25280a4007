/* R1 and R2 (SpinQuant / QuaRot), with rows as x -> x Q:
 * R1, residual stream h -> h Q: the embedding and every reader of the residual (q/k/v/gate/up and
 * lm_head, W -> W Q) see rotated inputs; every writer (o/down, W -> Q^T W) writes rotated outputs.
 * RMSNorm commutes with Q once its weight is folded (rms(hQ) = rms(h)).
 * R2, per layer, inside attention: each kv head's values v_g -> v_g Q2 (W_v block -> Q2^T W_v
 * block); attention mixes value rows linearly, so each query head's output is rotated the same
 * way and o_proj's columns of that head take Q2 (W_o[:, head] -> W_o[:, head] Q2). K and RoPE are
 * untouched. Biases follow their outputs: o's and down's (written into the residual) take Q, v's
 * take Q2 per kv head; the others' outputs are not rotated. q/k head norms act on q and k, which
 * neither rotation changes. */
#include "layer_ops.h"

pdq_code pdq_r1_layer(pdq_layer *L, const pdq_config *c, const pdq_orth *q, pdq_status *st) {
    pdq_code rc = PDQ_OK;
    for (int i = 0; !rc && i < PDQ_LIN_COUNT; i++) {
        int out, in;
        pdq_linear_shape(c, (pdq_linear_id)i, &out, &in);
        if (i == PDQ_LIN_O || i == PDQ_LIN_DOWN) rc = pdq_orth_left_t(q, L->w[i], in, (size_t)in, st);
        else rc = pdq_orth_right(q, L->w[i], out, (size_t)in, st);
        if (!rc && L->bias[i] && (i == PDQ_LIN_O || i == PDQ_LIN_DOWN))
            rc = pdq_orth_right(q, L->bias[i], 1, (size_t)out, st);
    }
    return rc;
}

pdq_code pdq_rotate_r1(pdq_model *m, pdq_rot_kind kind, uint64_t seed, pdq_status *st) {
    const pdq_config *c = &m->cfg;
    int D = c->hidden_size, V = c->vocab_size;
    if (m->lazy_src) return pdq_fail(st, PDQ_ERR_ARG, "R1 needs an eagerly loaded model");
    for (int l = 0; l < c->n_layers; l++)
        if (!pdq_norm_is_unit(c, m->layers[l].attn_norm, D) || !pdq_norm_is_unit(c, m->layers[l].ffn_norm, D))
            return pdq_fail(st, PDQ_ERR_ARG, "R1: layer %d's norm weights are not folded (fold first)", l);
    if (!pdq_norm_is_unit(c, m->norm, D))
        return pdq_fail(st, PDQ_ERR_ARG, "R1: the final norm weight is not folded (fold first, untying a tied lm_head)");
    pdq_orth q;
    pdq_code rc = pdq_orth_make(&q, D, kind, seed, st);
    if (rc) return rc;
    rc = pdq_orth_right(&q, m->embed, V, (size_t)D, st);
    if (!rc && m->lm_head != m->embed) rc = pdq_orth_right(&q, m->lm_head, V, (size_t)D, st);
    for (int l = 0; !rc && l < c->n_layers; l++) rc = pdq_r1_layer(&m->layers[l], c, &q, st);
    pdq_orth_free(&q);
    return rc;
}

pdq_code pdq_r2_layer(pdq_layer *L, const pdq_config *c, int l, pdq_rot_kind kind, uint64_t seed,
                      struct pdq_pool *pool, int force_scalar, pdq_status *st) {
    int D = c->hidden_size, H = c->n_heads, KV = c->n_kv_heads, hd = c->head_dim;
    pdq_orth q;
    /* a different matrix per layer (SpinQuant learns one per layer) */
    pdq_code rc = pdq_orth_make(&q, hd, kind, seed + 0x100000001ull * (uint64_t)(l + 1), st);
    if (rc) return rc;
    q.pool = pool;
    q.force_scalar = force_scalar;
    for (int g = 0; !rc && g < KV; g++) {
        rc = pdq_orth_left_t(&q, L->w[PDQ_LIN_V] + (size_t)g * hd * D, D, (size_t)D, st);
        if (!rc && L->bias[PDQ_LIN_V]) rc = pdq_orth_right(&q, L->bias[PDQ_LIN_V] + (size_t)g * hd, 1, (size_t)hd, st);
    }
    /* o_proj [D, H*hd] is [D*H, hd]: every head's column block of every row, one right product */
    if (!rc) rc = pdq_orth_right(&q, L->w[PDQ_LIN_O], D * H, (size_t)hd, st);
    pdq_orth_free(&q);
    return rc;
}
