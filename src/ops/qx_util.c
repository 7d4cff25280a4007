/* What the ops' integer kernels share (qx_kernel.h): reading constants, splitting rows into
 * tasks, and the layout ops' kernel. */
#include <stdlib.h>
#include <string.h>

#include "kernels/qmatmul.h"
#include "ops/op_def.h"
#include "ops/qx_kernel.h"

void pdq_qx_prep_free(qx_prep *p) {
    free(p->zw);
    free(p->sw);
    free(p->gz);
    free(p->gs16);
    free(p->gwide);
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

int64_t pdq_qx_const_code(const pdq_tensor *t, size_t i) {
    switch (t->dtype) {
    case PDQ_TI16: return ((const int16_t *)t->data)[i];
    case PDQ_TU8: return ((const uint8_t *)t->data)[i];
    case PDQ_TU4: return pdq_u4_at(t->data, i);
    case PDQ_TI32: return ((const int32_t *)t->data)[i];
    default: return ((const int64_t *)t->data)[i];
    }
}

double pdq_qx_const_value(const pdq_tensor *t, size_t i) {
    if (t->dtype == PDQ_TF32) return (double)((const float *)t->data)[i];
    double v = (double)pdq_qx_const_code(t, i);
    if (!t->q) return v;
    size_t inner = 1;
    int qd = t->q->n > 1 ? t->q->quantized_dim : 0;
    for (int d = qd + 1; d < t->ndim; d++) inner *= (size_t)t->shape[d];
    size_t c = t->q->n > 1 ? (i / inner) % (size_t)t->q->n : 0;
    return pdq_rq_value((int64_t)v, (double)t->q->scale[c], t->q->zero_point[c]);
}

pdq_code pdq_qx_const_desc(const pdq_tensor *t, qx_t *q, pdq_status *st) {
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

/* A smaller task costs more to hand out than to run; an uneven last task idles the others. */
size_t pdq_qx_rows_per(size_t outer, int inner, int threads) {
    size_t in = (size_t)(inner > 0 ? inner : 1), total = outer * in;
    size_t share = (total + (size_t)threads - 1) / (size_t)threads;
    size_t want = ((share > 1024 ? share : 1024) + in - 1) / in;
    if (want > outer) want = outer ? outer : 1;
    return want;
}

void pdq_qx_rows_run(pdq_qexec *x, const pdq_op *op, pdq_pool_fn fn, int per_element) {
    const pdq_tensor *t = &x->g->tensors[op->in[0]];
    qx_rows c = {.x = x, .op = op, .p = &x->prep[op - x->g->ops]};
    c.c = per_element ? 1 : t->shape[t->ndim - 1];
    c.rows = pdq_tensor_count(t) / (size_t)c.c;
    c.rows_per_task = pdq_qx_rows_per(c.rows, c.c, pdq_pool_threads(x->pool));
    pdq_qx_par(x, (int)((c.rows + c.rows_per_task - 1) / c.rows_per_task), fn, &c);
}

pdq_code pdq_qx_move_prepare(pdq_qexec *x, int oi, pdq_status *st) {
    QX_OP_HEAD;
    const pdq_op_def *d = pdq_op_def_of(op->type);
    int n_data = d->grid == PDQ_GRID_OF_ALL ? op->n_in : 1; /* all inputs are data where they share one grid */
    for (int i = 0; i < n_data; i++) {
        const pdq_tensor *t = &g->tensors[op->in[i]];
        if (t->kind == PDQ_TK_CONST || !qx_same_grid(&x->t[op->in[i]], yq))
            return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "integer mode: %s moves %s onto another grid or dtype (%s); layout "
                            "ops keep their input's grid", pdq_op_name(op->type), t->name, g->tensors[op->out[0]].name);
    }
    p->has_box = d->box && d->box(g, op, &p->box); /* decode runs some hundred of these per layer */
    return PDQ_OK;
}

pdq_code pdq_qx_move_run(pdq_qexec *x, int oi, pdq_status *st) {
    const pdq_op *op = &x->g->ops[oi];
    if (x->prep[oi].has_box) {
        pdq_k_box_copy(&x->prep[oi].box, x->ptrs[op->out[0]], x->ptrs[op->in[0]]);
        return PDQ_OK;
    }
    return pdq_op_def_of(op->type)->f32(x->g, op, x->ptrs, st); /* a layout op's float kernel moves any dtype */
}
