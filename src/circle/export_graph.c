/* IR graph -> Circle model: tensor i of the graph is Circle tensor i, one operator per op, with
 * the options TICO writes (NOTES §3): FC keep_num_dims and bias -1, masks 0 on STRIDED_SLICE,
 * AddOptions left at the schema default (pot_scale_int16 true, as TICO leaves it). A weight in
 * groups of columns gets a BlockwiseQuantization whose scale (FLOAT32) and zero point (UINT8)
 * tensors, [rows, groups], come after the graph's tensors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "circle/circle_defs.h"
#include "circle/export_gather.h"
#include "circle/op_circle.h"
#include "pdq/circle_export.h"

int8_t pdq_circle_type_of(pdq_tdtype dt);
int8_t pdq_circle_type_of(pdq_tdtype dt) {
    switch (dt) {
    case PDQ_TF32: return CIRCLE_TT_FLOAT32;
    case PDQ_TI32: return CIRCLE_TT_INT32;
    case PDQ_TI16: return CIRCLE_TT_INT16;
    case PDQ_TU8: return CIRCLE_TT_UINT8;
    case PDQ_TU4: return CIRCLE_TT_UINT4;
    case PDQ_TI64: return CIRCLE_TT_INT64;
    }
    return CIRCLE_TT_FLOAT32;
}

static pdq_code add_const_buffer(pdq_circle_model *m, const pdq_tensor *t, uint32_t *buf, pdq_status *st) {
    /* uint4 constants are packed as Circle stores them (pdq_pack4's layout). Constants on the same
     * memory (a tied embedding and lm_head) share one buffer, as TICO shares tied storage (NOTES.md
     * "Buffers"): the file holds the matrix once. */
    uint64_t len = (uint64_t)pdq_tensor_bytes(t);
    for (int32_t i = 1; len && i < m->n_buffers; i++)
        if (!m->buffers[i].owned && m->buffers[i].data == t->data && m->buffers[i].len == len) {
            *buf = (uint32_t)i;
            return PDQ_OK;
        }
    int32_t b = pdq_circle_add_buffer(m, t->data, len, 0, st);
    if (b < 0) return st ? st->code : PDQ_ERR_NOMEM;
    *buf = (uint32_t)b;
    return PDQ_OK;
}

/* The scale and zero point tensors of graph tensor t's groups, and its blockwise quantization. */
static pdq_code add_blockwise(pdq_circle_model *m, const pdq_tensor *t, int32_t id, pdq_status *st) {
    const pdq_qparams *q = t->q;
    int32_t shape[2] = {t->shape[0], (t->shape[1] + q->block - 1) / q->block};
    uint8_t *zp = malloc((size_t)q->n);
    if (!zp) return pdq_fail(st, PDQ_ERR_NOMEM, "circle export: zero points of %s", t->name);
    for (int i = 0; i < q->n; i++) zp[i] = (uint8_t)q->zero_point[i]; /* uint4 / uint8 codes: 0..255 */
    char nm[512];
    int32_t bs = pdq_circle_add_buffer(m, q->scale, sizeof(float) * (uint64_t)q->n, 1, st), ts = -1, tz = -1;
    int32_t bz = bs < 0 ? -1 : pdq_circle_add_buffer(m, zp, (uint64_t)q->n, 1, st);
    free(zp);
    if (bz >= 0) {
        snprintf(nm, sizeof nm, "%s.block_scales", t->name);
        ts = pdq_circle_add_tensor(m, nm, CIRCLE_TT_FLOAT32, 2, shape, (uint32_t)bs, st);
    }
    if (ts >= 0) {
        snprintf(nm, sizeof nm, "%s.block_zero_points", t->name);
        tz = pdq_circle_add_tensor(m, nm, CIRCLE_TT_UINT8, 2, shape, (uint32_t)bz, st);
    }
    if (tz < 0) return st ? st->code : PDQ_ERR_NOMEM;
    return pdq_circle_set_blockwise(m, id, ts, tz, q->block, st);
}

static pdq_code add_op(pdq_circle_model *m, const pdq_graph *g, const pdq_op *op, pdq_status *st) {
    int32_t in[PDQ_CIRCLE_MAX_IO + 1], out[1];
    if (op->n_in > PDQ_CIRCLE_MAX_IO) return pdq_fail(st, PDQ_ERR_LIMIT, "circle export: op with %d inputs", op->n_in);
    int n_in = op->n_in;
    for (int i = 0; i < n_in; i++) in[i] = op->in[i];
    out[0] = op->out[0];
    const pdq_circle_spelling *d = pdq_circle_spelling_of(op->type);
    if (!d) return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "circle export: op type %d", (int)op->type);
    int32_t code = d->code;
    uint8_t ot = (uint8_t)d->options;
    pdq_circle_options o;
    memset(&o, 0, sizeof o);
    /* the op's options (the rest keep the schema's defaults); an optional operand it leaves out is -1 */
    if (d->put) {
        pdq_code rc = d->put(g, op, &o, st);
        if (rc != PDQ_OK) return rc;
    }
    if (d->optional_in && n_in == d->optional_in) in[n_in++] = -1;
    if (pdq_circle_gather_needs_std(g, op)) return pdq_circle_add_gather_std(m, g, op, &o, st);
    return pdq_circle_add_op(m, code, n_in, in, 1, out, ot, &o, st) < 0 ? (st ? st->code : PDQ_ERR_NOMEM) : PDQ_OK;
}

pdq_code pdq_circle_from_graph(const pdq_graph *g, pdq_circle_model *m, pdq_status *st) {
    pdq_code rc = pdq_circle_model_init(m, st);
    if (rc != PDQ_OK) return rc;
    for (int i = 0; i < g->n_tensors && rc == PDQ_OK; i++) {
        const pdq_tensor *t = &g->tensors[i];
        uint32_t buf = 0;
        if (t->kind == PDQ_TK_CONST) rc = add_const_buffer(m, t, &buf, st);
        if (rc != PDQ_OK) break;
        int32_t shape[PDQ_G_MAX_DIMS];
        for (int d = 0; d < t->ndim; d++) shape[d] = t->shape[d];
        int32_t id = pdq_circle_add_tensor(m, t->name, pdq_circle_type_of(t->dtype), t->ndim, shape, buf, st);
        if (id < 0) { rc = st ? st->code : PDQ_ERR_NOMEM; break; }
        if (t->q && t->q->n > 0 && !t->q->block) {
            int32_t n = t->q->n;
            float *sc = t->q->scale;
            rc = pdq_circle_set_quant(m, id, n, sc, t->q->zero_point, t->q->quantized_dim, st);
        }
    }
    for (int i = 0; i < g->n_tensors && rc == PDQ_OK; i++)
        if (g->tensors[i].q && g->tensors[i].q->block) rc = add_blockwise(m, &g->tensors[i], i, st);
    for (int o = 0; o < g->n_ops && rc == PDQ_OK; o++) rc = add_op(m, g, &g->ops[o], st);
    for (int i = 0; i < g->n_inputs && rc == PDQ_OK; i++) rc = pdq_circle_add_input(m, g->inputs[i], st);
    for (int i = 0; i < g->n_outputs && rc == PDQ_OK; i++) rc = pdq_circle_add_output(m, g->outputs[i], st);
    if (rc != PDQ_OK) {
        pdq_circle_model_free(m);
        return pdq_wrap(st, "circle export of graph %s", g->name);
    }
    return PDQ_OK;
}

pdq_code pdq_circle_write_graph(const char *path, const pdq_graph *g, pdq_status *st) {
    pdq_circle_model m;
    pdq_code rc = pdq_circle_from_graph(g, &m, st);
    if (rc != PDQ_OK) return rc;
    rc = pdq_circle_write(path, &m, NULL, st);
    pdq_circle_model_free(&m);
    return rc;
}
