/* pdq circle-run: runs one Circle graph on .npy inputs (subgraph input order) and writes every
 * output as DIR/output_<i>.npy, like ONE's circle-interpreter. Quantized tensors: an integer .npy
 * input holds codes (dequantized with the input's qparams), a float one real values; outputs are
 * written as codes in the tensor's dtype (int16/uint8), or float32 with --float-out. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pdq/file.h"
#include "args.h"
#include "commands.h"
#include "exec_args.h"
#include "pdq/circle_export.h"
#include "pdq/npy.h"

static const char *k_usage =
    "usage: pdq circle-run FILE.circle --input A.npy [--input B.npy ...] --out DIR [--float-out] [--threads N]\n"
    "                      [--mode float|fake|int]\n" EXEC_ARGS_USAGE;

static int to_input(pdq_cgraph *cg, int i, const pdq_npy *x, pdq_status *st) {
    const pdq_tensor *t = pdq_cg_input_tensor(cg, i);
    size_t n = pdq_tensor_count(t);
    if (x->count != n) {
        pdq_fail(st, PDQ_ERR_SHAPE, "input %d (%s): %zu values given, the tensor has %zu", i, t->name, x->count, n);
        return 1;
    }
    void *dst = pdq_cg_input(cg, i);
    int quant = t->q && t->dtype != PDQ_TF32;
    for (size_t k = 0; k < n; k++) {
        double v;
        switch (x->dtype) {
        case PDQ_NPY_F32: v = ((const float *)x->data)[k]; break;
        case PDQ_NPY_F64: v = ((const double *)x->data)[k]; break;
        case PDQ_NPY_I32: v = ((const int32_t *)x->data)[k]; break;
        case PDQ_NPY_I64: v = (double)((const int64_t *)x->data)[k]; break;
        case PDQ_NPY_U8: v = ((const uint8_t *)x->data)[k]; break;
        case PDQ_NPY_I16: v = ((const int16_t *)x->data)[k]; break;
        case PDQ_NPY_U16: v = ((const uint16_t *)x->data)[k]; break;
        case PDQ_NPY_I8: v = ((const int8_t *)x->data)[k]; break;
        default: v = 0; break;
        }
        int is_int = x->dtype != PDQ_NPY_F32 && x->dtype != PDQ_NPY_F64;
        /* casting an out-of-range double to an integer is UB: saturate first */
        double vi = v != v ? 0 : v < -2147483648.0 ? -2147483648.0 : v > 2147483647.0 ? 2147483647.0 : v;
        if (t->dtype == PDQ_TI32 || t->dtype == PDQ_TI64) ((int32_t *)dst)[k] = (int32_t)vi;
        else if (quant && is_int) ((float *)dst)[k] = pdq_cg_dequantize_value(t, (int64_t)vi);
        else ((float *)dst)[k] = (float)v;
    }
    return 0;
}

int cmd_circle_run(int argc, char **argv) {
    pdq_args a;
    args_init(&a, "circle-run", argc, argv);
    if (args_flag(&a, "--help")) { fputs(k_usage, stdout); return 0; }
    const char *ins[256];
    int n_in = args_all(&a, "--input", ins, 256);
    const char *out = args_required(&a, "--out");
    int float_out = args_flag(&a, "--float-out");
    int threads = (int)args_int(&a, "--threads", 0);
    cli_exec ex;
    if (cli_exec_read(&a, &ex)) return 2;
    const char *file = args_pos(&a, 0);
    if (!file) args_error(&a, "the .circle file to run is required (first argument)");
    if (args_finish(&a)) return ARGS_USAGE_EXIT;
    pdq_status dst = {0}; /* the output dir before the run, not after it */
    if (pdq_dir_make(out, 0, &dst) != PDQ_OK) {
        fprintf(stderr, "pdq circle-run: --out %s\n", dst.msg);
        return 1;
    }
    pdq_exec_opts eo;
    if (cli_exec_opts(&ex, "circle-run", threads, &eo)) return 1;
    pdq_status st = {0};
    pdq_cgraph *cg = NULL;
    if (pdq_cg_open_opts(file, &eo, &cg, &st) != PDQ_OK) {
        fprintf(stderr, "pdq circle-run: %s\n", st.msg);
        cli_exec_free(&ex);
        return 1;
    }
    int status = 1;
    if (n_in != pdq_cg_n_inputs(cg)) {
        fprintf(stderr, "pdq circle-run: %s has %d inputs, %d --input given\n", file, pdq_cg_n_inputs(cg), n_in);
        goto done;
    }
    for (int i = 0; i < n_in; i++) {
        pdq_npy x = {0};
        if (pdq_npy_read(ins[i], &x, &st) != PDQ_OK) { fprintf(stderr, "pdq circle-run: %s\n", st.msg); goto done; }
        int bad = to_input(cg, i, &x, &st);
        pdq_npy_free(&x);
        if (bad) { fprintf(stderr, "pdq circle-run: %s: %s\n", ins[i], st.msg); goto done; }
    }
    if (pdq_cg_run(cg, &st) != PDQ_OK) { fprintf(stderr, "pdq circle-run: %s\n", st.msg); goto done; }
    for (int i = 0; i < pdq_cg_n_outputs(cg); i++) {
        const pdq_tensor *t = pdq_cg_output_tensor(cg, i);
        const float *y = pdq_cg_output(cg, i);
        size_t n = pdq_tensor_count(t);
        int64_t shape[PDQ_G_MAX_DIMS];
        for (int d = 0; d < t->ndim; d++) shape[d] = t->shape[d];
        char path[4096];
        snprintf(path, sizeof path, "%s/output_%d.npy", out, i);
        pdq_code rc;
        int quant = t->q && t->dtype != PDQ_TF32 && !float_out;
        if (quant && (t->dtype == PDQ_TI16 || t->dtype == PDQ_TU8)) {
            void *codes = malloc(n * pdq_tdtype_size(t->dtype) + 1);
            if (!codes) { fprintf(stderr, "pdq circle-run: out of memory\n"); goto done; }
            for (size_t k = 0; k < n; k++) {
                int64_t q = pdq_cg_quantize_value(t, y[k]);
                if (t->dtype == PDQ_TI16) ((int16_t *)codes)[k] = (int16_t)q;
                else ((uint8_t *)codes)[k] = (uint8_t)q;
            }
            rc = pdq_npy_write(path, t->dtype == PDQ_TI16 ? PDQ_NPY_I16 : PDQ_NPY_U8, t->ndim, shape, codes, &st);
            free(codes);
        } else {
            rc = pdq_npy_write(path, PDQ_NPY_F32, t->ndim, shape, y, &st);
        }
        if (rc != PDQ_OK) { fprintf(stderr, "pdq circle-run: %s\n", st.msg); goto done; }
        printf("output %d: %s -> %s\n", i, t->name, path);
    }
    status = 0;
done:
    pdq_cg_free(cg);
    cli_exec_free(&ex);
    return status;
}
