/* Offline, function-preserving weight transforms applied to an FP32 model before quantization:
 * RMSNorm folding, the residual rotation R1 (SpinQuant/QuaRot), the per-head rotation R2,
 * cross-layer equalization (CLE) and SmoothQuant. Each rewrites weights (and norm weights) so the
 * float model computes the same logits; the static graphs, PTQ, export and runtimes see an
 * ordinary checkpoint.
 *
 * Conventions: activations are row vectors, a linear computes y = x W^T with W [out, in]. An
 * orthogonal Q acts on a row vector as x -> x Q. */
#ifndef PDQ_TRANSFORM_H
#define PDQ_TRANSFORM_H

#include <stddef.h>
#include <stdint.h>

#include "pdq/model.h"
#include "pdq/status.h"

/* --- orthogonal matrices: Q = diag(s) H / sqrt(n) (randomized Hadamard, n a power of two, applied
 * by a fast Walsh-Hadamard transform) or a dense Haar-random orthogonal matrix (QR of a seeded
 * Gaussian), whichever the kind and size allow. --- */
typedef enum { PDQ_ROT_AUTO = 0, PDQ_ROT_HADAMARD = 1, PDQ_ROT_RANDOM = 2 } pdq_rot_kind;

struct pdq_pool;

typedef struct {
    int n;
    int hadamard;   /* 1: signs + FWHT; 0: dense q */
    float *signs;   /* [n] (hadamard) */
    float *scaled;  /* [n] signs / sqrt(n) (hadamard) */
    float *q;       /* [n*n] row-major (dense) */
    /* how it is applied (set by the caller after pdq_orth_make; the results do not depend on
     * either): NULL runs on the caller; force_scalar 1 skips the AVX2 kernels */
    struct pdq_pool *pool;
    int force_scalar;
} pdq_orth;

/* In-place unnormalized Walsh-Hadamard transform of x[0..n) (n a power of two): x <- x H_n. */
void pdq_fwht(float *x, int n);
int pdq_is_pow2(int n);
/* kind AUTO: Hadamard when n is a power of two, else random. HADAMARD on another size -> error. */
pdq_code pdq_orth_make(pdq_orth *q, int n, pdq_rot_kind kind, uint64_t seed, pdq_status *st);
void pdq_orth_free(pdq_orth *q);
/* Every row of x [rows, n] (leading dimension ld >= n): row <- row Q. */
pdq_code pdq_orth_right(const pdq_orth *q, float *x, int rows, size_t ld, pdq_status *st);
/* w [n, cols] (leading dimension ld >= cols): w <- Q^T w. */
pdq_code pdq_orth_left_t(const pdq_orth *q, float *w, int cols, size_t ld, pdq_status *st);

/* R1 on the residual stream of an eagerly loaded model: embedding, q/k/v/gate/up inputs, o/down
 * outputs, lm_head. Needs folded norms (every norm weight 1; the final one too). The quantize
 * path applies it through pdq_transform_model / pdq_transform_write. */
pdq_code pdq_rotate_r1(pdq_model *m, pdq_rot_kind kind, uint64_t seed, pdq_status *st);

/* --- the set a quantize run applies --- */
typedef struct pdq_transform_opts {
    int fold, r1, r2, cle, smooth;
    float smooth_alpha;     /* 0.5 */
    pdq_rot_kind kind;      /* R1/R2 matrices (AUTO) */
    uint64_t seed;          /* rotation seed */
    int smooth_nsamples;    /* calibration windows for SmoothQuant's ranges (0: all given) */
    /* how it runs (the results do not depend on either): the rotations' row blocks and column
     * strips on pool (NULL: the caller), force_scalar 1 skips the AVX2 kernels */
    struct pdq_pool *pool;
    int force_scalar;
    /* the ranks of a distributed job (src/dist; NULL: one process). SmoothQuant's windows are
     * split over them (window s on rank s % ranks) and each layer's ranges are the maximum over
     * the ranks': the same bits for any number of ranks. Collective: every rank runs the transform. */
    const struct pdq_dist *dist;
    /* filled by pdq_transform_model */
    int untied;             /* R1 on a tied model with a non-unit final norm: lm_head split off */
    int final_norm_kept;    /* fold without R1 on a tied model: the final norm keeps its weight */
    int r1_hadamard, r2_hadamard;
    double seconds;
} pdq_transform_opts;

void pdq_transform_opts_default(pdq_transform_opts *o);
int pdq_transform_any(const pdq_transform_opts *o);
/* "none" or a comma list of fold, r1, r2, cle, smooth (r1 implies fold). */
pdq_code pdq_transform_parse(const char *list, pdq_transform_opts *o, pdq_status *st);
/* "fold+r1+r2" style name ("none"). */
void pdq_transform_name(const pdq_transform_opts *o, char *buf, size_t n);
/* Applies the set to an eagerly loaded model in place, in the order fold, CLE, R1, R2, SmoothQuant
 * (calib: ns windows of T ids, needed by SmoothQuant only). Fills o's output fields. The
 * transforms (but the tables' R1) are per layer, so they run one layer after the other:
 * SmoothQuant's ranges are taken layer by layer from every window's activations. */
pdq_code pdq_transform_model(pdq_model *m, pdq_transform_opts *o, const int32_t *calib, int ns, int T,
                             pdq_status *st);
/* A lazily loaded model (pdq_model_load_lazy) seen through the set: from now on every acquire of
 * m (a layer, the embedding, lm_head) returns the tensors pdq_transform_write would have written,
 * bit for bit, computed as they are read, so a quantizer reads transformed weights without a
 * transformed checkpoint on disk. The final norm and the tie are set now (an untied lm_head is
 * then read from the embedding); a layer's norms are its transformed ones once it has been
 * acquired. SmoothQuant's ranges are collected here, in one pass of the transformed float model
 * over the ns calibration windows of T ids (calib is not kept). Fills o's output fields; its
 * seconds grow with every acquire. *out is freed by pdq_transform_view_free after m, and o must
 * outlive it. On error, *out is NULL and m is as it was. */
typedef struct pdq_transform_view pdq_transform_view;
pdq_code pdq_transform_attach(pdq_model *m, pdq_transform_opts *o, const int32_t *calib, int ns, int T,
                              pdq_transform_view **out, pdq_status *st);
void pdq_transform_view_free(pdq_transform_view *v);

/* The options and outputs as a cJSON object (for pdq_quant.json and report.json). */
struct cJSON;
struct cJSON *pdq_transform_json(const pdq_transform_opts *o);

/* Writes m as an f32 HF checkpoint: OUT/config.json (src_dir's, with tie_word_embeddings as m has
 * it and torch_dtype float32), tokenizer files copied, OUT/model.safetensors. */
pdq_code pdq_transform_save(const pdq_model *m, const char *src_dir, const char *out_dir, pdq_status *st);
/* Transforms m and writes it as pdq_transform_save would, streaming: on a lazily loaded model
 * (pdq_model_load_lazy of src_dir) each layer is read, transformed, written and released, so
 * memory is one layer and the embedding tables (plus SmoothQuant's calibration activations,
 * ns * T * hidden floats) instead of the whole f32 model. The file's bytes are the same as
 * pdq_transform_model then pdq_transform_save. */
pdq_code pdq_transform_write(pdq_model *m, pdq_transform_opts *o, const int32_t *calib, int ns, int T,
                             const char *src_dir, const char *out_dir, pdq_status *st);

#endif
