/* Serializes a pdq_circle_model as TICO does (NOTES.md §1-5), with the optional extended-buffer
 * layout of ONE for files that would pass 2 GiB. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "circle/circle_defs.h"
#include "circle/circle_internal.h"
#include "circle/fb_builder.h"
#include "pdq/file.h"

#define ALIGN16(x) (((x) + 15) & ~(uint64_t)15)

static fb_ref vec_i32(fb_builder *b, const int32_t *v, int32_t n) { return fb_vec_scalars(b, v, (size_t)n, 4, 0); }

static fb_ref build_quant(fb_builder *b, const pdq_circle_quant *q) {
    if (q->block_size) { /* BlockwiseQuantization details; the arrays stay absent */
        fb_table_start(b);
        fb_add_i32(b, CIRCLE_BLOCKWISE_SCALES, q->block_scales, 0);
        fb_add_i32(b, CIRCLE_BLOCKWISE_ZERO_POINTS, q->block_zero_points, 0);
        fb_add_i32(b, CIRCLE_BLOCKWISE_BLOCK_SIZE, q->block_size, 0);
        fb_ref details = fb_table_end(b);
        fb_table_start(b);
        fb_add_u8(b, CIRCLE_QPARAM_DETAILS_TYPE, CIRCLE_QDETAILS_BLOCKWISE, 0);
        fb_add_ref(b, CIRCLE_QPARAM_DETAILS, details);
        return fb_table_end(b);
    }
    if (!q->n_scale && !q->n_zero_point && !q->n_min && !q->n_max) return 0;
    fb_ref mn = q->n_min ? fb_vec_scalars(b, q->min, (size_t)q->n_min, 4, 0) : 0;
    fb_ref mx = q->n_max ? fb_vec_scalars(b, q->max, (size_t)q->n_max, 4, 0) : 0;
    fb_ref sc = q->n_scale ? fb_vec_scalars(b, q->scale, (size_t)q->n_scale, 4, 0) : 0;
    fb_ref zp = q->n_zero_point ? fb_vec_scalars(b, q->zero_point, (size_t)q->n_zero_point, 8, 0) : 0;
    fb_table_start(b);
    fb_add_ref(b, CIRCLE_QPARAM_MIN, mn);
    fb_add_ref(b, CIRCLE_QPARAM_MAX, mx);
    fb_add_ref(b, CIRCLE_QPARAM_SCALE, sc);
    fb_add_ref(b, CIRCLE_QPARAM_ZERO_POINT, zp);
    fb_add_i32(b, CIRCLE_QPARAM_QUANTIZED_DIMENSION, q->quantized_dimension, 0);
    return fb_table_end(b);
}

static fb_ref build_tensor(fb_builder *b, const pdq_circle_tensor *t) {
    fb_ref shape = vec_i32(b, t->shape, t->rank);
    fb_ref sig = t->has_shape_signature ? vec_i32(b, t->shape_signature, t->rank) : 0;
    fb_ref name = t->name ? fb_string(b, t->name) : 0;
    fb_ref quant = build_quant(b, &t->quant);
    fb_table_start(b);
    fb_add_ref(b, CIRCLE_TENSOR_SHAPE, shape);
    fb_add_i8(b, CIRCLE_TENSOR_TYPE, t->type, 0);
    fb_add_u32(b, CIRCLE_TENSOR_BUFFER, t->buffer, 0);
    fb_add_ref(b, CIRCLE_TENSOR_NAME, name);
    fb_add_ref(b, CIRCLE_TENSOR_QUANTIZATION, quant);
    fb_add_ref(b, CIRCLE_TENSOR_SHAPE_SIGNATURE, sig);
    return fb_table_end(b);
}

static int options_supported(uint8_t t) {
    static const uint8_t k[] = {
        CIRCLE_OPT_NONE, CIRCLE_OPT_FullyConnectedOptions, CIRCLE_OPT_BatchMatMulOptions,
        CIRCLE_OPT_RmsNormOptions, CIRCLE_OPT_GatherOptions, CIRCLE_OPT_SoftmaxOptions,
        CIRCLE_OPT_ConcatenationOptions, CIRCLE_OPT_ReshapeOptions, CIRCLE_OPT_StridedSliceOptions,
        CIRCLE_OPT_AddOptions, CIRCLE_OPT_SubOptions, CIRCLE_OPT_MulOptions, CIRCLE_OPT_DivOptions,
        CIRCLE_OPT_ReducerOptions, CIRCLE_OPT_SplitVOptions, CIRCLE_OPT_TransposeOptions,
        CIRCLE_OPT_NegOptions, CIRCLE_OPT_QuantizeOptions, CIRCLE_OPT_DequantizeOptions, CIRCLE_OPT_GeluOptions};
    for (size_t i = 0; i < sizeof k; i++)
        if (k[i] == t) return 1;
    return 0;
}

/* The option table of o (its tag is one of options_supported). */
static fb_ref build_options(fb_builder *b, const pdq_circle_op *o) {
    const pdq_circle_options *p = &o->opt;
    fb_ref vec = 0;
    if (o->options_type == CIRCLE_OPT_ReshapeOptions) vec = vec_i32(b, p->reshape.new_shape, p->reshape.rank);
    fb_table_start(b);
    switch (o->options_type) {
    case CIRCLE_OPT_FullyConnectedOptions:
        fb_add_i8(b, CIRCLE_FC_FUSED_ACTIVATION_FUNCTION, p->fc.fused_activation_function, 0);
        fb_add_i8(b, CIRCLE_FC_WEIGHTS_FORMAT, p->fc.weights_format, 0);
        fb_add_u8(b, CIRCLE_FC_KEEP_NUM_DIMS, p->fc.keep_num_dims, 0);
        fb_add_u8(b, CIRCLE_FC_ASYMMETRIC_QUANTIZE_INPUTS, p->fc.asymmetric_quantize_inputs, 0);
        fb_add_i8(b, CIRCLE_FC_QUANTIZED_BIAS_TYPE, p->fc.quantized_bias_type, 0);
        break;
    case CIRCLE_OPT_BatchMatMulOptions:
        fb_add_u8(b, CIRCLE_BMM_ADJOINT_LHS, p->bmm.adjoint_lhs, 0);
        fb_add_u8(b, CIRCLE_BMM_ADJOINT_RHS, p->bmm.adjoint_rhs, 0);
        fb_add_u8(b, CIRCLE_BMM_ASYMMETRIC_QUANTIZE_INPUTS, p->bmm.asymmetric_quantize_inputs, 0);
        break;
    case CIRCLE_OPT_RmsNormOptions: fb_add_f32(b, CIRCLE_RMSNORM_EPSILON, p->rms_norm.epsilon, 0); break;
    case CIRCLE_OPT_GatherOptions:
        fb_add_i32(b, CIRCLE_GATHER_AXIS, p->gather.axis, 0);
        fb_add_i32(b, CIRCLE_GATHER_BATCH_DIMS, p->gather.batch_dims, 0);
        break;
    case CIRCLE_OPT_SoftmaxOptions: fb_add_f32(b, CIRCLE_SOFTMAX_BETA, p->softmax.beta, 0); break;
    case CIRCLE_OPT_ConcatenationOptions:
        fb_add_i32(b, CIRCLE_CONCAT_AXIS, p->concat.axis, 0);
        fb_add_i8(b, CIRCLE_CONCAT_FUSED_ACTIVATION_FUNCTION, p->concat.fused_activation_function, 0);
        break;
    case CIRCLE_OPT_ReshapeOptions: fb_add_ref(b, CIRCLE_RESHAPE_NEW_SHAPE, vec); break;
    case CIRCLE_OPT_StridedSliceOptions:
        fb_add_i32(b, CIRCLE_SSLICE_BEGIN_MASK, p->strided_slice.begin_mask, 0);
        fb_add_i32(b, CIRCLE_SSLICE_END_MASK, p->strided_slice.end_mask, 0);
        fb_add_i32(b, CIRCLE_SSLICE_ELLIPSIS_MASK, p->strided_slice.ellipsis_mask, 0);
        fb_add_i32(b, CIRCLE_SSLICE_NEW_AXIS_MASK, p->strided_slice.new_axis_mask, 0);
        fb_add_i32(b, CIRCLE_SSLICE_SHRINK_AXIS_MASK, p->strided_slice.shrink_axis_mask, 0);
        fb_add_u8(b, CIRCLE_SSLICE_OFFSET, p->strided_slice.offset, 0);
        break;
    case CIRCLE_OPT_AddOptions:
        fb_add_i8(b, CIRCLE_ADD_FUSED_ACTIVATION_FUNCTION, p->add.fused_activation_function, 0);
        fb_add_u8(b, CIRCLE_ADD_POT_SCALE_INT16, p->add.pot_scale_int16, 1);
        break;
    case CIRCLE_OPT_SubOptions:
        fb_add_i8(b, CIRCLE_SUB_FUSED_ACTIVATION_FUNCTION, p->sub.fused_activation_function, 0);
        fb_add_u8(b, CIRCLE_SUB_POT_SCALE_INT16, p->sub.pot_scale_int16, 1);
        break;
    case CIRCLE_OPT_MulOptions: fb_add_i8(b, CIRCLE_MUL_FUSED_ACTIVATION_FUNCTION, p->mul.fused_activation_function, 0); break;
    case CIRCLE_OPT_DivOptions: fb_add_i8(b, CIRCLE_DIV_FUSED_ACTIVATION_FUNCTION, p->div.fused_activation_function, 0); break;
    case CIRCLE_OPT_GeluOptions: fb_add_u8(b, CIRCLE_GELU_APPROXIMATE, p->gelu.approximate, 0); break;
    case CIRCLE_OPT_ReducerOptions: fb_add_u8(b, CIRCLE_REDUCER_KEEP_DIMS, p->reducer.keep_dims, 0); break;
    case CIRCLE_OPT_SplitVOptions: fb_add_i32(b, CIRCLE_SPLITV_NUM_SPLITS, p->split_v.num_splits, 0); break;
    default: /* empty tables: Transpose, Neg, Quantize, Dequantize */
        break;
    }
    return fb_table_end(b);
}

static fb_ref build_op(fb_builder *b, const pdq_circle_op *o) {
    fb_ref in = vec_i32(b, o->inputs, o->n_inputs);
    fb_ref out = vec_i32(b, o->outputs, o->n_outputs);
    fb_ref opt = o->options_type ? build_options(b, o) : 0;
    fb_table_start(b);
    fb_add_u32(b, CIRCLE_OPERATOR_OPCODE_INDEX, o->opcode_index, 0);
    fb_add_ref(b, CIRCLE_OPERATOR_INPUTS, in);
    fb_add_ref(b, CIRCLE_OPERATOR_OUTPUTS, out);
    fb_add_union(b, CIRCLE_OPERATOR_BUILTIN_OPTIONS_TYPE, o->options_type, opt);
    return fb_table_end(b);
}

static fb_ref build_opcode(fb_builder *b, const pdq_circle_opcode *c) {
    /* NOTES §2: deprecated byte = min(127, code), negative Circle-only codes stay negative */
    int8_t dep = (int8_t)(c->builtin_code < CIRCLE_OP_PLACEHOLDER_FOR_GREATER_OP_CODES
                              ? c->builtin_code : CIRCLE_OP_PLACEHOLDER_FOR_GREATER_OP_CODES);
    fb_table_start(b);
    fb_add_i8(b, CIRCLE_OPCODE_DEPRECATED_BUILTIN_CODE, dep, 0);
    fb_add_i32(b, CIRCLE_OPCODE_VERSION, c->version, 1);
    fb_add_i32(b, CIRCLE_OPCODE_BUILTIN_CODE, c->builtin_code, 0);
    return fb_table_end(b);
}

typedef struct {
    fb_ref *off_field, *size_field; /* extended layout: placeholder fields per buffer (0 = inline) */
} ext_refs;

/* Builds the whole flatbuffer; in the extended layout every buffer over one byte gets the
 * placeholder offset = size = 1 (a one-byte buffer stays inline: size 1 means "unpatched"). */
static pdq_code build(fb_builder *b, const pdq_circle_model *m, int extended, ext_refs *ext, pdq_status *st) {
    int32_t nmax = m->n_buffers;
    if (m->n_tensors > nmax) nmax = m->n_tensors;
    if (m->n_ops > nmax) nmax = m->n_ops;
    if (m->n_opcodes > nmax) nmax = m->n_opcodes;
    fb_ref *refs = malloc((size_t)(nmax ? nmax : 1) * sizeof *refs);
    if (!refs) return pdq_fail(st, PDQ_ERR_NOMEM, "circle writer");

    for (int32_t i = 0; i < m->n_buffers; i++) {
        const pdq_circle_buffer *bu = &m->buffers[i];
        fb_ref data = 0;
        int ext_here = extended && bu->len > 1;
        if (bu->len && !ext_here) data = fb_vec_scalars(b, bu->data, (size_t)bu->len, 1, 16);
        fb_table_start(b);
        fb_add_ref(b, CIRCLE_BUFFER_DATA, data);
        ext->off_field[i] = ext_here ? fb_add_u64(b, CIRCLE_BUFFER_OFFSET, 1, 0) : 0;
        ext->size_field[i] = ext_here ? fb_add_u64(b, CIRCLE_BUFFER_SIZE, 1, 0) : 0;
        refs[i] = fb_table_end(b);
    }
    fb_ref buffers = fb_vec_refs(b, refs, (size_t)m->n_buffers);

    for (int32_t i = 0; i < m->n_tensors; i++) refs[i] = build_tensor(b, &m->tensors[i]);
    fb_ref tensors = fb_vec_refs(b, refs, (size_t)m->n_tensors);
    for (int32_t i = 0; i < m->n_ops; i++) refs[i] = build_op(b, &m->ops[i]);
    fb_ref ops = fb_vec_refs(b, refs, (size_t)m->n_ops);
    fb_ref ins = vec_i32(b, m->inputs, m->n_inputs);
    fb_ref outs = vec_i32(b, m->outputs, m->n_outputs);
    fb_ref sgname = fb_string(b, m->subgraph_name ? m->subgraph_name : "subgraph");
    fb_table_start(b);
    fb_add_ref(b, CIRCLE_SUBGRAPH_TENSORS, tensors);
    fb_add_ref(b, CIRCLE_SUBGRAPH_INPUTS, ins);
    fb_add_ref(b, CIRCLE_SUBGRAPH_OUTPUTS, outs);
    fb_add_ref(b, CIRCLE_SUBGRAPH_OPERATORS, ops);
    fb_add_ref(b, CIRCLE_SUBGRAPH_NAME, sgname);
    fb_ref sg = fb_table_end(b);
    fb_ref subgraphs = fb_vec_refs(b, &sg, 1);

    for (int32_t i = 0; i < m->n_opcodes; i++) refs[i] = build_opcode(b, &m->opcodes[i]);
    fb_ref opcodes = fb_vec_refs(b, refs, (size_t)m->n_opcodes);
    fb_ref desc = fb_string(b, m->description ? m->description : "circle");
    fb_table_start(b);
    fb_add_u32(b, CIRCLE_MODEL_VERSION, m->version, 0);
    fb_add_ref(b, CIRCLE_MODEL_OPERATOR_CODES, opcodes);
    fb_add_ref(b, CIRCLE_MODEL_SUBGRAPHS, subgraphs);
    fb_add_ref(b, CIRCLE_MODEL_DESCRIPTION, desc);
    fb_add_ref(b, CIRCLE_MODEL_BUFFERS, buffers);
    refs[0] = fb_table_end(b);
    uint8_t *bytes;
    size_t len;
    pdq_code rc = fb_finish(b, refs[0], "CIR0", &bytes, &len, st);
    free(refs);
    return rc;
}

static pdq_code put(FILE *f, const void *p, size_t n, pdq_status *st) {
    if (n && fwrite(p, 1, n, f) != n) return pdq_fail(st, PDQ_ERR_IO, "write failed: %s", strerror(errno));
    return PDQ_OK;
}

static pdq_code put_zeros(FILE *f, size_t n, pdq_status *st) {
    static const uint8_t z[16];
    return put(f, z, n, st);
}

pdq_code circle_write_stream(FILE *f, const pdq_circle_model *m, const pdq_circle_write_opts *opts,
                             pdq_status *st) {
    pdq_code rc = circle_validate(m, PDQ_ERR_ARG, st);
    if (rc) return rc;
    for (int32_t i = 0; i < m->n_ops; i++)
        if (!options_supported(m->ops[i].options_type))
            return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "operator %d: builtin options type %d is not supported by the writer",
                            i, m->ops[i].options_type);
    uint64_t limit = (uint64_t)1 << 31; /* an inline FlatBuffer cannot pass 2 GiB */
    if (opts && opts->auto_limit && opts->auto_limit < limit) limit = opts->auto_limit;
    ext_refs ext = {calloc((size_t)m->n_buffers, sizeof(fb_ref)), calloc((size_t)m->n_buffers, sizeof(fb_ref))};
    fb_builder b;
    fb_init(&b);
    if (!ext.off_field || !ext.size_field) {
        rc = pdq_fail(st, PDQ_ERR_NOMEM, "circle writer");
        goto done;
    }
    /* Build the data-less (extended) form first: its size plus the data decides the layout. */
    rc = build(&b, m, 1, &ext, st);
    if (rc) goto done;
    uint64_t inline_size = b.size;
    for (int32_t i = 0; i < m->n_buffers; i++) inline_size += m->buffers[i].len + 32;
    int extended = (opts && opts->extended) || inline_size >= limit;
    if (!extended) {
        fb_free(&b);
        fb_init(&b);
        fb_reserve(&b, (size_t)(inline_size < FB_MAX_SIZE ? inline_size : FB_MAX_SIZE));
        rc = build(&b, m, 0, &ext, st);
        if (rc) goto done;
    }
    uint8_t *fb = b.buf + b.cap - b.size;
    uint64_t pos = ALIGN16((uint64_t)b.size);
    for (int32_t i = 0; extended && i < m->n_buffers; i++) {
        if (!ext.off_field[i]) continue;
        uint64_t len = m->buffers[i].len;
        memcpy(fb + fb_pos(&b, ext.off_field[i]), &pos, 8); /* NOTES §1 step 3 */
        memcpy(fb + fb_pos(&b, ext.size_field[i]), &len, 8);
        pos += ALIGN16(len);
    }
    rc = put(f, fb, b.size, st);
    if (!rc && extended) rc = put_zeros(f, (size_t)(ALIGN16((uint64_t)b.size) - b.size), st);
    for (int32_t i = 0; !rc && extended && i < m->n_buffers; i++) {
        if (!ext.off_field[i]) continue;
        const pdq_circle_buffer *bu = &m->buffers[i];
        rc = put(f, bu->data, (size_t)bu->len, st);
        if (!rc) rc = put_zeros(f, (size_t)(ALIGN16(bu->len) - bu->len), st);
    }
done:
    fb_free(&b);
    free(ext.off_field);
    free(ext.size_field);
    return rc;
}

pdq_code pdq_circle_write(const char *path, const pdq_circle_model *m, const pdq_circle_write_opts *opts,
                          pdq_status *st) {
    pdq_file_writer *w;
    pdq_code rc = pdq_file_begin(path, NULL, &w, st); /* temp + fsync + rename: pdq/file.h */
    if (!rc) {
        FILE *f = pdq_file_stream(w);
        rc = f ? circle_write_stream(f, m, opts, st) : pdq_fail(st, PDQ_ERR_NOMEM, "%s: out of memory", path);
        if (rc == PDQ_ERR_IO) pdq_file_fail(w, st); /* the stream's errno, naming the final path */
        else if (rc) pdq_file_abort(w);
        else rc = pdq_file_commit(w, st);
    }
    if (rc) pdq_wrap(st, "writing %s", path);
    return rc;
}
