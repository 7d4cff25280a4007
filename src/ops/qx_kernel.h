/* What an op's integer kernel sees of the integer executor (src/exec/qexec.c drives it): each
 * tensor's grid and storage, the op's prepared data, the kernels' level and table, the pool; and
 * what the kernels share (qx_util.c). Owned by ops/, below exec/, so the op files include nothing
 * of the executor's; the driver includes this. Internal. */
#ifndef PDQ_OPS_QX_KERNEL_H
#define PDQ_OPS_QX_KERNEL_H

#include <stddef.h>
#include <stdint.h>

#include "ir/layout.h"
#include "kernels/qx_kernels.h"
#include "ops/op_def.h"
#include "pdq/requant.h"
#include "pdq/threadpool.h"

/* How a tensor's stored elements read as real numbers. quant: per-tensor affine codes. */
typedef struct {
    pdq_tdtype dt;     /* storage dtype: TI16 / TU8 codes, TF32, TI32 */
    int quant;
    double s;          /* 1 and zp 0 when not quantized */
    int64_t zp, lo, hi;
} qx_t;

/* An element-wise op's iteration, planned at create: the output as outer rows of inner elements,
 * each operand's strides over the output's 6-d shape (0 where it broadcasts). */
typedef struct {
    int o6[PDQ_G_MAX_DIMS];
    long sa[PDQ_G_MAX_DIMS], sb[PDQ_G_MAX_DIMS];
    size_t outer, rows_per_task;
    int inner, same;
} qx_bin;

/* Per-op prepared data (built at create). */
typedef struct {
    /* ADD / SUB / MUL / DIV */
    qx_bin bin;
    /* FULLY_CONNECTED */
    const uint8_t *w;      /* [out, in] codes: one per byte (uint8), or packed two a byte (u4) */
    int u4;                /* prefill rows of a uint4 weight: unpacked per task into wrows */
    uint8_t *wrows;        /* [threads][4][in] codes of the rows a task is at */
    const float *wf;       /* float weight (fallback path) */
    int32_t *zw;           /* [out] weight zero points (one group) */
    double *sw;            /* [out] sx * weight scale (one group) */
    /* groups: weight zero points [out][ngroups], or one row of them that every row shares
     * (gz_stride 0: a symmetric grid); scales as f16 [out][ngroups] when each one is exactly an
     * f16 value (gs16, as pdq's compact group scales are), else the graph's float32 array (gs).
     * Two bytes a group then, not five. A term's multiplier is sx * (double)scale, exact (two
     * float32 mantissas); group_grids widens a few rows' scales for the kernels into gwide. A
     * shared row is held GROUP_ROWS times over (what the kernels read for any rows). */
    uint8_t *gz;
    size_t gz_stride;
    const float *gs;
    uint16_t *gs16;
    float *gwide;          /* [threads][GROUP_ROWS][ngroups] widened f16 scales */
    double sx;             /* the activation scale */
    int group, ngroups;    /* columns per group (in: per row) and groups per row */
    int group_i32;         /* a group's tile sums fit int32 (pdq_qx_tile4x4_groups_vnni) */
    const float *bias;     /* [out] or NULL */
    int fout, fin, rows;
    int int_path;          /* integer sums (else the double fallback of a float operand) */
    int any_zw;            /* some weight zero point != 0: sum(x) per row needed */
    int16_t *xs;           /* [rows, in] uint8 activations widened to x - zx */
    /* uint4 decode (rows < 4, SIMD): the weight packed as the packed kernels take it (4-row
     * layout, raw codes: zero 0, scale 1), whose exact sums (pdq_qexact_rows) replace p->w's */
    struct pdq_qmatrix *qm;
    uint8_t *xbuf;         /* [rows] prepared activation rows of xbytes each */
    int64_t *gsum;         /* grouped decode: [threads][GROUP_ROWS][ngroups] exact sums */
    size_t xbytes;
    int64_t *sumx;         /* [rows][ngroups] sums of x over each group's columns */
    /* unary table over every input code (index code - lo) */
    int16_t *table;
    /* RMS_NORM gamma values / GATHER of a quantized constant: per-row scale and zero point */
    double *gamma;
    int gamma_n;
    double *row_s;
    int64_t *row_zp;
    /* RESHAPE between grids with the same shape: an imported QUANTIZE / DEQUANTIZE */
    int requant_move;
    /* TRANSPOSE / SLICE / STRIDED_SLICE: the copy planned once (has_box) */
    pdq_k_box box;
    int has_box;
    /* BATCH_MATMUL rows: one accumulator row per worker thread */
    int64_t *acc;
    double *dacc;          /* BATCH_MATMUL float rows / SOFTMAX terms, one row per thread */
} qx_prep;

struct pdq_qexec {
    const pdq_graph *g;
    pdq_pool *pool;      /* borrowed (pdq_exec_opts); NULL: run on the caller */
    int force_scalar, no_avx512; /* pdq_exec_opts' level switches */
    pdq_level level;     /* the kernels' level (kernels/cpu_features.h) */
    pdq_qx_traits k;     /* the kernels at that level, every entry from it or its fallbacks */
    qx_t *t;             /* [n_tensors] */
    size_t *offset;      /* [n_tensors] arena offsets of non-constant tensors */
    void **bound;        /* [n_tensors] caller memory of inputs/outputs, or NULL */
    void **ptrs;         /* [n_tensors] storage at run */
    size_t arena_bytes;
    void *arena;
    qx_prep *prep;       /* [n_ops] */
    double *dscratch;    /* BATCH_MATMUL through dgemm: operands and product as exact integers */
    size_t dscratch_n;
    /* the driver's (exec/qexec.c; kernels read only in_level, through pdq_qx_par). The
     * schedule: ops by dependency level (order), levels as runs of it (level_at[l] .. [l + 1]);
     * a level's small ops (small[op]: order[small_at[l]] ..) run one whole op per pool task, the
     * others first, one after the other with their own split. in_level: set while a level's tasks
     * run, so an op's own loops stay on the thread that runs it. */
    int *order, *level_at, *small_at, n_levels;
    unsigned char *small;
    int in_level;
};

/* Real value of element i / requantized store of y into element i. */
static inline double qx_ld(const qx_t *q, const void *p, size_t i) {
    switch (q->dt) {
    case PDQ_TI16: return pdq_rq_value(((const int16_t *)p)[i], q->s, q->zp);
    case PDQ_TU8: return pdq_rq_value(((const uint8_t *)p)[i], q->s, q->zp);
    case PDQ_TI32: return (double)((const int32_t *)p)[i];
    default: return (double)((const float *)p)[i];
    }
}

static inline void qx_st(const qx_t *q, void *p, size_t i, double y) {
    switch (q->dt) {
    case PDQ_TI16: ((int16_t *)p)[i] = (int16_t)pdq_rq_code(y, q->s, q->zp, q->lo, q->hi); break;
    case PDQ_TU8: ((uint8_t *)p)[i] = (uint8_t)pdq_rq_code(y, q->s, q->zp, q->lo, q->hi); break;
    case PDQ_TI32: ((int32_t *)p)[i] = (int32_t)pdq_rq_code(y, 1.0, 0, INT32_MIN, INT32_MAX); break;
    default: ((float *)p)[i] = (float)y; break;
    }
}

static inline int64_t qx_code(const qx_t *q, const void *p, size_t i) {
    return q->dt == PDQ_TI16 ? ((const int16_t *)p)[i] : ((const uint8_t *)p)[i];
}

/* The int16 stores' view of a quantized tensor's grid. */
static inline pdq_qx_grid qx_grid(const qx_t *q) { return (pdq_qx_grid){q->s, q->zp, q->lo, q->hi}; }

/* Parallel loop over tasks: the pool, or in order on the caller (no pool, one task, or inside a
 * level's task, where the op's own loops stay on the thread that runs it). */
static inline void pdq_qx_par(pdq_qexec *x, int n_tasks, pdq_pool_fn fn, void *ctx) {
    if (n_tasks == 1 || !x->pool || x->in_level) {
        for (int i = 0; i < n_tasks; i++) fn(ctx, i, 0);
        return;
    }
    pdq_pool_run(x->pool, n_tasks, fn, ctx);
}

/* FULLY_CONNECTED's integer kernel (fully_connected_int.c). */
pdq_code pdq_qx_fc_prepare(pdq_qexec *x, int op_index, pdq_status *st);
pdq_code pdq_qx_fc_run(pdq_qexec *x, int op_index, pdq_status *st);
void pdq_qx_prep_free(qx_prep *p);

/* ---------------------------------------------------------------- what the ops' integer kernels share (qx_util.c) */

/* The names an op's integer kernel works with, given x and its index oi. */
#define QX_OP_HEAD                                   \
    const pdq_graph *g = x->g;                       \
    const pdq_op *op = &g->ops[oi];                  \
    qx_prep *p = &x->prep[oi];                       \
    const qx_t *yq = &x->t[op->out[0]];              \
    const pdq_tensor *a = &g->tensors[op->in[0]];    \
    (void)p; (void)yq; (void)a

static inline int qx_same_grid(const qx_t *a, const qx_t *b) {
    return a->dt == b->dt && a->quant == b->quant && a->s == b->s && a->zp == b->zp;
}
/* Code (or integer value) of element i of an integer constant. */
int64_t pdq_qx_const_code(const pdq_tensor *t, size_t i);
/* Value of element i of a constant (codes with per-channel qparams along quantized_dim, or plain). */
double pdq_qx_const_value(const pdq_tensor *t, size_t i);
/* A constant operand of an element-wise op read through q: float constants as they are,
 * per-tensor quantized ones as codes (per-channel constants are not element-wise operands). */
pdq_code pdq_qx_const_desc(const pdq_tensor *t, qx_t *q, pdq_status *st);
/* Rows per task: at least 1024 elements a task, else an even share for each thread. */
size_t pdq_qx_rows_per(size_t outer, int inner, int threads);

/* A row op's run over its input's rows (of its last dim; of 1 element when per_element), split
 * in tasks of whole rows: fn(ctx, task, thread) with ctx a qx_rows. */
typedef struct {
    pdq_qexec *x;
    const pdq_op *op;
    const qx_prep *p;
    size_t rows, rows_per_task;
    int c;
} qx_rows;
void pdq_qx_rows_run(pdq_qexec *x, const pdq_op *op, pdq_pool_fn fn, int per_element);
/* A row task's names: its qx_rows c, input and output descriptors and data, and its rows [r0, r1). */
#define QX_ROWS_HEAD(vc, task)                                                  \
    const qx_rows *c = vc;                                                      \
    const qx_t *xq = &c->x->t[c->op->in[0]], *yq = &c->x->t[c->op->out[0]];     \
    const void *xd = c->x->ptrs[c->op->in[0]];                                  \
    void *yd = c->x->ptrs[c->op->out[0]];                                       \
    size_t r0, r1;                                                              \
    qx_rows_of(c, task, &r0, &r1)
/* The task's rows [*r0, *r1). */
static inline void qx_rows_of(const qx_rows *c, int task, size_t *r0, size_t *r1) {
    *r0 = (size_t)task * c->rows_per_task;
    *r1 = *r0 + c->rows_per_task < c->rows ? *r0 + c->rows_per_task : c->rows;
}

/* The layout ops' integer kernel: codes move as stored, on the input's grid (every data input's,
 * for a concatenation); a one-copy op runs its planned box. */
pdq_code pdq_qx_move_prepare(pdq_qexec *x, int oi, pdq_status *st);
pdq_code pdq_qx_move_run(pdq_qexec *x, int oi, pdq_status *st);

#endif
