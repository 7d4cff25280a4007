/* Elementwise kernels: broadcasting binary ops, unary ops, RMS_NORM, SOFTMAX, MEAN. */
#include <math.h>
#include <string.h>

#include "ops.h"

void pdq_k_shape6(const pdq_tensor *t, int *s6) {
    int pad = PDQ_G_MAX_DIMS - t->ndim;
    for (int i = 0; i < PDQ_G_MAX_DIMS; i++) s6[i] = i < pad ? 1 : t->shape[i - pad];
}

void pdq_k_strides6(const pdq_tensor *t, const int *out6, long *str6) {
    int s6[PDQ_G_MAX_DIMS];
    pdq_k_shape6(t, s6);
    long acc = 1;
    for (int i = PDQ_G_MAX_DIMS - 1; i >= 0; i--) {
        str6[i] = (s6[i] == 1 && out6[i] != 1) ? 0 : acc;
        acc *= s6[i];
    }
}

static inline float binop(pdq_op_type t, float a, float b) {
    switch (t) {
    case PDQ_OP_ADD: return a + b;
    case PDQ_OP_SUB: return a - b;
    case PDQ_OP_MUL: return a * b;
    default: return a / b;
    }
}

static void binary(const pdq_graph *g, const pdq_op *op, void *const *ptrs) {
    const pdq_tensor *a = &g->tensors[op->in[0]], *b = &g->tensors[op->in[1]];
    const pdq_tensor *o = &g->tensors[op->out[0]];
    const float *ad = ptrs[op->in[0]], *bd = ptrs[op->in[1]];
    float *od = ptrs[op->out[0]];
    size_t n = pdq_tensor_count(o);
    pdq_op_type t = op->type;
    if (pdq_tensor_count(a) == n && pdq_tensor_count(b) == n) {
        for (size_t i = 0; i < n; i++) od[i] = binop(t, ad[i], bd[i]);
        return;
    }
    int o6[PDQ_G_MAX_DIMS];
    long sa[PDQ_G_MAX_DIMS], sb[PDQ_G_MAX_DIMS];
    pdq_k_shape6(o, o6);
    pdq_k_strides6(a, o6, sa);
    pdq_k_strides6(b, o6, sb);
    int inner = o6[5];
    long ia5 = sa[5], ib5 = sb[5];
    size_t outer = n / (size_t)inner;
    for (size_t r = 0; r < outer; r++) {
        size_t rem = r;
        long offa = 0, offb = 0;
        for (int d = 4; d >= 0; d--) {
            long idx = (long)(rem % (size_t)o6[d]);
            rem /= (size_t)o6[d];
            offa += idx * sa[d];
            offb += idx * sb[d];
        }
        float *orow = od + r * (size_t)inner;
        for (int i = 0; i < inner; i++) orow[i] = binop(t, ad[offa + i * ia5], bd[offb + i * ib5]);
    }
}

static void rms_norm(const pdq_graph *g, const pdq_op *op, void *const *ptrs) {
    const pdq_tensor *x = &g->tensors[op->in[0]], *w = &g->tensors[op->in[1]];
    const float *xd = ptrs[op->in[0]], *wd = ptrs[op->in[1]];
    float *y = ptrs[op->out[0]];
    int c = x->shape[x->ndim - 1];
    size_t rows = pdq_tensor_count(x) / (size_t)c;
    int wc = w->shape[0];
    for (size_t r = 0; r < rows; r++) {
        const float *xr = xd + r * (size_t)c;
        float *yr = y + r * (size_t)c;
        double ss = 0;
        for (int i = 0; i < c; i++) ss += (double)xr[i] * xr[i];
        float inv = (float)(1.0 / sqrt(ss / c + (double)op->opt.rms.epsilon));
        for (int i = 0; i < c; i++) yr[i] = wd[wc == 1 ? 0 : i] * (xr[i] * inv);
    }
}

static void softmax(const pdq_graph *g, const pdq_op *op, void *const *ptrs) {
    const pdq_tensor *x = &g->tensors[op->in[0]];
    const float *xd = ptrs[op->in[0]];
    float *y = ptrs[op->out[0]];
    int c = x->shape[x->ndim - 1];
    size_t rows = pdq_tensor_count(x) / (size_t)c;
    float beta = op->opt.softmax.beta;
    for (size_t r = 0; r < rows; r++) {
        const float *xr = xd + r * (size_t)c;
        float *yr = y + r * (size_t)c;
        float mx = xr[0];
        for (int i = 1; i < c; i++) mx = xr[i] > mx ? xr[i] : mx;
        double sum = 0;
        for (int i = 0; i < c; i++) { yr[i] = expf(beta * (xr[i] - mx)); sum += yr[i]; }
        float inv = (float)(1.0 / sum);
        for (int i = 0; i < c; i++) yr[i] *= inv;
    }
}

static void mean(const pdq_graph *g, const pdq_op *op, void *const *ptrs) {
    const pdq_tensor *x = &g->tensors[op->in[0]], *ax = &g->tensors[op->in[1]];
    const float *xd = ptrs[op->in[0]];
    float *y = ptrs[op->out[0]];
    const int32_t *axes = ax->data;
    int red[PDQ_G_MAX_DIMS] = {0};
    int pad = PDQ_G_MAX_DIMS - x->ndim;
    for (int i = 0; i < ax->shape[0]; i++) red[pad + (axes[i] < 0 ? axes[i] + x->ndim : axes[i])] = 1;
    int x6[PDQ_G_MAX_DIMS], o6[PDQ_G_MAX_DIMS];
    pdq_k_shape6(x, x6);
    long ostr[PDQ_G_MAX_DIMS], acc = 1;
    for (int d = PDQ_G_MAX_DIMS - 1; d >= 0; d--) {
        o6[d] = red[d] ? 1 : x6[d];
        ostr[d] = red[d] ? 0 : acc;
        acc *= o6[d];
    }
    size_t n = pdq_tensor_count(x), no = (size_t)acc;
    double cnt = (double)n / (double)no;
    memset(y, 0, sizeof(float) * no);
    /* Accumulate in the output buffer (float); fine for the reductions used here. */
    for (size_t i = 0; i < n; i++) {
        size_t rem = i;
        long off = 0;
        for (int d = PDQ_G_MAX_DIMS - 1; d >= 0; d--) {
            off += (long)(rem % (size_t)x6[d]) * ostr[d];
            rem /= (size_t)x6[d];
        }
        y[off] += xd[i];
    }
    for (size_t i = 0; i < no; i++) y[i] = (float)(y[i] / cnt);
}

pdq_code pdq_k_elementwise(const pdq_graph *g, const pdq_op *op, void *const *ptrs, pdq_status *st) {
    const float *x = ptrs[op->in[0]];
    float *y = ptrs[op->out[0]];
    size_t n = pdq_tensor_count(&g->tensors[op->out[0]]);
    switch (op->type) {
    case PDQ_OP_ADD: case PDQ_OP_SUB: case PDQ_OP_MUL: case PDQ_OP_DIV:
        binary(g, op, ptrs);
        return PDQ_OK;
    case PDQ_OP_RSQRT:
        for (size_t i = 0; i < n; i++) y[i] = 1.0f / sqrtf(x[i]);
        return PDQ_OK;
    case PDQ_OP_NEG:
        for (size_t i = 0; i < n; i++) y[i] = -x[i];
        return PDQ_OK;
    case PDQ_OP_LOGISTIC:
        for (size_t i = 0; i < n; i++) y[i] = 1.0f / (1.0f + expf(-x[i]));
        return PDQ_OK;
    case PDQ_OP_RMS_NORM: rms_norm(g, op, ptrs); return PDQ_OK;
    case PDQ_OP_SOFTMAX: softmax(g, op, ptrs); return PDQ_OK;
    case PDQ_OP_MEAN: mean(g, op, ptrs); return PDQ_OK;
    default: break;
    }
    return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "elementwise kernel: op %s", pdq_op_name(op->type));
}
