/* Data-movement kernels: RESHAPE, TRANSPOSE, CONCATENATION, STRIDED_SLICE, SLICE, GATHER.
 * They move elements of any dtype (by element size). */
#include <string.h>

#include "ops.h"

/* dst[i] = src[i * stride] for n elements of esz bytes. A constant size per loop, so each
 * memcpy is one move: a call per element made the decode graph's K transposes a tenth of
 * integer decode. */
#define GATHER_N(N)                                                                            \
    for (size_t i = 0; i < n; i++) memcpy(dst + i * (N), src + (size_t)((long)i * stride) * (N), (N))
static void gather_row(char *dst, const char *src, size_t n, long stride, size_t esz) {
    switch (esz) {
    case 1: GATHER_N(1); break;
    case 2: GATHER_N(2); break;
    case 4: GATHER_N(4); break;
    case 8: GATHER_N(8); break;
    default: GATHER_N(esz); break;
    }
}
#undef GATHER_N

/* Copies a strided 6-d box: dst contiguous of shape box6, src at offset with strides sstr6. */
static void copy_box(char *dst, const char *src, const int *box6, const long *sstr6, size_t esz) {
    size_t inner = (size_t)box6[5];
    size_t outer = 1;
    for (int d = 0; d < 5; d++) outer *= (size_t)box6[d];
    int contiguous = sstr6[5] == 1;
    for (size_t r = 0; r < outer; r++) {
        size_t rem = r;
        long off = 0;
        for (int d = 4; d >= 0; d--) {
            off += (long)(rem % (size_t)box6[d]) * sstr6[d];
            rem /= (size_t)box6[d];
        }
        char *drow = dst + r * inner * esz;
        if (contiguous) memcpy(drow, src + (size_t)off * esz, inner * esz);
        else
            gather_row(drow, src + (size_t)off * esz, inner, sstr6[5], esz);
    }
}

static void dense_strides6(const int *s6, long *str6) {
    long acc = 1;
    for (int d = PDQ_G_MAX_DIMS - 1; d >= 0; d--) { str6[d] = acc; acc *= s6[d]; }
}

static void transpose(const pdq_graph *g, const pdq_op *op, void *const *ptrs, size_t esz) {
    const pdq_tensor *x = &g->tensors[op->in[0]], *o = &g->tensors[op->out[0]];
    const int32_t *perm = g->tensors[op->in[1]].data;
    int x6[PDQ_G_MAX_DIMS], o6[PDQ_G_MAX_DIMS];
    long xs6[PDQ_G_MAX_DIMS], src6[PDQ_G_MAX_DIMS];
    pdq_k_shape6(x, x6);
    pdq_k_shape6(o, o6);
    dense_strides6(x6, xs6);
    int pad = PDQ_G_MAX_DIMS - x->ndim;
    for (int d = 0; d < PDQ_G_MAX_DIMS; d++) src6[d] = d < pad ? 0 : xs6[pad + perm[d - pad]];
    copy_box(ptrs[op->out[0]], ptrs[op->in[0]], o6, src6, esz);
}

static void concat(const pdq_graph *g, const pdq_op *op, void *const *ptrs, size_t esz) {
    const pdq_tensor *o = &g->tensors[op->out[0]];
    int axis = op->opt.concat.axis < 0 ? op->opt.concat.axis + o->ndim : op->opt.concat.axis;
    size_t outer = 1, inner = 1;
    for (int d = 0; d < axis; d++) outer *= (size_t)o->shape[d];
    for (int d = axis + 1; d < o->ndim; d++) inner *= (size_t)o->shape[d];
    size_t orow = (size_t)o->shape[axis] * inner * esz;
    char *od = ptrs[op->out[0]];
    size_t at = 0;
    for (int i = 0; i < op->n_in; i++) {
        const pdq_tensor *x = &g->tensors[op->in[i]];
        size_t xrow = (size_t)x->shape[axis] * inner * esz;
        const char *xd = ptrs[op->in[i]];
        for (size_t r = 0; r < outer; r++) memcpy(od + r * orow + at, xd + r * xrow, xrow);
        at += xrow;
    }
}

static void slice(const pdq_graph *g, const pdq_op *op, void *const *ptrs, size_t esz, int strided) {
    const pdq_tensor *x = &g->tensors[op->in[0]], *o = &g->tensors[op->out[0]];
    const int32_t *b = g->tensors[op->in[1]].data;
    const int32_t *s = strided ? g->tensors[op->in[3]].data : NULL;
    int x6[PDQ_G_MAX_DIMS], o6[PDQ_G_MAX_DIMS];
    long xs6[PDQ_G_MAX_DIMS], src6[PDQ_G_MAX_DIMS];
    pdq_k_shape6(x, x6);
    pdq_k_shape6(o, o6);
    dense_strides6(x6, xs6);
    int pad = PDQ_G_MAX_DIMS - x->ndim;
    long off = 0;
    for (int d = 0; d < PDQ_G_MAX_DIMS; d++) {
        int step = (d < pad || !s) ? 1 : s[d - pad];
        src6[d] = xs6[d] * step;
        if (d >= pad) off += (long)b[d - pad] * xs6[d];
    }
    copy_box(ptrs[op->out[0]], (const char *)ptrs[op->in[0]] + (size_t)off * esz, o6, src6, esz);
}

static pdq_code gather(const pdq_graph *g, const pdq_op *op, void *const *ptrs, size_t esz,
                       pdq_status *st) {
    const pdq_tensor *p = &g->tensors[op->in[0]], *ix = &g->tensors[op->in[1]];
    int axis = op->opt.gather.axis < 0 ? op->opt.gather.axis + p->ndim : op->opt.gather.axis;
    size_t outer = 1, inner = 1;
    for (int d = 0; d < axis; d++) outer *= (size_t)p->shape[d];
    for (int d = axis + 1; d < p->ndim; d++) inner *= (size_t)p->shape[d];
    size_t ni = pdq_tensor_count(ix);
    const int32_t *idx = ptrs[op->in[1]];
    const char *pd = ptrs[op->in[0]];
    char *od = ptrs[op->out[0]];
    int n_axis = p->shape[axis];
    for (size_t i = 0; i < ni; i++)
        if (idx[i] < 0 || idx[i] >= n_axis)
            return pdq_fail(st, PDQ_ERR_ARG, "GATHER %s: index %d out of range [0,%d)", p->name, idx[i], n_axis);
    size_t blk = inner * esz;
    for (size_t r = 0; r < outer; r++)
        for (size_t i = 0; i < ni; i++)
            memcpy(od + (r * ni + i) * blk, pd + (r * (size_t)n_axis + (size_t)idx[i]) * blk, blk);
    return PDQ_OK;
}

pdq_code pdq_k_shape(const pdq_graph *g, const pdq_op *op, void *const *ptrs, pdq_status *st) {
    size_t esz = pdq_tdtype_size(g->tensors[op->in[0]].dtype);
    switch (op->type) {
    case PDQ_OP_RESHAPE:
        if (ptrs[op->out[0]] != ptrs[op->in[0]])
            memcpy(ptrs[op->out[0]], ptrs[op->in[0]], pdq_tensor_count(&g->tensors[op->in[0]]) * esz);
        return PDQ_OK;
    case PDQ_OP_TRANSPOSE: transpose(g, op, ptrs, esz); return PDQ_OK;
    case PDQ_OP_CONCATENATION: concat(g, op, ptrs, esz); return PDQ_OK;
    case PDQ_OP_STRIDED_SLICE: slice(g, op, ptrs, esz, 1); return PDQ_OK;
    case PDQ_OP_SLICE: slice(g, op, ptrs, esz, 0); return PDQ_OK;
    case PDQ_OP_GATHER: return gather(g, op, ptrs, esz, st);
    default: break;
    }
    return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "shape kernel: op %s", pdq_op_name(op->type));
}
