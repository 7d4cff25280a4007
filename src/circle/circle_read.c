/* Verifying Circle reader: every offset, vtable, vector length and string is checked against the
 * file before it is used, so a hostile file yields PDQ_ERR_FORMAT and never a crash. Scalars are
 * read with memcpy (no alignment assumption); allocations are bounded by a multiple of the file
 * size so shared vectors cannot blow memory up. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "circle/circle_defs.h"
#include "circle/circle_internal.h"
#include "pdq/file.h"

typedef struct {
    const uint8_t *p;
    size_t len;
    uint64_t budget; /* bytes the model may still allocate */
    pdq_status *st;
    pdq_code err;    /* why the last ralloc failed */
} rd;

typedef struct {
    size_t pos, vt;
    uint16_t vtlen, objlen;
} tbl;

static uint16_t u16at(const uint8_t *p) { uint16_t v; memcpy(&v, p, 2); return v; }
static uint32_t u32at(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }

static pdq_code bad(rd *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static pdq_code bad(rd *r, const char *fmt, ...) {
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return pdq_fail(r->st, PDQ_ERR_FORMAT, "%s", msg);
}

static void *ralloc(rd *r, size_t n, size_t es) {
    uint64_t bytes = (uint64_t)(n ? n : 1) * es;
    if (bytes > r->budget) {
        r->err = bad(r, "file expands to more memory than its size justifies (shared vectors?)");
        return NULL;
    }
    r->budget -= bytes;
    void *p = calloc(n ? n : 1, es);
    if (!p) r->err = pdq_fail(r->st, PDQ_ERR_NOMEM, "out of memory reading the model");
    return p;
}

static pdq_code table_at(rd *r, size_t pos, tbl *t, const char *what) {
    if (pos % 4 || pos > r->len - 4) return bad(r, "%s: table offset %zu out of range", what, pos);
    int32_t so;
    memcpy(&so, r->p + pos, 4);
    int64_t vt = (int64_t)pos - so;
    if (vt < 0 || vt % 2 || (uint64_t)vt > r->len - 4)
        return bad(r, "%s: vtable offset %lld out of range", what, (long long)vt);
    t->pos = pos;
    t->vt = (size_t)vt;
    t->vtlen = u16at(r->p + vt);
    t->objlen = u16at(r->p + vt + 2);
    if (t->vtlen < 4 || t->vtlen % 2 || t->vt + t->vtlen > r->len)
        return bad(r, "%s: vtable of %u bytes invalid or past the end", what, t->vtlen);
    if (t->objlen < 4 || t->objlen > r->len - pos)
        return bad(r, "%s: table of %u bytes runs past the end of the file", what, t->objlen);
    return PDQ_OK;
}

/* Position of a field of `size` bytes, 0 when absent. */
static pdq_code field(rd *r, const tbl *t, int slot, size_t size, size_t *pos, const char *what) {
    *pos = 0;
    if (4 + 2 * (size_t)slot + 2 > t->vtlen) return PDQ_OK;
    uint16_t off = u16at(r->p + t->vt + 4 + 2 * slot);
    if (!off) return PDQ_OK;
    if (off < 4 || off + size > t->objlen) return bad(r, "%s: field %d lies outside its table", what, slot);
    if ((t->pos + off) % size) return bad(r, "%s: field %d is misaligned", what, slot);
    *pos = t->pos + off;
    return PDQ_OK;
}

#define SCALAR_GETTER(name, type)                                                                  \
    static pdq_code name(rd *r, const tbl *t, int slot, type dflt, type *out, const char *what) {  \
        size_t pos;                                                                                \
        pdq_code rc = field(r, t, slot, sizeof(type), &pos, what);                                 \
        *out = dflt;                                                                               \
        if (!rc && pos) memcpy(out, r->p + pos, sizeof(type));                                     \
        return rc;                                                                                 \
    }
SCALAR_GETTER(get_u8, uint8_t)
SCALAR_GETTER(get_i8, int8_t)
SCALAR_GETTER(get_i32, int32_t)
SCALAR_GETTER(get_u32, uint32_t)
SCALAR_GETTER(get_u64, uint64_t)
SCALAR_GETTER(get_f32, float)

static pdq_code get_bool(rd *r, const tbl *t, int slot, bool dflt, bool *out, const char *what) {
    uint8_t v;
    pdq_code rc = get_u8(r, t, slot, dflt, &v, what);
    *out = v != 0;
    return rc;
}

/* Follows the uoffset stored at pos; *target = 0 never happens for valid data. */
static pdq_code follow(rd *r, size_t pos, size_t *target, const char *what) {
    uint32_t u = u32at(r->p + pos);
    if (u == 0 || u > r->len - 4 - pos) return bad(r, "%s: offset %u out of range", what, u);
    *target = pos + u;
    return PDQ_OK;
}

static pdq_code get_table(rd *r, const tbl *t, int slot, tbl *out, int *present, const char *what) {
    size_t pos, target = 0;
    pdq_code rc = field(r, t, slot, 4, &pos, what);
    *present = 0;
    if (rc || !pos) return rc;
    if ((rc = follow(r, pos, &target, what))) return rc;
    *present = 1;
    return table_at(r, target, out, what);
}

/* A vector field: *n elements of es bytes starting at *data (n = 0 when absent). */
static pdq_code get_vec(rd *r, const tbl *t, int slot, size_t es, uint32_t *n, size_t *data, const char *what) {
    size_t pos, target = 0;
    *n = 0;
    *data = 0;
    pdq_code rc = field(r, t, slot, 4, &pos, what);
    if (rc || !pos) return rc;
    if ((rc = follow(r, pos, &target, what))) return rc;
    if (target % 4) return bad(r, "%s: misaligned vector", what);
    uint32_t cnt = u32at(r->p + target);
    if (cnt > (r->len - target - 4) / es)
        return bad(r, "%s: vector of %u elements runs past the end of the file", what, cnt);
    if (es == 8 && (target + 4) % 8) return bad(r, "%s: misaligned vector", what);
    *n = cnt;
    *data = target + 4;
    return PDQ_OK;
}

static pdq_code get_string(rd *r, const tbl *t, int slot, char **out, const char *what) {
    uint32_t n;
    size_t data;
    *out = NULL;
    pdq_code rc = get_vec(r, t, slot, 1, &n, &data, what);
    if (rc || !data) return rc;
    if (n >= r->len - data || r->p[data + n] != 0) return bad(r, "%s: string not NUL-terminated", what);
    if (memchr(r->p + data, 0, n)) return bad(r, "%s: string contains NUL", what);
    if (!(*out = ralloc(r, n + 1, 1))) return r->err;
    memcpy(*out, r->p + data, n);
    return PDQ_OK;
}

static pdq_code vec_table(rd *r, size_t data, uint32_t i, tbl *t, const char *what) {
    size_t target = 0;
    pdq_code rc = follow(r, data + 4 * (size_t)i, &target, what);
    return rc ? rc : table_at(r, target, t, what);
}

/* Copies an int32/float/int64 vector into a fresh array (count may be limited by max). */
static pdq_code copy_vec(rd *r, const tbl *t, int slot, size_t es, uint32_t max, void **out, int32_t *n,
                         const char *what) {
    uint32_t cnt;
    size_t data;
    *out = NULL;
    *n = 0;
    pdq_code rc = get_vec(r, t, slot, es, &cnt, &data, what);
    if (rc || !data) return rc;
    if (cnt > max) return bad(r, "%s: %u entries (max %u)", what, cnt, max);
    if (!(*out = ralloc(r, cnt, es))) return r->err;
    memcpy(*out, r->p + data, (size_t)cnt * es);
    *n = (int32_t)cnt;
    return PDQ_OK;
}

/* A small int32 vector into a fixed array. */
static pdq_code fixed_vec(rd *r, const tbl *t, int slot, int32_t *dst, int32_t *n, const char *what) {
    uint32_t cnt;
    size_t data;
    pdq_code rc = get_vec(r, t, slot, 4, &cnt, &data, what);
    if (rc) return rc;
    if (cnt > PDQ_CIRCLE_MAX_RANK) return bad(r, "%s: rank %u exceeds %d", what, cnt, PDQ_CIRCLE_MAX_RANK);
    if (cnt) memcpy(dst, r->p + data, (size_t)cnt * 4);
    *n = (int32_t)cnt;
    return PDQ_OK;
}

static pdq_code read_opcode(rd *r, const tbl *t, pdq_circle_opcode *c, int32_t i) {
    char what[64];
    snprintf(what, sizeof what, "operator code %d", i);
    int8_t dep;
    int32_t code;
    pdq_code rc = get_i8(r, t, CIRCLE_OPCODE_DEPRECATED_BUILTIN_CODE, 0, &dep, what);
    if (!rc) rc = get_i32(r, t, CIRCLE_OPCODE_BUILTIN_CODE, 0, &code, what);
    if (!rc) rc = get_i32(r, t, CIRCLE_OPCODE_VERSION, 1, &c->version, what);
    if (rc) return rc;
    /* NOTES §2 (ONE builtin_code_neutral): 127 defers to builtin_code, else the byte (maybe < 0) */
    c->builtin_code = dep == CIRCLE_OP_PLACEHOLDER_FOR_GREATER_OP_CODES ? code : dep;
    if (c->builtin_code < CIRCLE_OP_MIN || c->builtin_code > CIRCLE_OP_MAX ||
        c->builtin_code == CIRCLE_OP_PLACEHOLDER_FOR_GREATER_OP_CODES)
        return bad(r, "%s: unknown builtin operator %d", what, c->builtin_code);
    return PDQ_OK;
}

static pdq_code read_buffer(rd *r, const tbl *t, pdq_circle_buffer *b, int32_t i) {
    char what[64];
    snprintf(what, sizeof what, "buffer %d", i);
    uint32_t n;
    size_t data;
    uint64_t off, size;
    pdq_code rc = get_vec(r, t, CIRCLE_BUFFER_DATA, 1, &n, &data, what);
    if (!rc) rc = get_u64(r, t, CIRCLE_BUFFER_OFFSET, 0, &off, what);
    if (!rc) rc = get_u64(r, t, CIRCLE_BUFFER_SIZE, 0, &size, what);
    if (rc) return rc;
    if (off == 1 || size == 1)
        return bad(r, "%s: unpatched extended-buffer placeholder (offset %llu, size %llu)", what,
                   (unsigned long long)off, (unsigned long long)size);
    const uint8_t *p = NULL;
    if (off > 1) { /* extended layout: data after the flatbuffer, offset from the file start */
        if (off > r->len || size > r->len - off)
            return bad(r, "%s: extended data [%llu, +%llu) past the end of the %zu-byte file", what,
                       (unsigned long long)off, (unsigned long long)size, r->len);
        p = r->p + off;
        b->len = size;
    } else {
        p = data ? r->p + data : NULL;
        b->len = n;
    }
    b->data = b->len ? p : NULL;
    if (b->len && (uintptr_t)p % 16) { /* keep the 16-byte alignment promise */
        if (!(b->owned = ralloc(r, (size_t)b->len, 1))) return r->err;
        memcpy(b->owned, p, (size_t)b->len);
        b->data = b->owned;
    }
    return PDQ_OK;
}

static pdq_code read_quant(rd *r, const tbl *q, pdq_circle_quant *out, const char *what) {
    uint8_t details;
    pdq_code rc = copy_vec(r, q, CIRCLE_QPARAM_MIN, 4, UINT32_MAX, (void **)&out->min, &out->n_min, what);
    if (!rc) rc = copy_vec(r, q, CIRCLE_QPARAM_MAX, 4, UINT32_MAX, (void **)&out->max, &out->n_max, what);
    if (!rc) rc = copy_vec(r, q, CIRCLE_QPARAM_SCALE, 4, UINT32_MAX, (void **)&out->scale, &out->n_scale, what);
    if (!rc) rc = copy_vec(r, q, CIRCLE_QPARAM_ZERO_POINT, 8, UINT32_MAX, (void **)&out->zero_point,
                           &out->n_zero_point, what);
    if (!rc) rc = get_i32(r, q, CIRCLE_QPARAM_QUANTIZED_DIMENSION, 0, &out->quantized_dimension, what);
    if (!rc) rc = get_u8(r, q, CIRCLE_QPARAM_DETAILS_TYPE, 0, &details, what);
    if (!rc && details == CIRCLE_QDETAILS_BLOCKWISE) {
        tbl d;
        int has = 0;
        rc = get_table(r, q, CIRCLE_QPARAM_DETAILS, &d, &has, what);
        if (!rc && !has) rc = bad(r, "%s: blockwise quantization without its table", what);
        if (!rc) rc = get_i32(r, &d, CIRCLE_BLOCKWISE_SCALES, 0, &out->block_scales, what);
        if (!rc) rc = get_i32(r, &d, CIRCLE_BLOCKWISE_ZERO_POINTS, 0, &out->block_zero_points, what);
        if (!rc) rc = get_i32(r, &d, CIRCLE_BLOCKWISE_BLOCK_SIZE, 0, &out->block_size, what);
        if (!rc && out->block_size <= 0) rc = bad(r, "%s: blockwise block_size %d", what, out->block_size);
    } else if (!rc && details) {
        rc = pdq_fail(r->st, PDQ_ERR_UNSUPPORTED, "%s: quantization details type %u", what, details);
    }
    return rc;
}

static pdq_code read_tensor(rd *r, const tbl *t, pdq_circle_tensor *x, int32_t i) {
    char what[64];
    snprintf(what, sizeof what, "tensor %d", i);
    tbl q, sp;
    int hasq, hassp;
    int32_t nsig = 0;
    size_t sigpos;
    pdq_code rc = fixed_vec(r, t, CIRCLE_TENSOR_SHAPE, x->shape, &x->rank, what);
    if (!rc) rc = get_i8(r, t, CIRCLE_TENSOR_TYPE, 0, &x->type, what);
    if (!rc) rc = get_u32(r, t, CIRCLE_TENSOR_BUFFER, 0, &x->buffer, what);
    if (!rc) rc = get_string(r, t, CIRCLE_TENSOR_NAME, &x->name, what);
    if (!rc) rc = field(r, t, CIRCLE_TENSOR_SHAPE_SIGNATURE, 4, &sigpos, what);
    if (!rc && sigpos) {
        rc = fixed_vec(r, t, CIRCLE_TENSOR_SHAPE_SIGNATURE, x->shape_signature, &nsig, what);
        if (!rc && nsig != x->rank) rc = bad(r, "%s: shape_signature rank %d vs shape rank %d", what, nsig, x->rank);
        x->has_shape_signature = true;
    }
    if (!rc) rc = get_table(r, t, CIRCLE_TENSOR_SPARSITY, &sp, &hassp, what);
    if (!rc && hassp) rc = pdq_fail(r->st, PDQ_ERR_UNSUPPORTED, "%s: sparse tensors are not supported", what);
    if (!rc) rc = get_table(r, t, CIRCLE_TENSOR_QUANTIZATION, &q, &hasq, what);
    if (!rc && hasq) rc = read_quant(r, &q, &x->quant, what);
    return rc;
}

/* Option fields of the tags pdq knows; other tags keep their number and zeroed options. */
static pdq_code read_options(rd *r, const tbl *t, uint8_t type, pdq_circle_options *o, const char *what) {
    *o = pdq_circle_options_default(type);
    pdq_code rc = PDQ_OK;
    switch (type) {
    case CIRCLE_OPT_FullyConnectedOptions:
        rc = get_i8(r, t, CIRCLE_FC_FUSED_ACTIVATION_FUNCTION, 0, &o->fc.fused_activation_function, what);
        if (!rc) rc = get_i8(r, t, CIRCLE_FC_WEIGHTS_FORMAT, 0, &o->fc.weights_format, what);
        if (!rc) rc = get_bool(r, t, CIRCLE_FC_KEEP_NUM_DIMS, 0, &o->fc.keep_num_dims, what);
        if (!rc) rc = get_bool(r, t, CIRCLE_FC_ASYMMETRIC_QUANTIZE_INPUTS, 0, &o->fc.asymmetric_quantize_inputs, what);
        if (!rc) rc = get_i8(r, t, CIRCLE_FC_QUANTIZED_BIAS_TYPE, 0, &o->fc.quantized_bias_type, what);
        break;
    case CIRCLE_OPT_BatchMatMulOptions:
        rc = get_bool(r, t, CIRCLE_BMM_ADJOINT_LHS, 0, &o->bmm.adjoint_lhs, what);
        if (!rc) rc = get_bool(r, t, CIRCLE_BMM_ADJOINT_RHS, 0, &o->bmm.adjoint_rhs, what);
        if (!rc) rc = get_bool(r, t, CIRCLE_BMM_ASYMMETRIC_QUANTIZE_INPUTS, 0, &o->bmm.asymmetric_quantize_inputs, what);
        break;
    case CIRCLE_OPT_RmsNormOptions: rc = get_f32(r, t, CIRCLE_RMSNORM_EPSILON, 0, &o->rms_norm.epsilon, what); break;
    case CIRCLE_OPT_GeluOptions: rc = get_bool(r, t, CIRCLE_GELU_APPROXIMATE, 0, &o->gelu.approximate, what); break;
    case CIRCLE_OPT_GatherOptions:
        rc = get_i32(r, t, CIRCLE_GATHER_AXIS, 0, &o->gather.axis, what);
        if (!rc) rc = get_i32(r, t, CIRCLE_GATHER_BATCH_DIMS, 0, &o->gather.batch_dims, what);
        break;
    case CIRCLE_OPT_SoftmaxOptions: rc = get_f32(r, t, CIRCLE_SOFTMAX_BETA, 0, &o->softmax.beta, what); break;
    case CIRCLE_OPT_ConcatenationOptions:
        rc = get_i32(r, t, CIRCLE_CONCAT_AXIS, 0, &o->concat.axis, what);
        if (!rc) rc = get_i8(r, t, CIRCLE_CONCAT_FUSED_ACTIVATION_FUNCTION, 0, &o->concat.fused_activation_function, what);
        break;
    case CIRCLE_OPT_ReshapeOptions:
        rc = fixed_vec(r, t, CIRCLE_RESHAPE_NEW_SHAPE, o->reshape.new_shape, &o->reshape.rank, what);
        break;
    case CIRCLE_OPT_StridedSliceOptions:
        rc = get_i32(r, t, CIRCLE_SSLICE_BEGIN_MASK, 0, &o->strided_slice.begin_mask, what);
        if (!rc) rc = get_i32(r, t, CIRCLE_SSLICE_END_MASK, 0, &o->strided_slice.end_mask, what);
        if (!rc) rc = get_i32(r, t, CIRCLE_SSLICE_ELLIPSIS_MASK, 0, &o->strided_slice.ellipsis_mask, what);
        if (!rc) rc = get_i32(r, t, CIRCLE_SSLICE_NEW_AXIS_MASK, 0, &o->strided_slice.new_axis_mask, what);
        if (!rc) rc = get_i32(r, t, CIRCLE_SSLICE_SHRINK_AXIS_MASK, 0, &o->strided_slice.shrink_axis_mask, what);
        if (!rc) rc = get_bool(r, t, CIRCLE_SSLICE_OFFSET, 0, &o->strided_slice.offset, what);
        break;
    case CIRCLE_OPT_AddOptions:
        rc = get_i8(r, t, CIRCLE_ADD_FUSED_ACTIVATION_FUNCTION, 0, &o->add.fused_activation_function, what);
        if (!rc) rc = get_bool(r, t, CIRCLE_ADD_POT_SCALE_INT16, 1, &o->add.pot_scale_int16, what);
        break;
    case CIRCLE_OPT_SubOptions:
        rc = get_i8(r, t, CIRCLE_SUB_FUSED_ACTIVATION_FUNCTION, 0, &o->sub.fused_activation_function, what);
        if (!rc) rc = get_bool(r, t, CIRCLE_SUB_POT_SCALE_INT16, 1, &o->sub.pot_scale_int16, what);
        break;
    case CIRCLE_OPT_MulOptions: rc = get_i8(r, t, CIRCLE_MUL_FUSED_ACTIVATION_FUNCTION, 0, &o->mul.fused_activation_function, what); break;
    case CIRCLE_OPT_DivOptions: rc = get_i8(r, t, CIRCLE_DIV_FUSED_ACTIVATION_FUNCTION, 0, &o->div.fused_activation_function, what); break;
    case CIRCLE_OPT_ReducerOptions: rc = get_bool(r, t, CIRCLE_REDUCER_KEEP_DIMS, 0, &o->reducer.keep_dims, what); break;
    case CIRCLE_OPT_SplitVOptions: rc = get_i32(r, t, CIRCLE_SPLITV_NUM_SPLITS, 0, &o->split_v.num_splits, what); break;
    default: break;
    }
    return rc;
}

static pdq_code read_op(rd *r, const tbl *t, pdq_circle_op *o, int32_t i) {
    char what[64];
    snprintf(what, sizeof what, "operator %d", i);
    tbl ot;
    int has;
    pdq_code rc = get_u32(r, t, CIRCLE_OPERATOR_OPCODE_INDEX, 0, &o->opcode_index, what);
    if (!rc) rc = copy_vec(r, t, CIRCLE_OPERATOR_INPUTS, 4, PDQ_CIRCLE_MAX_IO, (void **)&o->inputs, &o->n_inputs, what);
    if (!rc) rc = copy_vec(r, t, CIRCLE_OPERATOR_OUTPUTS, 4, PDQ_CIRCLE_MAX_IO, (void **)&o->outputs, &o->n_outputs, what);
    if (!rc) rc = get_u8(r, t, CIRCLE_OPERATOR_BUILTIN_OPTIONS_TYPE, 0, &o->options_type, what);
    if (!rc) rc = get_table(r, t, CIRCLE_OPERATOR_BUILTIN_OPTIONS, &ot, &has, what);
    if (rc) return rc;
    if (o->options_type && !has) return bad(r, "%s: builtin options type %u without a table", what, o->options_type);
    if (!o->options_type) return PDQ_OK;
    return read_options(r, &ot, o->options_type, &o->opt, what);
}

/* Loads a vector of tables into a fresh array of records, one reader call per table. */
#define READ_TABLES(r, parent, slot, arr, n, fn, what)                                               \
    do {                                                                                            \
        uint32_t cnt_;                                                                              \
        size_t data_;                                                                               \
        tbl t_;                                                                                     \
        if ((rc = get_vec(r, parent, slot, 4, &cnt_, &data_, what))) goto fail;                     \
        if (cnt_ > INT32_MAX / 2) { rc = bad(r, "%s: too many entries", what); goto fail; }         \
        if (!((arr) = ralloc(r, cnt_, sizeof *(arr)))) { rc = r->err; goto fail; }                  \
        (n) = (int32_t)cnt_; /* zeroed records: safe to free after a partial read */                \
        for (uint32_t k_ = 0; k_ < cnt_; k_++) {                                                    \
            if ((rc = vec_table(r, data_, k_, &t_, what))) goto fail;                               \
            if ((rc = fn(r, &t_, &(arr)[k_], (int32_t)k_))) goto fail;                              \
        }                                                                                           \
    } while (0)

static pdq_code parse(rd *r, pdq_circle_model *m) {
    pdq_code rc;
    tbl model, sg;
    if (r->len < 8) return bad(r, "file too short (%zu bytes) to be a FlatBuffer", r->len);
    if (memcmp(r->p + 4, "CIR0", 4) != 0)
        return bad(r, "file identifier is \"%c%c%c%c\", expected \"CIR0\"", r->p[4] >= 32 && r->p[4] < 127 ? r->p[4] : '?',
                   r->p[5] >= 32 && r->p[5] < 127 ? r->p[5] : '?', r->p[6] >= 32 && r->p[6] < 127 ? r->p[6] : '?',
                   r->p[7] >= 32 && r->p[7] < 127 ? r->p[7] : '?');
    if ((rc = table_at(r, u32at(r->p), &model, "Model"))) return rc;
    if ((rc = get_u32(r, &model, CIRCLE_MODEL_VERSION, 0, &m->version, "Model"))) return rc;
    if ((rc = get_string(r, &model, CIRCLE_MODEL_DESCRIPTION, &m->description, "Model.description"))) return rc;
    READ_TABLES(r, &model, CIRCLE_MODEL_OPERATOR_CODES, m->opcodes, m->n_opcodes, read_opcode, "Model.operator_codes");
    READ_TABLES(r, &model, CIRCLE_MODEL_BUFFERS, m->buffers, m->n_buffers, read_buffer, "Model.buffers");
    m->cap_opcodes = m->n_opcodes;
    m->cap_buffers = m->n_buffers;
    uint32_t nsg;
    size_t sgdata;
    if ((rc = get_vec(r, &model, CIRCLE_MODEL_SUBGRAPHS, 4, &nsg, &sgdata, "Model.subgraphs"))) return rc;
    if (nsg == 0) return bad(r, "model has no subgraph");
    if (nsg > 1) return pdq_fail(r->st, PDQ_ERR_UNSUPPORTED, "model has %u subgraphs; pdq reads exactly one", nsg);
    if ((rc = vec_table(r, sgdata, 0, &sg, "SubGraph"))) return rc;
    if ((rc = get_string(r, &sg, CIRCLE_SUBGRAPH_NAME, &m->subgraph_name, "SubGraph.name"))) return rc;
    READ_TABLES(r, &sg, CIRCLE_SUBGRAPH_TENSORS, m->tensors, m->n_tensors, read_tensor, "SubGraph.tensors");
    READ_TABLES(r, &sg, CIRCLE_SUBGRAPH_OPERATORS, m->ops, m->n_ops, read_op, "SubGraph.operators");
    m->cap_tensors = m->n_tensors;
    m->cap_ops = m->n_ops;
    if ((rc = copy_vec(r, &sg, CIRCLE_SUBGRAPH_INPUTS, 4, UINT32_MAX, (void **)&m->inputs, &m->n_inputs,
                       "SubGraph.inputs")))
        return rc;
    if ((rc = copy_vec(r, &sg, CIRCLE_SUBGRAPH_OUTPUTS, 4, UINT32_MAX, (void **)&m->outputs, &m->n_outputs,
                       "SubGraph.outputs")))
        return rc;
    m->cap_inputs = m->n_inputs;
    m->cap_outputs = m->n_outputs;
    return circle_validate(m, PDQ_ERR_FORMAT, r->st);
fail:
    return rc;
}

/* Parses len bytes at image, which m owns from now on: a malloc'd copy, or the file mapping fm. */
static pdq_code parse_image(void *image, size_t len, pdq_file_map *fm, pdq_circle_model *m, pdq_status *st) {
    memset(m, 0, sizeof *m);
    m->image = image;
    m->map = fm;
    rd r = {image, len, (uint64_t)len * 64 + ((uint64_t)1 << 20), st, PDQ_OK};
    pdq_code rc = parse(&r, m);
    if (rc) pdq_circle_model_free(m);
    return rc;
}

static void *alloc_image(size_t len) {
    void *p = NULL;
    return posix_memalign(&p, 64, len ? len : 1) == 0 ? p : NULL;
}

pdq_code pdq_circle_parse(const void *data, size_t len, pdq_circle_model *m, pdq_status *st) {
    void *img = alloc_image(len);
    if (!img) return pdq_fail(st, PDQ_ERR_NOMEM, "circle: %zu bytes", len);
    if (len) memcpy(img, data, len);
    return parse_image(img, len, NULL, m, st);
}

/* The file is mapped, not read: buffers point into the page cache, so a consumer that borrows
 * them (the importer's byte-typed constants) holds the weights once, as the file stores them. */
pdq_code pdq_circle_read(const char *path, pdq_circle_model *m, pdq_status *st) {
    memset(m, 0, sizeof *m);
    pdq_file_map *fm;
    pdq_code rc = pdq_file_map_open(path, &fm, st);
    if (rc) return rc;
    if ((rc = parse_image((void *)fm->data, fm->size, fm, m, st))) pdq_wrap(st, "%s", path);
    return rc;
}
