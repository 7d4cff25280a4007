/* Circle container: schema constants re-derived from the schema text, files checked with Debian's
 * flatc against the real schema (skipped without ../shared/circle or flatc), write -> read round
 * trips, the extended-buffer layout, UINT4 packing and hostile files. */
#include "testutil.h"

#include <ctype.h>
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "circle/circle_defs.h"
#include "circle/op_circle.h"
#include "ops/op_def.h"
#include "circle/circle_internal.h"
#include "circle/fb_builder.h"
#include "pdq/circle.h"

/* ---------------------------------------------------------------- schema text parsing */

static char *schema_text(const char *file) {
    const char *sh = tu_shared_dir();
    if (!sh) return NULL;
    char path[512];
    snprintf(path, sizeof path, "%s/circle/%s", sh, file);
    char *s = tu_read_file(path, NULL);
    if (!s) return NULL;
    for (char *p = s; (p = strstr(p, "//"));) /* drop comments */
        while (*p && *p != '\n') *p++ = ' ';
    return s;
}

static int isid(char c) { return isalnum((unsigned char)c) || c == '_'; }

/* Body (after '{') of "<kw> <name>" declared in the schema. */
static const char *decl_body(const char *text, const char *kw, const char *name) {
    size_t n = strlen(name), k = strlen(kw);
    for (const char *p = text; (p = strstr(p, kw)); p++) {
        if (p != text && isid(p[-1])) continue;
        const char *q = p + k;
        if (!isspace((unsigned char)*q)) continue;
        while (isspace((unsigned char)*q)) q++;
        if (strncmp(q, name, n) != 0 || isid(q[n])) continue;
        const char *b = strchr(q, '{');
        return b ? b + 1 : NULL;
    }
    return NULL;
}

/* Copies the next entry (up to sep or '}') trimmed into out; returns the rest or NULL at '}'. */
static const char *next_entry(const char *p, char sep, char *out, size_t cap) {
    while (isspace((unsigned char)*p)) p++;
    if (*p == '}' || !*p) return NULL;
    size_t n = 0;
    while (*p && *p != sep && *p != '}') {
        if (n + 1 < cap) out[n++] = *p;
        p++;
    }
    while (n && isspace((unsigned char)out[n - 1])) n--;
    out[n] = '\0';
    return *p == sep ? p + 1 : p;
}

/* Value of an enum member (first = 0) or union member (first = 1), counting implicit values. */
static int enum_value(const char *text, const char *kw, const char *type, const char *member, long *out) {
    const char *p = decl_body(text, kw, type);
    long next = strcmp(kw, "union") == 0 ? 1 : 0;
    char e[256];
    while (p && (p = next_entry(p, ',', e, sizeof e))) {
        if (!e[0]) continue;
        char name[128] = "";
        sscanf(e, "%127[A-Za-z0-9_]", name);
        const char *eq = strchr(e, '=');
        long v = eq ? strtol(eq + 1, NULL, 0) : next;
        if (strcmp(name, member) == 0) {
            *out = v;
            return 1;
        }
        next = v + 1;
    }
    return 0;
}

/* Slot of a table field; a union-typed field takes two slots (<f>_type, <f>). */
static int field_slot(const char *text, const char *table, const char *field, long *out) {
    const char *p = decl_body(text, "table", table);
    char e[512];
    long slot = 0;
    while (p && (p = next_entry(p, ';', e, sizeof e))) {
        char name[128] = "", type[128] = "";
        if (sscanf(e, " %127[A-Za-z0-9_] : %127[A-Za-z0-9_.[]", name, type) < 2) continue;
        char probe[160];
        snprintf(probe, sizeof probe, "%s", type);
        int is_union = type[0] != '[' && decl_body(text, "union", probe) != NULL;
        if (is_union) {
            char tname[160];
            snprintf(tname, sizeof tname, "%s_type", name);
            if (strcmp(tname, field) == 0) { *out = slot; return 1; }
            slot++;
        }
        if (strcmp(name, field) == 0) { *out = slot; return 1; }
        slot++;
    }
    return 0;
}

typedef struct { const char *kind, *scope, *name; long value; } schema_fact;

static void test_constants_match_schema(void **state) {
    (void)state;
    char *s = schema_text("circle_schema.fbs");
    if (!s) skip();
    static const schema_fact f[] = {
        {"enum", "TensorType", "FLOAT32", CIRCLE_TT_FLOAT32}, {"enum", "TensorType", "INT32", CIRCLE_TT_INT32},
        {"enum", "TensorType", "UINT8", CIRCLE_TT_UINT8}, {"enum", "TensorType", "INT64", CIRCLE_TT_INT64},
        {"enum", "TensorType", "BOOL", CIRCLE_TT_BOOL}, {"enum", "TensorType", "INT16", CIRCLE_TT_INT16},
        {"enum", "TensorType", "INT8", CIRCLE_TT_INT8}, {"enum", "TensorType", "INT4", CIRCLE_TT_INT4},
        {"enum", "TensorType", "BFLOAT16", CIRCLE_TT_BFLOAT16}, {"enum", "TensorType", "UINT4", CIRCLE_TT_UINT4},
        {"enum", "TensorType", "MXINT8", CIRCLE_TT_MXINT8}, {"enum", "TensorType", "FLOAT16", CIRCLE_TT_FLOAT16},
        {"enum", "BuiltinOperator", "ATTENTION", CIRCLE_OP_ATTENTION},
        {"enum", "BuiltinOperator", "ROPE", CIRCLE_OP_ROPE},
        {"enum", "BuiltinOperator", "RMS_NORM", CIRCLE_OP_RMS_NORM},
        {"enum", "BuiltinOperator", "INSTANCE_NORM", CIRCLE_OP_INSTANCE_NORM},
        {"enum", "BuiltinOperator", "ADD", CIRCLE_OP_ADD},
        {"enum", "BuiltinOperator", "CONCATENATION", CIRCLE_OP_CONCATENATION},
        {"enum", "BuiltinOperator", "DEQUANTIZE", CIRCLE_OP_DEQUANTIZE},
        {"enum", "BuiltinOperator", "FULLY_CONNECTED", CIRCLE_OP_FULLY_CONNECTED},
        {"enum", "BuiltinOperator", "LOGISTIC", CIRCLE_OP_LOGISTIC}, {"enum", "BuiltinOperator", "MUL", CIRCLE_OP_MUL},
        {"enum", "BuiltinOperator", "RESHAPE", CIRCLE_OP_RESHAPE},
        {"enum", "BuiltinOperator", "SOFTMAX", CIRCLE_OP_SOFTMAX},
        {"enum", "BuiltinOperator", "CUSTOM", CIRCLE_OP_CUSTOM}, {"enum", "BuiltinOperator", "GATHER", CIRCLE_OP_GATHER},
        {"enum", "BuiltinOperator", "TRANSPOSE", CIRCLE_OP_TRANSPOSE},
        {"enum", "BuiltinOperator", "MEAN", CIRCLE_OP_MEAN}, {"enum", "BuiltinOperator", "SUB", CIRCLE_OP_SUB},
        {"enum", "BuiltinOperator", "DIV", CIRCLE_OP_DIV},
        {"enum", "BuiltinOperator", "STRIDED_SLICE", CIRCLE_OP_STRIDED_SLICE},
        {"enum", "BuiltinOperator", "EXP", CIRCLE_OP_EXP}, {"enum", "BuiltinOperator", "NEG", CIRCLE_OP_NEG},
        {"enum", "BuiltinOperator", "SLICE", CIRCLE_OP_SLICE},
        {"enum", "BuiltinOperator", "EXPAND_DIMS", CIRCLE_OP_EXPAND_DIMS},
        {"enum", "BuiltinOperator", "RSQRT", CIRCLE_OP_RSQRT},
        {"enum", "BuiltinOperator", "SPLIT_V", CIRCLE_OP_SPLIT_V},
        {"enum", "BuiltinOperator", "QUANTIZE", CIRCLE_OP_QUANTIZE},
        {"enum", "BuiltinOperator", "BATCH_MATMUL", CIRCLE_OP_BATCH_MATMUL},
        {"enum", "BuiltinOperator", "TANH", CIRCLE_OP_TANH},
        {"enum", "BuiltinOperator", "PLACEHOLDER_FOR_GREATER_OP_CODES", CIRCLE_OP_PLACEHOLDER_FOR_GREATER_OP_CODES},
        {"enum", "BuiltinOperator", "CUMSUM", CIRCLE_OP_CUMSUM},
        {"enum", "BuiltinOperator", "BROADCAST_TO", CIRCLE_OP_BROADCAST_TO},
        {"enum", "BuiltinOperator", "GELU", CIRCLE_OP_GELU},
        {"enum", "BuiltinOperator", "STABLEHLO_CASE", CIRCLE_OP_MAX},
        {"union", "BuiltinOptions", "FullyConnectedOptions", CIRCLE_OPT_FullyConnectedOptions},
        {"union", "BuiltinOptions", "SoftmaxOptions", CIRCLE_OPT_SoftmaxOptions},
        {"union", "BuiltinOptions", "ConcatenationOptions", CIRCLE_OPT_ConcatenationOptions},
        {"union", "BuiltinOptions", "AddOptions", CIRCLE_OPT_AddOptions},
        {"union", "BuiltinOptions", "ReshapeOptions", CIRCLE_OPT_ReshapeOptions},
        {"union", "BuiltinOptions", "MulOptions", CIRCLE_OPT_MulOptions},
        {"union", "BuiltinOptions", "GatherOptions", CIRCLE_OPT_GatherOptions},
        {"union", "BuiltinOptions", "TransposeOptions", CIRCLE_OPT_TransposeOptions},
        {"union", "BuiltinOptions", "ReducerOptions", CIRCLE_OPT_ReducerOptions},
        {"union", "BuiltinOptions", "SubOptions", CIRCLE_OPT_SubOptions},
        {"union", "BuiltinOptions", "DivOptions", CIRCLE_OPT_DivOptions},
        {"union", "BuiltinOptions", "StridedSliceOptions", CIRCLE_OPT_StridedSliceOptions},
        {"union", "BuiltinOptions", "DequantizeOptions", CIRCLE_OPT_DequantizeOptions},
        {"union", "BuiltinOptions", "NegOptions", CIRCLE_OPT_NegOptions},
        {"union", "BuiltinOptions", "SplitVOptions", CIRCLE_OPT_SplitVOptions},
        {"union", "BuiltinOptions", "QuantizeOptions", CIRCLE_OPT_QuantizeOptions},
        {"union", "BuiltinOptions", "BatchMatMulOptions", CIRCLE_OPT_BatchMatMulOptions},
        {"union", "BuiltinOptions", "GeluOptions", CIRCLE_OPT_GeluOptions},
        {"union", "BuiltinOptions", "AttentionOptions", CIRCLE_OPT_AttentionOptions},
        {"union", "BuiltinOptions", "RoPEOptions", CIRCLE_OPT_RoPEOptions},
        {"union", "BuiltinOptions", "RmsNormOptions", CIRCLE_OPT_RmsNormOptions},
        {"union", "BuiltinOptions", "InstanceNormOptions", CIRCLE_OPT_InstanceNormOptions},
        {"table", "Model", "version", CIRCLE_MODEL_VERSION},
        {"table", "Model", "operator_codes", CIRCLE_MODEL_OPERATOR_CODES},
        {"table", "Model", "subgraphs", CIRCLE_MODEL_SUBGRAPHS},
        {"table", "Model", "description", CIRCLE_MODEL_DESCRIPTION},
        {"table", "Model", "buffers", CIRCLE_MODEL_BUFFERS},
        {"table", "Model", "metadata_buffer", CIRCLE_MODEL_METADATA_BUFFER},
        {"table", "Model", "metadata", CIRCLE_MODEL_METADATA},
        {"table", "Model", "signature_defs", CIRCLE_MODEL_SIGNATURE_DEFS},
        {"table", "SubGraph", "tensors", CIRCLE_SUBGRAPH_TENSORS},
        {"table", "SubGraph", "inputs", CIRCLE_SUBGRAPH_INPUTS},
        {"table", "SubGraph", "outputs", CIRCLE_SUBGRAPH_OUTPUTS},
        {"table", "SubGraph", "operators", CIRCLE_SUBGRAPH_OPERATORS},
        {"table", "SubGraph", "name", CIRCLE_SUBGRAPH_NAME},
        {"table", "Tensor", "shape", CIRCLE_TENSOR_SHAPE}, {"table", "Tensor", "type", CIRCLE_TENSOR_TYPE},
        {"table", "Tensor", "buffer", CIRCLE_TENSOR_BUFFER}, {"table", "Tensor", "name", CIRCLE_TENSOR_NAME},
        {"table", "Tensor", "quantization", CIRCLE_TENSOR_QUANTIZATION},
        {"table", "Tensor", "is_variable", CIRCLE_TENSOR_IS_VARIABLE},
        {"table", "Tensor", "sparsity", CIRCLE_TENSOR_SPARSITY},
        {"table", "Tensor", "shape_signature", CIRCLE_TENSOR_SHAPE_SIGNATURE},
        {"table", "Tensor", "has_rank", CIRCLE_TENSOR_HAS_RANK},
        {"table", "QuantizationParameters", "min", CIRCLE_QPARAM_MIN},
        {"table", "QuantizationParameters", "max", CIRCLE_QPARAM_MAX},
        {"table", "QuantizationParameters", "scale", CIRCLE_QPARAM_SCALE},
        {"table", "QuantizationParameters", "zero_point", CIRCLE_QPARAM_ZERO_POINT},
        {"table", "QuantizationParameters", "details_type", CIRCLE_QPARAM_DETAILS_TYPE},
        {"table", "QuantizationParameters", "details", CIRCLE_QPARAM_DETAILS},
        {"table", "QuantizationParameters", "quantized_dimension", CIRCLE_QPARAM_QUANTIZED_DIMENSION},
        {"table", "Buffer", "data", CIRCLE_BUFFER_DATA}, {"table", "Buffer", "offset", CIRCLE_BUFFER_OFFSET},
        {"table", "Buffer", "size", CIRCLE_BUFFER_SIZE},
        {"table", "Operator", "opcode_index", CIRCLE_OPERATOR_OPCODE_INDEX},
        {"table", "Operator", "inputs", CIRCLE_OPERATOR_INPUTS},
        {"table", "Operator", "outputs", CIRCLE_OPERATOR_OUTPUTS},
        {"table", "Operator", "builtin_options_type", CIRCLE_OPERATOR_BUILTIN_OPTIONS_TYPE},
        {"table", "Operator", "builtin_options", CIRCLE_OPERATOR_BUILTIN_OPTIONS},
        {"table", "Operator", "custom_options", CIRCLE_OPERATOR_CUSTOM_OPTIONS},
        {"table", "Operator", "intermediates", CIRCLE_OPERATOR_INTERMEDIATES},
        {"table", "Operator", "large_custom_options_offset", CIRCLE_OPERATOR_LARGE_CUSTOM_OPTIONS_OFFSET},
        {"table", "Operator", "large_custom_options_size", CIRCLE_OPERATOR_LARGE_CUSTOM_OPTIONS_SIZE},
        {"table", "OperatorCode", "deprecated_builtin_code", CIRCLE_OPCODE_DEPRECATED_BUILTIN_CODE},
        {"table", "OperatorCode", "custom_code", CIRCLE_OPCODE_CUSTOM_CODE},
        {"table", "OperatorCode", "version", CIRCLE_OPCODE_VERSION},
        {"table", "OperatorCode", "builtin_code", CIRCLE_OPCODE_BUILTIN_CODE},
        {"table", "FullyConnectedOptions", "fused_activation_function", CIRCLE_FC_FUSED_ACTIVATION_FUNCTION},
        {"table", "FullyConnectedOptions", "weights_format", CIRCLE_FC_WEIGHTS_FORMAT},
        {"table", "FullyConnectedOptions", "keep_num_dims", CIRCLE_FC_KEEP_NUM_DIMS},
        {"table", "FullyConnectedOptions", "asymmetric_quantize_inputs", CIRCLE_FC_ASYMMETRIC_QUANTIZE_INPUTS},
        {"table", "FullyConnectedOptions", "quantized_bias_type", CIRCLE_FC_QUANTIZED_BIAS_TYPE},
        {"table", "BatchMatMulOptions", "adjoint_lhs", CIRCLE_BMM_ADJOINT_LHS},
        {"table", "GeluOptions", "approximate", CIRCLE_GELU_APPROXIMATE},
        {"table", "BatchMatMulOptions", "adjoint_rhs", CIRCLE_BMM_ADJOINT_RHS},
        {"table", "BatchMatMulOptions", "asymmetric_quantize_inputs", CIRCLE_BMM_ASYMMETRIC_QUANTIZE_INPUTS},
        {"table", "RmsNormOptions", "epsilon", CIRCLE_RMSNORM_EPSILON},
        {"table", "GatherOptions", "axis", CIRCLE_GATHER_AXIS},
        {"table", "GatherOptions", "batch_dims", CIRCLE_GATHER_BATCH_DIMS},
        {"table", "SoftmaxOptions", "beta", CIRCLE_SOFTMAX_BETA},
        {"table", "ConcatenationOptions", "axis", CIRCLE_CONCAT_AXIS},
        {"table", "ConcatenationOptions", "fused_activation_function", CIRCLE_CONCAT_FUSED_ACTIVATION_FUNCTION},
        {"table", "ReshapeOptions", "new_shape", CIRCLE_RESHAPE_NEW_SHAPE},
        {"table", "StridedSliceOptions", "begin_mask", CIRCLE_SSLICE_BEGIN_MASK},
        {"table", "StridedSliceOptions", "end_mask", CIRCLE_SSLICE_END_MASK},
        {"table", "StridedSliceOptions", "ellipsis_mask", CIRCLE_SSLICE_ELLIPSIS_MASK},
        {"table", "StridedSliceOptions", "new_axis_mask", CIRCLE_SSLICE_NEW_AXIS_MASK},
        {"table", "StridedSliceOptions", "shrink_axis_mask", CIRCLE_SSLICE_SHRINK_AXIS_MASK},
        {"table", "StridedSliceOptions", "offset", CIRCLE_SSLICE_OFFSET},
        {"table", "AddOptions", "fused_activation_function", CIRCLE_ADD_FUSED_ACTIVATION_FUNCTION},
        {"table", "AddOptions", "pot_scale_int16", CIRCLE_ADD_POT_SCALE_INT16},
        {"table", "SubOptions", "fused_activation_function", CIRCLE_SUB_FUSED_ACTIVATION_FUNCTION},
        {"table", "SubOptions", "pot_scale_int16", CIRCLE_SUB_POT_SCALE_INT16},
        {"table", "MulOptions", "fused_activation_function", CIRCLE_MUL_FUSED_ACTIVATION_FUNCTION},
        {"table", "DivOptions", "fused_activation_function", CIRCLE_DIV_FUSED_ACTIVATION_FUNCTION},
        {"table", "ReducerOptions", "keep_dims", CIRCLE_REDUCER_KEEP_DIMS},
        {"table", "SplitVOptions", "num_splits", CIRCLE_SPLITV_NUM_SPLITS},
    };
    int bad = 0;
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        long v = 0;
        int found = strcmp(f[i].kind, "table") == 0 ? field_slot(s, f[i].scope, f[i].name, &v)
                                                     : enum_value(s, f[i].kind, f[i].scope, f[i].name, &v);
        if (!found || v != f[i].value) {
            print_error("%s %s.%s: schema %s %ld, circle_defs.h %ld\n", f[i].kind, f[i].scope, f[i].name,
                        found ? "says" : "lacks", v, f[i].value);
            bad++;
        }
    }
    /* the op table exports each IR op as the schema's operator of the same name */
    for (int t = 0; t < PDQ_OP_COUNT; t++) {
        const pdq_op_def *d = pdq_op_def_of((pdq_op_type)t);
        const pdq_circle_spelling *c = pdq_circle_spelling_of((pdq_op_type)t);
        long v = 0;
        assert_non_null(d);
        assert_non_null(c);
        if (!enum_value(s, "enum", "BuiltinOperator", d->name, &v) || v != c->code) {
            print_error("op table: %s exported as code %d, schema says %ld\n", d->name, c->code, v);
            bad++;
        }
    }
    /* the Circle-only codes are the most negative members */
    long v;
    assert_true(enum_value(s, "enum", "BuiltinOperator", "ATTENTION", &v) && v == CIRCLE_OP_MIN);
    assert_true(enum_value(s, "enum", "TensorType", "MXINT8", &v) && v == CIRCLE_TT_MIN);
    assert_true(enum_value(s, "enum", "TensorType", "BFLOAT16", &v) && v == CIRCLE_TT_MAX);
    assert_true(decl_body(s, "table", "TransposeOptions") && decl_body(s, "table", "NegOptions"));
    free(s);
    assert_int_equal(bad, 0);
}

/* ---------------------------------------------------------------- the sample model */

static const float k_gamma[5] = {1.5f, -2.25f, 3.125f, 0.5f, 7.75f};
static const int32_t k_shape[2] = {4, 5}, k_begin[2] = {0, 2}, k_end[2] = {4, 8}, k_strides[2] = {1, 2};

static uint8_t w_value(int i) { return (uint8_t)((i * 7 + 3) % 16); }

/* FC(int16 x, per-channel UINT4 w, no bias) -> RMS_NORM -> RESHAPE -> CONCATENATION -> STRIDED_SLICE
 * -> BATCH_MATMUL -> GELU -> ADD -> SUB -> SOFTMAX -> MUL (with a one-byte constant). */
static void build_sample(pdq_circle_model *m) {
    pdq_status st = {0};
    assert_int_equal(pdq_circle_model_init(m, &st), PDQ_OK);
    uint8_t wv[35], wp[18];
    for (int i = 0; i < 35; i++) wv[i] = w_value(i);
    assert_int_equal(pdq_circle_pack_uint4(wv, 35, wp, &st), PDQ_OK);
    int32_t bw = pdq_circle_add_buffer(m, wp, sizeof wp, 1, &st);
    int32_t bg = pdq_circle_add_buffer(m, k_gamma, sizeof k_gamma, 1, &st);
    int32_t bs = pdq_circle_add_buffer(m, k_shape, sizeof k_shape, 0, &st); /* borrowed */
    int32_t bb = pdq_circle_add_buffer(m, k_begin, sizeof k_begin, 1, &st);
    int32_t be = pdq_circle_add_buffer(m, k_end, sizeof k_end, 1, &st);
    int32_t bt = pdq_circle_add_buffer(m, k_strides, sizeof k_strides, 1, &st);
    uint8_t one = 42;
    int32_t b1 = pdq_circle_add_buffer(m, &one, 1, 1, &st);
    assert_int_equal(b1, 7);

    int32_t x = pdq_circle_add_tensor(m, "tico::x", CIRCLE_TT_INT16, 3, (int32_t[]){1, 4, 7}, 0, &st);
    int32_t w = pdq_circle_add_tensor(m, "w", CIRCLE_TT_UINT4, 2, (int32_t[]){5, 7}, (uint32_t)bw, &st);
    int32_t fc = pdq_circle_add_tensor(m, "fc", CIRCLE_TT_INT16, 3, (int32_t[]){1, 4, 5}, 0, &st);
    int32_t g = pdq_circle_add_tensor(m, "gamma", CIRCLE_TT_FLOAT32, 1, (int32_t[]){5}, (uint32_t)bg, &st);
    int32_t nrm = pdq_circle_add_tensor(m, "norm", CIRCLE_TT_INT16, 3, (int32_t[]){1, 4, 5}, 0, &st);
    int32_t shp = pdq_circle_add_tensor(m, "const_tensor", CIRCLE_TT_INT32, 1, (int32_t[]){2}, (uint32_t)bs, &st);
    int32_t rs = pdq_circle_add_tensor(m, "resh", CIRCLE_TT_INT16, 2, k_shape, 0, &st);
    int32_t cat = pdq_circle_add_tensor(m, "cat", CIRCLE_TT_INT16, 2, (int32_t[]){4, 10}, 0, &st);
    int32_t tb = pdq_circle_add_tensor(m, "begin", CIRCLE_TT_INT32, 1, (int32_t[]){2}, (uint32_t)bb, &st);
    int32_t te = pdq_circle_add_tensor(m, "end", CIRCLE_TT_INT32, 1, (int32_t[]){2}, (uint32_t)be, &st);
    int32_t ts = pdq_circle_add_tensor(m, "strides", CIRCLE_TT_INT32, 1, (int32_t[]){2}, (uint32_t)bt, &st);
    int32_t sl = pdq_circle_add_tensor(m, "slice", CIRCLE_TT_INT16, 2, (int32_t[]){4, 3}, 0, &st);
    int32_t mm = pdq_circle_add_tensor(m, "bmm", CIRCLE_TT_INT16, 2, (int32_t[]){4, 4}, 0, &st);
    int32_t ge = pdq_circle_add_tensor(m, "gelu", CIRCLE_TT_INT16, 2, (int32_t[]){4, 4}, 0, &st);
    int32_t ad = pdq_circle_add_tensor(m, "add", CIRCLE_TT_INT16, 2, (int32_t[]){4, 4}, 0, &st);
    int32_t sb = pdq_circle_add_tensor(m, "sub", CIRCLE_TT_INT16, 2, (int32_t[]){4, 4}, 0, &st);
    int32_t sm = pdq_circle_add_tensor(m, "softmax", CIRCLE_TT_INT16, 2, (int32_t[]){4, 4}, 0, &st);
    int32_t c1 = pdq_circle_add_tensor(m, "one", CIRCLE_TT_UINT8, 1, (int32_t[]){1}, (uint32_t)b1, &st);
    int32_t out = pdq_circle_add_tensor(m, "out", CIRCLE_TT_INT16, 2, (int32_t[]){4, 4}, 0, &st);
    assert_int_equal(out, 18);
    m->tensors[x].has_shape_signature = true;
    memcpy(m->tensors[x].shape_signature, (int32_t[]){1, -1, 7}, 3 * sizeof(int32_t));

    for (int32_t t = 0; t < m->n_tensors; t++)
        if (m->tensors[t].type == CIRCLE_TT_INT16)
            assert_int_equal(pdq_circle_set_quant(m, t, 1, (float[]){0.001f * (float)(t + 1)}, (int64_t[]){0}, 0, &st),
                             PDQ_OK);
    assert_int_equal(pdq_circle_set_quant(m, w, 5, (float[]){0.1f, 0.2f, 0.3f, 0.4f, 0.5f},
                                          (int64_t[]){8, 7, 8, 9, 0}, 0, &st), PDQ_OK);
    assert_int_equal(pdq_circle_set_quant(m, c1, 1, (float[]){0.5f}, (int64_t[]){128}, 0, &st), PDQ_OK);

    pdq_circle_options o;
    o = pdq_circle_options_default(CIRCLE_OPT_FullyConnectedOptions);
    o.fc.keep_num_dims = true;
    assert_int_equal(pdq_circle_add_op(m, CIRCLE_OP_FULLY_CONNECTED, 3, (int32_t[]){x, w, -1}, 1, &fc,
                                       CIRCLE_OPT_FullyConnectedOptions, &o, &st), 0);
    o = pdq_circle_options_default(CIRCLE_OPT_RmsNormOptions);
    o.rms_norm.epsilon = 1e-6f;
    pdq_circle_add_op(m, CIRCLE_OP_RMS_NORM, 2, (int32_t[]){fc, g}, 1, &nrm, CIRCLE_OPT_RmsNormOptions, &o, &st);
    o = pdq_circle_options_default(CIRCLE_OPT_ReshapeOptions);
    o.reshape.rank = 2;
    memcpy(o.reshape.new_shape, k_shape, sizeof k_shape);
    pdq_circle_add_op(m, CIRCLE_OP_RESHAPE, 2, (int32_t[]){nrm, shp}, 1, &rs, CIRCLE_OPT_ReshapeOptions, &o, &st);
    o = pdq_circle_options_default(CIRCLE_OPT_ConcatenationOptions);
    o.concat.axis = -1;
    pdq_circle_add_op(m, CIRCLE_OP_CONCATENATION, 2, (int32_t[]){rs, rs}, 1, &cat, CIRCLE_OPT_ConcatenationOptions,
                      &o, &st);
    o = pdq_circle_options_default(CIRCLE_OPT_StridedSliceOptions);
    o.strided_slice.begin_mask = 1;
    o.strided_slice.end_mask = 2;
    o.strided_slice.shrink_axis_mask = 0;
    pdq_circle_add_op(m, CIRCLE_OP_STRIDED_SLICE, 4, (int32_t[]){cat, tb, te, ts}, 1, &sl,
                      CIRCLE_OPT_StridedSliceOptions, &o, &st);
    o = pdq_circle_options_default(CIRCLE_OPT_BatchMatMulOptions);
    o.bmm.adjoint_rhs = true;
    pdq_circle_add_op(m, CIRCLE_OP_BATCH_MATMUL, 2, (int32_t[]){sl, sl}, 1, &mm, CIRCLE_OPT_BatchMatMulOptions, &o,
                      &st);
    o = pdq_circle_options_default(CIRCLE_OPT_GeluOptions);
    o.gelu.approximate = true; /* Gemma's gelu_pytorch_tanh */
    pdq_circle_add_op(m, CIRCLE_OP_GELU, 1, &mm, 1, &ge, CIRCLE_OPT_GeluOptions, &o, &st);
    pdq_circle_add_op(m, CIRCLE_OP_ADD, 2, (int32_t[]){ge, ge}, 1, &ad, CIRCLE_OPT_AddOptions, NULL, &st);
    o = pdq_circle_options_default(CIRCLE_OPT_SubOptions);
    o.sub.pot_scale_int16 = false;
    pdq_circle_add_op(m, CIRCLE_OP_SUB, 2, (int32_t[]){ad, ge}, 1, &sb, CIRCLE_OPT_SubOptions, &o, &st);
    o = pdq_circle_options_default(CIRCLE_OPT_SoftmaxOptions);
    o.softmax.beta = 1.0f;
    pdq_circle_add_op(m, CIRCLE_OP_SOFTMAX, 1, &sb, 1, &sm, CIRCLE_OPT_SoftmaxOptions, &o, &st);
    assert_int_equal(pdq_circle_add_op(m, CIRCLE_OP_MUL, 2, (int32_t[]){sm, c1}, 1, &out, CIRCLE_OPT_MulOptions,
                                       NULL, &st), 10);
    assert_int_equal(pdq_circle_add_input(m, x, &st), PDQ_OK);
    assert_int_equal(pdq_circle_add_output(m, out, &st), PDQ_OK);
    assert_int_equal(st.code, PDQ_OK);
    assert_int_equal(m->n_opcodes, 11);
}

/* ---------------------------------------------------------------- deep comparison */

#define MEMEQ(a, b, n) do { size_t n_ = (n); if (n_ > 0) assert_memory_equal((a), (b), n_); } while (0)

static void assert_quant_equal(const pdq_circle_quant *a, const pdq_circle_quant *b) {
    assert_int_equal(a->n_scale, b->n_scale);
    assert_int_equal(a->n_zero_point, b->n_zero_point);
    assert_int_equal(a->n_min, b->n_min);
    assert_int_equal(a->n_max, b->n_max);
    assert_int_equal(a->quantized_dimension, b->quantized_dimension);
    if (a->n_scale) assert_memory_equal(a->scale, b->scale, (size_t)a->n_scale * sizeof(float));
    if (a->n_zero_point) assert_memory_equal(a->zero_point, b->zero_point, (size_t)a->n_zero_point * 8);
    if (a->n_min) assert_memory_equal(a->min, b->min, (size_t)a->n_min * sizeof(float));
    if (a->n_max) assert_memory_equal(a->max, b->max, (size_t)a->n_max * sizeof(float));
}

static void assert_options_equal(uint8_t type, const pdq_circle_options *a, const pdq_circle_options *b) {
    switch (type) {
    case CIRCLE_OPT_FullyConnectedOptions:
        assert_int_equal(a->fc.keep_num_dims, b->fc.keep_num_dims);
        assert_int_equal(a->fc.fused_activation_function, b->fc.fused_activation_function);
        assert_int_equal(a->fc.weights_format, b->fc.weights_format);
        assert_int_equal(a->fc.asymmetric_quantize_inputs, b->fc.asymmetric_quantize_inputs);
        assert_int_equal(a->fc.quantized_bias_type, b->fc.quantized_bias_type);
        break;
    case CIRCLE_OPT_RmsNormOptions: assert_memory_equal(&a->rms_norm.epsilon, &b->rms_norm.epsilon, 4); break;
    case CIRCLE_OPT_SoftmaxOptions: assert_memory_equal(&a->softmax.beta, &b->softmax.beta, 4); break;
    case CIRCLE_OPT_ReshapeOptions:
        assert_int_equal(a->reshape.rank, b->reshape.rank);
        assert_memory_equal(a->reshape.new_shape, b->reshape.new_shape, (size_t)a->reshape.rank * 4);
        break;
    case CIRCLE_OPT_ConcatenationOptions:
        assert_int_equal(a->concat.axis, b->concat.axis);
        assert_int_equal(a->concat.fused_activation_function, b->concat.fused_activation_function);
        break;
    case CIRCLE_OPT_StridedSliceOptions:
        assert_int_equal(a->strided_slice.begin_mask, b->strided_slice.begin_mask);
        assert_int_equal(a->strided_slice.end_mask, b->strided_slice.end_mask);
        assert_int_equal(a->strided_slice.ellipsis_mask, b->strided_slice.ellipsis_mask);
        assert_int_equal(a->strided_slice.new_axis_mask, b->strided_slice.new_axis_mask);
        assert_int_equal(a->strided_slice.shrink_axis_mask, b->strided_slice.shrink_axis_mask);
        assert_int_equal(a->strided_slice.offset, b->strided_slice.offset);
        break;
    case CIRCLE_OPT_BatchMatMulOptions:
        assert_int_equal(a->bmm.adjoint_lhs, b->bmm.adjoint_lhs);
        assert_int_equal(a->bmm.adjoint_rhs, b->bmm.adjoint_rhs);
        assert_int_equal(a->bmm.asymmetric_quantize_inputs, b->bmm.asymmetric_quantize_inputs);
        break;
    case CIRCLE_OPT_AddOptions: case CIRCLE_OPT_SubOptions:
        assert_int_equal(a->add.fused_activation_function, b->add.fused_activation_function);
        assert_int_equal(a->add.pot_scale_int16, b->add.pot_scale_int16);
        break;
    case CIRCLE_OPT_MulOptions:
        assert_int_equal(a->mul.fused_activation_function, b->mul.fused_activation_function);
        break;
    case CIRCLE_OPT_GeluOptions: assert_int_equal(a->gelu.approximate, b->gelu.approximate); break;
    case CIRCLE_OPT_GatherOptions:
        assert_int_equal(a->gather.axis, b->gather.axis);
        assert_int_equal(a->gather.batch_dims, b->gather.batch_dims);
        break;
    default: break;
    }
}

static void assert_models_equal(const pdq_circle_model *a, const pdq_circle_model *b) {
    assert_int_equal(a->version, b->version);
    assert_string_equal(a->description ? a->description : "circle", b->description);
    assert_string_equal(a->subgraph_name ? a->subgraph_name : "subgraph", b->subgraph_name);
    assert_int_equal(a->n_opcodes, b->n_opcodes);
    for (int32_t i = 0; i < a->n_opcodes; i++) {
        assert_int_equal(a->opcodes[i].builtin_code, b->opcodes[i].builtin_code);
        assert_int_equal(a->opcodes[i].version, b->opcodes[i].version);
    }
    assert_int_equal(a->n_buffers, b->n_buffers);
    for (int32_t i = 0; i < a->n_buffers; i++) {
        assert_int_equal(a->buffers[i].len, b->buffers[i].len);
        if (a->buffers[i].len) {
            assert_memory_equal(a->buffers[i].data, b->buffers[i].data, a->buffers[i].len);
            assert_int_equal((uintptr_t)b->buffers[i].data % 16, 0);
        }
    }
    assert_int_equal(a->n_tensors, b->n_tensors);
    for (int32_t i = 0; i < a->n_tensors; i++) {
        const pdq_circle_tensor *x = &a->tensors[i], *y = &b->tensors[i];
        assert_string_equal(x->name, y->name);
        assert_int_equal(x->type, y->type);
        assert_int_equal(x->rank, y->rank);
        MEMEQ(x->shape, y->shape, (size_t)x->rank * 4);
        assert_int_equal(x->has_shape_signature, y->has_shape_signature);
        if (x->has_shape_signature) assert_memory_equal(x->shape_signature, y->shape_signature, (size_t)x->rank * 4);
        assert_int_equal(x->buffer, y->buffer);
        assert_quant_equal(&x->quant, &y->quant);
    }
    assert_int_equal(a->n_ops, b->n_ops);
    for (int32_t i = 0; i < a->n_ops; i++) {
        const pdq_circle_op *x = &a->ops[i], *y = &b->ops[i];
        assert_int_equal(x->opcode_index, y->opcode_index);
        assert_int_equal(x->n_inputs, y->n_inputs);
        assert_int_equal(x->n_outputs, y->n_outputs);
        MEMEQ(x->inputs, y->inputs, (size_t)x->n_inputs * 4);
        MEMEQ(x->outputs, y->outputs, (size_t)x->n_outputs * 4);
        assert_int_equal(x->options_type, y->options_type);
        assert_options_equal(x->options_type, &x->opt, &y->opt);
    }
    assert_int_equal(a->n_inputs, b->n_inputs);
    assert_int_equal(a->n_outputs, b->n_outputs);
    MEMEQ(a->inputs, b->inputs, (size_t)a->n_inputs * 4);
    MEMEQ(a->outputs, b->outputs, (size_t)a->n_outputs * 4);
}

/* ---------------------------------------------------------------- flatc --json */

/* JSON of file as flatc prints it with the real schema; NULL when ../shared or flatc is absent. */
static cJSON *flatc_json(const char *dir, const char *file) {
    const char *sh = tu_shared_dir();
    if (!sh || tu_run("command -v flatc >/dev/null 2>&1", NULL) != 0) {
        print_message("flatc or ../shared/circle absent: flatc checks skipped\n");
        return NULL;
    }
    if (getenv("PDQ_KEEP_CIRCLE")) { /* debugging: keep copies of the checked files in that dir */
        char cp[1200];
        snprintf(cp, sizeof cp, "cp '%s' '%s/%d-%s'", file, getenv("PDQ_KEEP_CIRCLE"), rand() % 1000, strrchr(file, '/') + 1);
        if (tu_run(cp, NULL) != 0) print_message("could not copy %s\n", file);
    }
    char cmd[2048], *out = NULL;
    snprintf(cmd, sizeof cmd, "flatc --json --strict-json --raw-binary -o '%s' '%s/circle/circle_schema.flatc2.fbs' -- '%s' 2>&1",
             dir, sh, file);
    int rc = tu_run(cmd, &out);
    if (rc != 0) print_error("flatc failed (%d): %s\n", rc, out ? out : "");
    free(out);
    assert_int_equal(rc, 0);
    const char *base = strrchr(file, '/') ? strrchr(file, '/') + 1 : file;
    char path[1024];
    snprintf(path, sizeof path, "%s/%.*s.json", dir, (int)(strcspn(base, ".")), base);
    return tu_load_json(path);
}

static const cJSON *get(const cJSON *o, const char *k) { return cJSON_GetObjectItemCaseSensitive(o, k); }
static double num(const cJSON *o, const char *k, double dflt) {
    const cJSON *v = get(o, k);
    if (!v) return dflt;
    assert_true(cJSON_IsNumber(v));
    return v->valuedouble;
}
static const char *str(const cJSON *o, const char *k, const char *dflt) {
    const cJSON *v = get(o, k);
    if (!v) return dflt;
    assert_true(cJSON_IsString(v));
    return v->valuestring;
}
static int boolean(const cJSON *o, const char *k, int dflt) {
    const cJSON *v = get(o, k);
    if (!v) return dflt;
    assert_true(cJSON_IsBool(v));
    return cJSON_IsTrue(v);
}
static void assert_int_array(const cJSON *a, const int64_t *want, int n) {
    if (n == 0 && !a) return;
    assert_true(cJSON_IsArray(a));
    assert_int_equal(cJSON_GetArraySize(a), n);
    for (int i = 0; i < n; i++) assert_true(cJSON_GetArrayItem(a, i)->valuedouble == (double)want[i]);
}
static void assert_i32_array(const cJSON *a, const int32_t *want, int n) {
    int64_t w[64];
    for (int i = 0; i < n; i++) w[i] = want[i];
    assert_int_array(a, w, n);
}

static const char *type_name_lit(int8_t t) {
    switch (t) {
    case 0: return "FLOAT32";
    case 2: return "INT32";
    case 3: return "UINT8";
    case 7: return "INT16";
    case -1: return "UINT4";
    default: fail(); return NULL;
    }
}

/* Checks the flatc JSON of the sample model against what build_sample wrote (literals from the
 * schema / NOTES, not from the writer). */
static void check_sample_json(const cJSON *j, const pdq_circle_model *m, int extended, const uint8_t *file,
                              size_t len) {
    assert_memory_equal(file + 4, "CIR0", 4);
    assert_int_equal(num(j, "version", 0), 0);
    assert_string_equal(str(j, "description", ""), "circle");
    static const char *names[11] = {"FULLY_CONNECTED", "RMS_NORM", "RESHAPE", "CONCATENATION", "STRIDED_SLICE",
                                    "BATCH_MATMUL", "GELU", "ADD", "SUB", "SOFTMAX", "MUL"};
    static const int dep[11] = {9, -6, 22, 2, 45, 126, 127, 0, 41, 25, 18};
    const cJSON *codes = get(j, "operator_codes");
    assert_int_equal(cJSON_GetArraySize(codes), 11);
    for (int i = 0; i < 11; i++) {
        const cJSON *c = cJSON_GetArrayItem(codes, i);
        assert_string_equal(str(c, "builtin_code", "ADD"), names[i]);
        assert_int_equal(num(c, "deprecated_builtin_code", 0), dep[i]);
        assert_int_equal(num(c, "version", 1), 1);
    }
    const cJSON *sgs = get(j, "subgraphs");
    assert_int_equal(cJSON_GetArraySize(sgs), 1);
    const cJSON *sg = cJSON_GetArrayItem(sgs, 0);
    assert_string_equal(str(sg, "name", ""), "subgraph");
    assert_i32_array(get(sg, "inputs"), (int32_t[]){0}, 1);
    assert_i32_array(get(sg, "outputs"), (int32_t[]){18}, 1);

    const cJSON *ts = get(sg, "tensors");
    assert_int_equal(cJSON_GetArraySize(ts), m->n_tensors);
    for (int i = 0; i < m->n_tensors; i++) {
        const cJSON *t = cJSON_GetArrayItem(ts, i);
        const pdq_circle_tensor *w = &m->tensors[i];
        assert_string_equal(str(t, "name", ""), w->name);
        assert_string_equal(str(t, "type", "FLOAT32"), type_name_lit(w->type));
        assert_int_equal(num(t, "buffer", 0), w->buffer);
        assert_i32_array(get(t, "shape"), w->shape, w->rank);
        if (i == 0) assert_i32_array(get(t, "shape_signature"), (int32_t[]){1, -1, 7}, 3);
        else assert_null(get(t, "shape_signature"));
        const cJSON *q = get(t, "quantization");
        int n = w->quant.n_scale;
        if (w->type == CIRCLE_TT_INT16) assert_int_array(get(q, "zero_point"), (int64_t[]){0}, 1);
        if (!n) { /* the float / int32 constants */
            assert_null(q);
            continue;
        }
        const cJSON *sc = get(q, "scale");
        assert_int_equal(cJSON_GetArraySize(sc), n);
        for (int c = 0; c < n; c++)
            assert_true(fabs(cJSON_GetArrayItem(sc, c)->valuedouble - w->quant.scale[c]) <= 1e-6 * w->quant.scale[c]);
        assert_int_array(get(q, "zero_point"), w->quant.zero_point, n);
        assert_int_equal(num(q, "quantized_dimension", 0), w->quant.quantized_dimension);
    }
    /* the UINT4 weight: per-channel along dim 0, zero points as written, 35 values in 18 bytes */
    const cJSON *wq = get(cJSON_GetArrayItem(ts, 1), "quantization");
    assert_int_array(get(wq, "zero_point"), (int64_t[]){8, 7, 8, 9, 0}, 5);
    assert_int_equal(cJSON_GetArraySize(get(wq, "scale")), 5);

    const cJSON *ops = get(sg, "operators");
    assert_int_equal(cJSON_GetArraySize(ops), 11);
    static const char *opt[11] = {"FullyConnectedOptions", "RmsNormOptions", "ReshapeOptions",
                                  "ConcatenationOptions", "StridedSliceOptions", "BatchMatMulOptions", "GeluOptions",
                                  "AddOptions", "SubOptions", "SoftmaxOptions", "MulOptions"};
    for (int i = 0; i < 11; i++) {
        const cJSON *o = cJSON_GetArrayItem(ops, i);
        assert_int_equal(num(o, "opcode_index", 0), i);
        assert_i32_array(get(o, "inputs"), m->ops[i].inputs, m->ops[i].n_inputs);
        assert_i32_array(get(o, "outputs"), m->ops[i].outputs, m->ops[i].n_outputs);
        assert_string_equal(str(o, "builtin_options_type", "NONE"), opt[i]);
    }
    assert_i32_array(get(cJSON_GetArrayItem(ops, 0), "inputs"), (int32_t[]){0, 1, -1}, 3);
    const cJSON *fc = get(cJSON_GetArrayItem(ops, 0), "builtin_options");
    assert_true(boolean(fc, "keep_num_dims", 0));
    assert_string_equal(str(fc, "fused_activation_function", "NONE"), "NONE");
    assert_string_equal(str(fc, "weights_format", "DEFAULT"), "DEFAULT");
    assert_false(boolean(fc, "asymmetric_quantize_inputs", 0));
    assert_true(fabs(num(get(cJSON_GetArrayItem(ops, 1), "builtin_options"), "epsilon", 0) - 1e-6) < 1e-12);
    assert_i32_array(get(get(cJSON_GetArrayItem(ops, 2), "builtin_options"), "new_shape"), (int32_t[]){4, 5}, 2);
    assert_int_equal(num(get(cJSON_GetArrayItem(ops, 3), "builtin_options"), "axis", 0), -1);
    const cJSON *ss = get(cJSON_GetArrayItem(ops, 4), "builtin_options");
    assert_int_equal(num(ss, "begin_mask", 0), 1);
    assert_int_equal(num(ss, "end_mask", 0), 2);
    assert_int_equal(num(ss, "shrink_axis_mask", 0), 0);
    assert_int_equal(num(ss, "ellipsis_mask", 0), 0);
    const cJSON *bm = get(cJSON_GetArrayItem(ops, 5), "builtin_options");
    assert_false(boolean(bm, "adjoint_lhs", 0));
    assert_true(boolean(bm, "adjoint_rhs", 0));
    assert_true(boolean(get(cJSON_GetArrayItem(ops, 6), "builtin_options"), "approximate", 0));
    assert_true(boolean(get(cJSON_GetArrayItem(ops, 7), "builtin_options"), "pot_scale_int16", 1)); /* default */
    assert_false(boolean(get(cJSON_GetArrayItem(ops, 8), "builtin_options"), "pot_scale_int16", 1));
    assert_true(num(get(cJSON_GetArrayItem(ops, 9), "builtin_options"), "beta", 0) == 1.0);

    const cJSON *bufs = get(j, "buffers");
    assert_int_equal(cJSON_GetArraySize(bufs), m->n_buffers);
    const cJSON *b0 = cJSON_GetArrayItem(bufs, 0);
    assert_null(get(b0, "data"));
    assert_null(get(b0, "offset"));
    assert_null(get(b0, "size"));
    for (int i = 1; i < m->n_buffers; i++) {
        const cJSON *b = cJSON_GetArrayItem(bufs, i);
        const pdq_circle_buffer *w = &m->buffers[i];
        if (extended && w->len > 1) {
            assert_null(get(b, "data"));
            double off = num(b, "offset", 0), size = num(b, "size", 0);
            assert_true(size == (double)w->len);
            assert_true(off > 1 && fmod(off, 16) == 0 && off + size <= (double)len);
            assert_memory_equal(file + (size_t)off, w->data, w->len);
        } else {
            assert_null(get(b, "offset"));
            const cJSON *d = get(b, "data");
            assert_int_equal(cJSON_GetArraySize(d), (int)w->len);
            for (int k = 0; k < (int)w->len; k++) assert_int_equal(cJSON_GetArrayItem(d, k)->valueint, w->data[k]);
        }
    }
    assert_int_equal(m->buffers[1].len, (35 + 1) / 2);
    uint8_t v[35];
    pdq_circle_unpack_uint4(m->buffers[1].data, 35, v);
    for (int i = 0; i < 35; i++) assert_int_equal(v[i], w_value(i));
}

static uint8_t *write_and_load(const char *path, const pdq_circle_model *m, const pdq_circle_write_opts *o,
                               size_t *len) {
    pdq_status st = {0};
    if (pdq_circle_write(path, m, o, &st) != PDQ_OK) print_error("%s\n", st.msg);
    assert_int_equal(st.code, PDQ_OK);
    uint8_t *bytes = (uint8_t *)tu_read_file(path, len);
    assert_non_null(bytes);
    return bytes;
}

static void roundtrip_and_flatc(int extended) {
    char *dir = tu_mkdtemp();
    char path[512];
    snprintf(path, sizeof path, "%s/sample.circle", dir);
    pdq_circle_model m, r;
    build_sample(&m);
    pdq_circle_write_opts o = {extended, 0};
    size_t len;
    uint8_t *bytes = write_and_load(path, &m, &o, &len);
    if (extended) assert_int_equal(len % 16, 0);
    cJSON *j = flatc_json(dir, path);
    if (j) check_sample_json(j, &m, extended, bytes, len);
    cJSON_Delete(j);
    pdq_status st = {0};
    if (pdq_circle_read(path, &r, &st) != PDQ_OK) print_error("%s\n", st.msg);
    assert_int_equal(st.code, PDQ_OK);
    assert_models_equal(&m, &r);
    for (int32_t i = 1; i < r.n_buffers; i++) assert_null(r.buffers[i].owned); /* 16-aligned in the file */
    /* writing what was read gives the same bytes */
    size_t len2;
    snprintf(path, sizeof path, "%s/again.circle", dir);
    uint8_t *bytes2 = write_and_load(path, &r, &o, &len2);
    assert_int_equal(len, len2);
    assert_memory_equal(bytes, bytes2, len);
    free(bytes2);
    free(bytes);
    pdq_circle_model_free(&r);
    pdq_circle_model_free(&m);
    tu_rmtree(dir);
    free(dir);
}

static void test_inline_roundtrip_flatc(void **state) { (void)state; roundtrip_and_flatc(0); }
static void test_extended_roundtrip_flatc(void **state) { (void)state; roundtrip_and_flatc(1); }

/* The automatic switch produces exactly the forced extended layout once the file would reach the limit. */
static void test_extended_auto(void **state) {
    (void)state;
    char *dir = tu_mkdtemp();
    char path[512];
    pdq_circle_model m;
    build_sample(&m);
    size_t l1, l2, l3;
    snprintf(path, sizeof path, "%s/a.circle", dir);
    uint8_t *forced = write_and_load(path, &m, &(pdq_circle_write_opts){1, 0}, &l1);
    uint8_t *autox = write_and_load(path, &m, &(pdq_circle_write_opts){0, 1024}, &l2);
    uint8_t *plain = write_and_load(path, &m, &(pdq_circle_write_opts){0, 1 << 20}, &l3);
    assert_int_equal(l1, l2);
    assert_memory_equal(forced, autox, l1);
    assert_true(l3 != l1 || memcmp(plain, forced, l1) != 0);
    free(forced);
    free(autox);
    free(plain);
    pdq_circle_model_free(&m);
    tu_rmtree(dir);
    free(dir);
}

static void test_uint4_packing(void **state) {
    (void)state;
    pdq_status st = {0};
    uint8_t v[5] = {1, 2, 3, 4, 5}, p[3] = {0xff, 0xff, 0xff}, u[5];
    assert_int_equal(pdq_circle_pack_uint4(v, 5, p, &st), PDQ_OK);
    assert_memory_equal(p, ((uint8_t[]){0x21, 0x43, 0x05}), 3); /* low nibble = even index */
    pdq_circle_unpack_uint4(p, 5, u);
    assert_memory_equal(u, v, 5);
    assert_int_equal(pdq_circle_type_bytes(CIRCLE_TT_UINT4, 35), 18);
    assert_int_equal(pdq_circle_type_bytes(CIRCLE_TT_UINT4, 36), 18);
    assert_int_equal(pdq_circle_type_bytes(CIRCLE_TT_INT16, 3), 6);
    v[3] = 16;
    assert_int_equal(pdq_circle_pack_uint4(v, 5, p, &st), PDQ_ERR_ARG);
}

/* Interrupted or invalid writes never leave a partial file; the old file stays. */
static void test_atomic_write(void **state) {
    (void)state;
    char *dir = tu_mkdtemp();
    char path[512];
    snprintf(path, sizeof path, "%s/m.circle", dir);
    tu_write_file(path, "old", 3);
    pdq_circle_model m;
    build_sample(&m);
    m.tensors[3].buffer = 99;
    pdq_status st = {0};
    assert_int_equal(pdq_circle_write(path, &m, NULL, &st), PDQ_ERR_ARG);
    assert_non_null(strstr(st.msg, "buffer 99"));
    size_t len;
    char *old = tu_read_file(path, &len);
    assert_int_equal(len, 3);
    free(old);
    m.tensors[3].buffer = 2;
    m.ops[0].options_type = CIRCLE_OPT_AttentionOptions;
    assert_int_equal(pdq_circle_write(path, &m, NULL, &st), PDQ_ERR_UNSUPPORTED);
    m.ops[0].options_type = CIRCLE_OPT_FullyConnectedOptions;
    assert_int_equal(pdq_circle_write(path, &m, NULL, &st), PDQ_OK);
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) n += e->d_name[0] != '.';
    closedir(d);
    assert_int_equal(n, 1);
    char bad[600];
    snprintf(bad, sizeof bad, "%s/no/such/dir/m.circle", dir);
    assert_int_equal(pdq_circle_write(bad, &m, NULL, &st), PDQ_ERR_IO);
    pdq_circle_model_free(&m);
    tu_rmtree(dir);
    free(dir);
}

/* ---------------------------------------------------------------- hand-built files */

typedef struct {
    int8_t dep;
    int32_t code;
    uint32_t opcode_index;
    int32_t op_input;
    uint32_t data_len;        /* inline data bytes of buffer 1 */
    uint64_t ext_off, ext_size;
    int32_t dim;              /* tensor 0 is FLOAT32 [dim] in buffer 1 */
} hand_spec;

static const hand_spec k_hand_ok = {9, 9, 0, 0, 8, 0, 0, 2};

/* A minimal model built with fb_builder directly, so the reader sees values the writer refuses. */
static uint8_t *hand_model(const hand_spec *h, size_t *len) {
    fb_builder b;
    fb_init(&b);
    uint8_t data[64];
    for (int i = 0; i < 64; i++) data[i] = (uint8_t)(i * 3);
    fb_ref dv = h->data_len ? fb_vec_scalars(&b, data, h->data_len, 1, 16) : 0;
    fb_table_start(&b);
    fb_ref b0 = fb_table_end(&b);
    fb_table_start(&b);
    fb_add_ref(&b, CIRCLE_BUFFER_DATA, dv);
    fb_add_u64(&b, CIRCLE_BUFFER_OFFSET, h->ext_off, 0);
    fb_add_u64(&b, CIRCLE_BUFFER_SIZE, h->ext_size, 0);
    fb_ref b1 = fb_table_end(&b);
    fb_ref bufs = fb_vec_refs(&b, (fb_ref[]){b0, b1}, 2);
    fb_ref shape = fb_vec_scalars(&b, &h->dim, 1, 4, 0);
    fb_ref name = fb_string(&b, "t0");
    fb_table_start(&b);
    fb_add_ref(&b, CIRCLE_TENSOR_SHAPE, shape);
    fb_add_u32(&b, CIRCLE_TENSOR_BUFFER, 1, 0);
    fb_add_ref(&b, CIRCLE_TENSOR_NAME, name);
    fb_ref t0 = fb_table_end(&b);
    fb_ref tensors = fb_vec_refs(&b, &t0, 1);
    fb_ref ins = fb_vec_scalars(&b, &h->op_input, 1, 4, 0);
    int32_t zero = 0;
    fb_ref outs = fb_vec_scalars(&b, &zero, 1, 4, 0);
    fb_table_start(&b);
    fb_add_u32(&b, CIRCLE_OPERATOR_OPCODE_INDEX, h->opcode_index, 0);
    fb_add_ref(&b, CIRCLE_OPERATOR_INPUTS, ins);
    fb_add_ref(&b, CIRCLE_OPERATOR_OUTPUTS, outs);
    fb_ref op = fb_table_end(&b);
    fb_ref ops = fb_vec_refs(&b, &op, 1);
    fb_table_start(&b);
    fb_add_ref(&b, CIRCLE_SUBGRAPH_TENSORS, tensors);
    fb_add_ref(&b, CIRCLE_SUBGRAPH_OPERATORS, ops);
    fb_ref sg = fb_table_end(&b);
    fb_ref sgs = fb_vec_refs(&b, &sg, 1);
    fb_table_start(&b);
    fb_add_i8(&b, CIRCLE_OPCODE_DEPRECATED_BUILTIN_CODE, h->dep, 0);
    fb_add_i32(&b, CIRCLE_OPCODE_BUILTIN_CODE, h->code, 0);
    fb_ref oc = fb_table_end(&b);
    fb_ref ocs = fb_vec_refs(&b, &oc, 1);
    fb_table_start(&b);
    fb_add_ref(&b, CIRCLE_MODEL_OPERATOR_CODES, ocs);
    fb_add_ref(&b, CIRCLE_MODEL_SUBGRAPHS, sgs);
    fb_add_ref(&b, CIRCLE_MODEL_BUFFERS, bufs);
    fb_ref root = fb_table_end(&b);
    uint8_t *fb;
    pdq_status st = {0};
    assert_int_equal(fb_finish(&b, root, "CIR0", &fb, len, &st), PDQ_OK);
    uint8_t *copy = malloc(*len + 64);
    memcpy(copy, fb, *len);
    memset(copy + *len, 0x5a, 64); /* room for extended data in some specs */
    fb_free(&b);
    return copy;
}

static pdq_code parse_hand(const hand_spec *h, size_t extra, pdq_circle_model *m, pdq_status *st) {
    size_t len;
    uint8_t *bytes = hand_model(h, &len);
    pdq_code rc = pdq_circle_parse(bytes, len + extra, m, st);
    free(bytes);
    return rc;
}

static void expect_format(const hand_spec *h, size_t extra, const char *needle) {
    pdq_circle_model m;
    pdq_status st = {0};
    assert_int_equal(parse_hand(h, extra, &m, &st), PDQ_ERR_FORMAT);
    if (!strstr(st.msg, needle)) print_error("message '%s' lacks '%s'\n", st.msg, needle);
    assert_non_null(strstr(st.msg, needle));
}

static void test_opcode_rules_and_bad_hand_files(void **state) {
    (void)state;
    pdq_circle_model m;
    pdq_status st = {0};
    hand_spec h = k_hand_ok;
    /* the builder's own output parses with flatc too */
    char *dir = tu_mkdtemp();
    char path[512];
    snprintf(path, sizeof path, "%s/hand.circle", dir);
    size_t len;
    uint8_t *bytes = hand_model(&h, &len);
    tu_write_file(path, bytes, len);
    free(bytes);
    cJSON *j = flatc_json(dir, path);
    if (j) {
        const cJSON *sg = cJSON_GetArrayItem(get(j, "subgraphs"), 0);
        const cJSON *t = cJSON_GetArrayItem(get(sg, "tensors"), 0);
        assert_string_equal(str(t, "name", ""), "t0");
        assert_i32_array(get(t, "shape"), (int32_t[]){2}, 1);
        assert_int_equal(cJSON_GetArraySize(get(cJSON_GetArrayItem(get(j, "buffers"), 1), "data")), 8);
        assert_string_equal(str(cJSON_GetArrayItem(get(j, "operator_codes"), 0), "builtin_code", "ADD"),
                            "FULLY_CONNECTED");
    }
    cJSON_Delete(j);
    tu_rmtree(dir);
    free(dir);

    struct { int8_t dep; int32_t code; int32_t want; } rules[] = {
        {9, 0, 9},        /* old files without builtin_code */
        {9, 9, 9},
        {127, 150, 150},  /* GELU needs builtin_code */
        {-6, -6, -6},     /* RMS_NORM: negative byte wins, no max() */
        {-6, 0, -6},
        {0, 0, 0},        /* ADD */
    };
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++) {
        h = k_hand_ok;
        h.dep = rules[i].dep;
        h.code = rules[i].code;
        assert_int_equal(parse_hand(&h, 0, &m, &st), PDQ_OK);
        assert_int_equal(m.opcodes[0].builtin_code, rules[i].want);
        pdq_circle_model_free(&m);
    }
    h = k_hand_ok; h.dep = 127; h.code = 999;
    expect_format(&h, 0, "unknown builtin operator 999");
    h = k_hand_ok; h.dep = -50;
    expect_format(&h, 0, "unknown builtin operator -50");
    h = k_hand_ok; h.opcode_index = 3;
    expect_format(&h, 0, "opcode index 3 out of range");
    h = k_hand_ok; h.op_input = 7;
    expect_format(&h, 0, "inputs[0] = 7 out of range");
    h = k_hand_ok; h.dim = 3;
    expect_format(&h, 0, "need 12");
    h = k_hand_ok; h.data_len = 0; h.ext_off = 1; h.ext_size = 1;
    expect_format(&h, 0, "unpatched");
    /* extended data: offset from the file start, inside the file */
    size_t hl;
    free(hand_model(&k_hand_ok, &hl));
    h = k_hand_ok; h.data_len = 0; h.ext_off = (hl + 15) / 16 * 16; h.ext_size = 8;
    assert_int_equal(parse_hand(&h, 64, &m, &st), PDQ_OK);
    assert_int_equal(m.buffers[1].len, 8);
    assert_int_equal(m.buffers[1].data[0], 0x5a);
    pdq_circle_model_free(&m);
    expect_format(&h, 0, "past the end");
}

/* Truncation, a foreign identifier, a wild root offset, a vector length past the end, random bytes. */
static void test_bad_files(void **state) {
    (void)state;
    char *dir = tu_mkdtemp();
    char path[512];
    snprintf(path, sizeof path, "%s/s.circle", dir);
    pdq_circle_model m, r;
    build_sample(&m);
    size_t len, elen;
    uint8_t *ok = write_and_load(path, &m, NULL, &len);
    uint8_t *ext = write_and_load(path, &m, &(pdq_circle_write_opts){1, 0}, &elen);
    pdq_status st = {0};
    for (size_t n = 0; n < len; n++) {
        assert_int_equal(pdq_circle_parse(ok, n, &r, &st), PDQ_ERR_FORMAT);
    }
    for (size_t n = elen - 16 - 1; n > elen - 200; n--) /* cut into the appended data */
        assert_int_equal(pdq_circle_parse(ext, n, &r, &st), PDQ_ERR_FORMAT);
    tu_write_file(path, ok, 100);
    assert_int_equal(pdq_circle_read(path, &r, &st), PDQ_ERR_FORMAT);
    assert_non_null(strstr(st.msg, path));
    assert_int_equal(pdq_circle_read("/nonexistent/x.circle", &r, &st), PDQ_ERR_IO);

    uint8_t *b = malloc(len);
    memcpy(b, ok, len);
    memcpy(b + 4, "TFL3", 4);
    assert_int_equal(pdq_circle_parse(b, len, &r, &st), PDQ_ERR_FORMAT);
    assert_non_null(strstr(st.msg, "TFL3"));
    assert_non_null(strstr(st.msg, "CIR0"));

    memcpy(b, ok, len);
    uint32_t wild = (uint32_t)len + 100;
    memcpy(b, &wild, 4);
    assert_int_equal(pdq_circle_parse(b, len, &r, &st), PDQ_ERR_FORMAT);
    assert_non_null(strstr(st.msg, "out of range"));

    /* the gamma buffer: its length word precedes the 20 data bytes */
    memcpy(b, ok, len);
    uint8_t *g = memmem(b, len, k_gamma, sizeof k_gamma);
    assert_non_null(g);
    uint32_t n20;
    memcpy(&n20, g - 4, 4);
    assert_int_equal(n20, 20);
    uint32_t huge = 0x10000000;
    memcpy(g - 4, &huge, 4);
    assert_int_equal(pdq_circle_parse(b, len, &r, &st), PDQ_ERR_FORMAT);
    assert_non_null(strstr(st.msg, "past the end"));

    /* random corruption: any outcome but a crash; accepted files still validate */
    uint64_t rs = 12345;
    for (int it = 0; it < 3000; it++) {
        const uint8_t *src = it & 1 ? ext : ok;
        size_t sl = it & 1 ? elen : len;
        uint8_t *c = malloc(sl);
        memcpy(c, src, sl);
        int flips = 1 + (int)(tu_rand(&rs) % 4);
        for (int k = 0; k < flips; k++) c[tu_rand(&rs) % sl] = (uint8_t)tu_rand(&rs);
        pdq_code rc = pdq_circle_parse(c, sl, &r, &st);
        assert_true(rc == PDQ_OK || rc == PDQ_ERR_FORMAT || rc == PDQ_ERR_UNSUPPORTED);
        if (rc == PDQ_OK) {
            assert_int_equal(circle_validate(&r, PDQ_ERR_FORMAT, &st), PDQ_OK);
            pdq_circle_model_free(&r);
        }
        free(c);
    }
    free(b);
    free(ok);
    free(ext);
    pdq_circle_model_free(&m);
    tu_rmtree(dir);
    free(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_constants_match_schema),
        cmocka_unit_test(test_uint4_packing),
        cmocka_unit_test(test_inline_roundtrip_flatc),
        cmocka_unit_test(test_extended_roundtrip_flatc),
        cmocka_unit_test(test_extended_auto),
        cmocka_unit_test(test_atomic_write),
        cmocka_unit_test(test_opcode_rules_and_bad_hand_files),
        cmocka_unit_test(test_bad_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
