/* ADD, SUB, MUL, DIV: element by element, the operands broadcast (numpy/TFLite rules). Float in
 * float32; integer mode dequantizes both operands to double, applies the op and requantizes
 * (include/pdq/qexec.h), AVX2 on int16 rows giving the scalar rule's bits. */
#include <string.h>

#include "ir/layout.h"
#include "ops/op_def.h"
#include "ops/qx_kernel.h"
#include "ops/op_rules.h"

static pdq_code infer(const pdq_graph *g, const pdq_op *op, int *nd, int *sh, pdq_status *st) {
    pdq_code rc = pdq_rule_inputs(op, 2, 2, st);
    return rc ? rc : pdq_rule_broadcast(op, OPERAND(0), OPERAND(1), nd, sh, st);
}

static inline float binop_f(pdq_op_type t, float a, float b) {
    switch (t) {
    case PDQ_OP_ADD: return a + b;
    case PDQ_OP_SUB: return a - b;
    case PDQ_OP_MUL: return a * b;
    default: return a / b;
    }
}

static pdq_code f32(const pdq_graph *g, const pdq_op *op, void *const *ptrs, pdq_status *st) {
    (void)st;
    const pdq_tensor *a = &g->tensors[op->in[0]], *b = &g->tensors[op->in[1]];
    const pdq_tensor *o = &g->tensors[op->out[0]];
    const float *ad = ptrs[op->in[0]], *bd = ptrs[op->in[1]];
    float *od = ptrs[op->out[0]];
    size_t n = pdq_tensor_count(o);
    pdq_op_type t = op->type;
    if (pdq_tensor_count(a) == n && pdq_tensor_count(b) == n) {
        for (size_t i = 0; i < n; i++) od[i] = binop_f(t, ad[i], bd[i]);
        return PDQ_OK;
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
        for (int i = 0; i < inner; i++) orow[i] = binop_f(t, ad[offa + i * ia5], bd[offb + i * ib5]);
    }
    return PDQ_OK;
}

/* ---------------------------------------------------------------- integer */

static pdq_code qx_prepare(pdq_qexec *x, int oi, pdq_status *st) {
    QX_OP_HEAD;
    for (int i = 0; i < 2; i++) {
        const pdq_tensor *t = &g->tensors[op->in[i]];
        if (t->kind == PDQ_TK_CONST) {
            pdq_code rc = pdq_qx_const_desc(t, &x->t[op->in[i]], st);
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
    bp->rows_per_task = pdq_qx_rows_per(bp->outer, bp->inner, pdq_pool_threads(x->pool));
    return PDQ_OK;
}

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
static void bin_row_i16(const pdq_qx_traits *k, pdq_op_type t, const qx_t *aq, const int16_t *a, long sa, const qx_t *bq,
                        const int16_t *b, long sb, const qx_t *yq, int16_t *y, int n) {
    if (k->bin_i16 && t != PDQ_OP_DIV && (sa == 0 || sa == 1) && (sb == 0 || sb == 1)) {
        pdq_qx_grid ag = qx_grid(aq), bg = qx_grid(bq), yg = qx_grid(yq);
        pdq_qx_binop kt = t == PDQ_OP_ADD ? PDQ_QX_ADD : t == PDQ_OP_SUB ? PDQ_QX_SUB : PDQ_QX_MUL;
        int done = k->bin_i16(kt, &ag, a, (int)sa, &bg, b, (int)sb, &yg, y, n);
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
            bin_row_i16(&c->x->k, t, c->aq, (const int16_t *)c->ad + base, 1, c->bq, (const int16_t *)c->bd + base, 1, yq,
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
            bin_row_i16(&c->x->k, t, c->aq, (const int16_t *)c->ad + offa, bp->sa[5], c->bq, (const int16_t *)c->bd + offb, bp->sb[5],
                        yq, (int16_t *)yd + base, inner);
            continue;
        }
        for (int i = 0; i < inner; i++)
            qx_st(yq, yd, base + i,
                  binop(t, qx_ld(c->aq, c->ad, (size_t)(offa + i * bp->sa[5])), qx_ld(c->bq, c->bd, (size_t)(offb + i * bp->sb[5]))));
    }
}

static pdq_code qx_run(pdq_qexec *x, int oi, pdq_status *st) {
    (void)st;
    const pdq_op *op = &x->g->ops[oi];
    bin_ctx c = {.x = x, .op = op, .aq = &x->t[op->in[0]], .bq = &x->t[op->in[1]], .ad = x->ptrs[op->in[0]],
                 .bd = x->ptrs[op->in[1]], .b = &x->prep[op - x->g->ops].bin};
    pdq_qx_par(x, (int)((c.b->outer + c.b->rows_per_task - 1) / c.b->rows_per_task), bin_task, &c);
    return PDQ_OK;
}

#define BINARY_OP(var, NAME)                                                                          \
    const pdq_op_def var = {                                                                         \
        .name = #NAME, .kind = PDQ_OPK_ELEMENTWISE, .grid = PDQ_GRID_OWN,                            \
        .infer = infer, .f32 = f32, .qx = {qx_prepare, qx_run},                                      \
    }
BINARY_OP(pdq_op_add, ADD);
BINARY_OP(pdq_op_sub, SUB);
BINARY_OP(pdq_op_mul, MUL);
BINARY_OP(pdq_op_div, DIV);
