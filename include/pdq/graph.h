/* A small static-shape graph IR with Circle-like ops, and its float32 interpreter.
 * Every tensor is a named edge with a fixed shape, so later steps can observe / fake-quantize
 * each edge and serialize the graph to Circle one-to-one. */
#ifndef PDQ_GRAPH_H
#define PDQ_GRAPH_H

#include <stddef.h>
#include <stdint.h>

#include "pdq/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PDQ_G_MAX_DIMS 6

/* Limits every graph is held to (tensor creation, shape inference, graph validation and the
 * interpreter's plan), so that no shape from a hostile file can overflow an int or a size_t:
 * each dim is > 0, one tensor holds at most PDQ_G_MAX_ELEMS elements (every element count, flat
 * index and BLAS dimension fits an int), one op reads at most PDQ_G_MAX_OP_INPUTS tensors and
 * one interpreter arena is at most PDQ_G_MAX_ARENA_BYTES. Exceeding one is PDQ_ERR_LIMIT. */
#define PDQ_G_MAX_ELEMS 2147483647LL            /* 2^31 - 1 */
#define PDQ_G_MAX_OP_INPUTS 1024
#define PDQ_G_MAX_ARENA_BYTES (1ULL << 36)     /* 64 GiB */

typedef enum { PDQ_TF32 = 0, PDQ_TI32, PDQ_TI16, PDQ_TU8, PDQ_TU4, PDQ_TI64 } pdq_tdtype;
typedef enum { PDQ_TK_INPUT = 0, PDQ_TK_OUTPUT, PDQ_TK_CONST, PDQ_TK_INTER } pdq_tkind;

/* Affine quantization parameters (filled by the quantization steps; NULL for float edges).
 * Group-wise weights (block > 0, in memory only: Circle files are per channel) are a 2-D
 * [rows, cols] constant with quantized_dim 0 and n = rows * ceil(cols / block): scale and zero
 * point [r * groups + c / block] for element (r, c). */
typedef struct {
    int n;                 /* 1 = per tensor, else per channel count along quantized_dim */
    float *scale;          /* [n] */
    int64_t *zero_point;   /* [n] */
    int quantized_dim;
    int block;             /* 0, or the columns of one group (block-wise along dim 1) */
} pdq_qparams;

typedef struct {
    char *name;
    pdq_tdtype dtype;
    pdq_tkind kind;
    int ndim;
    int shape[PDQ_G_MAX_DIMS];
    void *data;            /* constants only: the values in dtype (uint4: packed, see pdq_u4_at) */
    int owned;             /* data is freed with the graph (else borrowed, e.g. model weights) */
    int file_backed;       /* borrowed from a read-only file mapping the graph holds: a consumer that
                            * keeps its own copy may drop the pages (pdq_file_drop_pages); they read
                            * back from the file if touched again */
    pdq_qparams *q;        /* owned by the graph when set */
    int role;              /* a model constant's role + 1 (pdq_role_kind, pdq/family.h): what the
                            * exporter quantizes as a norm gamma, without matching names; 0: none */
} pdq_tensor;

/* Circle-like operator set. The comment gives inputs; all options mirror the Circle tables. */
typedef enum {
    PDQ_OP_FULLY_CONNECTED = 0, /* x[..., in], w[out, in] (, bias[out]) -> [..., out]; keep_num_dims */
    PDQ_OP_BATCH_MATMUL,        /* a[..., M, K], b[..., K, N] (adj_x / adj_y), batch dims broadcast */
    PDQ_OP_ADD, PDQ_OP_SUB, PDQ_OP_MUL, PDQ_OP_DIV, /* a, b (TFLite broadcasting) */
    PDQ_OP_MEAN,                /* x, axes(int32 const) ; keep_dims */
    PDQ_OP_RSQRT, PDQ_OP_NEG, PDQ_OP_LOGISTIC,
    PDQ_OP_RMS_NORM,            /* x, gamma[last] ; epsilon (Circle-only op, as TICO emits) */
    PDQ_OP_SOFTMAX,             /* x ; beta, over the last axis */
    PDQ_OP_RESHAPE,             /* x, new_shape(int32 const) */
    PDQ_OP_TRANSPOSE,           /* x, perm(int32 const) */
    PDQ_OP_CONCATENATION,       /* t0, t1, ... ; axis */
    PDQ_OP_STRIDED_SLICE,       /* x, begin, end, strides (int32 consts, positive strides, masks 0) */
    PDQ_OP_SLICE,               /* x, begin, size (int32 consts) */
    PDQ_OP_GATHER,              /* params, indices(int32) ; axis */
    PDQ_OP_TANH,                /* x */
    PDQ_OP_GELU,                /* x ; approximate (1: the tanh form, Gemma's gelu_pytorch_tanh) */
    PDQ_OP_COUNT
} pdq_op_type;

typedef struct {
    pdq_op_type type;
    int n_in, n_out;
    int *in, *out;             /* tensor ids (owned by the graph) */
    union {
        struct { int keep_num_dims; } fc;
        struct { int adj_x, adj_y; } bmm;
        struct { int keep_dims; } mean;
        struct { float epsilon; } rms;
        struct { float beta; } softmax;
        struct { int axis; } concat;
        struct { int axis; } gather;
        struct { int approximate; } gelu;
    } opt;
} pdq_op;

typedef struct pdq_graph {
    char *name;
    pdq_tensor *tensors;
    int n_tensors, cap_tensors;
    pdq_op *ops;
    int n_ops, cap_ops;
    int *inputs, n_inputs, cap_inputs;     /* ordered graph inputs (tensor ids) */
    int *outputs, n_outputs, cap_outputs;  /* ordered graph outputs */
    int *name_index, cap_index;            /* open-addressing table of tensor ids by name (-1: empty) */
    struct { void *obj; void (*release)(void *); } *holds; /* pdq_graph_hold */
    int n_holds, cap_holds;
} pdq_graph;

const char *pdq_op_name(pdq_op_type t);          /* "FULLY_CONNECTED", ... */
const char *pdq_tdtype_name(pdq_tdtype t);
size_t pdq_tdtype_size(pdq_tdtype t);             /* bytes per element (uint4: 1, as one code per byte) */
size_t pdq_tensor_count(const pdq_tensor *t);     /* elements */
size_t pdq_tensor_bytes(const pdq_tensor *t);     /* bytes of a constant's data (uint4: packed) */

/* uint4 storage (implemented in src/kernels/codes4.c), the one layout every part of pdq uses (graph constants, Circle's UINT4 buffers,
 * quantized checkpoints per row): two codes a byte, low nibble first, element i in byte i / 2;
 * an odd count leaves the last high nibble 0. A uint4 constant packs its flattened elements. */
void pdq_pack4(const uint8_t *codes, size_t n, uint8_t *packed);
void pdq_unpack4(const uint8_t *packed, size_t n, uint8_t *codes);
/* Codes [i0, i0 + n) of packed storage (i0 may be odd: a row of an odd-width matrix). */
void pdq_unpack4_at(const uint8_t *packed, size_t i0, size_t n, uint8_t *codes);
/* Writes n codes as elements [i0, i0 + n) of packed storage: an element of even index sets its
 * whole byte (high nibble 0), one of odd index its high nibble. Rows written in order, one after
 * another, give pdq_pack4's bytes for the whole matrix (an odd-width row starts mid-byte). */
void pdq_pack4_at(const uint8_t *codes, size_t n, uint8_t *packed, size_t i0);

static inline unsigned pdq_u4_at(const void *packed, size_t i) {
    return (unsigned)(((const uint8_t *)packed)[i / 2] >> (4 * (i & 1))) & 15u;
}

pdq_code pdq_graph_new(const char *name, pdq_graph **out, pdq_status *st);
void pdq_graph_free(pdq_graph *g);

/* Tensor creation; each returns the tensor id (>= 0) or -1 with st filled (duplicate name,
 * bad shape, no memory). Inputs/outputs are appended to the ordered graph lists. */
int pdq_graph_input(pdq_graph *g, const char *name, pdq_tdtype dt, int ndim, const int *shape,
                    pdq_status *st);
/* Constant: data copied when copy != 0 (owned), else borrowed (must outlive the graph). */
int pdq_graph_const(pdq_graph *g, const char *name, pdq_tdtype dt, int ndim, const int *shape,
                    const void *data, int copy, pdq_status *st);
/* Keeps obj alive as long as the graph: release(obj) runs in pdq_graph_free (a file mapping that
 * borrowed constants point into). On error release(obj) runs at once. */
pdq_code pdq_graph_hold(pdq_graph *g, void *obj, void (*release)(void *), pdq_status *st);
/* Constant taking ownership of a malloc'd buffer. */
int pdq_graph_const_owned(pdq_graph *g, const char *name, pdq_tdtype dt, int ndim,
                          const int *shape, void *data, pdq_status *st);
/* Small int32 vector constant (shapes, perms, begins...). */
int pdq_graph_const_i32(pdq_graph *g, const char *name, int n, const int32_t *v, pdq_status *st);
/* Marks an op output (an intermediate) as a graph output, appended to the ordered list. */
pdq_code pdq_graph_mark_output(pdq_graph *g, int tid, pdq_status *st);

/* Adds an op, infers and validates the output shape, creates the output tensor `out_name`
 * (intermediate) and returns its id, or -1 with st filled. `opt` may be NULL (each op's
 * defaults: keep_num_dims 1, beta 1, epsilon 1e-6; axes 0, keep_dims 0, no adjoints). */
int pdq_graph_op(pdq_graph *g, pdq_op_type type, const int *in, int n_in, const pdq_op *opt,
                 const char *out_name, pdq_status *st);

int pdq_graph_find(const pdq_graph *g, const char *name); /* tensor id or -1 */
/* Re-checks every op's shapes and the input/output lists (after edits or deserialization). */
pdq_code pdq_graph_validate(const pdq_graph *g, pdq_status *st);
/* Copies src's constants and ops into dst. src input i is replaced by dst tensor map[i], or
 * becomes a new dst input of the same name when map is NULL or map[i] < 0. outs (may be NULL)
 * receives the dst ids of src's outputs (intermediates of dst until marked). Constants that src
 * owns are copied, borrowed ones stay borrowed. qparams are copied. */
pdq_code pdq_graph_append(pdq_graph *dst, const pdq_graph *src, const int *map, int *outs, pdq_status *st);
/* Prints one line per op (debugging, `pdq` tools). */
void pdq_graph_dump(const pdq_graph *g, void *file);

/* Shape inference of one op against the graph's tensors; fills out shape. */
pdq_code pdq_op_infer(const pdq_graph *g, const pdq_op *op, int *ndim, int *shape, pdq_status *st);

/* ---------------- interpreter ---------------- */

typedef struct pdq_interp pdq_interp;

/* Called after each op with each tensor it produced; data may be modified in place (observers,
 * fake quantization). Return non-OK to abort the run. Float graph inputs are passed first, before
 * the first op, with op_index -1 (bound caller memory is then modified in place). */
typedef pdq_code (*pdq_edge_hook)(void *ctx, const pdq_graph *g, int op_index, int tensor_id,
                                  float *data, pdq_status *st);

/* Plans an arena for every non-constant tensor (intermediates share memory by liveness; graph
 * inputs and outputs get their own space unless bound). The graph must outlive the interpreter. */
pdq_code pdq_interp_create(const pdq_graph *g, pdq_interp **out, pdq_status *st);
void pdq_interp_free(pdq_interp *ip);
/* Bytes of arena needed; the arena is allocated lazily unless one is shared with set_arena. */
size_t pdq_interp_arena_bytes(const pdq_interp *ip);
/* Uses caller memory (>= arena_bytes, 64-byte aligned recommended) instead of its own; lets
 * several interpreters that run one after another share one arena. NULL reverts to own. */
void pdq_interp_set_arena(pdq_interp *ip, void *mem);
/* Binds caller memory to a graph input or output tensor (no copy); NULL unbinds. */
pdq_code pdq_interp_bind(pdq_interp *ip, int tid, void *mem, pdq_status *st);
/* Pointer to a tensor's data (bound memory, arena, or constant). Arena contents of
 * intermediates are only meaningful inside the hook. */
void *pdq_interp_data(pdq_interp *ip, int tid);
void pdq_interp_set_hook(pdq_interp *ip, pdq_edge_hook hook, void *ctx);
pdq_code pdq_interp_run(pdq_interp *ip, pdq_status *st);

#ifdef __cplusplus
}
#endif
#endif
