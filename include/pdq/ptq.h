/* Full-model post-training quantization of activations on the static graphs: observers on every
 * edge, per-tensor activation grids, fake-quant (quantize -> dequantize) execution through the
 * interpreter's edge hook, calibration, and the ptq.json description stored next to the
 * quantized weights.
 *
 * Edges and groups. Every tensor of the prefill, decode/append, embedding and head graphs is an
 * edge, named as the graph builders name it ("model.layers.0.self_attn.q_proj.out"). Edges that
 * must carry the same grid form one group, and the group owns the observer and the grid:
 *   - layout ops (RESHAPE, TRANSPOSE, SLICE, STRIDED_SLICE, GATHER of a non-constant) and every
 *     input of a CONCATENATION share their output's group (TICO propagates qparams the same way),
 *     so data movement never requantizes;
 *   - a layer's hidden_states input is the previous layer's output (the embedding output for layer
 *     0), the head's input the last layer's output;
 *   - past_key/past_value join new_k/new_v, so the KV cache has one grid for K and one for V per
 *     layer, shared by prefill's K/V outputs, decode/append past inputs and their deltas: cache
 *     entries are grid values and are copied without requantization;
 *   - the same edge name in the prefill and the decode/append graphs is the same edge (one grid
 *     for both; an exported graph carries the grids of its own edges);
 *   - attention_mask, cos and sin are fixed groups: ranges cover every position of the RoPE tables
 *     and the mask fill value, not observed.
 *
 * Grids. int16: symmetric, zero point 0, scale = absmax / 32767, codes clamped to [-32768, 32767].
 * uint8: asymmetric, range widened to include 0, scale = (max - min) / 255, zero point
 * round(-min / scale) in [0, 255]. int32 (identity check only): symmetric, scale = absmax /
 * (2^31 - 1). Every scale is rounded up to a float32 (the value a Circle file stores), then
 * used in double. Codes are round-half-to-even(x / scale) + zero point (in double), saturated;
 * values (code - zero point) * scale rounded to float: exactly what the Circle interpreter does. */
#ifndef PDQ_PTQ_H
#define PDQ_PTQ_H

#include <stddef.h>
#include <stdint.h>

#include "pdq/model.h"
#include "pdq/runtime.h"
#include "pdq/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { PDQ_ADT_FLOAT = 0, PDQ_ADT_INT16, PDQ_ADT_UINT8, PDQ_ADT_INT32 } pdq_adtype;
typedef enum { PDQ_OBS_MINMAX = 0, PDQ_OBS_EMA } pdq_obs_kind;

const char *pdq_adtype_name(pdq_adtype t);    /* "float", "int16", "uint8", "int32" */
int pdq_adtype_parse(const char *s);           /* "16"/"int16", "8"/"uint8", "none"/"float", "32"; -1 */
const char *pdq_obs_name(pdq_obs_kind k);
int pdq_obs_parse(const char *s);              /* "minmax", "ema"; -1 */

/* ---------------- one per-tensor grid ---------------- */
typedef struct {
    pdq_adtype dt;
    double scale;
    int64_t zero_point;
    int64_t qmin, qmax;
} pdq_agrid;

/* Grid of dtype dt covering [mn, mx] (0 is always included; an all-zero range gets scale 1). */
void pdq_agrid_from_range(pdq_adtype dt, double mn, double mx, pdq_agrid *g);
/* A scale as the smallest float32 >= it (kept as it is when it does not fit a positive float). */
double pdq_agrid_f32(double scale);
/* Code of x: clamp(rint_half_even(x / scale) + zero_point, qmin, qmax); NaN -> zero point. */
int64_t pdq_agrid_code(const pdq_agrid *g, float x);
float pdq_agrid_dequant(const pdq_agrid *g, int64_t q);
/* quantize -> dequantize in place (float grids: untouched). */
void pdq_agrid_fq(const pdq_agrid *g, float *x, size_t n);
/* Values of x[0..n) whose code saturates (x outside the grid's range by more than half a step). */
size_t pdq_agrid_clipped(const pdq_agrid *g, const float *x, size_t n);

/* ---------------- observers ---------------- */
typedef struct {
    pdq_obs_kind kind;
    double momentum;     /* ema: range = momentum * range + (1 - momentum) * step range */
    int have;            /* a step has been folded in */
    double min, max;     /* the observed range */
    int pending;         /* values seen in the current step */
    double cur_min, cur_max;
    long steps;
    double values;       /* values seen in total */
} pdq_observer;

void pdq_observer_init(pdq_observer *o, pdq_obs_kind kind, double momentum);
/* Adds values to the current step (NaN/Inf ignored: they never set a range). */
void pdq_observer_see(pdq_observer *o, const float *x, size_t n);
/* Ends a step: minmax widens the range, ema moves it (the first step sets it). */
void pdq_observer_step(pdq_observer *o);

/* ---------------- the activation table ---------------- */
typedef struct {
    pdq_adtype adtype;        /* activation dtype (default int16) */
    pdq_obs_kind observer;    /* default minmax */
    double ema_momentum;      /* default 0.9 */
} pdq_ptq_opts;

void pdq_ptq_opts_default(pdq_ptq_opts *o);

typedef struct {
    char *name;               /* the first edge's name */
    int fixed;                /* mask / cos / sin: range set, not observed */
    pdq_observer obs;
    pdq_agrid grid;
    double clipped, counted;  /* clip statistics (a counting pass after calibration) */
} pdq_ptq_group;

typedef enum { PDQ_PTQ_OFF = 0, PDQ_PTQ_OBSERVE, PDQ_PTQ_COUNT_CLIP, PDQ_PTQ_FAKEQUANT } pdq_ptq_mode;

typedef struct pdq_ptq pdq_ptq;

/* Builds the edge table from the graphs of m for these static options and max_seq (prefill,
 * decode, embedding, head; append graphs share decode's names). Grids start as float. */
pdq_code pdq_ptq_create(const pdq_model *m, int max_seq, const pdq_static_opts *so,
                        const pdq_ptq_opts *po, pdq_ptq **out, pdq_status *st);
void pdq_ptq_free(pdq_ptq *p);

const pdq_ptq_opts *pdq_ptq_get_opts(const pdq_ptq *p);
const pdq_static_opts *pdq_ptq_static_opts(const pdq_ptq *p);
int pdq_ptq_max_seq(const pdq_ptq *p);
int pdq_ptq_n_groups(const pdq_ptq *p);
pdq_ptq_group *pdq_ptq_group_at(pdq_ptq *p, int i);
int pdq_ptq_n_edges(const pdq_ptq *p);
/* Edge i: its name and group. */
const char *pdq_ptq_edge_name(const pdq_ptq *p, int i);
int pdq_ptq_edge_group(const pdq_ptq *p, int i);
/* Group of an edge name, -1 if unknown. */
int pdq_ptq_find(const pdq_ptq *p, const char *edge);

/* What the hook does: nothing, observe, count clipping against the grids, or fake-quantize. */
void pdq_ptq_set_mode(pdq_ptq *p, pdq_ptq_mode mode);
pdq_ptq_mode pdq_ptq_get_mode(const pdq_ptq *p);
/* The edge hook (ctx = the pdq_ptq). An edge missing from the table is an error naming it. */
pdq_code pdq_ptq_hook(void *ctx, const pdq_graph *g, int op_index, int tensor_id, float *data,
                      pdq_status *st);
/* Installs the hook on rt (and forgets graphs seen on an earlier runtime). */
void pdq_ptq_attach(pdq_ptq *p, pdq_rt *rt);
/* Ends an observation step (one runtime call) for every group. */
void pdq_ptq_step(pdq_ptq *p);
/* Grids from the observed ranges with dtype dt (float: fake quant off). Groups never observed ->
 * PDQ_ERR_ARG naming one of their edges. */
pdq_code pdq_ptq_finalize(pdq_ptq *p, pdq_adtype dt, pdq_status *st);

/* ---------------- calibration ---------------- */
typedef struct {
    int decode_steps;   /* greedy decode steps after each sample (0: prefill only) */
    pdq_padding pad;    /* padding of the shortened prompts before decode steps */
    const char *label;  /* progress bar label (NULL: none) */
    /* the ranks of a distributed job (src/dist; NULL: one process): sample s runs on rank
     * s % ranks; every observer step's range is gathered and replayed in the one-process order
     * (prefills by sample, then each sample's decode steps), clip counts are summed, so the
     * grids, statistics and ptq.json are the same bits for any number of ranks, EMA included.
     * Collective: every rank calls it with the same samples. */
    const struct pdq_dist *dist;
} pdq_ptq_calib_opts;

/* Observes nsamples prefills of max_seq ids each (samples row-major), then, if decode_steps > 0,
 * for each sample a prefill of its first max_seq - decode_steps ids (not observed) followed by
 * decode_steps observed greedy decode steps; finalizes the grids with the table's dtype; then
 * replays everything once more counting clipped values. rt must have batch 1 and the table's
 * max_seq; its hook is replaced (left detached at the end). */
pdq_code pdq_ptq_calibrate(pdq_ptq *p, pdq_rt *rt, const int32_t *samples, int nsamples,
                           const pdq_ptq_calib_opts *co, pdq_status *st);

/* ---------------- weights ---------------- */
/* int16 symmetric per-channel fake quantization of the norm weights (input/post-attention and
 * final RMSNorm gammas), in place: each channel is its own grid, as TICO's norm-weight spec. */
void pdq_ptq_quantize_norms(pdq_model *m);

/* ---------------- storage: OUTDIR/ptq.json ---------------- */
/* Writes path: format, dtype, observer, max_seq, static options, calibration info (calib_json
 * may be NULL: a cJSON* merged in as "calibration"), groups (grid, observed range, clipped
 * fraction) and edges (name -> group index). */
pdq_code pdq_ptq_save(const pdq_ptq *p, const char *path, const void *calib_json, pdq_status *st);
/* Loads a table saved by pdq_ptq_save for model m (edge names must match m's graphs). */
pdq_code pdq_ptq_load(const pdq_model *m, const char *path, pdq_ptq **out, pdq_status *st);
/* 1 if dir/ptq.json exists. */
int pdq_ptq_in_dir(const char *dir);

/* Runtime for a quantized checkpoint dir: if dir holds ptq.json, loads it, fake-quantizes m's
 * norm weights, creates the runtime with the calibrated static options and max_seq (max_seq <= 0:
 * the calibrated one; another value is an error), attaches the hook in fake-quant mode.
 * *ptq is NULL (and rt plain) for a dir without ptq.json. so may be NULL (defaults). */
pdq_code pdq_ptq_open_runtime(pdq_model *m, const char *dir, int B, int max_seq,
                              const pdq_static_opts *so, pdq_rt **rt, pdq_ptq **ptq, pdq_status *st);

/* ---------------- evaluation (src/ptq/report.c) ---------------- */
/* Perplexity through the static prefill graph (batch 1, all positions' logits), windows of
 * max_seq with stride max_seq. ptq NULL: float activations; else fake-quant with its grids (the
 * caller has quantized m's norm weights). */
pdq_code pdq_ptq_ppl_static(const pdq_model *m, int max_seq, const pdq_static_opts *so, pdq_ptq *ptq,
                            const int32_t *ids, long n, const char *label, double *ppl, pdq_status *st);

/* Step-by-step comparison of the (fake-quant) static runtime with the FP32 reference model
 * recomputing the whole sequence: prefill of each prompt then `steps` greedy decode steps of the
 * static runtime; the reference scores the same tokens. The prompt sits at positions 0..n-1 (right
 * padding) and the prefill logits come from the head over all max_seq rows, exactly as the
 * exported whole-model prefill file computes them. */
typedef struct {
    int n;                            /* prompts * (steps + 1) entries */
    double mean_abs, max_abs, peir;   /* worst over steps (mean_abs: mean over steps) */
    double top1;                      /* fraction of steps whose argmax agrees */
    double *step_mean, *step_max, *step_peir;
    int *step_top1, *step_prompt, *step_index;
    int32_t **tok_quant, **tok_ref;   /* [prompts][steps+1] greedy continuations (own paths) */
    int n_prompts, steps;
} pdq_ptq_verify_result;

pdq_code pdq_ptq_verify(const pdq_model *ref, const pdq_model *m, int max_seq, const pdq_static_opts *so,
                        pdq_ptq *ptq, const int32_t *const *prompts, const int *lens, int n_prompts,
                        int steps, pdq_ptq_verify_result *out, pdq_status *st);
void pdq_ptq_verify_free(pdq_ptq_verify_result *r);

/* The verify loop for any runtime: prefill(ids, n) starts a sequence and gives the last token's
 * logits, decode(id) one step's; pdq_ptq_verify is this with the in-memory static runtime, the
 * Circle runtime uses it over the exported files (the same statistics by construction). */
typedef struct {
    pdq_code (*prefill)(void *ctx, const int32_t *ids, int n, float *logits, pdq_status *st);
    pdq_code (*decode)(void *ctx, int32_t id, float *logits, pdq_status *st);
    void *ctx;
} pdq_step_runner;
pdq_code pdq_verify_steps(const pdq_model *ref, const pdq_step_runner *run, const int32_t *const *prompts,
                          const int *lens, int n_prompts, int steps, pdq_ptq_verify_result *out, pdq_status *st);
/* The fixed verify prompts of the activation step (report.json "verify"), used when the run
 * is given none of its own. */
int pdq_ptq_verify_prompts(const char *const **prompts);
#define PDQ_PTQ_MAX_PROMPTS 16

/* The activation step of `pdq quantize`: m holds the quantized weights (FP32 reference loaded
 * from src_dir), calibration windows come from calib ids; writes OUTDIR/ptq.json, evaluates
 * (eval ids may be NULL: verify statistics only) and merges an "activations" section into
 * OUTDIR/report.json; prints the table to `file` (a FILE*). */
typedef struct {
    pdq_ptq_opts po;
    pdq_static_opts so;
    int max_seq;          /* default 256 */
    int nsamples;         /* calibration windows (default 32) */
    int decode_steps;     /* --decode-calib-steps (default 0) */
    int verify_steps;     /* 32 */
    int compare_calib;    /* also calibrate/evaluate the other variant (prefill-only vs +decode) */
    uint64_t seed;
    const char *const *prompts; /* verify prompts (caller-owned; NULL: pdq_ptq_verify_prompts) */
    int n_prompts;              /* at most PDQ_PTQ_MAX_PROMPTS are used */
    const struct pdq_dist *dist; /* calibration split over these ranks (pdq_ptq_calib_opts.dist) */
} pdq_ptq_run_opts;

void pdq_ptq_run_opts_default(pdq_ptq_run_opts *o);
/* A rank other than 0 of a distributed job while rank 0 runs pdq_ptq_quantize_dir: the same
 * calibrations (norms quantized, each variant) on m, its share of the samples, keeping nothing. */
pdq_code pdq_ptq_calibrate_share(pdq_model *m, const pdq_ptq_run_opts *o, const int32_t *calib, long n_calib, int bos,
                                 pdq_status *st);
pdq_code pdq_ptq_quantize_dir(const char *src_dir, const char *outdir, pdq_model *m,
                              const pdq_ptq_run_opts *o, const int32_t *calib, long n_calib, int bos,
                              const int32_t *eval, long n_eval, void *file, pdq_status *st);

#ifdef __cplusplus
}
#endif
#endif
