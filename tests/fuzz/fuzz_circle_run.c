/* libFuzzer target: a Circle file all the way through, parse -> import -> interpreter -> run, as
 * `pdq circle-run` does with a downloaded file. Every stage may refuse the input with an error;
 * none may crash, read out of bounds, overflow or hang. Graphs run when they are small enough to
 * run quickly (arena and buffers <= 64 MiB, ~2^26 multiply-adds): the limits of the library are
 * far larger, the fuzzer's point is to reach the kernels on every shape it can build.
 * Inputs are deterministic: floats in [-2, 2), ids mostly in [0, 4) and, for a quarter of the
 * inputs, also -1 and up to 9, so GATHER's runtime index check is reached too.
 * Byte-level mutations mostly break the FlatBuffer, so a custom mutator also edits the parsed
 * model (dims, dtypes, constant int32 values, operator inputs and options, qparams) and writes it
 * back with pdq's writer: the importer and the kernels see well-formed files with hostile meaning. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "circle/circle_defs.h"
#include "circle/circle_internal.h"
#include "pdq/circle.h"
#include "pdq/circle_export.h"

#define MAX_BYTES ((size_t)64 << 20)
#define MAX_WORK ((uint64_t)1 << 26)

/* Upper bound of what pdq_cg_from_graph allocates for tensors (arena, I/O buffers, float copies). */
static size_t tensor_bytes(const pdq_graph *g) {
    size_t sum = 0;
    for (int i = 0; i < g->n_tensors; i++) {
        size_t b = pdq_tensor_count(&g->tensors[i]) * 8; /* counts <= 2^31 - 1: no overflow */
        if (b > MAX_BYTES || (sum += b) > MAX_BYTES) return SIZE_MAX;
    }
    return sum;
}

/* Multiply-adds of one run, roughly: matmuls by their inner dim, everything else by its sizes. */
static uint64_t work(const pdq_graph *g) {
    uint64_t w = 0;
    for (int o = 0; o < g->n_ops; o++) {
        const pdq_op *op = &g->ops[o];
        const pdq_tensor *y = &g->tensors[op->out[0]], *a = &g->tensors[op->in[0]];
        uint64_t n = pdq_tensor_count(y), k = 1;
        if (op->type == PDQ_OP_FULLY_CONNECTED) k = (uint64_t)a->shape[a->ndim - 1];
        if (op->type == PDQ_OP_BATCH_MATMUL) k = (uint64_t)a->shape[a->ndim - (op->opt.bmm.adj_x ? 2 : 1)];
        for (int i = 0; i < op->n_in; i++) w += pdq_tensor_count(&g->tensors[op->in[i]]);
        w += n * k; /* n, k < 2^31 */
        if (w > MAX_WORK) return w;
    }
    return w;
}

static void fill_inputs(pdq_cgraph *cg, unsigned salt) {
    for (int i = 0; i < pdq_cg_n_inputs(cg); i++) {
        const pdq_tensor *t = pdq_cg_input_tensor(cg, i);
        size_t n = pdq_tensor_count(t);
        void *p = pdq_cg_input(cg, i);
        int ids = (t->dtype == PDQ_TI32 || t->dtype == PDQ_TI64) && !t->q;
        int wild = (salt + (unsigned)i) % 4 == 0;
        for (size_t k = 0; k < n; k++) {
            unsigned h = (unsigned)(k * 2654435761u) ^ (salt * 40503u + (unsigned)i);
            if (ids) ((int32_t *)p)[k] = wild ? (int32_t)(h % 11) - 1 : (int32_t)(h % 4);
            else ((float *)p)[k] = (float)((int)(h % 256) - 128) / 64.0f;
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    pdq_circle_model m;
    pdq_status st = {0};
    if (pdq_circle_parse(data, size, &m, &st) != PDQ_OK) return 0;
    pdq_graph *g = NULL;
    pdq_code rc = pdq_circle_to_graph(&m, "fuzz", &g, &st);
    pdq_circle_model_free(&m);
    if (rc != PDQ_OK) return 0;
    if (tensor_bytes(g) > MAX_BYTES || work(g) > MAX_WORK) {
        pdq_graph_free(g);
        return 0;
    }
    pdq_cgraph *cg = NULL;
    if (pdq_cg_from_graph(g, &cg, &st) != PDQ_OK) return 0; /* g is freed by the call */
    unsigned salt = size ? data[size / 2] : 0;
    fill_inputs(cg, salt);
    if (pdq_cg_run(cg, &st) == PDQ_OK) {
        /* every output is readable in full (ASan checks the bounds) */
        volatile float sink = 0;
        for (int i = 0; i < pdq_cg_n_outputs(cg); i++) {
            const float *y = pdq_cg_output(cg, i);
            size_t n = pdq_tensor_count(pdq_cg_output_tensor(cg, i));
            for (size_t k = 0; k < n; k++) sink += y[k];
        }
        (void)sink;
    }
    pdq_cg_free(cg);
    return 0;
}

/* ---------------------------------------------------------------- structure-aware mutator */

size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);

static uint64_t next(uint64_t *r) {
    *r ^= *r << 13;
    *r ^= *r >> 7;
    *r ^= *r << 17;
    return *r;
}

static int32_t pick_int(uint64_t *r, int32_t old) {
    static const int32_t k[] = {0, 1, 2, 3, 4, -1, -2, 65536, 46341, 2147483647, -2147483647 - 1};
    switch (next(r) % 4) {
    case 0: return (int32_t)((uint32_t)old + 1u); /* wraps: INT32_MAX + 1 is a value worth trying */
    case 1: return (int32_t)((uint32_t)old - 1u);
    case 2: return (int32_t)((uint32_t)old * 2u);
    default: return k[next(r) % (sizeof k / sizeof k[0])];
    }
}

/* Makes a buffer writable (copies a borrowed one) so its int32 values can be edited. */
static uint8_t *own_buffer(pdq_circle_buffer *b) {
    if (!b->len) return NULL;
    if (!b->owned) {
        void *p = malloc(b->len);
        if (!p) return NULL;
        memcpy(p, b->data, b->len);
        b->owned = p;
        b->data = p;
    }
    return b->owned;
}

static void mutate_model(pdq_circle_model *m, uint64_t *r) {
    static const int8_t types[] = {CIRCLE_TT_FLOAT32, CIRCLE_TT_INT32, CIRCLE_TT_INT16, CIRCLE_TT_UINT8,
                                   CIRCLE_TT_UINT4, CIRCLE_TT_INT64};
    int n = 1 + (int)(next(r) % 3);
    for (int k = 0; k < n; k++) {
        unsigned what = (unsigned)(next(r) % 8);
        if (m->n_tensors && what < 4) {
            pdq_circle_tensor *t = &m->tensors[next(r) % (uint64_t)m->n_tensors];
            if (t->buffer) { /* a constant: edit an int32 value (its byte size must stay) */
                pdq_circle_buffer *b = &m->buffers[t->buffer];
                uint8_t *p = t->type == CIRCLE_TT_INT32 && b->len >= 4 ? own_buffer(b) : NULL;
                if (p) {
                    size_t i = (size_t)(next(r) % (b->len / 4));
                    int32_t v;
                    memcpy(&v, p + 4 * i, 4);
                    v = pick_int(r, v);
                    memcpy(p + 4 * i, &v, 4);
                }
            } else if (what == 0 && t->rank > 0) {
                t->shape[next(r) % (uint64_t)t->rank] = pick_int(r, t->shape[0]);
            } else if (what == 1) {
                int32_t nr = (int32_t)(next(r) % 7);
                for (int32_t d = t->rank; d < nr; d++) t->shape[d] = 1 + (int32_t)(next(r) % 4);
                t->rank = nr;
                t->has_shape_signature = false;
            } else if (what == 2) {
                t->type = types[next(r) % (sizeof types / sizeof types[0])];
            } else if (t->quant.n_scale > 0) {
                static const float sc[] = {0.0f, -1.0f, 1e-30f, 1e30f, 0.5f, 1.0f / 32768};
                t->quant.scale[0] = sc[next(r) % (sizeof sc / sizeof sc[0])];
                if (t->quant.n_zero_point) t->quant.zero_point[0] = pick_int(r, (int32_t)t->quant.zero_point[0]);
            }
        } else if (m->n_ops && what < 7) {
            pdq_circle_op *o = &m->ops[next(r) % (uint64_t)m->n_ops];
            if (what == 4 && o->n_inputs) {
                o->inputs[next(r) % (uint64_t)o->n_inputs] = (int32_t)(next(r) % (uint64_t)m->n_tensors);
            } else if (what == 5) { /* only the live member: bools must hold 0 or 1 */
                pdq_circle_options *p = &o->opt;
                int32_t v = pick_int(r, 0);
                bool bit = next(r) & 1;
                switch (o->options_type) {
                case CIRCLE_OPT_ConcatenationOptions: p->concat.axis = v; break;
                case CIRCLE_OPT_GatherOptions: p->gather.axis = v; break;
                case CIRCLE_OPT_FullyConnectedOptions: p->fc.keep_num_dims = bit; break;
                case CIRCLE_OPT_BatchMatMulOptions: if (v & 1) p->bmm.adjoint_lhs = bit; else p->bmm.adjoint_rhs = bit; break;
                case CIRCLE_OPT_ReducerOptions: p->reducer.keep_dims = bit; break;
                case CIRCLE_OPT_RmsNormOptions: p->rms_norm.epsilon = (float)v; break;
                case CIRCLE_OPT_SoftmaxOptions: p->softmax.beta = (float)v / 4; break;
                case CIRCLE_OPT_StridedSliceOptions: p->strided_slice.shrink_axis_mask = bit; break;
                default: o->options_type = CIRCLE_OPT_NONE; *p = pdq_circle_options_default(0); break;
                }
            } else if (m->n_opcodes) {
                o->opcode_index = (uint32_t)(next(r) % (uint64_t)m->n_opcodes);
            }
        } else if (m->n_outputs && m->n_tensors) {
            m->outputs[next(r) % (uint64_t)m->n_outputs] = (int32_t)(next(r) % (uint64_t)m->n_tensors);
        }
    }
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed) {
    uint64_t r = (uint64_t)seed * 0x9E3779B97F4A7C15ull + 1;
    pdq_circle_model m;
    pdq_status st = {0};
    if (next(&r) % 4 == 0 || pdq_circle_parse(data, size, &m, &st) != PDQ_OK)
        return LLVMFuzzerMutate(data, size, max_size);
    mutate_model(&m, &r);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    pdq_code rc = f ? circle_write_stream(f, &m, NULL, &st) : PDQ_ERR_IO;
    if (f) fclose(f);
    pdq_circle_model_free(&m);
    if (rc == PDQ_OK && len <= max_size) {
        memcpy(data, buf, len);
        size = len;
    } else {
        size = LLVMFuzzerMutate(data, size, max_size);
    }
    free(buf);
    return size;
}
