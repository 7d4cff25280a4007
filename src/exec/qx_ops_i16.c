/* Integer-mode kernels other than FULLY_CONNECTED: BATCH_MATMUL (exact integer sums: int64 in the
 * scalar kernel; dgemm on the codes otherwise, exact because every product and partial sum is an
 * integer below 2^53 -- |code| <= 2^15, so K < 2^22 keeps K * 2^30 below 2^52 -- whatever the
 * order or the BLAS thread count), element-wise
 * ops and the non-linear ops by the rule of include/pdq/qexec.h (dequantize to double, compute,
 * requantize; tables over every input code where the input is a code), layout ops on codes. */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/op_table.h"
#include "ir/ops.h"
#include "kernels/qmatmul.h"
#include "qx_internal.h"

void pdq_qx_prep_free(qx_prep *p) {
    free(p->zw);
    free(p->sw);
    free(p->xs);
    free(p->wrows);
    pdq_qmatrix_free(p->qm);
    free(p->qm);
    free(p->xbuf);
    free(p->gsum);
    free(p->sumx);
    free(p->table);
    free(p->gamma);
    free(p->row_s);
    free(p->row_zp);
    free(p->acc);
    free(p->dacc);
    memset(p, 0, sizeof *p);
}

static int same_grid(const qx_t *a, const qx_t *b) {
    return a->dt == b->dt && a->quant == b->quant && a->s == b->s && a->zp == b->zp;
}

static double unary_f(pdq_op_type t, double v) {
    switch (t) {
    case PDQ_OP_NEG: return -v;
    case PDQ_OP_RSQRT: return 1.0 / sqrt(v);
    default: return 1.0 / (1.0 + exp(-v)); /* LOGISTIC */
    }
}

/* Per-row scale / zero point of a quantized constant along dim 0 (GATHER of the embedding). */
static pdq_code const_rows(const pdq_tensor *t, qx_prep *p, pdq_status *st) {
    int rows = t->shape[0];
    if (t->q->block || (t->q->n != 1 && (t->q->n != rows || t->q->quantized_dim != 0)))
        return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "integer mode: %s: %d scales%s, need 1 or one per row", t->name, t->q->n,
                        t->q->block ? " in groups" : "");
    p->row_s = malloc(sizeof(double) * (size_t)rows);
    p->row_zp = malloc(sizeof(int64_t) * (size_t)rows);
    if (!p->row_s || !p->row_zp) return pdq_fail(st, PDQ_ERR_NOMEM, "integer mode: %s", t->name);
    for (int r = 0; r < rows; r++) {
        int c = t->q->n == 1 ? 0 : r;
        p->row_s[r] = (double)t->q->scale[c];
        p->row_zp[r] = t->q->zero_point[c];
    }
    return PDQ_OK;
}

/* Code (or integer value) of element i of an integer constant. */
static int64_t const_code(const pdq_tensor *t, size_t i) {
    switch (t->dtype) {
    case PDQ_TI16: return ((const int16_t *)t->data)[i];
    case PDQ_TU8: return ((const uint8_t *)t->data)[i];
    case PDQ_TU4: return pdq_u4_at(t->data, i);
    case PDQ_TI32: return ((const int32_t *)t->data)[i];
    default: return ((const int64_t *)t->data)[i];
    }
}

/* Value of element i of a constant (codes with per-channel qparams along quantized_dim, or plain). */
static double const_value(const pdq_tensor *t, size_t i) {
    if (t->dtype == PDQ_TF32) return (double)((const float *)t->data)[i];
    double v = (double)const_code(t, i);
    if (!t->q) return v;
    size_t inner = 1;
    int qd = t->q->n > 1 ? t->q->quantized_dim : 0;
    for (int d = qd + 1; d < t->ndim; d++) inner *= (size_t)t->shape[d];
    size_t c = t->q->n > 1 ? (i / inner) % (size_t)t->q->n : 0;
    return pdq_rq_value((int64_t)v, (double)t->q->scale[c], t->q->zero_point[c]);
}

/* Constant operands of element-wise ops read through a descriptor: float constants as they are,
 * per-tensor quantized ones as codes. Per-channel constants are not element-wise operands. */
static pdq_code const_desc(const pdq_tensor *t, qx_t *q, pdq_status *st) {
    memset(q, 0, sizeof *q);
    q->s = 1.0;
    q->dt = t->dtype;
    if (t->q && t->dtype != PDQ_TF32) {
        /* uint4 is packed two codes a byte: a weight of FULLY_CONNECTED only */
        if (t->q->n != 1 || (t->dtype != PDQ_TI16 && t->dtype != PDQ_TU8))
            return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "integer mode: constant operand %s (%s, %d scales)", t->name,
                            pdq_tdtype_name(t->dtype), t->q->n);
        q->quant = 1;
        q->s = (double)t->q->scale[0];
        q->zp = t->q->zero_point[0];
    } else if (t->dtype != PDQ_TF32 && t->dtype != PDQ_TI32) {
        return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "integer mode: constant operand %s of dtype %s", t->name,
                        pdq_tdtype_name(t->dtype));
    }
    return PDQ_OK;
}

/* The per-class prepare steps (tables, constants, scratch), each given the op's index. */
#define PREP_HEAD                                    \
    const pdq_graph *g = x->g;                       \
    const pdq_op *op = &g->ops[oi];                  \
    qx_prep *p = &x->prep[oi];                       \
    const qx_t *yq = &x->t[op->out[0]];              \
    const pdq_tensor *a = &g->tensors[op->in[0]];    \
    (void)p; (void)yq; (void)a

static pdq_code bmm_prepare(pdq_qexec *x, int oi, pdq_status *st) {
    PREP_HEAD;
    for (int i = 0; i < 2; i++)
        if (g->tensors[op->in[i]].kind == PDQ_TK_CONST)
            return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "integer mode: constant BATCH_MATMUL operand %s",
                            g->tensors[op->in[i]].name);
    const pdq_tensor *b = &g->tensors[op->in[1]], *o = &g->tensors[op->out[0]];
    int K = op->opt.bmm.adj_x ? a->shape[a->ndim - 2] : a->shape[a->ndim - 1];
    size_t N = (size_t)o->shape[o->ndim - 1], nt = (size_t)pdq_pool_threads(x->o.pool);
    p->acc = malloc(sizeof(int64_t) * N * nt);
    p->dacc = malloc(sizeof(double) * N * nt);
    if (!p->acc || !p->dacc) return pdq_fail(st, PDQ_ERR_NOMEM, "integer mode: BATCH_MATMUL rows");
    if (x->t[op->in[0]].quant && x->t[op->in[1]].quant && K < (1 << 22)) {
        size_t need = pdq_tensor_count(a) + pdq_tensor_count(b) + pdq_tensor_count(&g->tensors[op->out[0]]);
        if (need > x->dscratch_n) {
            double *d = realloc(x->dscratch, sizeof(double) * need);
            if (!d) return pdq_fail(st, PDQ_ERR_NOMEM, "integer mode: BATCH_MATMUL scratch");
            x->dscratch = d;
            x->dscratch_n = need;
        }
    }
    return PDQ_OK;
}

/* Rows per task: at least 1024 elements a task (a smaller one costs more to hand out than to
 * run), else an even share for each thread (an uneven last task idles the others). */
static size_t rows_per(size_t outer, int inner, int threads) {
    size_t in = (size_t)(inner > 0 ? inner : 1), total = outer * in;
    size_t share = (total + (size_t)threads - 1) / (size_t)threads;
    size_t want = ((share > 1024 ? share : 1024) + in - 1) / in;
    if (want > outer) want = outer ? outer : 1;
    return want;
}

static pdq_code binary_prepare(pdq_qexec *x, int oi, pdq_status *st) {
    PREP_HEAD;
    for (int i = 0; i < 2; i++) {
        const pdq_tensor *t = &g->tensors[op->in[i]];
        if (t->kind == PDQ_TK_CONST) {
            pdq_code rc = const_desc(t, &x->t[op->in[i]], st);
            if (rc != PDQ_OK) return rc;
        }
    }
    const pdq_tensor *b = &g->tensors[op->in[1]], *o = &g->tensors[op->out[0]];
    qx_bin *bp = &p->bin;
    size_t n = pdq_tensor_count(o);
    pdq_k_shape6(o, bp->o6);
    pdq_k_strides6(a, bp->o6, bp->sa);
    pdq_k_strides6(b, bp->o6, bp->sb);
    bp->same = pdq_tensor_count(a) == n && pdq_tensor_count(b) == n;
    bp->inner = bp->o6[5] > 0 ? bp->o6[5] : 1;
    bp->outer = n / (size_t)bp->inner;
    bp->rows_per_task = rows_per(bp->outer, bp->inner, pdq_pool_threads(x->o.pool));
    return PDQ_OK;
}

static pdq_code unary_prepare(pdq_qexec *x, int oi, pdq_status *st) {
    PREP_HEAD;
    const qx_t *xq = &x->t[op->in[0]];
    if (a->kind == PDQ_TK_CONST) return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "integer mode: constant input %s", a->name);
    if (!xq->quant || !yq->quant) return PDQ_OK; /* computed per element */
    size_t n = (size_t)(xq->hi - xq->lo + 1);
    p->table = malloc(sizeof(int16_t) * n); /* int16 or uint8 codes: 128 KiB for an int16 input */
    if (!p->table) return pdq_fail(st, PDQ_ERR_NOMEM, "integer mode: table");
    for (size_t i = 0; i < n; i++) {
        double v = unary_f(op->type, pdq_rq_value(xq->lo + (int64_t)i, xq->s, xq->zp));
        p->table[i] = (int16_t)pdq_rq_code(v, yq->s, yq->zp, yq->lo, yq->hi);
    }
    return PDQ_OK;
}

static pdq_code rms_prepare(pdq_qexec *x, int oi, pdq_status *st) {
    PREP_HEAD;
    const pdq_tensor *w = &g->tensors[op->in[1]];
    if (a->kind == PDQ_TK_CONST || w->kind != PDQ_TK_CONST)
        return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "integer mode: RMS_NORM needs a constant gamma (%s)", w->name);
    p->gamma_n = (int)pdq_tensor_count(w);
    if (p->gamma_n != 1 && p->gamma_n != a->shape[a->ndim - 1])
        return pdq_fail(st, PDQ_ERR_SHAPE, "integer mode: RMS_NORM gamma %s has %d values for rows of %d", w->name,
                        p->gamma_n, a->shape[a->ndim - 1]);
    p->gamma = malloc(sizeof(double) * (size_t)p->gamma_n);
    if (!p->gamma) return pdq_fail(st, PDQ_ERR_NOMEM, "integer mode: gamma");
    for (int i = 0; i < p->gamma_n; i++) p->gamma[i] = const_value(w, (size_t)i);
    return PDQ_OK;
}

static pdq_code softmax_prepare(pdq_qexec *x, int oi, pdq_status *st) {
    PREP_HEAD;
    const qx_t *xq = &x->t[op->in[0]];
    if (a->kind == PDQ_TK_CONST) return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "integer mode: constant input %s", a->name);
    if (!xq->quant) return PDQ_OK;
    /* one row of terms per thread (a table over every code would be 512 KiB per op: 360 MiB for
     * the 1.1B decode graph's per-head softmaxes, each read from DRAM) */
    size_t C = (size_t)a->shape[a->ndim - 1], nt = (size_t)pdq_pool_threads(x->o.pool);
    p->dacc = malloc(sizeof(double) * C * nt);
    if (!p->dacc) return pdq_fail(st, PDQ_ERR_NOMEM, "integer mode: softmax row of %zu", C);
    return PDQ_OK;
}

/* Data moves keep their input's grid; a GATHER of a constant table dequantizes its rows; a
 * same-shape RESHAPE between grids is the importer's QUANTIZE / DEQUANTIZE. */
static pdq_code move_prepare(pdq_qexec *x, int oi, pdq_status *st) {
    PREP_HEAD;
    if (op->type == PDQ_OP_GATHER && a->kind == PDQ_TK_CONST) {
        if (a->q && a->dtype != PDQ_TF32) return const_rows(a, p, st);
        if (a->dtype != PDQ_TF32) return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "integer mode: GATHER of %s", a->name);
        return PDQ_OK;
    }
    if (op->type == PDQ_OP_RESHAPE && a->kind != PDQ_TK_CONST && !same_grid(&x->t[op->in[0]], yq) &&
        pdq_tensor_count(a) == pdq_tensor_count(&g->tensors[op->out[0]])) {
        /* each value goes to the output's grid by the one requantization rule */
        p->requant_move = 1;
        return PDQ_OK;
    }
    int n_data = op->type == PDQ_OP_CONCATENATION ? op->n_in : 1;
    for (int i = 0; i < n_data; i++) {
        const pdq_tensor *t = &g->tensors[op->in[i]];
        if (t->kind == PDQ_TK_CONST || !same_grid(&x->t[op->in[i]], yq))
            return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "integer mode: %s moves %s onto another grid or dtype (%s); layout "
                            "ops keep their input's grid", pdq_op_name(op->type), t->name, g->tensors[op->out[0]].name);
    }
    p->has_box = pdq_k_box_plan(g, op, &p->box); /* decode runs some hundred of these per layer */
    return PDQ_OK;
}

/* ---------------------------------------------------------------- BATCH_MATMUL */

typedef struct {
    pdq_qexec *x;
    const pdq_op *op;
    int M, N, K, RB, row_blocks;
    long ask, aim, bks, bjs;   /* element strides: a(i,k) = i*aim + k*ask, b(k,j) = k*bks + j*bjs */
    long sa[PDQ_G_MAX_DIMS], sb[PDQ_G_MAX_DIMS];
    int oshape[PDQ_G_MAX_DIMS], nb;
} bmm_ctx;

static void bmm_task(void *vc, int task, int thread) {
    const bmm_ctx *c = vc;
    const pdq_op *op = c->op;
    const qx_t *aq = &c->x->t[op->in[0]], *bq = &c->x->t[op->in[1]], *yq = &c->x->t[op->out[0]];
    const void *ad = c->x->ptrs[op->in[0]], *bd = c->x->ptrs[op->in[1]];
    void *yd = c->x->ptrs[op->out[0]];
    long t = task / c->row_blocks;
    int i0 = (task % c->row_blocks) * c->RB, i1 = i0 + c->RB < c->M ? i0 + c->RB : c->M;
    long rem = t, offa = 0, offb = 0;
    for (int i = c->nb - 1; i >= 0; i--) {
        long idx = rem % c->oshape[i];
        rem /= c->oshape[i];
        offa += idx * c->sa[i];
        offb += idx * c->sb[i];
    }
    int N = c->N, K = c->K;
    int integer = aq->quant && bq->quant;
    const qx_prep *p = &c->x->prep[op - c->x->g->ops];
    int64_t *acc = p->acc + (size_t)thread * N;
    double *dacc = p->dacc + (size_t)thread * N;
    double mult = aq->s * bq->s;
    for (int i = i0; i < i1; i++) {
        size_t yrow = ((size_t)t * c->M + i) * N;
        if (integer && c->x->simd && bq->dt == PDQ_TI16 && c->bjs == 1 && bq->zp == 0 && aq->dt == PDQ_TI16) {
            memset(acc, 0, sizeof(int64_t) * (size_t)N);
            int32_t av[256];
            for (int k0 = 0; k0 < K; k0 += 256) {
                int nk = K - k0 < 256 ? K - k0 : 256;
                for (int k = 0; k < nk; k++) av[k] = (int32_t)(qx_code(aq, ad, (size_t)(offa + i * c->aim + (k0 + k) * c->ask)) - aq->zp);
                pdq_qx_bmm_acc_i16_avx2(acc, av, nk, (const int16_t *)bd + offb + (long)k0 * c->bks, c->bks, N);
            }
            int j = yq->dt == PDQ_TI16 ? pdq_qx_sums_i16_avx2(acc, &mult, 0, NULL, yq, (int16_t *)yd + yrow, N) : 0;
            for (; j < N; j++) qx_st(yq, yd, yrow + j, (double)acc[j] * mult);
        } else if (integer) {
            memset(acc, 0, sizeof(int64_t) * (size_t)N);
            for (int k = 0; k < K; k++) {
                int64_t av = qx_code(aq, ad, (size_t)(offa + i * c->aim + k * c->ask)) - aq->zp;
                if (!av) continue;
                long bo = offb + k * c->bks;
                if (bq->dt == PDQ_TI16 && c->bjs == 1 && bq->zp == 0) {
                    const int16_t *br = (const int16_t *)bd + bo;
                    if (c->x->simd) pdq_qx_axpy_i16_avx2(acc, (int32_t)av, br, N);
                    else pdq_qx_axpy_i16_scalar(acc, (int32_t)av, br, N);
                } else {
                    for (int j = 0; j < N; j++) acc[j] += av * (qx_code(bq, bd, (size_t)(bo + j * c->bjs)) - bq->zp);
                }
            }
            for (int j = 0; j < N; j++) qx_st(yq, yd, yrow + j, (double)acc[j] * mult);
        } else {
            for (int j = 0; j < N; j++) dacc[j] = 0;
            for (int k = 0; k < K; k++) {
                double av = qx_ld(aq, ad, (size_t)(offa + i * c->aim + k * c->ask));
                long bo = offb + k * c->bks;
                for (int j = 0; j < N; j++) dacc[j] += av * qx_ld(bq, bd, (size_t)(bo + j * c->bjs));
            }
            for (int j = 0; j < N; j++) qx_st(yq, yd, yrow + j, dacc[j]);
        }
    }
}

static void bmm_run(pdq_qexec *x, const pdq_op *op) {
    const pdq_graph *g = x->g;
    const pdq_tensor *a = &g->tensors[op->in[0]], *b = &g->tensors[op->in[1]], *o = &g->tensors[op->out[0]];
    bmm_ctx c;
    memset(&c, 0, sizeof c);
    c.x = x;
    c.op = op;
    c.M = o->shape[o->ndim - 2];
    c.N = o->shape[o->ndim - 1];
    c.K = op->opt.bmm.adj_x ? a->shape[a->ndim - 2] : a->shape[a->ndim - 1];
    long lda = a->shape[a->ndim - 1], ldb = b->shape[b->ndim - 1];
    if (op->opt.bmm.adj_x) { c.aim = 1; c.ask = lda; } else { c.aim = lda; c.ask = 1; }
    if (op->opt.bmm.adj_y) { c.bjs = ldb; c.bks = 1; } else { c.bjs = 1; c.bks = ldb; }
    c.nb = o->ndim - 2;
    for (int i = 0; i < PDQ_G_MAX_DIMS; i++) c.oshape[i] = 1;
    long amat = (long)a->shape[a->ndim - 2] * a->shape[a->ndim - 1];
    long bmat = (long)b->shape[b->ndim - 2] * b->shape[b->ndim - 1];
    long acc_a = amat, acc_b = bmat;
    for (int i = c.nb - 1; i >= 0; i--) {
        int ia = i - (c.nb - (a->ndim - 2)), ib = i - (c.nb - (b->ndim - 2));
        int da = ia >= 0 ? a->shape[ia] : 1, db = ib >= 0 ? b->shape[ib] : 1;
        c.oshape[i] = o->shape[i];
        c.sa[i] = da == 1 ? 0 : acc_a;
        c.sb[i] = db == 1 ? 0 : acc_b;
        acc_a *= da;
        acc_b *= db;
    }
    long total = 1;
    for (int i = 0; i < c.nb; i++) total *= c.oshape[i];
    const qx_t *aq = &x->t[op->in[0]], *bq = &x->t[op->in[1]];
    /* dgemm pays for converting the operands: worth it for prefill-sized products only */
    if (x->simd && aq->quant && bq->quant && c.K < (1 << 22) && x->dscratch && c.M >= 8) {
        size_t na = pdq_tensor_count(a), nbv = pdq_tensor_count(b);
        double *A = x->dscratch, *B = A + na, *C = B + nbv;
        const void *ad = x->ptrs[op->in[0]], *bd = x->ptrs[op->in[1]];
        for (size_t i = 0; i < na; i++) A[i] = (double)(qx_code(aq, ad, i) - aq->zp);
        for (size_t i = 0; i < nbv; i++) B[i] = (double)(qx_code(bq, bd, i) - bq->zp);
        for (long t = 0; t < total; t++) {
            long rem = t, offa = 0, offb = 0;
            for (int i = c.nb - 1; i >= 0; i--) {
                long idx = rem % c.oshape[i];
                rem /= c.oshape[i];
                offa += idx * c.sa[i];
                offb += idx * c.sb[i];
            }
            cblas_dgemm(CblasRowMajor, op->opt.bmm.adj_x ? CblasTrans : CblasNoTrans,
                        op->opt.bmm.adj_y ? CblasTrans : CblasNoTrans, c.M, c.N, c.K, 1.0, A + offa, (int)lda, B + offb,
                        (int)ldb, 0.0, C + t * (long)c.M * c.N, c.N);
        }
        const qx_t *yq = &x->t[op->out[0]];
        void *yd = x->ptrs[op->out[0]];
        double mult = aq->s * bq->s;
        size_t n = (size_t)total * c.M * c.N;
        for (size_t i = 0; i < n; i++) qx_st(yq, yd, i, C[i] * mult);
        return;
    }
    c.RB = 16;
    c.row_blocks = (c.M + c.RB - 1) / c.RB;
    pdq_qx_par(x, (int)(total * c.row_blocks), bmm_task, &c);
}

/* ---------------------------------------------------------------- element-wise */

typedef struct {
    pdq_qexec *x;
    const pdq_op *op;
    const qx_t *aq, *bq;
    const void *ad, *bd;
    const qx_bin *b;
} bin_ctx;

static inline double binop(pdq_op_type t, double a, double b) {
    switch (t) {
    case PDQ_OP_ADD: return a + b;
    case PDQ_OP_SUB: return a - b;
    case PDQ_OP_MUL: return a * b;
    default: return a / b;
    }
}

/* One row of int16 operands into an int16 result (every element-wise op of the a16 graphs): the
 * same doubles as qx_ld / qx_st in the same order, with the op and dtype tests out of the loop. */
#define BIN_I16(EXPR)                                                                                  \
    for (int i = 0; i < n; i++) {                                                                      \
        double u = ((double)a[i * sa] - za) * fa, v = ((double)b[i * sb] - zb) * fb;                   \
        y[i] = (int16_t)pdq_rq_code(EXPR, ys, yz, lo, hi);                                             \
    }
static void bin_row_i16(int simd, pdq_op_type t, const qx_t *aq, const int16_t *a, long sa, const qx_t *bq,
                        const int16_t *b, long sb, const qx_t *yq, int16_t *y, int n) {
    if (simd && t != PDQ_OP_DIV && (sa == 0 || sa == 1) && (sb == 0 || sb == 1)) {
        int done = pdq_qx_bin_i16_avx2(t, aq, a, (int)sa, bq, b, (int)sb, yq, y, n);
        a += done * sa;
        b += done * sb;
        y += done;
        n -= done;
    }
    double za = (double)aq->zp, fa = aq->s, zb = (double)bq->zp, fb = bq->s, ys = yq->s;
    int64_t yz = yq->zp, lo = yq->lo, hi = yq->hi;
    switch (t) {
    case PDQ_OP_ADD: BIN_I16(u + v); break;
    case PDQ_OP_SUB: BIN_I16(u - v); break;
    case PDQ_OP_MUL: BIN_I16(u * v); break;
    default: BIN_I16(u / v); break;
    }
}
#undef BIN_I16

static void bin_task(void *vc, int task, int thread) {
    (void)thread;
    const bin_ctx *c = vc;
    const qx_t *yq = &c->x->t[c->op->out[0]];
    void *yd = c->x->ptrs[c->op->out[0]];
    pdq_op_type t = c->op->type;
    const qx_bin *bp = c->b;
    size_t r0 = (size_t)task * bp->rows_per_task, r1 = r0 + bp->rows_per_task < bp->outer ? r0 + bp->rows_per_task : bp->outer;
    int inner = bp->inner;
    int i16 = c->aq->dt == PDQ_TI16 && c->bq->dt == PDQ_TI16 && yq->dt == PDQ_TI16;
    for (size_t r = r0; r < r1; r++) {
        size_t base = r * (size_t)inner;
        if (bp->same && i16) {
            bin_row_i16(c->x->simd, t, c->aq, (const int16_t *)c->ad + base, 1, c->bq, (const int16_t *)c->bd + base, 1, yq,
                        (int16_t *)yd + base, inner);
            continue;
        }
        if (bp->same) {
            for (int i = 0; i < inner; i++)
                qx_st(yq, yd, base + i, binop(t, qx_ld(c->aq, c->ad, base + i), qx_ld(c->bq, c->bd, base + i)));
            continue;
        }
        size_t rem = r;
        long offa = 0, offb = 0;
        for (int d = 4; d >= 0; d--) {
            long idx = (long)(rem % (size_t)bp->o6[d]);
            rem /= (size_t)bp->o6[d];
            offa += idx * bp->sa[d];
            offb += idx * bp->sb[d];
        }
        if (i16) {
            bin_row_i16(c->x->simd, t, c->aq, (const int16_t *)c->ad + offa, bp->sa[5], c->bq, (const int16_t *)c->bd + offb, bp->sb[5],
                        yq, (int16_t *)yd + base, inner);
            continue;
        }
        for (int i = 0; i < inner; i++)
            qx_st(yq, yd, base + i,
                  binop(t, qx_ld(c->aq, c->ad, (size_t)(offa + i * bp->sa[5])), qx_ld(c->bq, c->bd, (size_t)(offb + i * bp->sb[5]))));
    }
}

static void binary_run(pdq_qexec *x, const pdq_op *op) {
    bin_ctx c = {.x = x, .op = op, .aq = &x->t[op->in[0]], .bq = &x->t[op->in[1]], .ad = x->ptrs[op->in[0]],
                 .bd = x->ptrs[op->in[1]], .b = &x->prep[op - x->g->ops].bin};
    pdq_qx_par(x, (int)((c.b->outer + c.b->rows_per_task - 1) / c.b->rows_per_task), bin_task, &c);
}

/* ---------------------------------------------------------------- row ops: unary, RMS_NORM, SOFTMAX */

typedef struct {
    pdq_qexec *x;
    const pdq_op *op;
    const qx_prep *p;
    size_t rows, rows_per_task;
    int c;
} row_ctx;

static void unary_task(void *vc, int task, int thread) {
    (void)thread;
    const row_ctx *c = vc;
    const qx_t *xq = &c->x->t[c->op->in[0]], *yq = &c->x->t[c->op->out[0]];
    const void *xd = c->x->ptrs[c->op->in[0]];
    void *yd = c->x->ptrs[c->op->out[0]];
    size_t r0 = (size_t)task * c->rows_per_task, r1 = r0 + c->rows_per_task < c->rows ? r0 + c->rows_per_task : c->rows;
    size_t i0 = r0 * (size_t)c->c, i1 = r1 * (size_t)c->c;
    const int16_t *tab = c->p->table;
    if (tab && yq->dt == PDQ_TI16) {
        int16_t *y = yd;
        for (size_t i = i0; i < i1; i++) y[i] = (int16_t)tab[qx_code(xq, xd, i) - xq->lo];
    } else if (tab) {
        uint8_t *y = yd;
        for (size_t i = i0; i < i1; i++) y[i] = (uint8_t)tab[qx_code(xq, xd, i) - xq->lo];
    } else {
        for (size_t i = i0; i < i1; i++) qx_st(yq, yd, i, unary_f(c->op->type, qx_ld(xq, xd, i)));
    }
}

static void rms_task(void *vc, int task, int thread) {
    (void)thread;
    const row_ctx *c = vc;
    const qx_t *xq = &c->x->t[c->op->in[0]], *yq = &c->x->t[c->op->out[0]];
    const void *xd = c->x->ptrs[c->op->in[0]];
    void *yd = c->x->ptrs[c->op->out[0]];
    size_t r0 = (size_t)task * c->rows_per_task, r1 = r0 + c->rows_per_task < c->rows ? r0 + c->rows_per_task : c->rows;
    int C = c->c, gn = c->p->gamma_n;
    double eps = (double)c->op->opt.rms.epsilon;
    for (size_t r = r0; r < r1; r++) {
        size_t base = r * (size_t)C;
        double ms;
        if (xq->quant) { /* sum of squared codes: exact */
            int64_t ss = 0;
            for (int i = 0; i < C; i++) {
                int64_t v = qx_code(xq, xd, base + i) - xq->zp;
                ss += v * v;
            }
            ms = (double)ss * (xq->s * xq->s) / (double)C;
        } else {
            double ss = 0;
            for (int i = 0; i < C; i++) { double v = qx_ld(xq, xd, base + i); ss += v * v; }
            ms = ss / (double)C;
        }
        double inv = 1.0 / sqrt(ms + eps);
        int done = 0;
        if (xq->dt == PDQ_TI16 && yq->dt == PDQ_TI16 && c->x->simd)
            done = pdq_qx_scale_i16_avx2(xq, (const int16_t *)xd + base, inv, c->p->gamma, gn, yq, (int16_t *)yd + base, C);
        for (int i = done; i < C; i++)
            qx_st(yq, yd, base + i, qx_ld(xq, xd, base + i) * inv * c->p->gamma[gn == 1 ? 0 : i]);
    }
}

static void softmax_task(void *vc, int task, int thread) {
    const row_ctx *c = vc;
    const qx_t *xq = &c->x->t[c->op->in[0]], *yq = &c->x->t[c->op->out[0]];
    const void *xd = c->x->ptrs[c->op->in[0]];
    void *yd = c->x->ptrs[c->op->out[0]];
    size_t r0 = (size_t)task * c->rows_per_task, r1 = r0 + c->rows_per_task < c->rows ? r0 + c->rows_per_task : c->rows;
    int C = c->c;
    double beta = (double)c->op->opt.softmax.beta;
    for (size_t r = r0; r < r1; r++) {
        size_t base = r * (size_t)C;
        double sum = 0;
        if (xq->quant) {
            /* term_i = exp(-(max code - code_i) * scale * beta), summed in index order; equal codes
             * (the masked positions) share one exp */
            double *term = c->p->dacc + (size_t)thread * (size_t)C, e = 0;
            int64_t mx = qx_code(xq, xd, base), prev = -1;
            for (int i = 1; i < C; i++) { int64_t v = qx_code(xq, xd, base + i); mx = v > mx ? v : mx; }
            for (int i = 0; i < C; i++) {
                int64_t d = mx - qx_code(xq, xd, base + i);
                if (d != prev) { e = exp(-((double)d * xq->s) * beta); prev = d; }
                sum += term[i] = e;
            }
            int done = c->x->simd && yq->dt == PDQ_TI16 ? pdq_qx_div_i16_avx2(term, sum, yq, (int16_t *)yd + base, C) : 0;
            for (int i = done; i < C; i++) qx_st(yq, yd, base + i, term[i] / sum);
        } else {
            double mx = qx_ld(xq, xd, base);
            for (int i = 1; i < C; i++) { double v = qx_ld(xq, xd, base + i); mx = v > mx ? v : mx; }
            for (int i = 0; i < C; i++) sum += exp((qx_ld(xq, xd, base + i) - mx) * beta);
            for (int i = 0; i < C; i++) qx_st(yq, yd, base + i, exp((qx_ld(xq, xd, base + i) - mx) * beta) / sum);
        }
    }
}

static void rows_run(pdq_qexec *x, const pdq_op *op, pdq_pool_fn fn, int per_element) {
    const pdq_tensor *t = &x->g->tensors[op->in[0]];
    row_ctx c = {.x = x, .op = op, .p = &x->prep[op - x->g->ops]};
    c.c = per_element ? 1 : t->shape[t->ndim - 1];
    c.rows = pdq_tensor_count(t) / (size_t)c.c;
    c.rows_per_task = rows_per(c.rows, c.c, pdq_pool_threads(x->o.pool));
    pdq_qx_par(x, (int)((c.rows + c.rows_per_task - 1) / c.rows_per_task), fn, &c);
}

/* ---------------------------------------------------------------- GATHER of a constant */

static pdq_code gather_const(pdq_qexec *x, const pdq_op *op, pdq_status *st) {
    const pdq_graph *g = x->g;
    const pdq_tensor *pt = &g->tensors[op->in[0]], *it = &g->tensors[op->in[1]];
    const qx_prep *p = &x->prep[op - g->ops];
    const qx_t *yq = &x->t[op->out[0]];
    void *yd = x->ptrs[op->out[0]];
    const int32_t *idx = x->ptrs[op->in[1]];
    int axis = op->opt.gather.axis < 0 ? op->opt.gather.axis + pt->ndim : op->opt.gather.axis;
    if (axis != 0) return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "integer mode: GATHER of constant %s on axis %d", pt->name, axis);
    size_t row = pdq_tensor_count(pt) / (size_t)pt->shape[0], n = pdq_tensor_count(it);
    for (size_t i = 0; i < n; i++) {
        int r = idx[i];
        if (r < 0 || r >= pt->shape[0])
            return pdq_fail(st, PDQ_ERR_ARG, "GATHER %s: index %d out of range [0,%d)", pt->name, r, pt->shape[0]);
        for (size_t k = 0; k < row; k++) {
            size_t src = (size_t)r * row + k;
            /* a quantized row is dequantized to float32 first, as the exported file's DEQUANTIZE of
             * the table computes it (TFLite's weight-only GATHER form), then requantized: the
             * in-memory graph and the Circle file give the same codes */
            double v = p->row_s ? (double)(float)pdq_rq_value(const_code(pt, src), p->row_s[r], p->row_zp[r])
                                : (double)((const float *)pt->data)[src];
            qx_st(yq, yd, i * row + k, v);
        }
    }
    return PDQ_OK;
}

/* The per-class run steps. */
static pdq_code fc_run(pdq_qexec *x, int oi, pdq_status *st) {
    (void)st;
    pdq_qx_fc_run(x, oi);
    return PDQ_OK;
}

static pdq_code bmm_step(pdq_qexec *x, int oi, pdq_status *st) {
    (void)st;
    bmm_run(x, &x->g->ops[oi]);
    return PDQ_OK;
}

static pdq_code binary_step(pdq_qexec *x, int oi, pdq_status *st) {
    (void)st;
    binary_run(x, &x->g->ops[oi]);
    return PDQ_OK;
}

static pdq_code unary_step(pdq_qexec *x, int oi, pdq_status *st) {
    (void)st;
    rows_run(x, &x->g->ops[oi], unary_task, 1);
    return PDQ_OK;
}

static pdq_code rms_step(pdq_qexec *x, int oi, pdq_status *st) {
    (void)st;
    rows_run(x, &x->g->ops[oi], rms_task, 0);
    return PDQ_OK;
}

static pdq_code softmax_step(pdq_qexec *x, int oi, pdq_status *st) {
    (void)st;
    rows_run(x, &x->g->ops[oi], softmax_task, 0);
    return PDQ_OK;
}

static pdq_code move_step(pdq_qexec *x, int oi, pdq_status *st) {
    const pdq_op *op = &x->g->ops[oi];
    if (op->type == PDQ_OP_GATHER && x->g->tensors[op->in[0]].kind == PDQ_TK_CONST) return gather_const(x, op, st);
    if (op->type == PDQ_OP_RESHAPE && x->prep[oi].requant_move) {
        const qx_t *xq = &x->t[op->in[0]], *yq = &x->t[op->out[0]];
        size_t n = pdq_tensor_count(&x->g->tensors[op->out[0]]);
        for (size_t i = 0; i < n; i++) qx_st(yq, x->ptrs[op->out[0]], i, qx_ld(xq, x->ptrs[op->in[0]], i));
        return PDQ_OK;
    }
    if (x->prep[oi].has_box) {
        pdq_k_box_copy(&x->prep[oi].box, x->ptrs[op->out[0]], x->ptrs[op->in[0]]);
        return PDQ_OK;
    }
    return pdq_k_shape(x->g, op, x->ptrs, st);
}

/* The integer executor's kernel table, keyed by op type (the IR's own knowledge of each op is in
 * ir/op_table.c; these kernels sit above it). */
static const qx_kernel k_qx[PDQ_OP_COUNT] = {
    [PDQ_OP_FULLY_CONNECTED] = {pdq_qx_fc_prepare, fc_run},
    [PDQ_OP_BATCH_MATMUL] = {bmm_prepare, bmm_step},
    [PDQ_OP_ADD] = {binary_prepare, binary_step}, [PDQ_OP_SUB] = {binary_prepare, binary_step},
    [PDQ_OP_MUL] = {binary_prepare, binary_step}, [PDQ_OP_DIV] = {binary_prepare, binary_step},
    [PDQ_OP_RSQRT] = {unary_prepare, unary_step}, [PDQ_OP_NEG] = {unary_prepare, unary_step},
    [PDQ_OP_LOGISTIC] = {unary_prepare, unary_step},
    [PDQ_OP_RMS_NORM] = {rms_prepare, rms_step},
    [PDQ_OP_SOFTMAX] = {softmax_prepare, softmax_step},
    [PDQ_OP_RESHAPE] = {move_prepare, move_step}, [PDQ_OP_TRANSPOSE] = {move_prepare, move_step},
    [PDQ_OP_CONCATENATION] = {move_prepare, move_step}, [PDQ_OP_STRIDED_SLICE] = {move_prepare, move_step},
    [PDQ_OP_SLICE] = {move_prepare, move_step}, [PDQ_OP_GATHER] = {move_prepare, move_step},
};

const qx_kernel *pdq_qx_kernel_of(pdq_op_type t) {
    return (int)t >= 0 && t < PDQ_OP_COUNT && k_qx[t].prepare ? &k_qx[t] : NULL;
}
