/* BATCH_MATMUL: a[..., M, K] . b[..., K, N] -> [..., M, N] (adj_x / adj_y transpose the last two
 * dims), batch dims broadcast. Float: cblas_sgemm per matrix. Integer: exact sums -- int64 in the
 * scalar kernel; dgemm on the codes otherwise, exact because every product and partial sum is an
 * integer below 2^53 (|code| <= 2^15, so K < 2^22 keeps K * 2^30 below 2^52) whatever the order
 * or the BLAS thread count -- times sa * sb, requantized. */
#include <cblas.h>
#include <stdlib.h>
#include <string.h>

#include "ops/op_def.h"
#include "ops/qx_kernel.h"
#include "ops/op_rules.h"

static pdq_code infer(const pdq_graph *g, const pdq_op *op, int *nd, int *sh, pdq_status *st) {
    pdq_code rc;
    if ((rc = pdq_rule_inputs(op, 2, 2, st))) return rc;
    const pdq_tensor *a = OPERAND(0), *b = OPERAND(1);
    if ((rc = pdq_rule_rank(op, a, 2, st)) || (rc = pdq_rule_rank(op, b, 2, st))) return rc;
    int am = a->shape[a->ndim - 2], ak = a->shape[a->ndim - 1];
    if (op->opt.bmm.adj_x) { int t = am; am = ak; ak = t; }
    int bk = b->shape[b->ndim - 2], bn = b->shape[b->ndim - 1];
    if (op->opt.bmm.adj_y) { int t = bk; bk = bn; bn = t; }
    if (ak != bk)
        return pdq_fail(st, PDQ_ERR_SHAPE, "BATCH_MATMUL %s x %s: inner dims %d vs %d", a->name, b->name, ak, bk);
    pdq_tensor ba = *a, bb = *b; /* batch dims only */
    ba.ndim -= 2;
    bb.ndim -= 2;
    if ((rc = pdq_rule_broadcast(op, &ba, &bb, nd, sh, st))) return rc;
    if (*nd + 2 > PDQ_G_MAX_DIMS) return pdq_fail(st, PDQ_ERR_SHAPE, "BATCH_MATMUL rank too large");
    sh[(*nd)++] = am;
    sh[(*nd)++] = bn;
    return PDQ_OK;
}

static pdq_code f32(const pdq_graph *g, const pdq_op *op, void *const *ptrs, pdq_status *st) {
    (void)st;
    const pdq_tensor *a = &g->tensors[op->in[0]], *b = &g->tensors[op->in[1]];
    const pdq_tensor *o = &g->tensors[op->out[0]];
    const float *ad = ptrs[op->in[0]], *bd = ptrs[op->in[1]];
    float *od = ptrs[op->out[0]];
    int M = o->shape[o->ndim - 2], N = o->shape[o->ndim - 1];
    int K = op->opt.bmm.adj_x ? a->shape[a->ndim - 2] : a->shape[a->ndim - 1];
    int lda = a->shape[a->ndim - 1], ldb = b->shape[b->ndim - 1];
    /* Batch broadcasting over up to 4 leading dims: treat batch dims as a 6-d index space. */
    int nb = o->ndim - 2;
    int oshape[PDQ_G_MAX_DIMS] = {1, 1, 1, 1, 1, 1};
    long sa[PDQ_G_MAX_DIMS] = {0}, sb[PDQ_G_MAX_DIMS] = {0};
    long amat = (long)a->shape[a->ndim - 2] * a->shape[a->ndim - 1];
    long bmat = (long)b->shape[b->ndim - 2] * b->shape[b->ndim - 1];
    long acc_a = amat, acc_b = bmat;
    for (int i = nb - 1; i >= 0; i--) {
        int ia = i - (nb - (a->ndim - 2)), ib = i - (nb - (b->ndim - 2));
        int da = ia >= 0 ? a->shape[ia] : 1, db = ib >= 0 ? b->shape[ib] : 1;
        oshape[i] = o->shape[i];
        sa[i] = da == 1 ? 0 : acc_a;
        sb[i] = db == 1 ? 0 : acc_b;
        acc_a *= da;
        acc_b *= db;
    }
    long total = 1;
    for (int i = 0; i < nb; i++) total *= oshape[i];
    for (long t = 0; t < total; t++) {
        long rem = t, offa = 0, offb = 0;
        for (int i = nb - 1; i >= 0; i--) {
            long idx = rem % oshape[i];
            rem /= oshape[i];
            offa += idx * sa[i];
            offb += idx * sb[i];
        }
        cblas_sgemm(CblasRowMajor, op->opt.bmm.adj_x ? CblasTrans : CblasNoTrans,
                    op->opt.bmm.adj_y ? CblasTrans : CblasNoTrans, M, N, K, 1.0f, ad + offa, lda,
                    bd + offb, ldb, 0.0f, od + t * (long)M * N, N);
    }
    return PDQ_OK;
}

/* ---------------------------------------------------------------- integer */

static pdq_code qx_prepare(pdq_qexec *x, int oi, pdq_status *st) {
    QX_OP_HEAD;
    for (int i = 0; i < 2; i++)
        if (g->tensors[op->in[i]].kind == PDQ_TK_CONST)
            return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "integer mode: constant BATCH_MATMUL operand %s",
                            g->tensors[op->in[i]].name);
    const pdq_tensor *b = &g->tensors[op->in[1]], *o = &g->tensors[op->out[0]];
    int K = op->opt.bmm.adj_x ? a->shape[a->ndim - 2] : a->shape[a->ndim - 1];
    size_t N = (size_t)o->shape[o->ndim - 1], nt = (size_t)pdq_pool_threads(x->pool);
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
        if (integer && c->x->k.bmm_acc_i16 && bq->dt == PDQ_TI16 && c->bjs == 1 && bq->zp == 0 && aq->dt == PDQ_TI16) {
            memset(acc, 0, sizeof(int64_t) * (size_t)N);
            int32_t av[256];
            for (int k0 = 0; k0 < K; k0 += 256) {
                int nk = K - k0 < 256 ? K - k0 : 256;
                for (int k = 0; k < nk; k++) av[k] = (int32_t)(qx_code(aq, ad, (size_t)(offa + i * c->aim + (k0 + k) * c->ask)) - aq->zp);
                c->x->k.bmm_acc_i16(acc, av, nk, (const int16_t *)bd + offb + (long)k0 * c->bks, c->bks, N);
            }
            pdq_qx_grid yg = qx_grid(yq);
            int j = yq->dt == PDQ_TI16 ? c->x->k.sums_i16(acc, &mult, 0, NULL, &yg, (int16_t *)yd + yrow, N) : 0;
            for (; j < N; j++) qx_st(yq, yd, yrow + j, (double)acc[j] * mult);
        } else if (integer) {
            memset(acc, 0, sizeof(int64_t) * (size_t)N);
            for (int k = 0; k < K; k++) {
                int64_t av = qx_code(aq, ad, (size_t)(offa + i * c->aim + k * c->ask)) - aq->zp;
                if (!av) continue;
                long bo = offb + k * c->bks;
                if (bq->dt == PDQ_TI16 && c->bjs == 1 && bq->zp == 0) {
                    const int16_t *br = (const int16_t *)bd + bo;
                    c->x->k.axpy_i16(acc, (int32_t)av, br, N);
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

static pdq_code qx_run(pdq_qexec *x, int oi, pdq_status *st) {
    (void)st;
    const pdq_op *op = &x->g->ops[oi];
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
    if (x->level != PDQ_LEVEL_SCALAR && aq->quant && bq->quant && c.K < (1 << 22) && x->dscratch && c.M >= 8) {
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
        return PDQ_OK;
    }
    c.RB = 16;
    c.row_blocks = (c.M + c.RB - 1) / c.RB;
    pdq_qx_par(x, (int)(total * c.row_blocks), bmm_task, &c);
    return PDQ_OK;
}

static int opt_same(const pdq_op *a, const pdq_op *b) {
    return !a->opt.bmm.adj_x == !b->opt.bmm.adj_x && !a->opt.bmm.adj_y == !b->opt.bmm.adj_y;
}

const pdq_op_def pdq_op_batch_matmul = {
    .name = "BATCH_MATMUL", .kind = PDQ_OPK_LINALG, .grid = PDQ_GRID_OWN,
    .infer = infer, .f32 = f32, .qx = {qx_prepare, qx_run}, .opt_same = opt_same,
};
