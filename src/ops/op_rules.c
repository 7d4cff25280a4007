/* The checks shape rules share (op_rules.h). */
#include "ops/op_rules.h"

#define OPN pdq_op_name(op->type)

pdq_code pdq_rule_inputs(const pdq_op *op, int lo, int hi, pdq_status *st) {
    if (op->n_in < lo || op->n_in > hi)
        return pdq_fail(st, PDQ_ERR_ARG, "%s takes %d..%d inputs, got %d", OPN, lo, hi, op->n_in);
    return PDQ_OK;
}

pdq_code pdq_rule_const_i32(const pdq_graph *g, const pdq_op *op, int k, const char *role, int n, pdq_status *st) {
    const pdq_tensor *t = OPERAND(k);
    if (t->kind != PDQ_TK_CONST || t->dtype != PDQ_TI32 || t->ndim != 1 || !t->data ||
        (n >= 0 && t->shape[0] != n)) {
        if (n >= 0)
            return pdq_fail(st, PDQ_ERR_ARG, "%s %s %s must be an int32 constant vector of %d entries (is %s%s, rank %d)",
                            OPN, role, t->name, n, t->kind == PDQ_TK_CONST ? "" : "non-constant ",
                            pdq_tdtype_name(t->dtype), t->ndim);
        return pdq_fail(st, PDQ_ERR_ARG, "%s %s %s must be an int32 constant vector (is %s%s, rank %d)", OPN, role,
                        t->name, t->kind == PDQ_TK_CONST ? "" : "non-constant ", pdq_tdtype_name(t->dtype), t->ndim);
    }
    return PDQ_OK;
}

pdq_code pdq_rule_rank(const pdq_op *op, const pdq_tensor *t, int lo, pdq_status *st) {
    if (t->ndim < lo)
        return pdq_fail(st, PDQ_ERR_SHAPE, "%s: %s has rank %d, the op needs rank >= %d", OPN, t->name, t->ndim, lo);
    return PDQ_OK;
}

pdq_code pdq_rule_put_dim(const pdq_op *op, int *sh, int d, int64_t v, pdq_status *st) {
    if (v <= 0 || v > PDQ_G_MAX_ELEMS)
        return pdq_fail(st, PDQ_ERR_LIMIT, "%s: output dim %d would be %lld (limit 1..%lld)", OPN, d, (long long)v,
                        (long long)PDQ_G_MAX_ELEMS);
    sh[d] = (int)v;
    return PDQ_OK;
}

pdq_code pdq_rule_broadcast(const pdq_op *op, const pdq_tensor *a, const pdq_tensor *b, int *nd, int *sh,
                            pdq_status *st) {
    int n = a->ndim > b->ndim ? a->ndim : b->ndim;
    for (int i = 0; i < n; i++) {
        int ia = a->ndim - n + i, ib = b->ndim - n + i;
        int da = ia >= 0 ? a->shape[ia] : 1, db = ib >= 0 ? b->shape[ib] : 1;
        if (da != db && da != 1 && db != 1)
            return pdq_fail(st, PDQ_ERR_SHAPE, "%s: %s and %s do not broadcast (dim %d: %d vs %d)", OPN, a->name,
                            b->name, i, da, db);
        sh[i] = da > db ? da : db;
    }
    *nd = n;
    return PDQ_OK;
}
