/* Standard forms a consumer implementing the TFLite/Circle ops reads as pdq means them, and the
 * list of op/type combinations each exported file needs from its consumer.
 *
 * GATHER: in TFLite/Circle its output has the params' type and qparams (no requantization), and
 * a per-row quantized table has no per-tensor grid to carry over. A quantized constant table is
 * therefore written as TFLite's weight-only pattern, DEQUANTIZE(constant) -> GATHER on float32
 * params, followed by QUANTIZE when the output edge is on an activation grid:
 *   table (uint8, per-row qparams) -DEQUANTIZE-> <table>.dequantized (float32)
 *   GATHER(<table>.dequantized, ids) -> <out>.float (float32) -QUANTIZE-> <out> (int16)
 * The numbers are exactly pdq's (dequantized row, then rounding to the output grid); a compiler
 * may fold the DEQUANTIZE of a constant (ONE's FoldDequantizePass does). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "circle/circle_defs.h"
#include "circle/export_gather.h"

int pdq_circle_gather_needs_std(const pdq_graph *g, const pdq_op *op) {
    const pdq_tensor *p = &g->tensors[op->in[0]];
    return op->type == PDQ_OP_GATHER && p->kind == PDQ_TK_CONST && p->q && p->dtype != PDQ_TF32;
}

static int32_t add_float_tensor(pdq_circle_model *m, const pdq_tensor *like, const char *suffix, pdq_status *st) {
    char name[512];
    snprintf(name, sizeof name, "%s%s", like->name, suffix);
    int32_t shape[PDQ_G_MAX_DIMS];
    for (int d = 0; d < like->ndim; d++) shape[d] = like->shape[d];
    return pdq_circle_add_tensor(m, name, CIRCLE_TT_FLOAT32, like->ndim, shape, 0, st);
}

pdq_code pdq_circle_add_gather_std(pdq_circle_model *m, const pdq_graph *g, const pdq_op *op, const pdq_circle_options *o,
                                   pdq_status *st) {
    const pdq_tensor *p = &g->tensors[op->in[0]], *y = &g->tensors[op->out[0]];
    int32_t dq = add_float_tensor(m, p, ".dequantized", st);
    if (dq < 0) return st ? st->code : PDQ_ERR_NOMEM;
    int32_t in1[1] = {op->in[0]}, out1[1] = {dq};
    pdq_circle_options none;
    memset(&none, 0, sizeof none);
    if (pdq_circle_add_op(m, CIRCLE_OP_DEQUANTIZE, 1, in1, 1, out1, CIRCLE_OPT_DequantizeOptions, &none, st) < 0)
        return st ? st->code : PDQ_ERR_NOMEM;
    int quantized_out = y->q && y->dtype != PDQ_TF32;
    int32_t gout = op->out[0];
    if (quantized_out && (gout = add_float_tensor(m, y, ".float", st)) < 0) return st ? st->code : PDQ_ERR_NOMEM;
    int32_t in2[2] = {dq, op->in[1]}, out2[1] = {gout};
    if (pdq_circle_add_op(m, CIRCLE_OP_GATHER, 2, in2, 1, out2, CIRCLE_OPT_GatherOptions, o, st) < 0)
        return st ? st->code : PDQ_ERR_NOMEM;
    if (!quantized_out) return PDQ_OK;
    int32_t in3[1] = {gout}, out3[1] = {op->out[0]};
    if (pdq_circle_add_op(m, CIRCLE_OP_QUANTIZE, 1, in3, 1, out3, CIRCLE_OPT_QuantizeOptions, &none, st) < 0)
        return st ? st->code : PDQ_ERR_NOMEM;
    return PDQ_OK;
}

/* "UINT4[const,per-channel]" (or "blockwise") style description of one operand. */
static void operand(const pdq_circle_model *m, int32_t t, char *buf, size_t n) {
    if (t < 0) { snprintf(buf, n, "none"); return; }
    const pdq_circle_tensor *x = &m->tensors[t];
    const char *ty = pdq_circle_type_name(x->type);
    int konst = x->buffer != 0;
    const char *pc = x->quant.block_size ? "blockwise" : x->quant.n_scale > 1 ? "per-channel" : NULL;
    if (konst || pc) snprintf(buf, n, "%s[%s%s%s]", ty, konst ? "const" : "", konst && pc ? "," : "", pc ? pc : "");
    else snprintf(buf, n, "%s", ty);
}

cJSON *pdq_circle_requirements(const pdq_circle_model *m) {
    cJSON *arr = cJSON_CreateArray();
    for (int32_t o = 0; arr && o < m->n_ops; o++) {
        const pdq_circle_op *op = &m->ops[o];
        const char *nm = pdq_circle_op_name(m->opcodes[op->opcode_index].builtin_code);
        char line[512], part[96];
        size_t k = (size_t)snprintf(line, sizeof line, "%s ", nm ? nm : "?");
        for (int i = 0; i < op->n_inputs && k < sizeof line - 100;) {
            operand(m, op->inputs[i], part, sizeof part);
            int run = 1; /* CONCATENATION of n like operands: "FLOAT32 x8" */
            char nxt[96];
            while (i + run < op->n_inputs && (operand(m, op->inputs[i + run], nxt, sizeof nxt), !strcmp(nxt, part))) run++;
            k += (size_t)snprintf(line + k, sizeof line - k, "%s%s", i ? "," : "", part);
            if (run > 2) k += (size_t)snprintf(line + k, sizeof line - k, " x%d", run);
            else if (run == 2) k += (size_t)snprintf(line + k, sizeof line - k, ",%s", part);
            i += run;
        }
        operand(m, op->outputs[0], part, sizeof part);
        snprintf(line + k, sizeof line - k, " -> %s", part);
        int seen = 0;
        cJSON *x;
        cJSON_ArrayForEach(x, arr) seen |= !strcmp(x->valuestring, line);
        if (!seen) cJSON_AddItemToArray(arr, cJSON_CreateString(line));
    }
    return arr;
}
