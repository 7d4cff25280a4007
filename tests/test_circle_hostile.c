/* Hostile Circle files: each case is a small model built with the Circle writer API that a
 * trusting importer or interpreter would crash on (out-of-bounds reads, signed overflow,
 * division by zero, runaway allocation). The importer, pdq_cg_open or the run must refuse it with
 * the expected code and a message naming the file, the operator and the value or limit.
 * Every file-writable case is also a committed fuzz seed (tests/fuzz/corpus/circle_run/NAME.circle),
 * loaded here with the same expectations; PDQ_WRITE_SEEDS=DIR regenerates them into DIR. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "circle/circle_defs.h"
#include "pdq/circle_export.h"
#include "testutil.h"

#define SEED_DIR "tests/fuzz/corpus/circle_run"
#define SH(...) ((const int32_t[]){__VA_ARGS__})

typedef enum {
    AT_IMPORT, /* pdq_circle_load_graph of the written file fails */
    AT_MEMORY, /* the writer refuses it (reader-level damage): pdq_circle_to_graph on the model */
    AT_OPEN,   /* imports, pdq_cg_open refuses */
    AT_RUN,    /* opens, pdq_cg_run fails with an error */
    AT_NONE    /* valid: opens and runs (an overflow that must not happen) */
} stage;

typedef struct {
    const char *name;
    void (*build)(pdq_circle_model *m);
    stage at;
    pdq_code code;
    const char *needles[4];
} hcase;

/* ---------------------------------------------------------------- building blocks */

static int32_t tensor(pdq_circle_model *m, const char *name, int8_t type, int32_t rank, const int32_t *shape,
                      uint32_t buffer) {
    pdq_status st = {0};
    int32_t t = pdq_circle_add_tensor(m, name, type, rank, shape, buffer, &st);
    assert_true(t >= 0);
    return t;
}

static int32_t input(pdq_circle_model *m, const char *name, int8_t type, int32_t rank, const int32_t *shape) {
    pdq_status st = {0};
    int32_t t = tensor(m, name, type, rank, shape, 0);
    assert_int_equal(pdq_circle_add_input(m, t, &st), PDQ_OK);
    return t;
}

static int32_t konst(pdq_circle_model *m, const char *name, int8_t type, int32_t rank, const int32_t *shape,
                     const void *data, uint64_t bytes) {
    pdq_status st = {0};
    int32_t b = pdq_circle_add_buffer(m, data, bytes, 1, &st);
    assert_true(b > 0);
    return tensor(m, name, type, rank, shape, (uint32_t)b);
}

static int32_t i32vec(pdq_circle_model *m, const char *name, int32_t n, const int32_t *v) {
    return konst(m, name, CIRCLE_TT_INT32, 1, SH(n), v, 4 * (uint64_t)n);
}

static int32_t f32vec(pdq_circle_model *m, const char *name, int32_t n, const float *v) {
    return konst(m, name, CIRCLE_TT_FLOAT32, 1, SH(n), v, 4 * (uint64_t)n);
}

/* Appends an operator writing a new tensor `out` (rank/shape as given) and returns its id. */
static int32_t op(pdq_circle_model *m, int32_t code, int32_t n_in, const int32_t *in, const char *out, int8_t type,
                  int32_t rank, const int32_t *shape, uint8_t opt_type, const pdq_circle_options *opt) {
    pdq_status st = {0};
    int32_t y = tensor(m, out, type, rank, shape, 0);
    assert_true(pdq_circle_add_op(m, code, n_in, in, 1, &y, opt_type, opt, &st) >= 0);
    return y;
}

static void output(pdq_circle_model *m, int32_t t) {
    pdq_status st = {0};
    assert_int_equal(pdq_circle_add_output(m, t, &st), PDQ_OK);
}

static const float k_ones[8] = {1, 1, 1, 1, 1, 1, 1, 1};

/* ---------------------------------------------------------------- the cases */

/* The 496-byte file: SLICE begin 2^31-1; begin + size overflowed int and passed. */
static void slice_begin_max(pdq_circle_model *m) {
    int32_t x = input(m, "x", CIRCLE_TT_FLOAT32, 1, SH(4));
    int32_t in[3] = {x, i32vec(m, "begin", 1, SH(2147483647)), i32vec(m, "size", 1, SH(1))};
    output(m, op(m, CIRCLE_OP_SLICE, 3, in, "y", CIRCLE_TT_FLOAT32, 1, SH(1), 0, NULL));
}

static void slice_size_max(pdq_circle_model *m) {
    int32_t x = input(m, "x", CIRCLE_TT_FLOAT32, 2, SH(2, 4));
    int32_t in[3] = {x, i32vec(m, "begin", 2, SH(0, 1)), i32vec(m, "size", 2, SH(1, 2147483647))};
    output(m, op(m, CIRCLE_OP_SLICE, 3, in, "y", CIRCLE_TT_FLOAT32, 2, SH(1, 1), 0, NULL));
}

static void rank0_rms_norm(pdq_circle_model *m) {
    int32_t in[2] = {input(m, "x", CIRCLE_TT_FLOAT32, 0, NULL), f32vec(m, "gamma", 1, k_ones)};
    pdq_circle_options o = pdq_circle_options_default(CIRCLE_OPT_RmsNormOptions);
    o.rms_norm.epsilon = 1e-6f;
    output(m, op(m, CIRCLE_OP_RMS_NORM, 2, in, "y", CIRCLE_TT_FLOAT32, 0, NULL, CIRCLE_OPT_RmsNormOptions, &o));
}

static void rank0_softmax(pdq_circle_model *m) {
    int32_t x = input(m, "x", CIRCLE_TT_FLOAT32, 0, NULL);
    pdq_circle_options o = pdq_circle_options_default(CIRCLE_OPT_SoftmaxOptions);
    o.softmax.beta = 1;
    output(m, op(m, CIRCLE_OP_SOFTMAX, 1, &x, "y", CIRCLE_TT_FLOAT32, 0, NULL, CIRCLE_OPT_SoftmaxOptions, &o));
}

/* x (65536,1) by w (65536,1): an output of 2^32 elements. */
static void fc_65536(pdq_circle_model *m) {
    int32_t in[3] = {input(m, "x", CIRCLE_TT_FLOAT32, 2, SH(65536, 1)), input(m, "w", CIRCLE_TT_FLOAT32, 2, SH(65536, 1)),
                     -1};
    pdq_circle_options o = pdq_circle_options_default(CIRCLE_OPT_FullyConnectedOptions);
    o.fc.keep_num_dims = true;
    output(m, op(m, CIRCLE_OP_FULLY_CONNECTED, 3, in, "y", CIRCLE_TT_FLOAT32, 2, SH(65536, 65536),
                 CIRCLE_OPT_FullyConnectedOptions, &o));
}

/* Two halves of 2^31-1 along the axis: the sum overflowed int. */
static void concat_overflow(pdq_circle_model *m) {
    int32_t in[2] = {input(m, "a", CIRCLE_TT_FLOAT32, 1, SH(2147483647)),
                     input(m, "b", CIRCLE_TT_FLOAT32, 1, SH(2147483647))};
    pdq_circle_options o = pdq_circle_options_default(CIRCLE_OPT_ConcatenationOptions);
    output(m, op(m, CIRCLE_OP_CONCATENATION, 2, in, "y", CIRCLE_TT_FLOAT32, 1, SH(2), CIRCLE_OPT_ConcatenationOptions,
                 &o));
}

static void concat_axis(pdq_circle_model *m) {
    int32_t in[2] = {input(m, "a", CIRCLE_TT_FLOAT32, 1, SH(2)), input(m, "b", CIRCLE_TT_FLOAT32, 1, SH(2))};
    pdq_circle_options o = pdq_circle_options_default(CIRCLE_OPT_ConcatenationOptions);
    o.concat.axis = 3;
    output(m, op(m, CIRCLE_OP_CONCATENATION, 2, in, "y", CIRCLE_TT_FLOAT32, 1, SH(4), CIRCLE_OPT_ConcatenationOptions,
                 &o));
}

static void concat_rank0(pdq_circle_model *m) {
    int32_t in[2] = {input(m, "a", CIRCLE_TT_FLOAT32, 0, NULL), input(m, "b", CIRCLE_TT_FLOAT32, 0, NULL)};
    output(m, op(m, CIRCLE_OP_CONCATENATION, 2, in, "y", CIRCLE_TT_FLOAT32, 1, SH(2), 0, NULL));
}

/* (end - begin + stride - 1) overflowed int: a valid one-element slice, which must run. */
static void sslice_stride_max(pdq_circle_model *m) {
    int32_t x = input(m, "x", CIRCLE_TT_FLOAT32, 1, SH(8));
    int32_t in[4] = {x, i32vec(m, "begin", 1, SH(3)), i32vec(m, "end", 1, SH(8)), i32vec(m, "strides", 1, SH(2147483647))};
    pdq_circle_options o = pdq_circle_options_default(CIRCLE_OPT_StridedSliceOptions);
    output(m, op(m, CIRCLE_OP_STRIDED_SLICE, 4, in, "y", CIRCLE_TT_FLOAT32, 1, SH(1), CIRCLE_OPT_StridedSliceOptions, &o));
}

static void sslice_end_past(pdq_circle_model *m) {
    int32_t x = input(m, "x", CIRCLE_TT_FLOAT32, 1, SH(8));
    int32_t in[4] = {x, i32vec(m, "begin", 1, SH(0)), i32vec(m, "end", 1, SH(2147483647)), i32vec(m, "strides", 1, SH(1))};
    pdq_circle_options o = pdq_circle_options_default(CIRCLE_OPT_StridedSliceOptions);
    output(m, op(m, CIRCLE_OP_STRIDED_SLICE, 4, in, "y", CIRCLE_TT_FLOAT32, 1, SH(8), CIRCLE_OPT_StridedSliceOptions, &o));
}

static void sslice_negative_stride(pdq_circle_model *m) {
    int32_t x = input(m, "x", CIRCLE_TT_FLOAT32, 1, SH(8));
    int32_t in[4] = {x, i32vec(m, "begin", 1, SH(0)), i32vec(m, "end", 1, SH(8)), i32vec(m, "strides", 1, SH(-1))};
    pdq_circle_options o = pdq_circle_options_default(CIRCLE_OPT_StridedSliceOptions);
    output(m, op(m, CIRCLE_OP_STRIDED_SLICE, 4, in, "y", CIRCLE_TT_FLOAT32, 1, SH(8), CIRCLE_OPT_StridedSliceOptions, &o));
}

static void sslice_masks(pdq_circle_model *m) {
    int32_t x = input(m, "x", CIRCLE_TT_FLOAT32, 1, SH(8));
    int32_t in[4] = {x, i32vec(m, "begin", 1, SH(0)), i32vec(m, "end", 1, SH(8)), i32vec(m, "strides", 1, SH(1))};
    pdq_circle_options o = pdq_circle_options_default(CIRCLE_OPT_StridedSliceOptions);
    o.strided_slice.shrink_axis_mask = 1;
    output(m, op(m, CIRCLE_OP_STRIDED_SLICE, 4, in, "y", CIRCLE_TT_FLOAT32, 1, SH(8), CIRCLE_OPT_StridedSliceOptions, &o));
}

static void transpose_not_perm(pdq_circle_model *m) {
    int32_t in[2] = {input(m, "x", CIRCLE_TT_FLOAT32, 2, SH(2, 3)), i32vec(m, "perm", 2, SH(0, 0))};
    output(m, op(m, CIRCLE_OP_TRANSPOSE, 2, in, "y", CIRCLE_TT_FLOAT32, 2, SH(2, 2), CIRCLE_OPT_TransposeOptions, NULL));
}

static void transpose_perm_range(pdq_circle_model *m) {
    int32_t in[2] = {input(m, "x", CIRCLE_TT_FLOAT32, 2, SH(2, 3)), i32vec(m, "perm", 2, SH(1, 2147483647))};
    output(m, op(m, CIRCLE_OP_TRANSPOSE, 2, in, "y", CIRCLE_TT_FLOAT32, 2, SH(3, 2), CIRCLE_OPT_TransposeOptions, NULL));
}

static void gather_const_index(pdq_circle_model *m) {
    float table[8] = {0};
    int32_t in[2] = {konst(m, "table", CIRCLE_TT_FLOAT32, 2, SH(4, 2), table, sizeof table),
                     i32vec(m, "ids", 1, SH(7))};
    pdq_circle_options o = pdq_circle_options_default(CIRCLE_OPT_GatherOptions);
    output(m, op(m, CIRCLE_OP_GATHER, 2, in, "y", CIRCLE_TT_FLOAT32, 2, SH(1, 2), CIRCLE_OPT_GatherOptions, &o));
}

/* Runtime ids: the kernel checks them (the fuzz driver feeds -1 and large ids too). */
static void gather_runtime_index(pdq_circle_model *m) {
    float table[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    int32_t in[2] = {konst(m, "table", CIRCLE_TT_FLOAT32, 2, SH(4, 2), table, sizeof table),
                     input(m, "ids", CIRCLE_TT_INT32, 1, SH(3))};
    pdq_circle_options o = pdq_circle_options_default(CIRCLE_OPT_GatherOptions);
    output(m, op(m, CIRCLE_OP_GATHER, 2, in, "y", CIRCLE_TT_FLOAT32, 2, SH(3, 2), CIRCLE_OPT_GatherOptions, &o));
}

static void gather_axis(pdq_circle_model *m) {
    int32_t in[2] = {input(m, "table", CIRCLE_TT_FLOAT32, 2, SH(4, 2)), input(m, "ids", CIRCLE_TT_INT32, 1, SH(1))};
    pdq_circle_options o = pdq_circle_options_default(CIRCLE_OPT_GatherOptions);
    o.gather.axis = -5;
    output(m, op(m, CIRCLE_OP_GATHER, 2, in, "y", CIRCLE_TT_FLOAT32, 2, SH(1, 2), CIRCLE_OPT_GatherOptions, &o));
}

static void gather_float_ids(pdq_circle_model *m) {
    int32_t in[2] = {input(m, "table", CIRCLE_TT_FLOAT32, 2, SH(4, 2)), input(m, "ids", CIRCLE_TT_FLOAT32, 1, SH(1))};
    output(m, op(m, CIRCLE_OP_GATHER, 2, in, "y", CIRCLE_TT_FLOAT32, 2, SH(1, 2), 0, NULL));
}

static void mean_axis(pdq_circle_model *m) {
    int32_t in[2] = {input(m, "x", CIRCLE_TT_FLOAT32, 2, SH(2, 3)), i32vec(m, "axes", 1, SH(-2147483647 - 1))};
    output(m, op(m, CIRCLE_OP_MEAN, 2, in, "y", CIRCLE_TT_FLOAT32, 1, SH(2), 0, NULL));
}

static void reshape_overflow(pdq_circle_model *m) {
    int32_t in[2] = {input(m, "x", CIRCLE_TT_FLOAT32, 1, SH(4)), i32vec(m, "shape", 3, SH(65536, 65536, 65536))};
    output(m, op(m, CIRCLE_OP_RESHAPE, 2, in, "y", CIRCLE_TT_FLOAT32, 1, SH(4), 0, NULL));
}

static void reshape_count(pdq_circle_model *m) {
    int32_t in[2] = {input(m, "x", CIRCLE_TT_FLOAT32, 1, SH(4)), i32vec(m, "shape", 2, SH(3, 2))};
    output(m, op(m, CIRCLE_OP_RESHAPE, 2, in, "y", CIRCLE_TT_FLOAT32, 2, SH(3, 2), 0, NULL));
}

static void reshape_from_input(pdq_circle_model *m) {
    int32_t in[2] = {input(m, "x", CIRCLE_TT_FLOAT32, 1, SH(4)), input(m, "shape", CIRCLE_TT_INT32, 1, SH(1))};
    output(m, op(m, CIRCLE_OP_RESHAPE, 2, in, "y", CIRCLE_TT_FLOAT32, 1, SH(4), 0, NULL));
}

static void bmm_inner(pdq_circle_model *m) {
    int32_t in[2] = {input(m, "a", CIRCLE_TT_FLOAT32, 3, SH(1, 2, 3)), input(m, "b", CIRCLE_TT_FLOAT32, 3, SH(1, 4, 2))};
    output(m, op(m, CIRCLE_OP_BATCH_MATMUL, 2, in, "y", CIRCLE_TT_FLOAT32, 3, SH(1, 2, 2), 0, NULL));
}

static void bmm_rank1(pdq_circle_model *m) {
    int32_t in[2] = {input(m, "a", CIRCLE_TT_FLOAT32, 1, SH(3)), input(m, "b", CIRCLE_TT_FLOAT32, 2, SH(3, 2))};
    output(m, op(m, CIRCLE_OP_BATCH_MATMUL, 2, in, "y", CIRCLE_TT_FLOAT32, 1, SH(2), 0, NULL));
}

static void fc_weight_rank(pdq_circle_model *m) {
    int32_t in[2] = {input(m, "x", CIRCLE_TT_FLOAT32, 2, SH(1, 4)), input(m, "w", CIRCLE_TT_FLOAT32, 3, SH(1, 2, 4))};
    output(m, op(m, CIRCLE_OP_FULLY_CONNECTED, 2, in, "y", CIRCLE_TT_FLOAT32, 2, SH(1, 2), 0, NULL));
}

static void add_broadcast(pdq_circle_model *m) {
    int32_t in[2] = {input(m, "a", CIRCLE_TT_FLOAT32, 2, SH(2, 3)), input(m, "b", CIRCLE_TT_FLOAT32, 2, SH(2, 4))};
    output(m, op(m, CIRCLE_OP_ADD, 2, in, "y", CIRCLE_TT_FLOAT32, 2, SH(2, 3), 0, NULL));
}

static void add_three_inputs(pdq_circle_model *m) {
    int32_t a = input(m, "a", CIRCLE_TT_FLOAT32, 1, SH(2));
    int32_t in[3] = {a, a, a};
    output(m, op(m, CIRCLE_OP_ADD, 3, in, "y", CIRCLE_TT_FLOAT32, 1, SH(2), 0, NULL));
}

static void add_int16_plain(pdq_circle_model *m) {
    int32_t in[2] = {input(m, "a", CIRCLE_TT_INT16, 1, SH(2)), input(m, "b", CIRCLE_TT_INT16, 1, SH(2))};
    output(m, op(m, CIRCLE_OP_ADD, 2, in, "y", CIRCLE_TT_FLOAT32, 1, SH(2), 0, NULL));
}

static void input_too_big(pdq_circle_model *m) {
    int32_t x = input(m, "x", CIRCLE_TT_FLOAT32, 2, SH(65536, 65536));
    output(m, op(m, CIRCLE_OP_NEG, 1, &x, "y", CIRCLE_TT_FLOAT32, 2, SH(65536, 65536), 0, NULL));
}

/* Nine outputs of 2^31-1 floats: 72 GiB of arena, over the 64 GiB limit. */
static void arena_limit(pdq_circle_model *m) {
    int32_t x = input(m, "x", CIRCLE_TT_FLOAT32, 1, SH(2147483647));
    char nm[16];
    for (int i = 0; i < 8; i++) {
        snprintf(nm, sizeof nm, "y%d", i);
        output(m, op(m, CIRCLE_OP_NEG, 1, &x, nm, CIRCLE_TT_FLOAT32, 1, SH(2147483647), 0, NULL));
    }
}

static void quantized_add(pdq_circle_model *m, float scale, int64_t zp, int8_t type) {
    pdq_status st = {0};
    int32_t a = input(m, "a", type, 1, SH(2));
    assert_int_equal(pdq_circle_set_quant(m, a, 1, &scale, &zp, 0, &st), PDQ_OK);
    int32_t in[2] = {a, a};
    int32_t y = op(m, CIRCLE_OP_ADD, 2, in, "y", type, 1, SH(2), 0, NULL);
    float one = 1;
    int64_t z0 = 0;
    assert_int_equal(pdq_circle_set_quant(m, y, 1, &one, &z0, 0, &st), PDQ_OK);
    output(m, y);
}
static void scale_zero(pdq_circle_model *m) { quantized_add(m, 0.0f, 0, CIRCLE_TT_INT16); }
static void scale_nan(pdq_circle_model *m) { quantized_add(m, NAN, 0, CIRCLE_TT_INT16); }
static void scale_inf(pdq_circle_model *m) { quantized_add(m, INFINITY, 0, CIRCLE_TT_INT16); }
static void zp_int16(pdq_circle_model *m) { quantized_add(m, 0.5f, 40000, CIRCLE_TT_INT16); }
static void zp_uint8(pdq_circle_model *m) { quantized_add(m, 0.5f, -1, CIRCLE_TT_UINT8); }

static void zp_uint4_weight(pdq_circle_model *m) {
    pdq_status st = {0};
    uint8_t packed[4] = {0x21, 0x43, 0x65, 0x87}; /* 8 codes */
    int32_t x = input(m, "x", CIRCLE_TT_FLOAT32, 2, SH(1, 4));
    int32_t w = konst(m, "w", CIRCLE_TT_UINT4, 2, SH(2, 4), packed, sizeof packed);
    float s[2] = {0.1f, 0.2f};
    int64_t z[2] = {8, 16};
    assert_int_equal(pdq_circle_set_quant(m, w, 2, s, z, 0, &st), PDQ_OK);
    int32_t in[2] = {x, w};
    output(m, op(m, CIRCLE_OP_FULLY_CONNECTED, 2, in, "y", CIRCLE_TT_FLOAT32, 2, SH(1, 2), 0, NULL));
}

static void rms_epsilon(pdq_circle_model *m) {
    int32_t in[2] = {input(m, "x", CIRCLE_TT_FLOAT32, 2, SH(1, 4)), f32vec(m, "gamma", 4, k_ones)};
    pdq_circle_options o = pdq_circle_options_default(CIRCLE_OPT_RmsNormOptions);
    o.rms_norm.epsilon = -1.0f;
    output(m, op(m, CIRCLE_OP_RMS_NORM, 2, in, "y", CIRCLE_TT_FLOAT32, 2, SH(1, 4), CIRCLE_OPT_RmsNormOptions, &o));
}

static void softmax_beta(pdq_circle_model *m) {
    int32_t x = input(m, "x", CIRCLE_TT_FLOAT32, 2, SH(1, 4));
    pdq_circle_options o = pdq_circle_options_default(CIRCLE_OPT_SoftmaxOptions);
    o.softmax.beta = INFINITY;
    output(m, op(m, CIRCLE_OP_SOFTMAX, 1, &x, "y", CIRCLE_TT_FLOAT32, 2, SH(1, 4), CIRCLE_OPT_SoftmaxOptions, &o));
}

static void sub_fused_relu(pdq_circle_model *m) {
    int32_t a = input(m, "a", CIRCLE_TT_FLOAT32, 1, SH(2));
    int32_t in[2] = {a, a};
    pdq_circle_options o = pdq_circle_options_default(CIRCLE_OPT_SubOptions);
    o.sub.fused_activation_function = 1; /* RELU: silently dropping it would compute something else */
    output(m, op(m, CIRCLE_OP_SUB, 2, in, "y", CIRCLE_TT_FLOAT32, 1, SH(2), CIRCLE_OPT_SubOptions, &o));
}

static void fc_shuffled_weights(pdq_circle_model *m) {
    int32_t in[2] = {input(m, "x", CIRCLE_TT_FLOAT32, 2, SH(1, 4)), input(m, "w", CIRCLE_TT_FLOAT32, 2, SH(2, 4))};
    pdq_circle_options o = pdq_circle_options_default(CIRCLE_OPT_FullyConnectedOptions);
    o.fc.weights_format = 1; /* SHUFFLED4x16INT8 */
    output(m, op(m, CIRCLE_OP_FULLY_CONNECTED, 2, in, "y", CIRCLE_TT_FLOAT32, 2, SH(1, 2), CIRCLE_OPT_FullyConnectedOptions, &o));
}

static void reshape_dtype(pdq_circle_model *m) {
    int32_t in[2] = {input(m, "x", CIRCLE_TT_FLOAT32, 1, SH(4)), i32vec(m, "shape", 2, SH(2, 2))};
    output(m, op(m, CIRCLE_OP_RESHAPE, 2, in, "y", CIRCLE_TT_INT16, 2, SH(2, 2), 0, NULL));
}

/* A uint8 input without qparams: pdq_cg_input would hand out n bytes the caller fills with floats. */
static void uint8_input(pdq_circle_model *m) {
    int32_t in[2] = {input(m, "x", CIRCLE_TT_UINT8, 1, SH(4)), i32vec(m, "shape", 2, SH(2, 2))};
    output(m, op(m, CIRCLE_OP_RESHAPE, 2, in, "y", CIRCLE_TT_UINT8, 2, SH(2, 2), 0, NULL));
}

static void int32_output(pdq_circle_model *m) {
    int32_t in[2] = {input(m, "ids", CIRCLE_TT_INT32, 1, SH(4)), i32vec(m, "shape", 2, SH(2, 2))};
    output(m, op(m, CIRCLE_OP_RESHAPE, 2, in, "y", CIRCLE_TT_INT32, 2, SH(2, 2), 0, NULL));
}

static void shape_mismatch(pdq_circle_model *m) {
    int32_t x = input(m, "x", CIRCLE_TT_FLOAT32, 2, SH(2, 3));
    output(m, op(m, CIRCLE_OP_NEG, 1, &x, "y", CIRCLE_TT_FLOAT32, 2, SH(3, 2), 0, NULL));
}

static void use_before_def(pdq_circle_model *m) {
    int32_t x = input(m, "x", CIRCLE_TT_FLOAT32, 1, SH(2));
    int32_t later = tensor(m, "later", CIRCLE_TT_FLOAT32, 1, SH(2), 0);
    int32_t in[2] = {x, later};
    output(m, op(m, CIRCLE_OP_ADD, 2, in, "y", CIRCLE_TT_FLOAT32, 1, SH(2), 0, NULL));
}

/* ---- valid graphs of every op kind: they must run, and they seed the fuzzer's mutations */

static void ok_elementwise(pdq_circle_model *m) {
    int32_t a = input(m, "a", CIRCLE_TT_FLOAT32, 3, SH(2, 1, 3)), b = input(m, "b", CIRCLE_TT_FLOAT32, 2, SH(4, 1));
    int32_t ab[2] = {a, b};
    int32_t s = op(m, CIRCLE_OP_SUB, 2, ab, "s", CIRCLE_TT_FLOAT32, 3, SH(2, 4, 3), 0, NULL);
    int32_t sb[2] = {s, b};
    int32_t d = op(m, CIRCLE_OP_DIV, 2, sb, "d", CIRCLE_TT_FLOAT32, 3, SH(2, 4, 3), 0, NULL);
    int32_t mu[2] = {d, d};
    int32_t p = op(m, CIRCLE_OP_MUL, 2, mu, "p", CIRCLE_TT_FLOAT32, 3, SH(2, 4, 3), 0, NULL);
    int32_t pb[2] = {p, b}; /* > 0 for the RSQRT */
    int32_t q = op(m, CIRCLE_OP_ADD, 2, pb, "q", CIRCLE_TT_FLOAT32, 3, SH(2, 4, 3), 0, NULL);
    int32_t r = op(m, CIRCLE_OP_RSQRT, 1, &q, "r", CIRCLE_TT_FLOAT32, 3, SH(2, 4, 3), 0, NULL);
    int32_t l = op(m, CIRCLE_OP_LOGISTIC, 1, &r, "l", CIRCLE_TT_FLOAT32, 3, SH(2, 4, 3), 0, NULL);
    output(m, op(m, CIRCLE_OP_NEG, 1, &l, "n", CIRCLE_TT_FLOAT32, 3, SH(2, 4, 3), CIRCLE_OPT_NegOptions, NULL));
}

static void ok_reduce_norm(pdq_circle_model *m) {
    int32_t x = input(m, "x", CIRCLE_TT_FLOAT32, 3, SH(2, 3, 4));
    pdq_circle_options k = pdq_circle_options_default(CIRCLE_OPT_ReducerOptions);
    k.reducer.keep_dims = true;
    int32_t mi[2] = {x, i32vec(m, "axes", 2, SH(-1, 0))};
    output(m, op(m, CIRCLE_OP_MEAN, 2, mi, "mean", CIRCLE_TT_FLOAT32, 3, SH(1, 3, 1), CIRCLE_OPT_ReducerOptions, &k));
    int32_t ri[2] = {x, f32vec(m, "gamma", 1, k_ones)};
    pdq_circle_options e = pdq_circle_options_default(CIRCLE_OPT_RmsNormOptions);
    e.rms_norm.epsilon = 1e-5f;
    int32_t r = op(m, CIRCLE_OP_RMS_NORM, 2, ri, "rms", CIRCLE_TT_FLOAT32, 3, SH(2, 3, 4), CIRCLE_OPT_RmsNormOptions, &e);
    pdq_circle_options b = pdq_circle_options_default(CIRCLE_OPT_SoftmaxOptions);
    b.softmax.beta = 0.5f;
    output(m, op(m, CIRCLE_OP_SOFTMAX, 1, &r, "soft", CIRCLE_TT_FLOAT32, 3, SH(2, 3, 4), CIRCLE_OPT_SoftmaxOptions, &b));
}

static void ok_data_movement(pdq_circle_model *m) {
    int32_t x = input(m, "x", CIRCLE_TT_FLOAT32, 3, SH(2, 3, 4));
    int32_t ti[2] = {x, i32vec(m, "perm", 3, SH(2, 0, 1))};
    int32_t t = op(m, CIRCLE_OP_TRANSPOSE, 2, ti, "t", CIRCLE_TT_FLOAT32, 3, SH(4, 2, 3), CIRCLE_OPT_TransposeOptions, NULL);
    int32_t si[3] = {t, i32vec(m, "begin", 3, SH(1, 0, 1)), i32vec(m, "size", 3, SH(2, 2, 2))};
    int32_t sl = op(m, CIRCLE_OP_SLICE, 3, si, "sl", CIRCLE_TT_FLOAT32, 3, SH(2, 2, 2), 0, NULL);
    int32_t ci[3] = {sl, sl, sl};
    pdq_circle_options c = pdq_circle_options_default(CIRCLE_OPT_ConcatenationOptions);
    c.concat.axis = -2;
    int32_t cc = op(m, CIRCLE_OP_CONCATENATION, 3, ci, "cc", CIRCLE_TT_FLOAT32, 3, SH(2, 6, 2),
                    CIRCLE_OPT_ConcatenationOptions, &c);
    int32_t ss[4] = {cc, i32vec(m, "sb", 3, SH(0, 1, 0)), i32vec(m, "se", 3, SH(2, 6, 2)), i32vec(m, "st", 3, SH(1, 2, 1))};
    pdq_circle_options so = pdq_circle_options_default(CIRCLE_OPT_StridedSliceOptions);
    int32_t sx = op(m, CIRCLE_OP_STRIDED_SLICE, 4, ss, "sx", CIRCLE_TT_FLOAT32, 3, SH(2, 3, 2),
                    CIRCLE_OPT_StridedSliceOptions, &so);
    int32_t ri[2] = {sx, i32vec(m, "shape", 2, SH(3, 4))};
    pdq_circle_options ro = pdq_circle_options_default(CIRCLE_OPT_ReshapeOptions);
    ro.reshape.rank = 2;
    ro.reshape.new_shape[0] = 3, ro.reshape.new_shape[1] = 4;
    int32_t rs = op(m, CIRCLE_OP_RESHAPE, 2, ri, "rs", CIRCLE_TT_FLOAT32, 2, SH(3, 4), CIRCLE_OPT_ReshapeOptions, &ro);
    int32_t gi[2] = {rs, input(m, "ids", CIRCLE_TT_INT32, 2, SH(2, 2))};
    pdq_circle_options go = pdq_circle_options_default(CIRCLE_OPT_GatherOptions);
    go.gather.axis = 1;
    output(m, op(m, CIRCLE_OP_GATHER, 2, gi, "g", CIRCLE_TT_FLOAT32, 3, SH(3, 2, 2), CIRCLE_OPT_GatherOptions, &go));
}

static void ok_matmul(pdq_circle_model *m) {
    float w[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, bias[3] = {1, 0, -1};
    int32_t x = input(m, "x", CIRCLE_TT_FLOAT32, 3, SH(2, 5, 4));
    int32_t fi[3] = {x, konst(m, "w", CIRCLE_TT_FLOAT32, 2, SH(3, 4), w, sizeof w), f32vec(m, "bias", 3, bias)};
    pdq_circle_options f = pdq_circle_options_default(CIRCLE_OPT_FullyConnectedOptions);
    int32_t y = op(m, CIRCLE_OP_FULLY_CONNECTED, 3, fi, "fc", CIRCLE_TT_FLOAT32, 2, SH(10, 3),
                   CIRCLE_OPT_FullyConnectedOptions, &f);
    int32_t bi[2] = {input(m, "a", CIRCLE_TT_FLOAT32, 4, SH(2, 1, 10, 3)), y};
    pdq_circle_options b = pdq_circle_options_default(CIRCLE_OPT_BatchMatMulOptions);
    b.bmm.adjoint_lhs = true;
    output(m, op(m, CIRCLE_OP_BATCH_MATMUL, 2, bi, "bmm", CIRCLE_TT_FLOAT32, 4, SH(2, 1, 3, 3),
                 CIRCLE_OPT_BatchMatMulOptions, &b));
}

/* int16 activations, uint4 per-channel weights, QUANTIZE and DEQUANTIZE: the requantizing path. */
/* x (1, cols) float32 -> QUANTIZE int16 -> FULLY_CONNECTED by a uint4 constant w (rows, cols) of
 * the packed codes given -> int16 -> DEQUANTIZE; returns w, whose qparams the caller sets. */
static int32_t int16_fc(pdq_circle_model *m, int32_t rows, int32_t cols, const uint8_t *packed, uint64_t nb) {
    pdq_status st = {0};
    float s16 = 1.0f / 1024;
    int64_t z0 = 0;
    int32_t x = input(m, "x", CIRCLE_TT_FLOAT32, 2, SH(1, cols));
    int32_t q = op(m, CIRCLE_OP_QUANTIZE, 1, &x, "xq", CIRCLE_TT_INT16, 2, SH(1, cols), CIRCLE_OPT_QuantizeOptions, NULL);
    assert_int_equal(pdq_circle_set_quant(m, q, 1, &s16, &z0, 0, &st), PDQ_OK);
    int32_t w = konst(m, "w", CIRCLE_TT_UINT4, 2, SH(rows, cols), packed, nb);
    int32_t fi[3] = {q, w, -1};
    pdq_circle_options f = pdq_circle_options_default(CIRCLE_OPT_FullyConnectedOptions);
    f.fc.keep_num_dims = true;
    int32_t y = op(m, CIRCLE_OP_FULLY_CONNECTED, 3, fi, "y", CIRCLE_TT_INT16, 2, SH(1, rows), CIRCLE_OPT_FullyConnectedOptions,
                   &f);
    assert_int_equal(pdq_circle_set_quant(m, y, 1, &s16, &z0, 0, &st), PDQ_OK);
    output(m, op(m, CIRCLE_OP_DEQUANTIZE, 1, &y, "yf", CIRCLE_TT_FLOAT32, 2, SH(1, rows), CIRCLE_OPT_DequantizeOptions, NULL));
    return w;
}

static void ok_quantized(pdq_circle_model *m) {
    pdq_status st = {0};
    float sw[2] = {0.1f, 0.05f};
    int64_t zw[2] = {8, 7};
    const uint8_t packed[3] = {0x9f, 0x30, 0x7c}; /* 6 codes, 2 rows */
    int32_t w = int16_fc(m, 2, 3, packed, sizeof packed);
    assert_int_equal(pdq_circle_set_quant(m, w, 2, sw, zw, 0, &st), PDQ_OK);
}

/* A weight in groups of columns (BlockwiseQuantization): x (1, 6) int16 by w (2, 6) uint4 in
 * blocks of 4 columns (the second block 2 wide); scales (2, 2) float32, zero points (2, 2) uint8.
 * The variants damage one value or one reference. */
static int32_t blockwise_fc(pdq_circle_model *m, const float *bs, const uint8_t *bz, int32_t block) {
    pdq_status st = {0};
    const uint8_t packed[6] = {0x9f, 0x30, 0x7c, 0x12, 0xe5, 0x48}; /* 12 codes, 2 rows */
    int32_t w = int16_fc(m, 2, 6, packed, sizeof packed);
    int32_t ts = konst(m, "w.block_scales", CIRCLE_TT_FLOAT32, 2, SH(2, 2), bs, 16);
    int32_t tz = konst(m, "w.block_zero_points", CIRCLE_TT_UINT8, 2, SH(2, 2), bz, 4);
    assert_int_equal(pdq_circle_set_blockwise(m, w, ts, tz, block, &st), PDQ_OK);
    return w;
}

static const float k_bs[4] = {0.1f, 0.05f, 0.02f, 0.2f};
static const uint8_t k_bz[4] = {8, 7, 0, 15};

static void ok_blockwise(pdq_circle_model *m) { blockwise_fc(m, k_bs, k_bz, 4); }

static void block_scale_zero(pdq_circle_model *m) {
    const float bs[4] = {0.1f, 0.0f, 0.02f, 0.2f};
    blockwise_fc(m, bs, k_bz, 4);
}

static void block_zp_uint4(pdq_circle_model *m) {
    const uint8_t bz[4] = {8, 7, 16, 15};
    blockwise_fc(m, k_bs, bz, 4);
}

/* block_size 2 needs (2, 3) scales; the file has (2, 2) */
static void block_size_shape(pdq_circle_model *m) { blockwise_fc(m, k_bs, k_bz, 2); }

/* the zero points are the scales' tensor: float32, not uint8 */
static void block_zp_type(pdq_circle_model *m) {
    int32_t w = blockwise_fc(m, k_bs, k_bz, 4);
    m->tensors[w].quant.block_zero_points = m->tensors[w].quant.block_scales;
}

/* a block scale tensor that an operator also reads */
static void block_aux_operand(pdq_circle_model *m) {
    int32_t w = blockwise_fc(m, k_bs, k_bz, 4);
    m->ops[1].inputs[2] = m->tensors[w].quant.block_scales; /* the FC's bias */
}

/* blockwise on the float32 input of QUANTIZE's graph: a constant float weight in blocks */
static void block_float_weight(pdq_circle_model *m) {
    pdq_status st = {0};
    int32_t x = input(m, "x", CIRCLE_TT_FLOAT32, 2, SH(1, 4));
    const float wv[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    int32_t w = konst(m, "w", CIRCLE_TT_FLOAT32, 2, SH(2, 4), wv, sizeof wv);
    int32_t ts = konst(m, "w.block_scales", CIRCLE_TT_FLOAT32, 2, SH(2, 2), k_bs, 16);
    assert_int_equal(pdq_circle_set_blockwise(m, w, ts, -1, 2, &st), PDQ_OK);
    int32_t in[2] = {x, w};
    output(m, op(m, CIRCLE_OP_FULLY_CONNECTED, 2, in, "y", CIRCLE_TT_FLOAT32, 2, SH(1, 2), 0, NULL));
}

/* ---- reader-level damage the writer refuses: the importer checks in-memory models too */

static void mem_block_index(pdq_circle_model *m) {
    int32_t w = blockwise_fc(m, k_bs, k_bz, 4);
    m->tensors[w].quant.block_scales = 99;
}

static void mem_tensor_index(pdq_circle_model *m) {
    slice_begin_max(m);
    m->ops[0].inputs[1] = 99;
}

static void mem_uint4_buffer(pdq_circle_model *m) {
    zp_uint4_weight(m);
    m->tensors[1].quant.zero_point[1] = 3;
    m->buffers[1].len = 8; /* 8 uint4 codes pack into 4 bytes */
}

static void mem_qdim(pdq_circle_model *m) {
    zp_uint4_weight(m);
    m->tensors[1].quant.zero_point[1] = 3;
    m->tensors[1].quant.quantized_dimension = 1;
}

static void mem_output_index(pdq_circle_model *m) {
    rank0_softmax(m);
    m->outputs[0] = -7;
}

static const hcase k_cases[] = {
    {"slice_begin_max", slice_begin_max, AT_IMPORT, PDQ_ERR_SHAPE, {"operator 0 (SLICE)", "begin 2147483647", "outside 0..4"}},
    {"slice_size_max", slice_size_max, AT_IMPORT, PDQ_ERR_SHAPE, {"operator 0 (SLICE)", "size 2147483647", "dim 1"}},
    {"rank0_rms_norm", rank0_rms_norm, AT_IMPORT, PDQ_ERR_SHAPE, {"operator 0 (RMS_NORM)", "rank 0", "rank >= 1"}},
    {"rank0_softmax", rank0_softmax, AT_IMPORT, PDQ_ERR_SHAPE, {"operator 0 (SOFTMAX)", "rank 0", "rank >= 1"}},
    {"fc_65536x65536", fc_65536, AT_IMPORT, PDQ_ERR_LIMIT, {"operator 0 (FULLY_CONNECTED)", "2147483647 elements"}},
    {"concat_overflow", concat_overflow, AT_IMPORT, PDQ_ERR_LIMIT, {"operator 0 (CONCATENATION)", "4294967294", "2147483647"}},
    {"concat_axis", concat_axis, AT_IMPORT, PDQ_ERR_ARG, {"operator 0 (CONCATENATION)", "axis 3", "rank 1"}},
    {"concat_rank0", concat_rank0, AT_IMPORT, PDQ_ERR_SHAPE, {"operator 0 (CONCATENATION)", "rank 0"}},
    {"sslice_stride_max", sslice_stride_max, AT_NONE, PDQ_OK, {NULL}},
    {"sslice_end_past", sslice_end_past, AT_IMPORT, PDQ_ERR_SHAPE, {"operator 0 (STRIDED_SLICE)", "[0:2147483647:1]", "0..8"}},
    {"sslice_negative_stride", sslice_negative_stride, AT_IMPORT, PDQ_ERR_SHAPE, {"operator 0 (STRIDED_SLICE)", "[0:8:-1]"}},
    {"sslice_masks", sslice_masks, AT_IMPORT, PDQ_ERR_UNSUPPORTED, {"operator 0 (STRIDED_SLICE)", "masks"}},
    {"transpose_not_perm", transpose_not_perm, AT_IMPORT, PDQ_ERR_ARG, {"operator 0 (TRANSPOSE)", "perm[1] = 0", "0..1"}},
    {"transpose_perm_range", transpose_perm_range, AT_IMPORT, PDQ_ERR_ARG, {"operator 0 (TRANSPOSE)", "perm[1] = 2147483647"}},
    {"gather_const_index", gather_const_index, AT_IMPORT, PDQ_ERR_ARG, {"operator 0 (GATHER)", "= 7", "[0,4)"}},
    {"gather_runtime_index", gather_runtime_index, AT_RUN, PDQ_ERR_ARG, {"GATHER", "index 9", "[0,4)"}},
    {"gather_axis", gather_axis, AT_IMPORT, PDQ_ERR_ARG, {"operator 0 (GATHER)", "axis -5", "rank 2"}},
    {"gather_float_ids", gather_float_ids, AT_IMPORT, PDQ_ERR_ARG, {"operator 0 (GATHER)", "ids", "int32"}},
    {"mean_axis", mean_axis, AT_IMPORT, PDQ_ERR_ARG, {"operator 0 (MEAN)", "axis -2147483648", "rank 2"}},
    {"reshape_overflow", reshape_overflow, AT_IMPORT, PDQ_ERR_LIMIT, {"operator 0 (RESHAPE)", "2147483647 elements"}},
    {"reshape_count", reshape_count, AT_IMPORT, PDQ_ERR_SHAPE, {"operator 0 (RESHAPE)", "4 elements into 6"}},
    {"reshape_from_input", reshape_from_input, AT_IMPORT, PDQ_ERR_ARG, {"operator 0 (RESHAPE)", "new shape", "constant"}},
    {"bmm_inner", bmm_inner, AT_IMPORT, PDQ_ERR_SHAPE, {"operator 0 (BATCH_MATMUL)", "inner dims 3 vs 4"}},
    {"bmm_rank1", bmm_rank1, AT_IMPORT, PDQ_ERR_SHAPE, {"operator 0 (BATCH_MATMUL)", "rank 1", "rank >= 2"}},
    {"fc_weight_rank", fc_weight_rank, AT_IMPORT, PDQ_ERR_SHAPE, {"operator 0 (FULLY_CONNECTED)", "rank 3"}},
    {"add_broadcast", add_broadcast, AT_IMPORT, PDQ_ERR_SHAPE, {"operator 0 (ADD)", "3 vs 4"}},
    {"add_three_inputs", add_three_inputs, AT_IMPORT, PDQ_ERR_ARG, {"operator 0 (ADD)", "2..2 inputs, got 3"}},
    {"add_int16_plain", add_int16_plain, AT_IMPORT, PDQ_ERR_ARG, {"op 0 (ADD)", "int16 without quantization"}},
    {"input_too_big", input_too_big, AT_IMPORT, PDQ_ERR_LIMIT, {"'x'", "2147483647 elements"}},
    {"arena_limit", arena_limit, AT_OPEN, PDQ_ERR_LIMIT, {"arena", "68719476736"}},
    {"scale_zero", scale_zero, AT_IMPORT, PDQ_ERR_FORMAT, {"'a'", "scale[0] = 0", "> 0"}},
    {"scale_nan", scale_nan, AT_IMPORT, PDQ_ERR_FORMAT, {"'a'", "scale[0] = nan"}},
    {"scale_inf", scale_inf, AT_IMPORT, PDQ_ERR_FORMAT, {"'a'", "scale[0] = inf"}},
    {"zp_int16", zp_int16, AT_IMPORT, PDQ_ERR_FORMAT, {"'a'", "zero_point[0] = 40000", "int16"}},
    {"zp_uint8", zp_uint8, AT_IMPORT, PDQ_ERR_FORMAT, {"'a'", "zero_point[0] = -1", "uint8"}},
    {"zp_uint4", zp_uint4_weight, AT_IMPORT, PDQ_ERR_FORMAT, {"'w'", "zero_point[1] = 16", "uint4"}},
    {"rms_epsilon", rms_epsilon, AT_IMPORT, PDQ_ERR_FORMAT, {"operator 0 (RMS_NORM)", "epsilon -1"}},
    {"softmax_beta", softmax_beta, AT_IMPORT, PDQ_ERR_FORMAT, {"operator 0 (SOFTMAX)", "beta inf"}},
    {"sub_fused_relu", sub_fused_relu, AT_IMPORT, PDQ_ERR_UNSUPPORTED, {"operator 0 (SUB)", "fused activation 1"}},
    {"fc_shuffled_weights", fc_shuffled_weights, AT_IMPORT, PDQ_ERR_UNSUPPORTED, {"operator 0 (FULLY_CONNECTED)", "weights_format 1"}},
    {"reshape_dtype", reshape_dtype, AT_IMPORT, PDQ_ERR_FORMAT, {"operator 0 (RESHAPE)", "'y' is int16", "float32"}},
    {"uint8_input", uint8_input, AT_OPEN, PDQ_ERR_UNSUPPORTED, {"input x", "uint8"}},
    {"int32_output", int32_output, AT_OPEN, PDQ_ERR_UNSUPPORTED, {"output y", "int32"}},
    {"shape_mismatch", shape_mismatch, AT_IMPORT, PDQ_ERR_SHAPE, {"operator 0 (NEG)", "(3,2) in the file", "(2,3)"}},
    {"use_before_def", use_before_def, AT_IMPORT, PDQ_ERR_FORMAT, {"operator 0 (ADD)", "'later'", "not produced"}},
    {"ok_elementwise", ok_elementwise, AT_NONE, PDQ_OK, {NULL}},
    {"ok_reduce_norm", ok_reduce_norm, AT_NONE, PDQ_OK, {NULL}},
    {"ok_data_movement", ok_data_movement, AT_NONE, PDQ_OK, {NULL}},
    {"ok_matmul", ok_matmul, AT_NONE, PDQ_OK, {NULL}},
    {"ok_quantized", ok_quantized, AT_NONE, PDQ_OK, {NULL}},
    {"ok_blockwise", ok_blockwise, AT_NONE, PDQ_OK, {NULL}},
    {"block_scale_zero", block_scale_zero, AT_IMPORT, PDQ_ERR_FORMAT, {"'w'", "block 1 of row 0", "scale 0"}},
    {"block_zp_uint4", block_zp_uint4, AT_IMPORT, PDQ_ERR_FORMAT, {"'w'", "block 0 of row 1", "zero point 16", "uint4"}},
    {"block_size_shape", block_size_shape, AT_MEMORY, PDQ_ERR_FORMAT, {"'w'", "blockwise scales tensor", "[2, 3]"}},
    {"block_zp_type", block_zp_type, AT_MEMORY, PDQ_ERR_FORMAT, {"'w'", "blockwise zero_points tensor", "UINT8"}},
    {"block_aux_operand", block_aux_operand, AT_IMPORT, PDQ_ERR_FORMAT, {"operator 1"}},
    {"block_float_weight", block_float_weight, AT_IMPORT, PDQ_ERR_UNSUPPORTED, {"'w'", "blockwise quantization of float32"}},
    {"mem_block_index", mem_block_index, AT_MEMORY, PDQ_ERR_FORMAT, {"'w'", "blockwise scales tensor 99 out of range"}},
    {"mem_tensor_index", mem_tensor_index, AT_MEMORY, PDQ_ERR_FORMAT, {"operator 0", "inputs[1] = 99", "tensors"}},
    {"mem_uint4_buffer", mem_uint4_buffer, AT_MEMORY, PDQ_ERR_FORMAT, {"'w'", "8 bytes", "UINT4 x 8 elements need 4"}},
    {"mem_qdim", mem_qdim, AT_MEMORY, PDQ_ERR_FORMAT, {"'w'", "2 scales", "quantized_dimension 1"}},
    {"mem_output_index", mem_output_index, AT_MEMORY, PDQ_ERR_FORMAT, {"outputs[0] = -7"}},
};
enum { N_CASES = sizeof k_cases / sizeof k_cases[0] };

/* ---------------------------------------------------------------- checks */

static void want_msg(const hcase *c, pdq_code rc, const pdq_status *st, const char *path) {
    int ok = rc == c->code;
    for (int k = 0; k < 4 && c->needles[k]; k++) ok = ok && strstr(st->msg, c->needles[k]);
    if (!ok) fprintf(stderr, "case %s: want %s with", c->name, pdq_code_name(c->code));
    for (int k = 0; !ok && k < 4 && c->needles[k]; k++) fprintf(stderr, " '%s'", c->needles[k]);
    if (!ok) fprintf(stderr, ", got %s: %s\n", pdq_code_name(rc), st->msg);
    assert_true(ok);
    if (path) assert_non_null(strstr(st->msg, path));
}

/* Runs one file-writable case on a .circle file at path. */
static void check_file(const hcase *c, const char *path, const char *graph_name) {
    pdq_status st = {0};
    pdq_graph *g = NULL;
    pdq_cgraph *cg = NULL;
    if (c->at == AT_IMPORT) {
        pdq_code rc = pdq_circle_load_graph(path, &g, &st);
        assert_null(g);
        want_msg(c, rc, &st, path);
        return;
    }
    pdq_code rc = pdq_cg_open(path, &cg, &st);
    if (c->at == AT_OPEN) {
        assert_null(cg);
        want_msg(c, rc, &st, path);
        return;
    }
    if (rc != PDQ_OK) fprintf(stderr, "case %s: %s\n", c->name, st.msg);
    assert_int_equal(rc, PDQ_OK);
    if (c->at == AT_RUN) { /* gather_runtime_index: good ids, then -1, then 9 */
        int32_t *ids = pdq_cg_input(cg, 0);
        ids[0] = 3, ids[1] = 0, ids[2] = 1;
        assert_int_equal(pdq_cg_run(cg, &st), PDQ_OK);
        const float *y = pdq_cg_output(cg, 0);
        assert_true(y[0] == 7 && y[1] == 8 && y[2] == 1 && y[3] == 2 && y[4] == 3 && y[5] == 4);
        ids[1] = -1;
        assert_int_equal(pdq_cg_run(cg, &st), PDQ_ERR_ARG);
        assert_non_null(strstr(st.msg, "index -1"));
        ids[1] = 9;
        want_msg(c, pdq_cg_run(cg, &st), &st, NULL);
        assert_non_null(strstr(st.msg, graph_name));
    } else if (!strcmp(c->name, "sslice_stride_max")) { /* y = x[3] */
        float *x = pdq_cg_input(cg, 0);
        for (int i = 0; i < 8; i++) x[i] = (float)(10 + i);
        assert_int_equal(pdq_cg_run(cg, &st), PDQ_OK);
        assert_true(pdq_cg_output(cg, 0)[0] == 13.0f);
        assert_int_equal(pdq_cg_output_tensor(cg, 0)->shape[0], 1);
    } else { /* a valid graph: runs on positive inputs (ids 0) with finite outputs */
        for (int i = 0; i < pdq_cg_n_inputs(cg); i++) {
            const pdq_tensor *t = pdq_cg_input_tensor(cg, i);
            for (size_t k = 0; t->dtype != PDQ_TI32 && k < pdq_tensor_count(t); k++)
                ((float *)pdq_cg_input(cg, i))[k] = 0.25f + (float)(k % 5) * 0.125f;
        }
        if (pdq_cg_run(cg, &st) != PDQ_OK) fprintf(stderr, "case %s: %s\n", c->name, st.msg);
        assert_int_equal(pdq_cg_run(cg, &st), PDQ_OK);
        for (int i = 0; i < pdq_cg_n_outputs(cg); i++)
            for (size_t k = 0; k < pdq_tensor_count(pdq_cg_output_tensor(cg, i)); k++)
                assert_true(isfinite(pdq_cg_output(cg, i)[k]));
    }
    pdq_cg_free(cg);
}

static void test_hostile_cases(void **state) {
    (void)state;
    char *dir = tu_mkdtemp();
    const char *seeds_out = getenv("PDQ_WRITE_SEEDS");
    for (int i = 0; i < N_CASES; i++) {
        const hcase *c = &k_cases[i];
        pdq_circle_model m;
        pdq_status st = {0};
        assert_int_equal(pdq_circle_model_init(&m, &st), PDQ_OK);
        c->build(&m);
        if (c->at == AT_MEMORY) {
            pdq_graph *g = NULL;
            char wp[1200];
            snprintf(wp, sizeof wp, "%s/refused.circle", dir);
            assert_int_not_equal(pdq_circle_write(wp, &m, NULL, &st), PDQ_OK); /* the writer refuses it */
            pdq_code rc = pdq_circle_to_graph(&m, c->name, &g, &st);
            assert_null(g);
            want_msg(c, rc, &st, NULL);
            assert_non_null(strstr(st.msg, "circle import"));
            pdq_circle_model_free(&m);
            continue;
        }
        char path[1200];
        snprintf(path, sizeof path, "%s/%s.circle", dir, c->name);
        if (pdq_circle_write(path, &m, NULL, &st) != PDQ_OK) fprintf(stderr, "case %s: %s\n", c->name, st.msg);
        assert_int_equal(pdq_circle_write(path, &m, NULL, &st), PDQ_OK);
        if (seeds_out) {
            char sp[1200];
            snprintf(sp, sizeof sp, "%s/%s.circle", seeds_out, c->name);
            assert_int_equal(pdq_circle_write(sp, &m, NULL, &st), PDQ_OK);
        }
        pdq_circle_model_free(&m);
        check_file(c, path, c->name);
    }
    tu_rmtree(dir);
    free(dir);
}

/* The committed fuzz seeds are these cases: each must still be refused the same way. */
static void test_committed_seeds(void **state) {
    (void)state;
    int n = 0;
    for (int i = 0; i < N_CASES; i++) {
        const hcase *c = &k_cases[i];
        if (c->at == AT_MEMORY) continue;
        char path[512];
        snprintf(path, sizeof path, "%s/%s.circle", SEED_DIR, c->name);
        FILE *f = fopen(path, "rb");
        if (!f) fprintf(stderr, "missing regression seed %s (PDQ_WRITE_SEEDS=%s regenerates it)\n", path, SEED_DIR);
        assert_non_null(f);
        fclose(f);
        check_file(c, path, c->name);
        n++;
    }
    assert_true(n >= 20);
}

/* The seeds exported by pdq itself reach the kernels: they open and run (inputs all zero). */
static void test_export_seeds_run(void **state) {
    (void)state;
    static const char *const k_exports[] = {
        "export_f32_prefill_layer", "export_f32_decode_layer", "export_f32_append_q2_layer",
        "export_f32_token_embedding", "export_f32_lm_head", "export_f32_decode_layer_hf_batched",
        "export_a16w4_decode_layer", "export_a16w4_prefill_layer", "export_a16w4_token_embedding",
        "export_a16w4_lm_head",
    };
    for (size_t i = 0; i < sizeof k_exports / sizeof k_exports[0]; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s.circle", SEED_DIR, k_exports[i]);
        pdq_status st = {0};
        pdq_cgraph *cg = NULL;
        if (pdq_cg_open(path, &cg, &st) != PDQ_OK) fprintf(stderr, "%s\n", st.msg);
        assert_non_null(cg);
        assert_true(pdq_cg_graph(cg)->n_ops > 0);
        assert_int_equal(pdq_cg_quantized(cg), strstr(path, "a16w4") != NULL);
        assert_int_equal(pdq_cg_run(cg, &st), PDQ_OK);
        pdq_cg_free(cg);
    }
}

/* In-memory builders get the same checks: pdq_graph_op refuses before any kernel runs. */
static void test_in_memory_graphs(void **state) {
    (void)state;
    pdq_status st = {0};
    pdq_graph *g;
    assert_int_equal(pdq_graph_new("mem", &g, &st), PDQ_OK);
    int x = pdq_graph_input(g, "x", PDQ_TF32, 1, (const int[]){4}, &st);
    int b = pdq_graph_const_i32(g, "b", 1, (const int32_t[]){2147483647}, &st);
    int z = pdq_graph_const_i32(g, "z", 1, (const int32_t[]){1}, &st);
    assert_true(x >= 0 && b >= 0 && z >= 0);
    assert_int_equal(pdq_graph_op(g, PDQ_OP_SLICE, (const int[]){x, b, z}, 3, NULL, "y", &st), -1);
    assert_int_equal(st.code, PDQ_ERR_SHAPE);
    assert_non_null(strstr(st.msg, "SLICE of x"));
    assert_non_null(strstr(st.msg, "begin 2147483647"));
    int s0 = pdq_graph_input(g, "s0", PDQ_TF32, 0, NULL, &st);
    assert_int_equal(pdq_graph_op(g, PDQ_OP_SOFTMAX, &s0, 1, NULL, "p", &st), -1);
    assert_non_null(strstr(st.msg, "rank 0"));
    assert_int_equal(pdq_graph_input(g, "big", PDQ_TF32, 3, (const int[]){2048, 2048, 1024}, &st), -1);
    assert_int_equal(st.code, PDQ_ERR_LIMIT);
    assert_non_null(strstr(st.msg, "2147483647"));
    /* a graph edited after building: validation re-checks the records the interpreter plans from */
    int y = pdq_graph_op(g, PDQ_OP_NEG, &x, 1, NULL, "y", &st);
    assert_true(y >= 0);
    assert_int_equal(pdq_graph_mark_output(g, y, &st), PDQ_OK);
    g->tensors[y].shape[0] = -3;
    pdq_interp *ip = NULL;
    assert_int_not_equal(pdq_interp_create(g, &ip, &st), PDQ_OK);
    assert_null(ip);
    assert_non_null(strstr(st.msg, "dim 0 is -3"));
    pdq_graph_free(g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hostile_cases),
        cmocka_unit_test(test_committed_seeds),
        cmocka_unit_test(test_export_seeds_run),
        cmocka_unit_test(test_in_memory_graphs),
    };
    return cmocka_run_group_tests_name("circle_hostile", tests, NULL, NULL);
}
