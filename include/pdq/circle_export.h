/* Circle export of the static graphs (IR -> .circle), import (.circle -> IR), an interpreter of
 * Circle graphs (float and quantized) and the external-KV runtime that drives exported files.
 *
 * Mapping IR <-> Circle is one-to-one: Circle tensor i is IR tensor i (names = IR edge names),
 * one Circle operator per IR op, ops/options as TICO writes them (../shared/circle/NOTES.md §3, §6):
 * FULLY_CONNECTED keep_num_dims with bias -1, RMS_NORM (-6), BATCH_MATMUL, SOFTMAX, LOGISTIC, ...
 * IR dtypes map to Circle types (uint4 constants hold one code per byte in the IR, packed two per
 * byte in the file); pdq_qparams map to QuantizationParameters.
 *
 * Quantized execution: every op reads dequantized inputs (float) and its output is requantized to
 * the output tensor's own grid: q = clamp(round_half_even(x / scale) + zp), x = (q - zp) * scale,
 * in double with the file's float32 scale, the same arithmetic as the PTQ fake-quant hook. */
#ifndef PDQ_CIRCLE_EXPORT_H
#define PDQ_CIRCLE_EXPORT_H

#include <stddef.h>
#include <stdint.h>

#include "pdq/circle.h"
#include "pdq/graph.h"
#include "pdq/model.h"
#include "pdq/ptq.h"
#include "pdq/qexec.h"
#include "pdq/runtime.h"
#include "pdq/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------- IR <-> Circle ---------------- */

/* Fills m (initialised by the call) from g. Constant data is borrowed (g must outlive m) except
 * uint4, which is packed into owned buffers. */
pdq_code pdq_circle_from_graph(const pdq_graph *g, pdq_circle_model *m, pdq_status *st);
/* from_graph + pdq_circle_write (atomic). */
pdq_code pdq_circle_write_graph(const char *path, const pdq_graph *g, pdq_status *st);
/* Builds an IR graph from a Circle model (constants copied; uint4 unpacked). Unknown operators,
 * options, types, missing/duplicate names and shapes that disagree with the op's inferred shape
 * are errors naming the operator/tensor. */
pdq_code pdq_circle_to_graph(const pdq_circle_model *m, const char *name, pdq_graph **out, pdq_status *st);
pdq_code pdq_circle_load_graph(const char *path, pdq_graph **out, pdq_status *st);
/* 1 if a and b are the same graph: tensors matched by name (dtype, kind, shape, constant bytes,
 * qparams), the same op sequence (type, options, input/output names), the same I/O lists.
 * Otherwise 0 and why[] says the first difference. */
int pdq_graph_same(const pdq_graph *a, const pdq_graph *b, char *why, size_t n);

/* ---------------- composition (whole-model graphs; pdq_graph_append is in graph.h) ---------------- */

/* Whole model, B = 1:
 *   prefill: in  input_ids (1,S) int32, attention_mask (1,S,S), cos (1,S,hd), sin (1,S,hd)
 *            out logits (1,S,V), then per layer k_l, v_l (1,n_kv,S,hd)            [S = max_seq]
 *   decode:  in  input_ids (1,1), attention_mask (1,1,max_seq), cos (1,1,hd), sin (1,1,hd),
 *                then per layer past_k_l, past_v_l (1,n_kv,max_seq-1,hd)
 *            out logits (1,1,V), then per layer delta k_l, v_l (1,n_kv,1,hd)
 * Names are the layer graphs' (the shared mask/cos/sin inputs are "attention_mask", "cos", "sin"). */
pdq_code pdq_build_whole(const pdq_model *m, pdq_graph_mode mode, int max_seq, const pdq_static_opts *o,
                         pdq_graph **out, pdq_status *st);
/* The same with an append bucket of Q tokens (mode append; Q = 1 is model_decode): inputs
 * input_ids (1,Q), attention_mask (1,Q,max_seq), cos/sin (1,Q,hd), past K/V (1,n_kv,max_seq-Q,hd);
 * outputs logits (1,Q,V) and the delta K/V (1,n_kv,Q,hd). Named model_append_prefill_q<Q>. */
pdq_code pdq_build_whole_q(const pdq_model *m, pdq_graph_mode mode, int max_seq, int Q, const pdq_static_opts *o,
                           pdq_graph **out, pdq_status *st);

/* ---------------- executable Circle graphs ---------------- */

typedef struct pdq_cgraph pdq_cgraph;

/* Reads, imports and prepares a .circle file for execution. */
pdq_code pdq_cg_open(const char *path, pdq_cgraph **out, pdq_status *st);
/* Same from an IR graph (taken over: freed with the cgraph, also on failure). */
pdq_code pdq_cg_from_graph(pdq_graph *g, pdq_cgraph **out, pdq_status *st);
void pdq_cg_free(pdq_cgraph *cg);
/* The file's graph as imported (dtypes and qparams as stored). */
const pdq_graph *pdq_cg_graph(const pdq_cgraph *cg);
int pdq_cg_quantized(const pdq_cgraph *cg);   /* any tensor carries qparams */
int pdq_cg_n_inputs(const pdq_cgraph *cg);
int pdq_cg_n_outputs(const pdq_cgraph *cg);
/* Input / output buffers, owned by the cgraph: int32 for integer (token id) inputs, else float
 * values (dequantized values for quantized tensors: feed real numbers, they are requantized to
 * the input's grid; outputs are exact grid values). */
void *pdq_cg_input(pdq_cgraph *cg, int i);
const float *pdq_cg_output(pdq_cgraph *cg, int i);
/* The IR tensor of input/output i of the file's graph. */
const pdq_tensor *pdq_cg_input_tensor(const pdq_cgraph *cg, int i);
const pdq_tensor *pdq_cg_output_tensor(const pdq_cgraph *cg, int i);
pdq_code pdq_cg_run(pdq_cgraph *cg, pdq_status *st);
/* The same with an execution mode (NULL: fake-quant, as above). int on a quantized file: the
 * integer executor (include/pdq/qexec.h) runs the file's graph; float: constants dequantized,
 * activations float, nothing requantized. */
pdq_code pdq_cg_open_opts(const char *path, const pdq_exec_opts *eo, pdq_cgraph **out, pdq_status *st);
pdq_code pdq_cg_from_graph_opts(pdq_graph *g, const pdq_exec_opts *eo, pdq_cgraph **out, pdq_status *st);
pdq_exec_mode pdq_cg_mode(const pdq_cgraph *cg);
/* Integer mode only (else NULL): input i fed as codes in the tensor's dtype from now on (its
 * float buffer is no longer read), and output i's codes after a run. */
void *pdq_cg_input_codes(pdq_cgraph *cg, int i);
const void *pdq_cg_output_codes(pdq_cgraph *cg, int i);
/* Code of a float value on a tensor's grid (round half to even, saturated) and back. t->q must
 * be set (per-tensor). */
/* Bytes of the constants one run streams: as stored in integer mode (uint4 packed), the float
 * copies otherwise; a GATHER's table is looked up a row at a time and not counted. */
size_t pdq_cg_weight_bytes(const pdq_cgraph *cg);
int64_t pdq_cg_quantize_value(const pdq_tensor *t, float x);
float pdq_cg_dequantize_value(const pdq_tensor *t, int64_t q);

/* ---------------- export of a model ---------------- */

#define PDQ_MAX_BUCKETS 16

/* "1,4,16" -> distinct sizes in [1, max_seq-1], ascending; errors name the value and the limit. */
pdq_code pdq_buckets_parse(const char *s, int max_seq, int *out, int *n, pdq_status *st);
/* The buckets one turn of n tokens uses at cache length len: the largest bucket (of buckets[nb],
 * Q = 1 always available) with Q <= tokens left and len + Q <= max_seq, then smaller ones.
 * Returns the count written to plan (<= cap), or -1 when the context or cap runs out. */
int pdq_buckets_plan(const int *buckets, int nb, int len, int n, int max_seq, int *plan, int cap);

typedef struct {
    int max_seq;
    int whole;              /* model_prefill / model_decode (+ model_append_prefill_q<Q>) */
    int per_layer;          /* token_embedding, decoder_layer_*, lm_head */
    int append_q;           /* > 0: one more append bucket (kept for callers of one bucket) */
    int n_buckets;          /* append-prefill buckets: decoder_layer_append_prefill_q<Q>_<i> */
    int buckets[PDQ_MAX_BUCKETS];
    int hybrid;             /* with quant_dir: float activations, packed uint4/uint8 weights with
                               their per-channel qparams (".w4"/".w8" files), no ptq.json needed */
    pdq_static_opts so;     /* graph options (default: TICO npu_export profile) */
    int quiet;
    /* Quantized export: a pdq quantized checkpoint dir holding ptq.json (NULL: float). Files get
     * the ".q" tag; graph options come from ptq.json. The model's norm weights must already be
     * fake-quantized (pdq_ptq_quantize_norms), its linears the checkpoint's dequantized ones. */
    const char *quant_dir;
} pdq_export_opts;

/* max_seq 64, whole + per-layer, no append, pre_negated_sin / k_proj / unrolled, fill -120. */
void pdq_export_opts_default(pdq_export_opts *o);

/* Writes outdir (created if needed): the .circle files, rope_cos.npy / rope_sin.npy (max_seq, hd)
 * tables (sin pre-negated when the convention says so) and manifest.json (the device contract). */
pdq_code pdq_export_model(const pdq_model *m, const char *outdir, const pdq_export_opts *o, pdq_status *st);

/* ---------------- runtime over exported files ---------------- */

typedef struct pdq_crt pdq_crt;

/* Opens outdir's manifest and the files of one layout: whole != 0 model_prefill/model_decode,
 * else the per-layer files. */
pdq_code pdq_crt_open(const char *outdir, int whole, pdq_crt **out, pdq_status *st);
/* The same with an execution mode for every file (NULL: fake-quant). */
pdq_code pdq_crt_open_opts(const char *outdir, int whole, const pdq_exec_opts *eo, pdq_crt **out, pdq_status *st);
void pdq_crt_free(pdq_crt *rt);
int pdq_crt_max_seq(const pdq_crt *rt);
int pdq_crt_vocab(const pdq_crt *rt);
int pdq_crt_len(const pdq_crt *rt);
/* Forgets the tokens from position len on (0 <= len <= pdq_crt_len): the next append writes from
 * slot len (masks never show a slot at or past the length). */
pdq_code pdq_crt_rewind(pdq_crt *rt, int len, pdq_status *st);
/* pdq_cg_weight_bytes of everything one decode step runs (the decode file, or every layer's
 * decode file with token_embedding and lm_head). */
size_t pdq_crt_decode_weight_bytes(const pdq_crt *rt);
/* Bytes of the runtime's KV cache: full layers' max_seq-1 slots, sliding layers' rings, in the
 * cache's element type (float, or the K/V outputs' int16/uint8 codes). */
size_t pdq_crt_kv_bytes(const pdq_crt *rt);
/* Prefill n <= max_seq tokens (positions 0..n-1, padding on the right): logits (V) of the last. */
pdq_code pdq_crt_prefill(pdq_crt *rt, const int32_t *ids, int n, float *logits, pdq_status *st);
/* One decode step: logits (V). */
pdq_code pdq_crt_decode(pdq_crt *rt, int32_t id, float *logits, pdq_status *st);
/* Appends n tokens at the current length through the exported buckets (pdq_buckets_plan; Q = 1
 * runs the decode files); works at length 0 too (a chunked initial prefill). logits (V) of the
 * last token; all_logits (n x V) may be NULL. Returns PDQ_ERR_LIMIT before running anything when
 * the context has no room for n more tokens. */
pdq_code pdq_crt_append(pdq_crt *rt, const int32_t *ids, int n, float *logits, float *all_logits, pdq_status *st);
/* Buckets the runtime opened (ascending, 1 first), and the plan it would use for n tokens now. */
int pdq_crt_buckets(const pdq_crt *rt, const int **buckets);
int pdq_crt_plan(const pdq_crt *rt, int n, int *plan, int cap);
/* Prefill with the logits of rows 0..n-1 (n x V); per-layer files run lm_head once per row. */
pdq_code pdq_crt_prefill_all(pdq_crt *rt, const int32_t *ids, int n, float *all_logits, pdq_status *st);
/* A pdq_window_logits_fn (eval.h) over the exported prefill: ctx is a pdq_crt*. */
pdq_code pdq_crt_window_logits(void *ctx, const int32_t *ids, int T, float *logits, pdq_status *st);
/* KV cache of a layer (which 0: K, 1: V), (n_kv, max_seq-1, hd) in the dtype of tensor *t (int16
 * codes for quantized files, else float); NULL for a bad index. */
const void *pdq_crt_cache(const pdq_crt *rt, int layer, int which, const pdq_tensor **t);

/* ---------------- quality of an exported pair (src/circle/crt_eval.c) ---------------- */

/* Perplexity through the exported prefill (whole-model file unless per_layer), windows of
 * max_seq with stride max_seq: the numbers pdq_ptq_ppl_static gives in memory. */
pdq_code pdq_crt_ppl(const char *outdir, int per_layer, const int32_t *ids, long n, const char *label, double *ppl,
                     pdq_status *st);
/* pdq_ptq_verify over the exported files: each prompt at positions 0..n-1, `steps` greedy decode
 * steps of the Circle runtime, every step's logits against the FP32 reference on the same tokens. */
pdq_code pdq_crt_verify(pdq_crt *rt, const pdq_model *ref, const int32_t *const *prompts, const int *lens,
                        int n_prompts, int steps, pdq_ptq_verify_result *out, pdq_status *st);

#ifdef __cplusplus
}
#endif
#endif
