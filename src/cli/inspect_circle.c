/* pdq inspect FILE.circle: operator codes, operators, tensors (shape, dtype, qparams, buffer),
 * buffers and the subgraph I/O contract of a Circle file, from the verifying reader. */
#include <stdio.h>

#include "commands.h"
#include "pdq/circle.h"

static void shape(const pdq_circle_tensor *t) {
    printf("(");
    for (int d = 0; d < t->rank; d++) printf("%s%d", d ? "," : "", t->shape[d]);
    printf(")");
}

static void tensor_line(const pdq_circle_model *m, int i) {
    const pdq_circle_tensor *t = &m->tensors[i];
    printf("  %5d %-9s ", i, pdq_circle_type_name(t->type));
    shape(t);
    printf(" %s", t->name ? t->name : "(unnamed)");
    if (t->buffer) printf("  buffer %u (%llu bytes)", t->buffer, (unsigned long long)m->buffers[t->buffer].len);
    const pdq_circle_quant *q = &t->quant;
    if (q->n_scale == 1)
        printf("  q: scale %.9g zp %lld", q->scale[0], (long long)(q->n_zero_point ? q->zero_point[0] : 0));
    else if (q->n_scale > 1)
        printf("  q: %d channels on dim %d, scale[0] %.6g zp[0] %lld", q->n_scale, q->quantized_dimension, q->scale[0],
               (long long)(q->n_zero_point ? q->zero_point[0] : 0));
    else if (q->block_size)
        printf("  q: blockwise, %d columns a block, scales tensor %d, zero points tensor %d", q->block_size, q->block_scales,
               q->block_zero_points);
    printf("\n");
}

int cli_inspect_circle(const char *path) {
    pdq_circle_model m;
    pdq_status st = {0};
    if (pdq_circle_read(path, &m, &st) != PDQ_OK) {
        fprintf(stderr, "pdq inspect: %s\n", st.msg);
        return 1;
    }
    unsigned long long data = 0;
    for (int i = 0; i < m.n_buffers; i++) data += m.buffers[i].len;
    printf("%s: Circle model version %u, \"%s\", subgraph \"%s\"\n", path, m.version,
           m.description ? m.description : "", m.subgraph_name ? m.subgraph_name : "");
    printf("%d operator codes, %d operators, %d tensors, %d buffers (%.2f MiB of data)\n", m.n_opcodes, m.n_ops,
           m.n_tensors, m.n_buffers, (double)data / 1048576.0);
    printf("operator codes:\n");
    for (int i = 0; i < m.n_opcodes; i++) {
        const char *nm = pdq_circle_op_name(m.opcodes[i].builtin_code);
        int uses = 0;
        for (int o = 0; o < m.n_ops; o++) uses += m.ops[o].opcode_index == (uint32_t)i;
        printf("  %3d %-16s code %4d version %d  x%d\n", i, nm ? nm : "?", m.opcodes[i].builtin_code,
               m.opcodes[i].version, uses);
    }
    printf("inputs (in order):\n");
    for (int i = 0; i < m.n_inputs; i++) tensor_line(&m, m.inputs[i]);
    printf("outputs (in order):\n");
    for (int i = 0; i < m.n_outputs; i++) tensor_line(&m, m.outputs[i]);
    printf("operators:\n");
    for (int o = 0; o < m.n_ops; o++) {
        const pdq_circle_op *op = &m.ops[o];
        const char *nm = pdq_circle_op_name(m.opcodes[op->opcode_index].builtin_code);
        printf("  %5d %-16s (", o, nm ? nm : "?");
        for (int i = 0; i < op->n_inputs; i++) printf("%s%d", i ? " " : "", op->inputs[i]);
        printf(") -> (");
        for (int i = 0; i < op->n_outputs; i++) printf("%s%d", i ? " " : "", op->outputs[i]);
        printf(")  options %u\n", op->options_type);
    }
    printf("tensors:\n");
    for (int i = 0; i < m.n_tensors; i++) tensor_line(&m, i);
    pdq_circle_model_free(&m);
    return 0;
}
