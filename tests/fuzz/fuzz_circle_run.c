/* libFuzzer target: a Circle file all the way through, parse -> import -> interpreter -> run, as
 * `pdq circle-run` does with a downloaded file. Every stage may refuse the input with an error;
 * none may crash, read out of bounds, overflow or hang. Graphs run when they are small enough to
 * run quickly (arena and buffers <= 64 MiB, ~2^26 multiply-adds): the limits of the library are
 * far larger, the fuzzer's point is to reach the kernels on every shape it can build.
 * Inputs are deterministic: floats in [-2, 2), ids mostly in [0, 4) and, for a quarter of the
 * inputs, also -1 and up to 9, so GATHER's runtime index check is reached too. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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
