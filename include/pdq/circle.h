/* A plain description of a one-subgraph Circle model, its writer and its verifying reader.
 * Numbers (tensor types, builtin codes, option tags) are the schema's, see src/circle/circle_defs.h.
 * Conventions (../shared/circle/NOTES.md): Model.version 0, description "circle", one subgraph
 * "subgraph", buffers[0] empty, every constant in its own 16-byte aligned buffer, UINT4 packed two
 * per byte (low nibble = even flat index), optional extended-buffer layout for files >= 2 GiB. */
#ifndef PDQ_CIRCLE_H
#define PDQ_CIRCLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pdq/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PDQ_CIRCLE_MAX_RANK 16
#define PDQ_CIRCLE_MAX_IO 1024 /* operator inputs/outputs */

/* QuantizationParameters; all counts 0 = the tensor has no quantization table.
 * block_size > 0: its details are a BlockwiseQuantization (the scale / zero_point arrays are then
 * absent): a 2-D [rows, cols] weight whose element (r, c) has the scale and zero point at
 * [r, c / block_size] of the constant tensors block_scales (FLOAT32 [rows, ceil(cols /
 * block_size)]) and block_zero_points (UINT8, same shape; -1: zero points 0). */
typedef struct {
    int32_t n_scale, n_zero_point, n_min, n_max;
    float *scale;
    int64_t *zero_point;
    float *min, *max;
    int32_t quantized_dimension;
    int32_t block_size, block_scales, block_zero_points;
} pdq_circle_quant;

typedef struct {
    char *name;                    /* NULL = absent */
    int8_t type;                   /* CIRCLE_TT_* */
    int32_t rank;
    int32_t shape[PDQ_CIRCLE_MAX_RANK];
    bool has_shape_signature;      /* written only for dynamic dims (-1) */
    int32_t shape_signature[PDQ_CIRCLE_MAX_RANK];
    uint32_t buffer;               /* 0 = no data */
    pdq_circle_quant quant;
} pdq_circle_tensor;

typedef struct {
    const uint8_t *data;           /* len bytes; 16-byte aligned when read back */
    uint64_t len;
    void *owned;                   /* freed with the model (NULL: borrowed or inside the file image) */
} pdq_circle_buffer;

typedef struct {
    int32_t builtin_code;          /* CIRCLE_OP_*, may be negative */
    int32_t version;
} pdq_circle_opcode;

/* Builtin options, one member per option table pdq emits; which one is live is
 * pdq_circle_op.options_type. Fields are named and defaulted as in the schema. */
typedef union {
    struct { int8_t fused_activation_function, weights_format; bool keep_num_dims, asymmetric_quantize_inputs;
             int8_t quantized_bias_type; } fc;
    struct { bool adjoint_lhs, adjoint_rhs, asymmetric_quantize_inputs; } bmm;
    struct { float epsilon; } rms_norm;
    struct { int32_t axis, batch_dims; } gather;
    struct { float beta; } softmax;
    struct { int32_t axis; int8_t fused_activation_function; } concat;
    struct { int32_t rank; int32_t new_shape[PDQ_CIRCLE_MAX_RANK]; } reshape;
    struct { int32_t begin_mask, end_mask, ellipsis_mask, new_axis_mask, shrink_axis_mask; bool offset; } strided_slice;
    struct { int8_t fused_activation_function; bool pot_scale_int16; /* schema default true */ } add, sub;
    struct { int8_t fused_activation_function; } mul, div;
    struct { bool keep_dims; } reducer;  /* MEAN */
    struct { int32_t num_splits; } split_v;
    struct { bool approximate; } gelu;
    /* TransposeOptions, NegOptions, QuantizeOptions, DequantizeOptions: no fields */
} pdq_circle_options;

typedef struct {
    uint32_t opcode_index;
    int32_t n_inputs, n_outputs;
    int32_t *inputs;               /* -1 = optional input left out (e.g. FC bias) */
    int32_t *outputs;
    uint8_t options_type;          /* CIRCLE_OPT_* (BuiltinOptions tag), 0 = none */
    pdq_circle_options opt;
} pdq_circle_op;

typedef struct pdq_circle_model {
    uint32_t version;              /* 0 */
    char *description;             /* NULL: written as "circle" */
    char *subgraph_name;           /* NULL: written as "subgraph" */
    pdq_circle_opcode *opcodes;
    int32_t n_opcodes, cap_opcodes;
    pdq_circle_buffer *buffers;    /* buffers[0] is the empty sentinel */
    int32_t n_buffers, cap_buffers;
    pdq_circle_tensor *tensors;
    int32_t n_tensors, cap_tensors;
    pdq_circle_op *ops;
    int32_t n_ops, cap_ops;
    int32_t *inputs, n_inputs, cap_inputs;
    int32_t *outputs, n_outputs, cap_outputs;
    void *image;                   /* the file bytes the reader's buffers point into */
    struct pdq_file_map *map;      /* pdq_circle_read: the mapping image lies in (else image is malloc'd) */
} pdq_circle_model;

/* Zeroes m and adds the empty sentinel buffer 0. */
pdq_code pdq_circle_model_init(pdq_circle_model *m, pdq_status *st);
void pdq_circle_model_free(pdq_circle_model *m);

/* Building helpers: each returns the new index (>= 0) or -1 with st filled. */
/* copy != 0: data is copied (owned by m); else borrowed and must outlive the writer call. */
int32_t pdq_circle_add_buffer(pdq_circle_model *m, const void *data, uint64_t len, int copy, pdq_status *st);
int32_t pdq_circle_add_tensor(pdq_circle_model *m, const char *name, int8_t type, int32_t rank,
                              const int32_t *shape, uint32_t buffer, pdq_status *st);
/* Copies n scale/zero_point values (n == 1: per tensor). */
pdq_code pdq_circle_set_quant(pdq_circle_model *m, int32_t tensor, int32_t n, const float *scale,
                              const int64_t *zero_point, int32_t quantized_dimension, pdq_status *st);
/* Blockwise quantization of a 2-D weight: scales / zero_points are the ids of its constant tensors
 * (pdq_circle_quant). */
pdq_code pdq_circle_set_blockwise(pdq_circle_model *m, int32_t tensor, int32_t scales, int32_t zero_points,
                                  int32_t block_size, pdq_status *st);
/* Index of (code, version) in operator_codes, appended on first use (TICO's first-use order). */
int32_t pdq_circle_opcode_index(pdq_circle_model *m, int32_t builtin_code, int32_t version, pdq_status *st);
/* Appends an operator (opcode version 1); opt may be NULL when options_type is 0. */
int32_t pdq_circle_add_op(pdq_circle_model *m, int32_t builtin_code, int32_t n_in, const int32_t *in,
                          int32_t n_out, const int32_t *out, uint8_t options_type,
                          const pdq_circle_options *opt, pdq_status *st);
pdq_code pdq_circle_add_input(pdq_circle_model *m, int32_t tensor, pdq_status *st);
pdq_code pdq_circle_add_output(pdq_circle_model *m, int32_t tensor, pdq_status *st);

/* Schema defaults for an options tag (e.g. AddOptions.pot_scale_int16 = true). */
pdq_circle_options pdq_circle_options_default(uint8_t options_type);
/* Bytes of n elements of a tensor type (UINT4/INT4 packed: ceil(n/2)); -1 if not fixed-size. */
int64_t pdq_circle_type_bytes(int8_t type, int64_t n);
const char *pdq_circle_type_name(int8_t type);
const char *pdq_circle_op_name(int32_t builtin_code); /* NULL for codes circle_defs.h does not name */

/* UINT4 packing as TICO: byte i = v[2i] | v[2i+1] << 4; odd n leaves the last high nibble 0
 * (pdq_pack4's layout; pack checks that every value fits). */
pdq_code pdq_circle_pack_uint4(const uint8_t *values, uint64_t n, uint8_t *packed, pdq_status *st);
void pdq_circle_unpack_uint4(const uint8_t *packed, uint64_t n, uint8_t *values);

typedef struct {
    int extended;           /* 1: always use the extended-buffer layout (Buffer.offset/size) */
    uint64_t auto_limit;    /* switch to it when the inline file would reach this size (<= 2 GiB; 0 = 2 GiB) */
} pdq_circle_write_opts;

/* Validates m and writes it atomically (temp file + rename). opts may be NULL. */
pdq_code pdq_circle_write(const char *path, const pdq_circle_model *m, const pdq_circle_write_opts *opts,
                          pdq_status *st);
/* Reads and fully verifies a file; m is filled on success (free with pdq_circle_model_free). */
pdq_code pdq_circle_read(const char *path, pdq_circle_model *m, pdq_status *st);
/* Same from memory (the bytes are copied). */
pdq_code pdq_circle_parse(const void *data, size_t len, pdq_circle_model *m, pdq_status *st);

#ifdef __cplusplus
}
#endif
#endif
