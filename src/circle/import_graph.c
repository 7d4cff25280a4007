/* Circle model -> IR graph: inputs in subgraph order, then every constant in tensor order, then
 * the operators in file order (each creates its output with the file's name; the inferred shape
 * must equal the file's). QUANTIZE / DEQUANTIZE become a same-shape RESHAPE: the executor
 * requantizes every op output to its own grid, which is exactly what QUANTIZE does. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "circle/circle_defs.h"
#include "circle/circle_internal.h"
#include "circle/op_circle.h"
#include "ops/op_def.h"
#include "pdq/circle_export.h"
#include "pdq/file.h"

static int dtype_of(int8_t tt, pdq_tdtype *dt) {
    switch (tt) {
    case CIRCLE_TT_FLOAT32: *dt = PDQ_TF32; return 1;
    case CIRCLE_TT_INT32: *dt = PDQ_TI32; return 1;
    case CIRCLE_TT_INT16: *dt = PDQ_TI16; return 1;
    case CIRCLE_TT_UINT8: *dt = PDQ_TU8; return 1;
    case CIRCLE_TT_UINT4: *dt = PDQ_TU4; return 1;
    case CIRCLE_TT_INT64: *dt = PDQ_TI64; return 1;
    }
    return 0;
}

/* Codes a zero point of the tensor's dtype can take (float tensors: any, the values are informational). */
static int zp_fits(pdq_tdtype dt, int64_t zp) {
    switch (dt) {
    case PDQ_TI16: return zp >= INT16_MIN && zp <= INT16_MAX;
    case PDQ_TU8: return zp >= 0 && zp <= 255;
    case PDQ_TU4: return zp >= 0 && zp <= 15;
    case PDQ_TI32: return zp >= INT32_MIN && zp <= INT32_MAX;
    default: return 1;
    }
}

/* Scales the interpreter can divide by and zero points the stored codes can hold; the counts
 * against quantized_dimension were checked by circle_validate. */
static pdq_code check_q(const pdq_circle_tensor *ct, int ti, pdq_tdtype dt, pdq_status *st) {
    const pdq_circle_quant *cq = &ct->quant;
    if (cq->n_scale <= 0 && cq->n_zero_point > 0)
        return pdq_fail(st, PDQ_ERR_FORMAT, "circle import: tensor %d '%s': %d zero points without scales", ti, ct->name,
                        cq->n_zero_point);
    for (int32_t c = 0; c < cq->n_scale; c++) {
        float s = cq->scale[c];
        if (!(s > 0) || !(s <= 3.4e38f))
            return pdq_fail(st, PDQ_ERR_FORMAT, "circle import: tensor %d '%s': scale[%d] = %g (finite and > 0 needed)", ti,
                            ct->name, c, (double)s);
        if (cq->n_zero_point && !zp_fits(dt, cq->zero_point[c]))
            return pdq_fail(st, PDQ_ERR_FORMAT, "circle import: tensor %d '%s': zero_point[%d] = %lld outside the %s range",
                            ti, ct->name, c, (long long)cq->zero_point[c], pdq_tdtype_name(dt));
    }
    return PDQ_OK;
}

/* A blockwise weight's qparams from its scale and zero point tensors (circle_validate checked
 * their types and shapes): scales finite and > 0, zero points codes of the weight's dtype. */
static pdq_code set_block_q(const pdq_circle_model *m, pdq_tensor *t, const pdq_circle_quant *cq, pdq_status *st) {
    if (t->dtype != PDQ_TU4 && t->dtype != PDQ_TU8)
        return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "circle import: '%s': blockwise quantization of %s (uint4 / uint8 only)",
                        t->name, pdq_tdtype_name(t->dtype));
    int ng = (t->shape[1] + cq->block_size - 1) / cq->block_size;
    size_t n = (size_t)t->shape[0] * (size_t)ng;
    if (n > (size_t)INT32_MAX) return pdq_fail(st, PDQ_ERR_LIMIT, "circle import: '%s': %zu block scales", t->name, n);
    const pdq_circle_buffer *bs = &m->buffers[m->tensors[cq->block_scales].buffer];
    const pdq_circle_buffer *bz = cq->block_zero_points >= 0 ? &m->buffers[m->tensors[cq->block_zero_points].buffer] : NULL;
    pdq_qparams *q = calloc(1, sizeof *q);
    if (q) {
        q->scale = malloc(sizeof(float) * n);
        q->zero_point = calloc(n, sizeof(int64_t));
    }
    if (!q || !q->scale || !q->zero_point) {
        if (q) { free(q->scale); free(q->zero_point); free(q); }
        return pdq_fail(st, PDQ_ERR_NOMEM, "circle import: block qparams of %s", t->name);
    }
    memcpy(q->scale, bs->data, sizeof(float) * n); /* sizes checked against the shapes by circle_validate */
    int hi = t->dtype == PDQ_TU4 ? 15 : 255;
    pdq_code rc = PDQ_OK;
    for (size_t i = 0; i < n && rc == PDQ_OK; i++) {
        if (bz) q->zero_point[i] = bz->data[i];
        if (!(q->scale[i] > 0) || !(q->scale[i] <= 3.4e38f) || q->zero_point[i] > hi)
            rc = pdq_fail(st, PDQ_ERR_FORMAT, "circle import: '%s': block %zu of row %zu: scale %g / zero point %lld (finite "
                          "scale > 0 and a %s code needed)", t->name, i % (size_t)ng, i / (size_t)ng, (double)q->scale[i],
                          (long long)q->zero_point[i], pdq_tdtype_name(t->dtype));
    }
    if (rc != PDQ_OK) { free(q->scale); free(q->zero_point); free(q); return rc; }
    q->n = (int)n;
    q->block = cq->block_size;
    t->q = q;
    return PDQ_OK;
}

static pdq_code set_q(pdq_tensor *t, const pdq_circle_quant *cq, pdq_status *st) {
    if (cq->n_scale <= 0) return PDQ_OK;
    pdq_qparams *q = calloc(1, sizeof *q);
    if (q) {
        q->scale = malloc(sizeof(float) * (size_t)cq->n_scale);
        q->zero_point = calloc((size_t)cq->n_scale, sizeof(int64_t));
    }
    if (!q || !q->scale || !q->zero_point) {
        if (q) { free(q->scale); free(q->zero_point); free(q); }
        return pdq_fail(st, PDQ_ERR_NOMEM, "circle import: qparams of %s", t->name);
    }
    q->n = cq->n_scale;
    memcpy(q->scale, cq->scale, sizeof(float) * (size_t)q->n);
    if (cq->n_zero_point) memcpy(q->zero_point, cq->zero_point, sizeof(int64_t) * (size_t)q->n);
    q->quantized_dim = cq->quantized_dimension;
    t->q = q;
    return PDQ_OK;
}

static pdq_code tensor_shape(const pdq_circle_tensor *ct, int ti, int *shape, pdq_status *st) {
    const char *nm = ct->name ? ct->name : "?";
    if (ct->rank > PDQ_G_MAX_DIMS)
        return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "circle import: tensor %d '%s' has rank %d (max %d)", ti, nm, ct->rank,
                        PDQ_G_MAX_DIMS);
    int64_t count = 1;
    for (int d = 0; d < ct->rank; d++) {
        if (ct->shape[d] <= 0 || (ct->has_shape_signature && ct->shape_signature[d] < 0))
            return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "circle import: tensor %d '%s': dynamic or empty dim %d (%d)", ti,
                            nm, d, ct->shape[d]);
        shape[d] = ct->shape[d];
        count *= ct->shape[d];
        if (count > PDQ_G_MAX_ELEMS)
            return pdq_fail(st, PDQ_ERR_LIMIT, "circle import: tensor %d '%s': more than %lld elements (limit per tensor)",
                            ti, nm, (long long)PDQ_G_MAX_ELEMS);
    }
    return PDQ_OK;
}

/* Maps one operator; fills the IR op type/options and the IR input ids. */
static pdq_code map_op(const pdq_circle_model *m, const pdq_circle_op *co, int oi, const int *ids, pdq_graph *g,
                       pdq_op *op, int *in, int *n_in, pdq_status *st) {
    int32_t code = m->opcodes[co->opcode_index].builtin_code;
    const char *nm = pdq_circle_op_name(code);
    memset(op, 0, sizeof *op);
    *n_in = 0;
    for (int i = 0; i < co->n_inputs; i++) {
        int t = co->inputs[i];
        if (t < 0) {
            int type = pdq_op_of_circle(code);
            if (type >= 0 && i > 0 && i == pdq_circle_spelling_of((pdq_op_type)type)->optional_in) continue; /* FC's bias */
            return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "circle import: operator %d (%s): optional input %d left out", oi,
                            nm ? nm : "?", i);
        }
        if (ids[t] < 0)
            return pdq_fail(st, PDQ_ERR_FORMAT, "circle import: operator %d (%s): input %d (tensor %d '%s') is not produced before use",
                            oi, nm ? nm : "?", i, t, m->tensors[t].name ? m->tensors[t].name : "?");
        in[(*n_in)++] = ids[t];
    }
    const pdq_circle_options *o = &co->opt;
    if (code == CIRCLE_OP_QUANTIZE || code == CIRCLE_OP_DEQUANTIZE) {
        /* identity data move; the output's own grid does the requantization */
        if (*n_in != 1) return pdq_fail(st, PDQ_ERR_FORMAT, "circle import: operator %d (%s): %d inputs", oi, nm, *n_in);
        const pdq_tensor *x = &g->tensors[in[0]];
        int32_t v[PDQ_G_MAX_DIMS];
        for (int d = 0; d < x->ndim; d++) v[d] = x->shape[d];
        char name[300];
        int k = 0;
        do snprintf(name, sizeof name, "%s.pdq_identity_shape%s%.0d", x->name, k ? "_" : "", k);
        while (pdq_graph_find(g, name) >= 0 && ++k < 1000);
        int s = pdq_graph_const_i32(g, name, x->ndim, v, st);
        if (s < 0) return st ? st->code : PDQ_ERR_NOMEM;
        in[(*n_in)++] = s;
        op->type = PDQ_OP_RESHAPE;
        return PDQ_OK;
    }
    int type = pdq_op_of_circle(code);
    if (type < 0) {
        if (nm) return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "circle import: operator %d: %s (code %d) is not supported", oi, nm, code);
        return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "circle import: operator %d: unknown builtin code %d", oi, code);
    }
    op->type = (pdq_op_type)type;
    const pdq_circle_spelling *d = pdq_circle_spelling_of(op->type);
    uint8_t want = (uint8_t)d->options; /* options_type may also be NONE */
    int has = co->options_type == want && want != CIRCLE_OPT_NONE;
    if (co->options_type != CIRCLE_OPT_NONE && co->options_type != want)
        return pdq_fail(st, PDQ_ERR_FORMAT, "circle import: operator %d (%s): options type %u, expected %u", oi, nm,
                        co->options_type, want);
    /* the op's options (absent ones take the schema's defaults) */
    if (d->get) return d->get(o, has, op, oi, st);
    return PDQ_OK;
}

/* How each tensor is read, in one pass over the operators: 1 only as the table (input 0) of
 * GATHERs, 2 otherwise (any other reader, or a graph output), 0 unread. */
static unsigned char *gather_reads(const pdq_circle_model *m) {
    unsigned char *r = calloc((size_t)m->n_tensors + 1, 1);
    if (!r) return NULL;
    for (int oi = 0; oi < m->n_ops; oi++) {
        const pdq_circle_op *co = &m->ops[oi];
        int gather = m->opcodes[co->opcode_index].builtin_code == CIRCLE_OP_GATHER;
        for (int i = 0; i < co->n_inputs; i++) {
            int t = co->inputs[i];
            if (t < 0 || t >= m->n_tensors) continue;
            if (!gather || i != 0) r[t] = 2;
            else if (!r[t]) r[t] = 1;
        }
    }
    for (int k = 0; k < m->n_outputs; k++)
        if (m->outputs[k] >= 0 && m->outputs[k] < m->n_tensors) r[m->outputs[k]] = 2;
    return r;
}

/* DEQUANTIZE of a constant (the weight-only pattern, e.g. an embedding table before GATHER):
 * - read only by GATHERs (gathered), with one scale or one per row: the GATHERs take the quantized table
 *   itself (*out = src), and dequantize the rows they read by the same rule (the in-memory graph's
 *   form; the table stays as stored, not a float32 copy of 4 bytes an element);
 * - otherwise the float32 constant it computes: real = scale[c] * (q - zero_point[c]). */
static pdq_code fold_dequantize(int gathered, pdq_graph *g, int src, const pdq_circle_tensor *ct, int *out,
                                pdq_status *st) {
    const pdq_tensor *t = &g->tensors[src];
    const pdq_qparams *q = t->q;
    if (!q || q->block || t->dtype == PDQ_TF32 || ct->type != CIRCLE_TT_FLOAT32)
        return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "circle import: DEQUANTIZE of '%s' (%s, %s qparams) to '%s' (%s)", t->name,
                        pdq_tdtype_name(t->dtype), !q ? "no" : q->block ? "blockwise" : "with", ct->name,
                        pdq_circle_type_name(ct->type));
    int same = ct->rank == t->ndim;
    for (int d = 0; same && d < t->ndim; d++) same = ct->shape[d] == t->shape[d];
    if (!same) return pdq_fail(st, PDQ_ERR_SHAPE, "circle import: DEQUANTIZE '%s' changes the shape of '%s'", ct->name, t->name);
    int qd = q->n > 1 ? q->quantized_dim : 0;
    if (q->n > 1 && (qd < 0 || qd >= t->ndim || t->shape[qd] != q->n))
        return pdq_fail(st, PDQ_ERR_FORMAT, "circle import: '%s': %d scales along dimension %d", t->name, q->n, qd);
    if ((q->n == 1 || qd == 0) && t->dtype != PDQ_TI32 && t->dtype != PDQ_TI64 && gathered) {
        *out = src;
        return PDQ_OK;
    }
    size_t n = pdq_tensor_count(t), inner = 1;
    for (int d = qd + 1; d < t->ndim; d++) inner *= (size_t)t->shape[d];
    float *v = malloc(sizeof(float) * (n ? n : 1));
    if (!v) return pdq_fail(st, PDQ_ERR_NOMEM, "circle import: DEQUANTIZE '%s'", ct->name);
    for (size_t i = 0; i < n; i++) {
        int64_t k;
        switch (t->dtype) {
        case PDQ_TI16: k = ((const int16_t *)t->data)[i]; break;
        case PDQ_TI32: k = ((const int32_t *)t->data)[i]; break;
        case PDQ_TI64: k = ((const int64_t *)t->data)[i]; break;
        case PDQ_TU4: k = pdq_u4_at(t->data, i); break;
        default: k = ((const uint8_t *)t->data)[i]; break; /* uint8 */
        }
        size_t c = q->n > 1 ? (i / inner) % (size_t)q->n : 0;
        v[i] = (float)((double)(k - q->zero_point[c]) * (double)q->scale[c]);
    }
    *out = pdq_graph_const_owned(g, ct->name, PDQ_TF32, t->ndim, t->shape, v, st);
    return *out < 0 ? (st ? st->code : PDQ_ERR_NOMEM) : PDQ_OK;
}

/* borrow: constants whose bytes are aligned for their dtype point into m's buffers (which must
 * outlive the graph; the caller hands m's file mapping to it), file_backed when m is mapped. */
static pdq_code to_graph(const pdq_circle_model *m, const char *name, int borrow, pdq_graph **out, pdq_status *st) {
    pdq_graph *g;
    /* models built in memory get the reader's checks too: indices, ranks, buffer sizes, qparam counts */
    pdq_code rc = circle_validate(m, PDQ_ERR_FORMAT, st);
    if (rc != PDQ_OK) return pdq_wrap(st, "circle import");
    if ((rc = pdq_graph_new(name ? name : "circle", &g, st)) != PDQ_OK) return rc;
    int nt = m->n_tensors;
    int *ids = malloc(sizeof(int) * (size_t)(nt ? nt : 1));
    int *in = malloc(sizeof(int) * (PDQ_CIRCLE_MAX_IO + 1));
    unsigned char *reads = gather_reads(m);
    /* the scale / zero point tensors of blockwise weights: their qparams, not graph constants */
    unsigned char *aux = calloc((size_t)nt + 1, 1);
    if (!ids || !in || !reads || !aux) { rc = pdq_fail(st, PDQ_ERR_NOMEM, "circle import"); goto fail; }
    for (int i = 0; i < nt; i++) ids[i] = -1;
    for (int i = 0; i < nt; i++)
        if (m->tensors[i].quant.block_size) {
            aux[m->tensors[i].quant.block_scales] = 1;
            if (m->tensors[i].quant.block_zero_points >= 0) aux[m->tensors[i].quant.block_zero_points] = 1;
        }
    for (int i = 0; i < nt; i++)
        if (!m->tensors[i].name || !*m->tensors[i].name) {
            rc = pdq_fail(st, PDQ_ERR_FORMAT, "circle import: tensor %d has no name", i);
            goto fail;
        }
    /* inputs, in subgraph order */
    for (int k = 0; k < m->n_inputs; k++) {
        int ti = m->inputs[k];
        const pdq_circle_tensor *ct = &m->tensors[ti];
        pdq_tdtype dt;
        int shape[PDQ_G_MAX_DIMS];
        if (ids[ti] >= 0) { rc = pdq_fail(st, PDQ_ERR_FORMAT, "circle import: tensor %d '%s' is input twice", ti, ct->name); goto fail; }
        if (ct->buffer) { rc = pdq_fail(st, PDQ_ERR_FORMAT, "circle import: input '%s' has a constant buffer", ct->name); goto fail; }
        if (!dtype_of(ct->type, &dt)) {
            rc = pdq_fail(st, PDQ_ERR_UNSUPPORTED, "circle import: input '%s' of type %s", ct->name, pdq_circle_type_name(ct->type));
            goto fail;
        }
        if ((rc = tensor_shape(ct, ti, shape, st)) != PDQ_OK || (rc = check_q(ct, ti, dt, st)) != PDQ_OK) goto fail;
        if ((ids[ti] = pdq_graph_input(g, ct->name, dt, ct->rank, shape, st)) < 0) { rc = st->code; goto fail; }
        if ((rc = set_q(&g->tensors[ids[ti]], &ct->quant, st)) != PDQ_OK) goto fail;
    }
    /* constants, in tensor order */
    for (int ti = 0; ti < nt; ti++) {
        const pdq_circle_tensor *ct = &m->tensors[ti];
        if (!ct->buffer || ids[ti] >= 0 || aux[ti]) continue;
        pdq_tdtype dt;
        int shape[PDQ_G_MAX_DIMS];
        if (!dtype_of(ct->type, &dt)) {
            rc = pdq_fail(st, PDQ_ERR_UNSUPPORTED, "circle import: constant '%s' of type %s", ct->name,
                          pdq_circle_type_name(ct->type));
            goto fail;
        }
        if ((rc = tensor_shape(ct, ti, shape, st)) != PDQ_OK || (rc = check_q(ct, ti, dt, st)) != PDQ_OK) goto fail;
        size_t n = 1; /* <= PDQ_G_MAX_ELEMS (tensor_shape) */
        for (int d = 0; d < ct->rank; d++) n *= (size_t)shape[d];
        const pdq_circle_buffer *b = &m->buffers[ct->buffer];
        int64_t want = pdq_circle_type_bytes(ct->type, (int64_t)n);
        if (want < 0 || (uint64_t)want != b->len) {
            rc = pdq_fail(st, PDQ_ERR_FORMAT, "circle import: constant '%s': buffer of %llu bytes, shape needs %lld", ct->name,
                          (unsigned long long)b->len, (long long)want);
            goto fail;
        }
        /* uint4 stays packed: the graph's layout is the file's */
        if (borrow && b->len && (uintptr_t)b->data % pdq_tdtype_size(dt) == 0) {
            if ((ids[ti] = pdq_graph_const(g, ct->name, dt, ct->rank, shape, b->data, 0, st)) < 0) { rc = st->code; goto fail; }
            g->tensors[ids[ti]].file_backed = m->map != NULL;
        } else {
            size_t nb = (size_t)want;
            void *data = malloc(nb ? nb : 1);
            if (!data) { rc = pdq_fail(st, PDQ_ERR_NOMEM, "circle import: constant '%s'", ct->name); goto fail; }
            if (nb) memcpy(data, b->data, nb);
            if ((ids[ti] = pdq_graph_const_owned(g, ct->name, dt, ct->rank, shape, data, st)) < 0) { rc = st->code; goto fail; }
        }
        if (ct->quant.block_size) rc = set_block_q(m, &g->tensors[ids[ti]], &ct->quant, st);
        else rc = set_q(&g->tensors[ids[ti]], &ct->quant, st);
        if (rc != PDQ_OK) goto fail;
    }
    /* operators */
    for (int oi = 0; oi < m->n_ops; oi++) {
        const pdq_circle_op *co = &m->ops[oi];
        if (co->n_outputs != 1) {
            rc = pdq_fail(st, PDQ_ERR_UNSUPPORTED, "circle import: operator %d has %d outputs (1 supported)", oi, co->n_outputs);
            goto fail;
        }
        int to = co->outputs[0];
        const pdq_circle_tensor *ct = &m->tensors[to];
        if (ids[to] >= 0) {
            rc = pdq_fail(st, PDQ_ERR_FORMAT, "circle import: operator %d writes '%s', an input/constant or an earlier output",
                          oi, ct->name);
            goto fail;
        }
        if (m->opcodes[co->opcode_index].builtin_code == CIRCLE_OP_DEQUANTIZE && co->n_inputs == 1 && co->inputs[0] >= 0 &&
            ids[co->inputs[0]] >= 0 && g->tensors[ids[co->inputs[0]]].kind == PDQ_TK_CONST) {
            if ((rc = fold_dequantize(reads[to] == 1, g, ids[co->inputs[0]], ct, &ids[to], st)) != PDQ_OK) goto fail;
            continue;
        }
        pdq_op op;
        int n_in;
        if ((rc = map_op(m, co, oi, ids, g, &op, in, &n_in, st)) != PDQ_OK) goto fail;
        pdq_tdtype dt;
        int shape[PDQ_G_MAX_DIMS];
        if (!dtype_of(ct->type, &dt)) {
            rc = pdq_fail(st, PDQ_ERR_UNSUPPORTED, "circle import: tensor '%s' of type %s", ct->name, pdq_circle_type_name(ct->type));
            goto fail;
        }
        /* inference first: its errors name the op, its operands, the value and the limit */
        const char *cn = pdq_circle_op_name(m->opcodes[co->opcode_index].builtin_code);
        int id = pdq_graph_op(g, op.type, in, n_in, &op, ct->name, st);
        if (id < 0 || (rc = tensor_shape(ct, to, shape, st)) != PDQ_OK || (rc = check_q(ct, to, dt, st)) != PDQ_OK) {
            rc = pdq_wrap(st, "circle import: operator %d (%s)", oi, cn ? cn : "?");
            goto fail;
        }
        pdq_tensor *t = &g->tensors[id];
        int same = t->ndim == ct->rank;
        for (int d = 0; same && d < t->ndim; d++) same = t->shape[d] == shape[d];
        if (!same) {
            char a[96], b[96];
            size_t ka = 0, kb = 0;
            for (int d = 0; d < t->ndim && ka < sizeof a - 12; d++) ka += (size_t)snprintf(a + ka, sizeof a - ka, "%s%d", d ? "," : "", t->shape[d]);
            for (int d = 0; d < ct->rank && kb < sizeof b - 12; d++) kb += (size_t)snprintf(b + kb, sizeof b - kb, "%s%d", d ? "," : "", shape[d]);
            a[ka] = b[kb] = 0;
            rc = pdq_fail(st, PDQ_ERR_SHAPE, "circle import: operator %d (%s): output '%s' has shape (%s) in the file, the op gives (%s)",
                          oi, pdq_op_name(op.type), ct->name, b, a);
            goto fail;
        }
        /* without qparams the stored dtype must be what the op computes: reals for arithmetic,
         * the data input's dtype for data movement (QUANTIZE / DEQUANTIZE convert) */
        int32_t code = m->opcodes[co->opcode_index].builtin_code;
        pdq_tdtype made = pdq_op_is_data_move(op.type) ? t->dtype : PDQ_TF32;
        const pdq_tensor *t0 = &g->tensors[in[0]];
        if (op.type == PDQ_OP_GATHER && t0->kind == PDQ_TK_CONST && t0->q && t0->dtype != PDQ_TF32)
            made = PDQ_TF32; /* rows of a quantized table, dequantized (the DEQUANTIZE above) */
        if (ct->quant.n_scale <= 0 && dt != made && code != CIRCLE_OP_QUANTIZE && code != CIRCLE_OP_DEQUANTIZE) {
            rc = pdq_fail(st, PDQ_ERR_FORMAT, "circle import: operator %d (%s): output '%s' is %s without quantization parameters, the op gives %s",
                          oi, pdq_op_name(op.type), ct->name, pdq_tdtype_name(dt), pdq_tdtype_name(made));
            goto fail;
        }
        t->dtype = dt;
        if ((rc = set_q(t, &ct->quant, st)) != PDQ_OK) goto fail;
        ids[to] = id;
    }
    for (int k = 0; k < m->n_outputs; k++) {
        int ti = m->outputs[k];
        if (ids[ti] < 0 || g->tensors[ids[ti]].kind != PDQ_TK_INTER) {
            rc = pdq_fail(st, PDQ_ERR_FORMAT, "circle import: output %d (tensor %d '%s') is not an operator result", k, ti,
                          m->tensors[ti].name);
            goto fail;
        }
        if ((rc = pdq_graph_mark_output(g, ids[ti], st)) != PDQ_OK) goto fail;
    }
    if ((rc = pdq_graph_validate(g, st)) != PDQ_OK) goto fail;
    free(ids);
    free(in);
    free(reads);
    free(aux);
    *out = g;
    return PDQ_OK;
fail:
    free(ids);
    free(in);
    free(reads);
    free(aux);
    pdq_graph_free(g);
    return rc ? rc : PDQ_ERR_FORMAT;
}

pdq_code pdq_circle_to_graph(const pdq_circle_model *m, const char *name, pdq_graph **out, pdq_status *st) {
    return to_graph(m, name, 0, out, st);
}

pdq_code pdq_circle_load_graph(const char *path, pdq_graph **out, pdq_status *st) {
    pdq_circle_model m;
    pdq_code rc = pdq_circle_read(path, &m, st);
    if (rc != PDQ_OK) return rc;
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    char name[256];
    snprintf(name, sizeof name, "%s", base);
    char *dot = strstr(name, ".circle");
    if (dot) *dot = 0;
    if ((dot = strrchr(name, '.')) && (!strcmp(dot, ".q") || !strcmp(dot, ".w4") || !strcmp(dot, ".w8"))) *dot = 0;
    /* the constants borrow the mapped file, so the graph keeps the mapping */
    rc = to_graph(&m, name, 1, out, st);
    if (rc == PDQ_OK) {
        rc = pdq_graph_hold(*out, m.map, pdq_file_map_release, st);
        m.map = NULL;
        m.image = NULL;
        if (rc != PDQ_OK) {
            pdq_graph_free(*out);
            *out = NULL;
        }
    }
    pdq_circle_model_free(&m);
    if (rc != PDQ_OK) return pdq_wrap(st, "%s", path);
    return PDQ_OK;
}
