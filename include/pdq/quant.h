/* Weight quantization: affine uint grids, RTN, GPTQ, and the layer-by-layer model pipeline.
 *
 * Grid semantics follow the GPTQ reference Quantizer: for a vector x the range is
 * [min(min x, 0), max(max x, 0)] (zero always representable), scale = (xmax - xmin) / maxq,
 * zero = round(-xmin / scale) (asym) or 2^(bits-1) with xmin = -max|x| (sym); a code is
 * q = clamp(round_half_even(x / scale) + zero, 0, maxq) and dequantizes to scale * (q - zero).
 * Zero points are integers in [0, maxq], so they are stored as uint8. */
#ifndef PDQ_QUANT_H
#define PDQ_QUANT_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "pdq/graph.h"
#include "pdq/model.h"
#include "pdq/qscale.h"
#include "pdq/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int bits;        /* 2..8 */
    int sym;         /* symmetric grid (zero = 2^(bits-1)) */
    int group;       /* 0: one grid per output row (per-channel); >0: group size along the input */
    int partial_groups; /* allow a group that does not divide the input: the last group is shorter
                         * (GPTQ reference behaviour); otherwise that is an error */
    int per_tensor;  /* one grid for the whole tensor (group must be 0) */
    int mse;         /* shrink search: p = 1 - i/grid for i in [0, maxshrink*grid), keep the p with
                      * the smallest sum |q(x) - x|^norm per vector */
    int grid;        /* 100 */
    float maxshrink; /* 0.8 */
    float norm;      /* 2.4 */
    pdq_qscale_type group_scale; /* how grouped grids store their scales (per-channel ones stay
                                  * float32): every scale is rounded to it before codes are chosen */
} pdq_qscheme;

/* bits, asym, per-channel, no MSE, grid 100, maxshrink 0.8, norm 2.4, float32 group scales. */
void pdq_qscheme_default(pdq_qscheme *s, int bits);
/* The stored type of the scheme's scales: group_scale with groups, else float32. */
static inline pdq_qscale_type pdq_qscheme_scale_type(const pdq_qscheme *s) {
    return s->group > 0 ? s->group_scale : PDQ_QSCALE_F32;
}
/* Validates the scheme for a [rows, cols] weight (bits range, group divides cols, ...). */
pdq_code pdq_qscheme_check(const pdq_qscheme *s, int rows, int cols, const char *name, pdq_status *st);
/* Number of grids along the input dimension: ceil(cols / group), or 1. */
int pdq_qscheme_ngroups(const pdq_qscheme *s, int cols);

/* PDQ_ERR_NUMERIC naming the option to use when a grid's scale overflowed the scheme's stored
 * type (pdq_qscale_round gave +Inf). */
pdq_code pdq_qscale_check(const pdq_qscheme *s, const float *scale, size_t n, const char *name, pdq_status *st);
/* The same for scale[i0..i1) (errors name the index i). */
pdq_code pdq_qscale_check_range(const pdq_qscheme *s, const float *scale, size_t i0, size_t i1, const char *name,
                                pdq_status *st);

/* Grid parameters of `nvec` vectors of n values: element k of vector v is
 * x[v * vstride + k * estride]. Ignores per_tensor/group (callers pick the vectors). */
void pdq_qparams_find(const pdq_qscheme *s, const float *x, int nvec, int n, ptrdiff_t vstride,
                      ptrdiff_t estride, float *scale, float *zero);

/* One value: code and dequantized value for a grid (pdq_qcode is inline below). */
float pdq_qdequant(float x, float scale, float zero, int maxq);

/* Round-to-nearest quantization of a row-major [rows, cols] weight with scheme s.
 * codes [rows*cols] (may be NULL), deq [rows*cols] (may be NULL, may alias w),
 * scale/zero [rows * ngroups] (per_tensor: every row holds the same values).
 * NaN/Inf in w -> PDQ_ERR_NUMERIC. */
pdq_code pdq_quant_rtn(const pdq_qscheme *s, const float *w, int rows, int cols, uint8_t *codes,
                       float *deq, float *scale, float *zero, const char *name, pdq_status *st);

/* uint4 packing: pdq_pack4 / pdq_unpack4 (pdq/graph.h, the one layout). */

/* --- per-module bit overrides: "model.layers.3.mlp.down_proj=8" (exact), "mlp.down_proj=8"
 * (layer-local) or "down_proj=8" (suffix). An exact match beats a layer-local one, which beats a
 * suffix; among equals the last one given wins. --- */
typedef struct {
    char name[128];
    int bits;
    int used;  /* set by pdq_qoverride_bits when it matched */
} pdq_qoverride;

pdq_code pdq_qoverride_parse(const char *spec, pdq_qoverride *out, pdq_status *st);
/* Bits for the module full_name ("model.layers.3.mlp.down_proj"), or def. */
int pdq_qoverride_bits(pdq_qoverride *ov, int n, const char *full_name, int def);

/* --- Time and work of the quantizer by phase (pdq quantize --profile; src/quant/flops.c). The
 * FLOPs are counted from the shapes of each call as the code makes it (formulas in flops.c and
 * docs/speed.md); the seconds are wall time. A NULL pdq_qprof * anywhere: nothing is counted. */
typedef enum {
    PDQ_QP_FORWARD = 0, /* calibration layer forwards (FP32 and through quantized linears), Hessian excluded */
    PDQ_QP_HESSIAN,     /* X^T X: one SYRK per window and linear group, its double accumulation */
    PDQ_QP_PREPARE,     /* GPTQ's setup: dead columns, grids, act-order permutation of W and H */
    PDQ_QP_CHOLESKY,    /* upper Cholesky factor of inv(H): potrf + trtri in double */
    PDQ_QP_COLUMNS,     /* the column loop: quantize, rank-1 updates in the block, lazy GEMM after it */
    PDQ_QP_LOSS,        /* tr(dW H dW^T) of the GPTQ result and of its RTN reference (a metric) */
    PDQ_QP_RTN,         /* round-to-nearest tables (embedding, lm_head) and --method rtn */
    PDQ_QP_COUNT
} pdq_qphase;

typedef struct {
    double seconds[PDQ_QP_COUNT];
    double flops[PDQ_QP_COUNT];
} pdq_qprof;

/* The phase's name in report.json ("forward", "hessian", ...). */
const char *pdq_qphase_name(pdq_qphase p);
/* Adds seconds and flops to phase p of prof (prof NULL: nothing). */
void pdq_qprof_add(pdq_qprof *prof, pdq_qphase p, double seconds, double flops);
/* FLOPs of one decoder layer's forward over T tokens of one window (no cache), up to the input
 * of `stop` (PDQ_LIN_Q, _O, _GATE, _DOWN as pdq_model_layer_inputs; PDQ_LIN_COUNT: all of it). */
double pdq_layer_forward_flops(const pdq_config *c, int T, pdq_linear_id stop);
/* The machine's float GEMM rate now: square n x n x n sgemm repeated for about `seconds` on the
 * BLAS threads as set (one warm-up call, then the mean rate of the repeats, GFLOP/s). */
pdq_code pdq_sgemm_probe(int n, double seconds, double *gflops, pdq_status *st);
/* The same in double: the ceiling of the phases that run in double (the Cholesky factor). */
pdq_code pdq_dgemm_probe(int n, double seconds, double *gflops, pdq_status *st);

/* --- Hessian of a linear's input: H = 2/N sum_x x x^T over N input rows, accumulated in double
 * from float BLAS SYRK products, batch by batch. --- */
typedef struct {
    int n;          /* columns (input features) */
    long rows;      /* N so far */
    double *acc;    /* [n*n], upper triangle valid until pdq_hessian_get */
    float *tmp;     /* [n*n] SYRK scratch */
    pdq_qprof *prof; /* NULL, or where the SYRKs' time and FLOPs go (set after init) */
    struct pdq_pool *pool; /* NULL, or workers for the bands of each add, set after init while
                            * BLAS is single-threaded (pdq_model_blas_serial) */
} pdq_hessian;

pdq_code pdq_hessian_init(pdq_hessian *h, int n, pdq_status *st);
/* Adds rows of x [rows, n]; NaN/Inf -> PDQ_ERR_NUMERIC. */
pdq_code pdq_hessian_add(pdq_hessian *h, const float *x, int rows, pdq_status *st);
/* Full symmetric H = 2/N sum x x^T into out [n*n] (float). */
void pdq_hessian_get(const pdq_hessian *h, float *out);
void pdq_hessian_reset(pdq_hessian *h);
void pdq_hessian_free(pdq_hessian *h);

/* --- GPTQ on one matrix --- */
/* What GPTQ derives from H alone (the act-order permutation, the upper Cholesky factor of
 * inv(H)), kept for the next matrix quantized with the same H (q/k/v share one, gate/up
 * another): give their pdq_gptq_opts the same cache and call them one after the other with the
 * same H pointer, unchanged. Start zeroed; pdq_gptq_hcache_free before H is freed or changed. */
typedef struct {
    const float *H; /* the Hessian it was computed from (compared by address) */
    int cols, actorder;
    float percdamp;
    int *perm;      /* [cols] */
    float *hinv;    /* [cols*cols] */
} pdq_gptq_hcache;

void pdq_gptq_hcache_free(pdq_gptq_hcache *c);

typedef struct {
    pdq_qscheme scheme;
    int actorder;       /* columns by descending diag(H) (default on) */
    int static_groups;  /* with act-order and groups: grids from the original weight up front */
    float percdamp;     /* 0.01 */
    int blocksize;      /* 128 */
    int ref_groups;     /* group grids as IST-DASLab / AutoGPTQ / TICO compute them: from the weights
                         * as they stood at the start of the lazy-update block (the block's own
                         * error updates not applied), block size not rounded to the group. Off:
                         * from the current error-updated weights, block rounded up to whole groups
                         * (slightly lower loss, different codes) */
    int mse_gptq;       /* per-row grid search measured after GPTQ: every row keeps the range shrink
                         * p = 1 - k * mse_gptq_range / mse_gptq_steps (k = 0..steps) whose GPTQ
                         * result has the least tr(dw H dw^T) (per-channel only) */
    int mse_gptq_steps; /* 10 */
    float mse_gptq_range; /* 0.25 */
    pdq_qprof *prof;    /* NULL, or where GPTQ's phases add their time and FLOPs */
    pdq_gptq_hcache *hcache; /* NULL, or H's permutation and factor shared between calls */
    struct pdq_pool *pool;   /* NULL, or workers for the in-block column loop's row tiles (the
                              * codes do not depend on it: a tile's rows are its own) */
} pdq_gptq_opts;

void pdq_gptq_opts_default(pdq_gptq_opts *o, int bits);

typedef struct {
    int rows, cols, ngroups;
    uint8_t *codes;   /* [rows*cols], original column order */
    float *deq;       /* [rows*cols] */
    float *scale;     /* [rows*ngroups] */
    float *zero;      /* [rows*ngroups] */
    int32_t *g_idx;   /* [cols]: group of each original column (col / group unless act-order
                       * without static groups); NULL when ngroups == 1 */
    double loss;      /* tr(dW H dW^T) with the undamped H */
    double rtn_loss;  /* the same for round-to-nearest with the same scheme */
} pdq_qresult;

void pdq_qresult_free(pdq_qresult *r);

/* GPTQ of w [rows, cols] (row-major) with H [cols, cols] (float, symmetric). Fills r (caller
 * frees with pdq_qresult_free). Not-positive-definite after damping or NaN/Inf ->
 * PDQ_ERR_NUMERIC; name is used in messages. */
pdq_code pdq_gptq(const pdq_gptq_opts *o, const float *w, int rows, int cols, const float *H,
                  const char *name, pdq_qresult *r, pdq_status *st);
/* GPTQ with given per-row grids (scale, zero [rows]); losses: loss only (rtn_loss 0). */
pdq_code pdq_gptq_fixed_grid(const pdq_gptq_opts *o, const float *w, int rows, int cols, const float *H,
                             const char *name, const float *scale, const float *zero, pdq_qresult *r,
                             pdq_status *st);
/* The GPTQ-aware grid search of o->mse_gptq (pdq_gptq calls it). */
pdq_code pdq_gptq_grid_search(const pdq_gptq_opts *o, const float *w, int rows, int cols, const float *H,
                              const char *name, pdq_qresult *r, pdq_status *st);
/* RTN into the same result layout, with losses on H (H may be NULL: losses left 0). */
pdq_code pdq_rtn_result(const pdq_qscheme *s, const float *w, int rows, int cols, const float *H,
                        const char *name, pdq_qresult *r, pdq_status *st);
/* tr(dW H dW^T) for dW = a - b [rows, cols] (float GEMM, double sum). */
double pdq_quant_loss(const float *a, const float *b, int rows, int cols, const float *H);

/* --- calibration --- */

/* nsamples windows of seq_len ids: BOS (if bos >= 0) then seq_len-1 consecutive ids from
 * ids[0..n) taken at seeded random offsets. *out is malloc'd [nsamples*seq_len].
 * Too few ids -> PDQ_ERR_ARG naming the counts. */
pdq_code pdq_calib_windows(const int32_t *ids, long n, int nsamples, int seq_len, int bos,
                           uint64_t seed, int32_t **out, pdq_status *st);
/* Tokenizes a text file (no special tokens) with the tokenizer of model_dir. */
pdq_code pdq_calib_tokenize(const char *model_dir, const char *path, int32_t **ids, long *n,
                            int *bos, pdq_status *st);

/* --- whole-model pipeline --- */
typedef enum { PDQ_QM_GPTQ = 0, PDQ_QM_RTN = 1 } pdq_qmethod;

typedef struct {
    pdq_qmethod method;
    pdq_gptq_opts gptq;     /* scheme + GPTQ options for the decoder linears */
    pdq_qoverride *overrides;
    int n_overrides;
    int embed_bits;         /* 0: keep float; default 8 (per-row RTN) */
    int lm_head_bits;       /* 0: keep float; default 8 */
    int lm_head_gptq;       /* GPTQ instead of RTN for lm_head */
    int nsamples, seq_len;  /* calibration windows (GPTQ) */
    int orig_inputs;        /* every Hessian from the float model's activations (TICO's
                             * --gptq_use_orig_model_inference), not from the partly quantized one */
    uint64_t seed;
    int quiet;              /* no summary table */
    const struct pdq_transform_opts *transforms; /* NULL, or the float transforms the model went
                                                  * through first (pdq/transform.h); recorded only */
    const struct pdq_dist *dist; /* NULL, or the job's ranks (src/dist): windows split across them */
    int calib_chunk;        /* windows per Hessian chunk (0 = 1): chunk sums added in window order,
                             * the same for any number of ranks; 1 keeps the one-process sums */
    pdq_qprof *prof;        /* NULL, or the phases' time and FLOPs (gptq.prof is set from it) */
} pdq_quant_opts;

void pdq_quant_opts_default(pdq_quant_opts *o, int bits);

/* One quantized tensor of the checkpoint. */
typedef struct {
    char name[128];         /* "model.layers.0.self_attn.q_proj", "lm_head", "model.embed_tokens" */
    int bits, group, sym, actorder;
    double seconds;
    pdq_qresult r;          /* grids, g_idx and losses; codes and deq are NULL (see qweight) */
    uint8_t *qweight;       /* the codes as the checkpoint stores them: two per byte, low nibble
                             * first, [rows, ceil(cols/2)] for bits <= 4, else [rows, cols] */
} pdq_qmodule;

typedef struct {
    pdq_qmodule *mods;
    int n, cap;
    pdq_quant_opts opts;
    int nsamples, seq_len;  /* actually used */
    long comm_bytes;        /* calibration bytes this rank sent or received across ranks */
    double comm_seconds;    /* and the seconds in those exchanges (waits for other ranks included) */
    double seconds;
} pdq_qmodel;

void pdq_qmodel_free(pdq_qmodel *q);

/* Quantizes m in place and records codes, grids and losses in q. calib: nsamples*seq_len ids
 * (NULL for RTN). An eager model's weights become the dequantized values. A lazy model
 * (pdq_model_load_lazy) is quantized with one layer's f32 weights in memory at a time (plus the
 * embedding or lm_head while they are processed); its big weights are released afterwards, and
 * the dequantized values are what pdq_quant_save writes (or pdq_model_load of OUTDIR gives). */
pdq_code pdq_quantize_model(pdq_model *m, const pdq_quant_opts *o, const int32_t *calib,
                            int nsamples, int seq_len, pdq_qmodel *q, pdq_status *st);
/* The checks pdq_quantize_model starts with, alone (command-line pre-flight, before any work):
 * every tensor's scheme against its shape (bits, group divisibility), overrides that match no
 * linear, embedding/lm_head bits and tied-embedding constraints. Only m->cfg is read. */
pdq_code pdq_quant_opts_check(const pdq_model *m, pdq_quant_opts *o, pdq_status *st);
/* Prints the per-module table (module, bits, GPTQ loss, RTN loss, time) to f. */
void pdq_qmodel_print(const pdq_qmodel *q, void *file);

/* Perplexities for report.json (has == 0: none measured). */
typedef struct {
    int has;
    const char *file;
    int max_len, stride;
    long tokens;
    double fp32_ppl, quant_ppl;
} pdq_quant_eval;

/* report.json: options, per-module bits/losses/times, totals, and the perplexities. */
pdq_code pdq_quant_write_report(const char *path, const pdq_qmodel *q, const pdq_quant_eval *ev, pdq_status *st);

/* Writes OUTDIR: pdq_quant.json + model.q.safetensors (+ config/tokenizer copies from src_dir)
 * and OUTDIR/hf/ (config.json + model.safetensors, f32, dequantized, HF names). Streams tensor
 * by tensor: quantized tensors from q's codes, float ones from m (acquired one at a time for a
 * lazy m, through any transform view), so neither file is held in memory. */
pdq_code pdq_quant_save(const char *outdir, const char *src_dir, pdq_model *m,
                        const pdq_qmodel *q, pdq_status *st);

static inline int pdq_qcode(float x, float scale, float zero, int maxq) {
    float q = rintf(x / scale) + zero;
    if (!(q > 0.0f)) return 0; /* also NaN */
    if (q > (float)maxq) return maxq;
    return (int)q;
}

#ifdef __cplusplus
}
#endif
#endif
