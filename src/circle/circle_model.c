/* pdq_circle_model: ownership, building helpers, type sizes and UINT4 packing. */
#include "pdq/circle.h"

#include <stdlib.h>
#include <string.h>

#include "circle/circle_defs.h"
#include "circle/circle_internal.h"
#include "pdq/file.h"
#include "pdq/graph.h"

/* Grows *arr (elements of size es) so that one more fits. */
static pdq_code grow(void **arr, int32_t n, int32_t *cap, size_t es, pdq_status *st) {
    if (n < *cap) return PDQ_OK;
    if (n >= INT32_MAX / 2) return pdq_fail(st, PDQ_ERR_LIMIT, "circle model: more than %d entries", n);
    int32_t nc = *cap ? *cap * 2 : 8;
    void *p = realloc(*arr, (size_t)nc * es);
    if (!p) return pdq_fail(st, PDQ_ERR_NOMEM, "circle model: out of memory");
    *arr = p;
    *cap = nc;
    return PDQ_OK;
}
#define GROW(arr, n, cap, st) grow((void **)&(arr), (n), &(cap), sizeof *(arr), (st))

pdq_code pdq_circle_model_init(pdq_circle_model *m, pdq_status *st) {
    memset(m, 0, sizeof *m);
    return pdq_circle_add_buffer(m, NULL, 0, 0, st) == 0 ? PDQ_OK : PDQ_ERR_NOMEM;
}

static void quant_free(pdq_circle_quant *q) {
    free(q->scale);
    free(q->zero_point);
    free(q->min);
    free(q->max);
    memset(q, 0, sizeof *q);
}

void pdq_circle_model_free(pdq_circle_model *m) {
    if (!m) return;
    for (int32_t i = 0; i < m->n_buffers; i++) free(m->buffers[i].owned);
    for (int32_t i = 0; i < m->n_tensors; i++) {
        free(m->tensors[i].name);
        quant_free(&m->tensors[i].quant);
    }
    for (int32_t i = 0; i < m->n_ops; i++) {
        free(m->ops[i].inputs);
        free(m->ops[i].outputs);
    }
    free(m->description);
    free(m->subgraph_name);
    free(m->opcodes);
    free(m->buffers);
    free(m->tensors);
    free(m->ops);
    free(m->inputs);
    free(m->outputs);
    if (m->map) pdq_file_map_close(m->map);
    else free(m->image);
    memset(m, 0, sizeof *m);
}

int32_t pdq_circle_add_buffer(pdq_circle_model *m, const void *data, uint64_t len, int copy, pdq_status *st) {
    if (GROW(m->buffers, m->n_buffers, m->cap_buffers, st)) return -1;
    pdq_circle_buffer *b = &m->buffers[m->n_buffers];
    memset(b, 0, sizeof *b);
    if (len && copy) {
        void *p = malloc(len);
        if (!p) {
            pdq_fail(st, PDQ_ERR_NOMEM, "circle buffer of %llu bytes", (unsigned long long)len);
            return -1;
        }
        memcpy(p, data, len);
        b->owned = p;
        data = p;
    }
    b->data = len ? data : NULL;
    b->len = len;
    return m->n_buffers++;
}

int32_t pdq_circle_add_tensor(pdq_circle_model *m, const char *name, int8_t type, int32_t rank,
                              const int32_t *shape, uint32_t buffer, pdq_status *st) {
    if (rank < 0 || rank > PDQ_CIRCLE_MAX_RANK) {
        pdq_fail(st, PDQ_ERR_LIMIT, "circle tensor '%s': rank %d (max %d)", name ? name : "?", rank,
                 PDQ_CIRCLE_MAX_RANK);
        return -1;
    }
    if (GROW(m->tensors, m->n_tensors, m->cap_tensors, st)) return -1;
    pdq_circle_tensor *t = &m->tensors[m->n_tensors];
    memset(t, 0, sizeof *t);
    if (name && !(t->name = strdup(name))) {
        pdq_fail(st, PDQ_ERR_NOMEM, "circle tensor name");
        return -1;
    }
    t->type = type;
    t->rank = rank;
    if (rank) memcpy(t->shape, shape, (size_t)rank * sizeof *shape);
    t->buffer = buffer;
    return m->n_tensors++;
}

pdq_code pdq_circle_set_blockwise(pdq_circle_model *m, int32_t tensor, int32_t scales, int32_t zero_points,
                                  int32_t block_size, pdq_status *st) {
    if (tensor < 0 || tensor >= m->n_tensors || scales < 0 || scales >= m->n_tensors || zero_points < -1 ||
        zero_points >= m->n_tensors || block_size <= 0)
        return pdq_fail(st, PDQ_ERR_ARG, "circle quant: tensor %d, blockwise %d / %d / %d", tensor, scales, zero_points,
                        block_size);
    pdq_circle_quant *q = &m->tensors[tensor].quant;
    quant_free(q);
    q->block_size = block_size;
    q->block_scales = scales;
    q->block_zero_points = zero_points;
    return PDQ_OK;
}

pdq_code pdq_circle_set_quant(pdq_circle_model *m, int32_t tensor, int32_t n, const float *scale,
                              const int64_t *zero_point, int32_t quantized_dimension, pdq_status *st) {
    if (tensor < 0 || tensor >= m->n_tensors || n <= 0)
        return pdq_fail(st, PDQ_ERR_ARG, "circle quant: tensor %d, %d channels", tensor, n);
    pdq_circle_quant *q = &m->tensors[tensor].quant;
    quant_free(q);
    q->scale = malloc((size_t)n * sizeof *q->scale);
    q->zero_point = malloc((size_t)n * sizeof *q->zero_point);
    if (!q->scale || !q->zero_point) {
        quant_free(q);
        return pdq_fail(st, PDQ_ERR_NOMEM, "circle quant");
    }
    memcpy(q->scale, scale, (size_t)n * sizeof *scale);
    memcpy(q->zero_point, zero_point, (size_t)n * sizeof *zero_point);
    q->n_scale = q->n_zero_point = n;
    q->quantized_dimension = quantized_dimension;
    return PDQ_OK;
}

int32_t pdq_circle_opcode_index(pdq_circle_model *m, int32_t code, int32_t version, pdq_status *st) {
    for (int32_t i = 0; i < m->n_opcodes; i++)
        if (m->opcodes[i].builtin_code == code && m->opcodes[i].version == version) return i;
    if (GROW(m->opcodes, m->n_opcodes, m->cap_opcodes, st)) return -1;
    m->opcodes[m->n_opcodes] = (pdq_circle_opcode){code, version};
    return m->n_opcodes++;
}

static int32_t *dup_ids(const int32_t *ids, int32_t n, pdq_status *st) {
    int32_t *p = malloc((size_t)(n ? n : 1) * sizeof *p);
    if (!p) pdq_fail(st, PDQ_ERR_NOMEM, "circle op");
    else if (n) memcpy(p, ids, (size_t)n * sizeof *p);
    return p;
}

int32_t pdq_circle_add_op(pdq_circle_model *m, int32_t code, int32_t n_in, const int32_t *in,
                          int32_t n_out, const int32_t *out, uint8_t options_type,
                          const pdq_circle_options *opt, pdq_status *st) {
    if (n_in < 0 || n_out < 0 || n_in > PDQ_CIRCLE_MAX_IO || n_out > PDQ_CIRCLE_MAX_IO) {
        pdq_fail(st, PDQ_ERR_LIMIT, "circle op %d: %d inputs, %d outputs", code, n_in, n_out);
        return -1;
    }
    int32_t oc = pdq_circle_opcode_index(m, code, 1, st);
    if (oc < 0 || GROW(m->ops, m->n_ops, m->cap_ops, st)) return -1;
    pdq_circle_op *o = &m->ops[m->n_ops];
    memset(o, 0, sizeof *o);
    o->opcode_index = (uint32_t)oc;
    o->inputs = dup_ids(in, n_in, st);
    o->outputs = dup_ids(out, n_out, st);
    if (!o->inputs || !o->outputs) {
        free(o->inputs);
        free(o->outputs);
        return -1;
    }
    o->n_inputs = n_in;
    o->n_outputs = n_out;
    o->options_type = options_type;
    o->opt = opt ? *opt : pdq_circle_options_default(options_type);
    return m->n_ops++;
}

pdq_code pdq_circle_add_input(pdq_circle_model *m, int32_t tensor, pdq_status *st) {
    pdq_code rc = GROW(m->inputs, m->n_inputs, m->cap_inputs, st);
    if (rc) return rc;
    m->inputs[m->n_inputs++] = tensor;
    return PDQ_OK;
}

pdq_code pdq_circle_add_output(pdq_circle_model *m, int32_t tensor, pdq_status *st) {
    pdq_code rc = GROW(m->outputs, m->n_outputs, m->cap_outputs, st);
    if (rc) return rc;
    m->outputs[m->n_outputs++] = tensor;
    return PDQ_OK;
}

pdq_circle_options pdq_circle_options_default(uint8_t options_type) {
    pdq_circle_options o;
    memset(&o, 0, sizeof o);
    if (options_type == CIRCLE_OPT_AddOptions) o.add.pot_scale_int16 = true;
    if (options_type == CIRCLE_OPT_SubOptions) o.sub.pot_scale_int16 = true;
    return o;
}

int64_t pdq_circle_type_bytes(int8_t type, int64_t n) {
    if (n < 0) return -1;
    switch (type) {
    case CIRCLE_TT_UINT4: case CIRCLE_TT_INT4:
        return n / 2 + (n & 1);
    case CIRCLE_TT_UINT8: case CIRCLE_TT_INT8: case CIRCLE_TT_BOOL:
        return n;
    case CIRCLE_TT_INT16: case CIRCLE_TT_UINT16: case CIRCLE_TT_FLOAT16: case CIRCLE_TT_BFLOAT16:
        return n > INT64_MAX / 2 ? -1 : n * 2;
    case CIRCLE_TT_INT32: case CIRCLE_TT_UINT32: case CIRCLE_TT_FLOAT32:
        return n > INT64_MAX / 4 ? -1 : n * 4;
    case CIRCLE_TT_INT64: case CIRCLE_TT_UINT64: case CIRCLE_TT_FLOAT64: case CIRCLE_TT_COMPLEX64:
        return n > INT64_MAX / 8 ? -1 : n * 8;
    case CIRCLE_TT_COMPLEX128:
        return n > INT64_MAX / 16 ? -1 : n * 16;
    default:
        return -1; /* strings, resources, GGML blocks, MX */
    }
}

const char *pdq_circle_type_name(int8_t type) {
    static const char *const pos[] = {"FLOAT32", "FLOAT16", "INT32", "UINT8", "INT64", "STRING", "BOOL",
                                      "INT16", "COMPLEX64", "INT8", "FLOAT64", "COMPLEX128", "UINT64",
                                      "RESOURCE", "VARIANT", "UINT32", "UINT16", "INT4", "BFLOAT16"};
    static const char *const neg[] = {"UINT4", "GGML_Q4_0", "GGML_Q4_1", "GGML_Q8_0", "GGML_Q8_1",
                                      "MXFP4", "MXINT8"};
    if (type >= 0 && type <= CIRCLE_TT_MAX) return pos[type];
    if (type < 0 && type >= CIRCLE_TT_MIN) return neg[-type - 1];
    return "UNKNOWN";
}

const char *pdq_circle_op_name(int32_t code) {
    static const struct { int32_t code; const char *name; } k[] = {
        {CIRCLE_OP_ATTENTION, "ATTENTION"}, {CIRCLE_OP_RUN_MODEL, "RUN_MODEL"}, {CIRCLE_OP_ROPE, "ROPE"},
        {CIRCLE_OP_RMS_NORM, "RMS_NORM"}, {CIRCLE_OP_GRU, "GRU"}, {CIRCLE_OP_BCQ_GATHER, "BCQ_GATHER"},
        {CIRCLE_OP_BCQ_FULLY_CONNECTED, "BCQ_FULLY_CONNECTED"}, {CIRCLE_OP_INSTANCE_NORM, "INSTANCE_NORM"},
        {CIRCLE_OP_ADD, "ADD"}, {CIRCLE_OP_CONCATENATION, "CONCATENATION"},
        {CIRCLE_OP_DEQUANTIZE, "DEQUANTIZE"}, {CIRCLE_OP_FULLY_CONNECTED, "FULLY_CONNECTED"},
        {CIRCLE_OP_LOGISTIC, "LOGISTIC"}, {CIRCLE_OP_MUL, "MUL"}, {CIRCLE_OP_TANH, "TANH"}, {CIRCLE_OP_RESHAPE, "RESHAPE"},
        {CIRCLE_OP_SOFTMAX, "SOFTMAX"}, {CIRCLE_OP_CUSTOM, "CUSTOM"}, {CIRCLE_OP_GATHER, "GATHER"},
        {CIRCLE_OP_TRANSPOSE, "TRANSPOSE"}, {CIRCLE_OP_MEAN, "MEAN"}, {CIRCLE_OP_SUB, "SUB"},
        {CIRCLE_OP_DIV, "DIV"}, {CIRCLE_OP_STRIDED_SLICE, "STRIDED_SLICE"}, {CIRCLE_OP_EXP, "EXP"},
        {CIRCLE_OP_NEG, "NEG"}, {CIRCLE_OP_SLICE, "SLICE"}, {CIRCLE_OP_EXPAND_DIMS, "EXPAND_DIMS"},
        {CIRCLE_OP_RSQRT, "RSQRT"}, {CIRCLE_OP_SPLIT_V, "SPLIT_V"}, {CIRCLE_OP_QUANTIZE, "QUANTIZE"},
        {CIRCLE_OP_BATCH_MATMUL, "BATCH_MATMUL"}, {CIRCLE_OP_CUMSUM, "CUMSUM"},
        {CIRCLE_OP_BROADCAST_TO, "BROADCAST_TO"}, {CIRCLE_OP_GELU, "GELU"},
    };
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
        if (k[i].code == code) return k[i].name;
    return NULL;
}

pdq_code pdq_circle_pack_uint4(const uint8_t *v, uint64_t n, uint8_t *packed, pdq_status *st) {
    for (uint64_t i = 0; i < n; i++)
        if (v[i] > 15) return pdq_fail(st, PDQ_ERR_ARG, "uint4 value %u at index %llu", v[i], (unsigned long long)i);
    pdq_pack4(v, (size_t)n, packed);
    return PDQ_OK;
}

void pdq_circle_unpack_uint4(const uint8_t *packed, uint64_t n, uint8_t *v) { pdq_unpack4(packed, (size_t)n, v); }

/* A BlockwiseQuantization: a 2-D constant whose scale (and zero point) tensors are constants of
 * [rows, ceil(cols / block_size)] FLOAT32 (UINT8), with buffers. */
static pdq_code check_blockwise(const pdq_circle_model *m, int32_t i, pdq_code code, pdq_status *st) {
    const pdq_circle_tensor *t = &m->tensors[i];
    const pdq_circle_quant *q = &t->quant;
    const char *nm = t->name ? t->name : "";
    if (q->n_scale || q->n_zero_point)
        return pdq_fail(st, code, "tensor %d '%s': blockwise quantization with scale/zero_point arrays too", i, nm);
    if (q->block_size <= 0 || t->rank != 2 || !t->buffer || t->shape[0] <= 0 || t->shape[1] <= 0)
        return pdq_fail(st, code, "tensor %d '%s': blockwise quantization (block_size %d) needs a 2-D constant", i, nm,
                        q->block_size);
    int64_t groups = ((int64_t)t->shape[1] + q->block_size - 1) / q->block_size;
    for (int k = 0; k < 2; k++) {
        int32_t id = k ? q->block_zero_points : q->block_scales;
        if (k && id == -1) continue;
        int8_t want = k ? CIRCLE_TT_UINT8 : CIRCLE_TT_FLOAT32;
        const char *what = k ? "zero_points" : "scales";
        if (id < 0 || id >= m->n_tensors || id == i)
            return pdq_fail(st, code, "tensor %d '%s': blockwise %s tensor %d out of range (%d tensors)", i, nm, what, id,
                            m->n_tensors);
        const pdq_circle_tensor *u = &m->tensors[id];
        if (u->type != want || u->rank != 2 || u->shape[0] != t->shape[0] || u->shape[1] != groups || !u->buffer ||
            u->quant.n_scale || u->quant.block_size)
            return pdq_fail(st, code, "tensor %d '%s': blockwise %s tensor %d must be a %s constant of [%d, %lld] without "
                            "quantization", i, nm, what, id, pdq_circle_type_name(want), t->shape[0], (long long)groups);
    }
    return PDQ_OK;
}

static pdq_code check_tensor(const pdq_circle_model *m, int32_t i, pdq_code code, pdq_status *st) {
    const pdq_circle_tensor *t = &m->tensors[i];
    const char *nm = t->name ? t->name : "";
    if (t->rank < 0 || t->rank > PDQ_CIRCLE_MAX_RANK)
        return pdq_fail(st, code, "tensor %d '%s': rank %d (max %d)", i, nm, t->rank, PDQ_CIRCLE_MAX_RANK);
    if (t->type < CIRCLE_TT_MIN || t->type > CIRCLE_TT_MAX)
        return pdq_fail(st, code, "tensor %d '%s': unknown tensor type %d", i, nm, t->type);
    int64_t count = 1;
    for (int32_t d = 0; d < t->rank; d++) {
        if (t->shape[d] < 0) return pdq_fail(st, code, "tensor %d '%s': negative dim %d", i, nm, t->shape[d]);
        if (t->has_shape_signature && t->shape_signature[d] < -1)
            return pdq_fail(st, code, "tensor %d '%s': shape_signature dim %d", i, nm, t->shape_signature[d]);
        if (t->shape[d] && count > INT64_MAX / t->shape[d])
            return pdq_fail(st, code, "tensor %d '%s': element count overflows", i, nm);
        count *= t->shape[d];
    }
    if (t->buffer >= (uint32_t)m->n_buffers)
        return pdq_fail(st, code, "tensor %d '%s': buffer %u out of range (%d buffers)", i, nm, t->buffer,
                        m->n_buffers);
    int64_t want = pdq_circle_type_bytes(t->type, count);
    uint64_t have = m->buffers[t->buffer].len;
    if (t->buffer && want >= 0 && (uint64_t)want != have)
        return pdq_fail(st, code, "tensor %d '%s': buffer %u holds %llu bytes, %s x %lld elements need %lld",
                        i, nm, t->buffer, (unsigned long long)have, pdq_circle_type_name(t->type),
                        (long long)count, (long long)want);
    const pdq_circle_quant *q = &t->quant;
    if (q->n_scale < 0 || q->n_zero_point < 0 || q->n_min < 0 || q->n_max < 0 ||
        (q->n_scale && !q->scale) || (q->n_zero_point && !q->zero_point) || (q->n_min && !q->min) ||
        (q->n_max && !q->max))
        return pdq_fail(st, code, "tensor %d '%s': inconsistent quantization arrays", i, nm);
    if (q->n_zero_point && q->n_zero_point != q->n_scale)
        return pdq_fail(st, code, "tensor %d '%s': %d scales but %d zero points", i, nm, q->n_scale,
                        q->n_zero_point);
    if (q->n_scale > 1 && (q->quantized_dimension < 0 || q->quantized_dimension >= t->rank ||
                           t->shape[q->quantized_dimension] != q->n_scale))
        return pdq_fail(st, code, "tensor %d '%s': %d scales do not match quantized_dimension %d", i, nm,
                        q->n_scale, q->quantized_dimension);
    return q->block_size ? check_blockwise(m, i, code, st) : PDQ_OK;
}

static pdq_code check_ids(const int32_t *ids, int32_t n, int32_t lo, int32_t n_tensors, pdq_code code,
                          const char *what, int32_t op, pdq_status *st) {
    if (n < 0 || n > (op >= 0 ? PDQ_CIRCLE_MAX_IO : INT32_MAX) || (n && !ids))
        return pdq_fail(st, code, "%s of operator %d: bad count %d", what, op, n);
    for (int32_t k = 0; k < n; k++)
        if (ids[k] < lo || ids[k] >= n_tensors) {
            if (op < 0) return pdq_fail(st, code, "subgraph %s[%d] = %d out of range (%d tensors)", what, k,
                                        ids[k], n_tensors);
            return pdq_fail(st, code, "operator %d: %s[%d] = %d out of range (%d tensors)", op, what, k, ids[k],
                            n_tensors);
        }
    return PDQ_OK;
}

pdq_code circle_validate(const pdq_circle_model *m, pdq_code code, pdq_status *st) {
    if (m->n_buffers < 1 || m->buffers[0].len != 0)
        return pdq_fail(st, code, "buffer 0 must exist and be empty (sentinel)");
    for (int32_t i = 0; i < m->n_buffers; i++)
        if (m->buffers[i].len && !m->buffers[i].data)
            return pdq_fail(st, code, "buffer %d: %llu bytes without data", i,
                            (unsigned long long)m->buffers[i].len);
    for (int32_t i = 0; i < m->n_opcodes; i++)
        if (m->opcodes[i].builtin_code < CIRCLE_OP_MIN || m->opcodes[i].builtin_code > CIRCLE_OP_MAX)
            return pdq_fail(st, code, "operator code %d: unknown builtin operator %d", i,
                            m->opcodes[i].builtin_code);
    for (int32_t i = 0; i < m->n_tensors; i++) {
        pdq_code rc = check_tensor(m, i, code, st);
        if (rc) return rc;
    }
    for (int32_t i = 0; i < m->n_ops; i++) {
        const pdq_circle_op *o = &m->ops[i];
        if (o->opcode_index >= (uint32_t)m->n_opcodes)
            return pdq_fail(st, code, "operator %d: opcode index %u out of range (%d operator codes)", i,
                            o->opcode_index, m->n_opcodes);
        pdq_code rc = check_ids(o->inputs, o->n_inputs, -1, m->n_tensors, code, "inputs", i, st);
        if (!rc) rc = check_ids(o->outputs, o->n_outputs, 0, m->n_tensors, code, "outputs", i, st);
        if (rc) return rc;
        if (o->options_type == CIRCLE_OPT_ReshapeOptions &&
            (o->opt.reshape.rank < 0 || o->opt.reshape.rank > PDQ_CIRCLE_MAX_RANK))
            return pdq_fail(st, code, "operator %d: new_shape of rank %d", i, o->opt.reshape.rank);
    }
    pdq_code rc = check_ids(m->inputs, m->n_inputs, 0, m->n_tensors, code, "inputs", -1, st);
    if (!rc) rc = check_ids(m->outputs, m->n_outputs, 0, m->n_tensors, code, "outputs", -1, st);
    return rc;
}
