/* FULLY_CONNECTED and BATCH_MATMUL through cblas_sgemm. */
#include <cblas.h>
#include <string.h>

#include "ops.h"

static pdq_code fully_connected(const pdq_graph *g, const pdq_op *op, void *const *ptrs) {
    const pdq_tensor *x = &g->tensors[op->in[0]], *w = &g->tensors[op->in[1]];
    const float *xd = ptrs[op->in[0]], *wd = ptrs[op->in[1]];
    float *y = ptrs[op->out[0]];
    int in = w->shape[1], out = w->shape[0];
    int rows = (int)(pdq_tensor_count(x) / (size_t)in);
    if (op->n_in == 3) {
        const float *bias = ptrs[op->in[2]];
        for (int r = 0; r < rows; r++) memcpy(y + (size_t)r * out, bias, sizeof(float) * (size_t)out);
    }
    float beta = op->n_in == 3 ? 1.0f : 0.0f;
    if (rows < 8) {
        /* Few rows (decode): sgemm would repack the whole weight each call; gemv streams it. */
        for (int r = 0; r < rows; r++)
            cblas_sgemv(CblasRowMajor, CblasNoTrans, out, in, 1.0f, wd, in, xd + (size_t)r * in, 1, beta,
                        y + (size_t)r * out, 1);
        return PDQ_OK;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, out, in, 1.0f, xd, in, wd, in, beta, y, out);
    return PDQ_OK;
}

static pdq_code batch_matmul(const pdq_graph *g, const pdq_op *op, void *const *ptrs) {
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

pdq_code pdq_k_linalg(const pdq_graph *g, const pdq_op *op, void *const *ptrs, pdq_status *st) {
    if (op->type == PDQ_OP_FULLY_CONNECTED) return fully_connected(g, op, ptrs);
    if (op->type == PDQ_OP_BATCH_MATMUL) return batch_matmul(g, op, ptrs);
    return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "linalg kernel: op %s", pdq_op_name(op->type));
}
