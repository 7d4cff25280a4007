/* Shape inference: the checks every op shares (operand count and ids, ranks), then the op's own
 * shape rule from its row of the op table (src/ops/), then one bound on the output's element
 * count. Dtype rules that depend on qparams are pdq_graph_validate's: builders annotate qparams
 * after adding an op. */
#include <stdint.h>

#include "pdq/graph.h"

#include "ops/op_def.h"

#define T(i) (&g->tensors[op->in[i]])
#define OPN pdq_op_name(op->type)

pdq_code pdq_op_infer(const pdq_graph *g, const pdq_op *op, int *nd, int *sh, pdq_status *st) {
    if (op->n_in < 0 || op->n_in > PDQ_G_MAX_OP_INPUTS || (op->n_in && !op->in))
        return pdq_fail(st, PDQ_ERR_LIMIT, "%s: %d inputs (max %d)", OPN, op->n_in, PDQ_G_MAX_OP_INPUTS);
    for (int i = 0; i < op->n_in; i++) {
        if (op->in[i] < 0 || op->in[i] >= g->n_tensors)
            return pdq_fail(st, PDQ_ERR_ARG, "%s input %d is tensor %d (of %d)", OPN, i, op->in[i], g->n_tensors);
        if (T(i)->ndim < 0 || T(i)->ndim > PDQ_G_MAX_DIMS)
            return pdq_fail(st, PDQ_ERR_SHAPE, "%s input %s has rank %d (max %d)", OPN, T(i)->name, T(i)->ndim,
                            PDQ_G_MAX_DIMS);
    }
    const pdq_op_def *d = pdq_op_def_of(op->type);
    if (!d) return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "unknown op type %d", (int)op->type);
    pdq_code rc = d->infer(g, op, nd, sh, st);
    if (rc != PDQ_OK) return rc;
    /* one bound for every op: the output's element count (each dim is already a positive int) */
    int64_t n = 1;
    for (int d = 0; d < *nd; d++) {
        if (sh[d] <= 0) return pdq_fail(st, PDQ_ERR_SHAPE, "%s: output dim %d is %d", OPN, d, sh[d]);
        n *= sh[d];
        if (n > PDQ_G_MAX_ELEMS)
            return pdq_fail(st, PDQ_ERR_LIMIT, "%s: output of more than %lld elements (limit per tensor)", OPN,
                            (long long)PDQ_G_MAX_ELEMS);
    }
    return PDQ_OK;
}
