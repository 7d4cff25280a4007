/* libFuzzer target: the verifying Circle reader on arbitrary bytes; every accepted model must
 * serialize again (unless it uses options the writer does not emit) and read back the same. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "circle/circle_internal.h"

static void same(const pdq_circle_model *a, const pdq_circle_model *b) {
    if (a->n_tensors != b->n_tensors || a->n_ops != b->n_ops || a->n_buffers != b->n_buffers ||
        a->n_opcodes != b->n_opcodes || a->n_inputs != b->n_inputs || a->n_outputs != b->n_outputs)
        abort();
    for (int32_t i = 0; i < a->n_buffers; i++)
        if (a->buffers[i].len != b->buffers[i].len ||
            (a->buffers[i].len && memcmp(a->buffers[i].data, b->buffers[i].data, a->buffers[i].len)))
            abort();
    for (int32_t i = 0; i < a->n_opcodes; i++)
        if (a->opcodes[i].builtin_code != b->opcodes[i].builtin_code) abort();
    for (int32_t i = 0; i < a->n_tensors; i++)
        if (a->tensors[i].rank != b->tensors[i].rank || a->tensors[i].type != b->tensors[i].type ||
            a->tensors[i].quant.n_scale != b->tensors[i].quant.n_scale)
            abort();
}

static void rewrite(const pdq_circle_model *m, int extended) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return;
    pdq_status st = {0};
    pdq_circle_write_opts o = {extended, 0};
    pdq_code rc = circle_write_stream(f, m, &o, &st);
    fclose(f);
    if (rc == PDQ_OK) {
        pdq_circle_model r;
        if (pdq_circle_parse(buf, len, &r, &st) != PDQ_OK) {
            fprintf(stderr, "rewritten model does not read back: %s\n", st.msg);
            abort();
        }
        same(m, &r);
        pdq_circle_model_free(&r);
    } else if (rc != PDQ_ERR_UNSUPPORTED) {
        fprintf(stderr, "accepted model does not write: %s\n", st.msg);
        abort();
    }
    free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    pdq_circle_model m;
    pdq_status st = {0};
    if (pdq_circle_parse(data, size, &m, &st) != PDQ_OK) return 0;
    rewrite(&m, 0);
    rewrite(&m, 1);
    pdq_circle_model_free(&m);
    return 0;
}
