/* pdq inspect FILE.circle --json: the same content as the text listing, as one JSON document. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>

#include "commands.h"
#include "pdq/circle.h"

static cJSON *tensor(const pdq_circle_model *m, int i) {
    const pdq_circle_tensor *t = &m->tensors[i];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "index", i);
    if (t->name) cJSON_AddStringToObject(o, "name", t->name);
    cJSON_AddStringToObject(o, "type", pdq_circle_type_name(t->type));
    cJSON *sh = cJSON_AddArrayToObject(o, "shape");
    for (int d = 0; d < t->rank; d++) cJSON_AddItemToArray(sh, cJSON_CreateNumber(t->shape[d]));
    cJSON_AddNumberToObject(o, "buffer", t->buffer);
    if (t->buffer) cJSON_AddNumberToObject(o, "bytes", (double)m->buffers[t->buffer].len);
    const pdq_circle_quant *q = &t->quant;
    if (q->n_scale > 0) {
        cJSON *qj = cJSON_AddObjectToObject(o, "quantization");
        cJSON *s = cJSON_AddArrayToObject(qj, "scale"), *z = cJSON_AddArrayToObject(qj, "zero_point");
        for (int k = 0; k < q->n_scale; k++) cJSON_AddItemToArray(s, cJSON_CreateNumber(q->scale[k]));
        for (int k = 0; k < q->n_zero_point; k++) cJSON_AddItemToArray(z, cJSON_CreateNumber((double)q->zero_point[k]));
        cJSON_AddNumberToObject(qj, "quantized_dimension", q->quantized_dimension);
    } else if (q->block_size) {
        cJSON *qj = cJSON_AddObjectToObject(o, "quantization");
        cJSON *b = cJSON_AddObjectToObject(qj, "blockwise");
        cJSON_AddNumberToObject(b, "block_size", q->block_size);
        cJSON_AddNumberToObject(b, "scales", q->block_scales);
        cJSON_AddNumberToObject(b, "zero_points", q->block_zero_points);
    }
    return o;
}

int cli_inspect_circle_json(const char *path) {
    pdq_circle_model m;
    pdq_status st = {0};
    if (pdq_circle_read(path, &m, &st) != PDQ_OK) {
        fprintf(stderr, "pdq inspect: %s\n", st.msg);
        return 1;
    }
    cJSON *r = cJSON_CreateObject();
    double data = 0;
    for (int i = 0; i < m.n_buffers; i++) data += (double)m.buffers[i].len;
    cJSON_AddStringToObject(r, "file", path);
    cJSON_AddNumberToObject(r, "version", m.version);
    cJSON_AddStringToObject(r, "description", m.description ? m.description : "");
    cJSON_AddStringToObject(r, "subgraph", m.subgraph_name ? m.subgraph_name : "");
    cJSON_AddNumberToObject(r, "buffers", m.n_buffers);
    cJSON_AddNumberToObject(r, "data_bytes", data);
    cJSON *oc = cJSON_AddArrayToObject(r, "operator_codes");
    for (int i = 0; i < m.n_opcodes; i++) {
        const char *nm = pdq_circle_op_name(m.opcodes[i].builtin_code);
        int uses = 0;
        for (int o = 0; o < m.n_ops; o++) uses += m.ops[o].opcode_index == (uint32_t)i;
        cJSON *c = cJSON_CreateObject();
        cJSON_AddStringToObject(c, "name", nm ? nm : "?");
        cJSON_AddNumberToObject(c, "code", m.opcodes[i].builtin_code);
        cJSON_AddNumberToObject(c, "version", m.opcodes[i].version);
        cJSON_AddNumberToObject(c, "uses", uses);
        cJSON_AddItemToArray(oc, c);
    }
    cJSON *in = cJSON_AddArrayToObject(r, "inputs"), *out = cJSON_AddArrayToObject(r, "outputs");
    for (int i = 0; i < m.n_inputs; i++) cJSON_AddItemToArray(in, tensor(&m, m.inputs[i]));
    for (int i = 0; i < m.n_outputs; i++) cJSON_AddItemToArray(out, tensor(&m, m.outputs[i]));
    cJSON *ops = cJSON_AddArrayToObject(r, "operators");
    for (int o = 0; o < m.n_ops; o++) {
        const pdq_circle_op *op = &m.ops[o];
        const char *nm = pdq_circle_op_name(m.opcodes[op->opcode_index].builtin_code);
        cJSON *c = cJSON_CreateObject();
        cJSON_AddStringToObject(c, "op", nm ? nm : "?");
        cJSON *a = cJSON_AddArrayToObject(c, "inputs"), *b = cJSON_AddArrayToObject(c, "outputs");
        for (int i = 0; i < op->n_inputs; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber(op->inputs[i]));
        for (int i = 0; i < op->n_outputs; i++) cJSON_AddItemToArray(b, cJSON_CreateNumber(op->outputs[i]));
        cJSON_AddNumberToObject(c, "options_type", op->options_type);
        cJSON_AddItemToArray(ops, c);
    }
    cJSON *ts = cJSON_AddArrayToObject(r, "tensors");
    for (int i = 0; i < m.n_tensors; i++) cJSON_AddItemToArray(ts, tensor(&m, i));
    pdq_circle_model_free(&m);
    char *s = cJSON_PrintUnformatted(r);
    cJSON_Delete(r);
    if (!s) { fprintf(stderr, "pdq inspect: out of memory\n"); return 1; }
    puts(s);
    free(s);
    return 0;
}
