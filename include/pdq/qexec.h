/* Integer execution of quantized graphs (a16 activations, uint4/uint8 weights).
 *
 * The graph is the quantized IR the Circle exporter writes and the importer reads back: int16
 * (or uint8) activation edges with per-tensor qparams, UINT4/UINT8 weights with per-row scale and
 * zero point (uint4 packed two a byte in the IR), or in memory one per row and group of columns
 * (pdq_qparams.block), int16 norm weights with per-channel scales. The same
 * executor runs a lowered in-memory graph (src/exec/lower.c) and an imported .q.circle file, so
 * both give the same codes by construction.
 *
 * Rules (each output is requantized with include/pdq/requant.h):
 *   FULLY_CONNECTED, BATCH_MATMUL: exact integer sums  acc = sum (x - zx)(w - zw)  (int32 partial
 *     sums over blocks short enough never to overflow, int64 totals), y = acc * sx * sw[row]
 *     (+ bias) in double, then requantized; with groups, acc per group g and y = the sum over g,
 *     in group order from 0.0, of acc[g] * (sx * sw[row][g]) (+ bias) in double;
 *   every other op (ADD, SUB, MUL, DIV, NEG, RSQRT, LOGISTIC, RMS_NORM, SOFTMAX): inputs
 *     dequantized to double, the op computed in double, requantized. Unary ops of an int16/uint8
 *     input are a table of that rule over every code; SOFTMAX's terms are exp(-(max code - code)
 *     * scale * beta), summed in index order, each divided by the sum; RMS_NORM sums squares of
 *     codes in int64;
 *   layout ops (RESHAPE, TRANSPOSE, CONCATENATION, SLICE, STRIDED_SLICE, GATHER) move codes;
 *     GATHER from a quantized constant (the embedding) requantizes each row's values.
 * Every loop is split into tasks whose results do not depend on which thread runs them, and the
 * AVX2 / AVX-512 VNNI kernels compute the same integer sums as the scalar ones: results are bit-identical across
 * thread counts, SIMD and scalar. */
#ifndef PDQ_QEXEC_H
#define PDQ_QEXEC_H

#include "pdq/graph.h"
#include "pdq/status.h"
#include "pdq/threadpool.h"

/* How a static / quantized graph is run:
 *   float: no activation quantization (weights as the checkpoint dequantizes them);
 *   fake:  float kernels, every edge quantized -> dequantized (the oracle, the historic behaviour);
 *   int:   this integer executor. */
typedef enum { PDQ_EXEC_FAKE = 0, PDQ_EXEC_FLOAT, PDQ_EXEC_INT } pdq_exec_mode;

const char *pdq_exec_mode_name(pdq_exec_mode m);   /* "fake", "float", "int" */
int pdq_exec_mode_parse(const char *s);             /* "float", "fake"/"fake-quant", "int"/"integer"; -1 */

typedef struct {
    pdq_exec_mode mode;
    pdq_pool *pool;       /* borrowed; NULL: run on the caller */
    int force_scalar;     /* 1: never the SIMD kernels (tests compare every level) */
    int no_avx512;        /* 1: AVX2 at most, even where AVX-512 VNNI is there */
} pdq_exec_opts;

void pdq_exec_opts_default(pdq_exec_opts *o);      /* fake, no pool, SIMD when the CPU has it */

typedef struct pdq_qexec pdq_qexec;

/* Prepares g (borrowed: must outlive the executor) for integer execution. Unsupported ops or
 * operand types are errors naming the op and tensor. */
pdq_code pdq_qexec_create(const pdq_graph *g, const pdq_exec_opts *o, pdq_qexec **out, pdq_status *st);
void pdq_qexec_free(pdq_qexec *x);
/* Binds caller memory to a graph input / output: float values for a quantized tensor (inputs are
 * quantized on entry with the tensor's grid, outputs dequantized on exit), raw data otherwise
 * (int32 ids, float edges). NULL unbinds: the tensor then lives in the executor's own storage. */
pdq_code pdq_qexec_bind(pdq_qexec *x, int tid, void *mem, pdq_status *st);
/* The executor's own storage of an input / output in the tensor's dtype (int16 / uint8 codes of
 * a quantized tensor): an unbound input is read from here, an output always lands here too. */
void *pdq_qexec_codes(pdq_qexec *x, int tid);
pdq_code pdq_qexec_run(pdq_qexec *x, pdq_status *st);
/* SIMD level in use: 0 scalar, 1 AVX2 (or another SIMD level), 2 AVX-512 VNNI (FULLY_CONNECTED's
 * tiles; src/kernels/cpu_features.h has the levels). */
int pdq_qexec_simd(const pdq_qexec *x);

#endif
