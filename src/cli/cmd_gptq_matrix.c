/* pdq gptq-matrix: GPTQ (and RTN for comparison) on one weight matrix, for research and for
 * comparing implementations. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "pdq/file.h"
#include "pdq/npy.h"
#include "pdq/progress.h"
#include "quant_args.h"

static const char *k_usage =
    "usage: pdq gptq-matrix --weight W.npy (--hessian H.npy | --inputs X.npy) --out DIR [options]\n"
    "  W float32 [rows, cols]; H float32 [cols, cols]; X float32 [N, cols] -> H = 2/N X^T X\n"
    QUANT_ARGS_USAGE
    "writes DIR/dequant.npy, codes.npy (uint8, original column order), scales.npy, zeros.npy\n"
    "(float32, [rows] or [rows, groups]), g_idx.npy (groups only) and result.json\n";

static int write_outputs(const char *out, const pdq_gptq_opts *o, const pdq_qresult *r, double secs,
                         long hrows, pdq_status *st) {
    char path[4096];
    int64_t shp[2] = {r->rows, r->cols}, gshp[2] = {r->rows, r->ngroups};
    int gnd = r->ngroups > 1 ? 2 : 1;
#define OUTP(name) (snprintf(path, sizeof path, "%s/%s", out, name), path)
    if (pdq_npy_write(OUTP("dequant.npy"), PDQ_NPY_F32, 2, shp, r->deq, st) ||
        pdq_npy_write(OUTP("codes.npy"), PDQ_NPY_U8, 2, shp, r->codes, st) ||
        pdq_npy_write(OUTP("scales.npy"), PDQ_NPY_F32, gnd, gshp, r->scale, st) ||
        pdq_npy_write(OUTP("zeros.npy"), PDQ_NPY_F32, gnd, gshp, r->zero, st))
        return 1;
    if (r->g_idx) {
        int64_t c = r->cols;
        if (pdq_npy_write(OUTP("g_idx.npy"), PDQ_NPY_I32, 1, &c, r->g_idx, st)) return 1;
    }
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "loss", r->loss);
    cJSON_AddNumberToObject(j, "rtn_loss", r->rtn_loss);
    cJSON_AddNumberToObject(j, "rows", r->rows);
    cJSON_AddNumberToObject(j, "cols", r->cols);
    cJSON_AddNumberToObject(j, "bits", o->scheme.bits);
    cJSON_AddNumberToObject(j, "group", o->scheme.group);
    cJSON_AddBoolToObject(j, "sym", o->scheme.sym);
    cJSON_AddBoolToObject(j, "per_tensor", o->scheme.per_tensor);
    cJSON_AddBoolToObject(j, "mse", o->scheme.mse);
    cJSON_AddBoolToObject(j, "actorder", o->actorder);
    cJSON_AddBoolToObject(j, "static_groups", o->static_groups);
    cJSON_AddNumberToObject(j, "percdamp", o->percdamp);
    cJSON_AddNumberToObject(j, "blocksize", o->blocksize);
    if (hrows > 0) cJSON_AddNumberToObject(j, "hessian_rows", (double)hrows);
    cJSON_AddNumberToObject(j, "seconds", secs);
    char *txt = cJSON_Print(j);
    cJSON_Delete(j);
    pdq_code wrc = pdq_file_write_text(OUTP("result.json"), txt, 1, NULL, st); /* atomic: pdq/file.h */
    free(txt);
    if (wrc) return 1;
#undef OUTP
    return 0;
}

/* Columns of one matrix: the Hessian takes 12 * cols^2 bytes while it accumulates. */
#define GPTQ_MATRIX_MAX_COLS 32768

/* The first NaN/Inf of a 2-D array, blamed on the file it came from (not on the weight). */
static int check_finite(const char *path, const pdq_npy *a, pdq_status *st) {
    const float *x = a->data;
    size_t cols = a->ndim == 2 ? (size_t)a->shape[1] : 1;
    for (size_t i = 0; i < a->count; i++)
        if (!isfinite(x[i])) {
            pdq_fail(st, PDQ_ERR_NUMERIC, "%s: element [%zu, %zu] is %s", path, i / cols, i % cols,
                     isnan(x[i]) ? "NaN" : "Inf");
            return 1;
        }
    return 0;
}

int cmd_gptq_matrix(int argc, char **argv) {
    pdq_args a;
    args_init(&a, "gptq-matrix", argc, argv);
    if (args_flag(&a, "--help")) { fputs(k_usage, stdout); return 0; }
    const char *wpath = args_required(&a, "--weight"), *hpath = args_str(&a, "--hessian");
    const char *xpath = args_str(&a, "--inputs"), *out = args_required(&a, "--out");
    pdq_gptq_opts o;
    quant_args_read(&a, &o, PDQ_QSCALE_F32); /* the reference algorithms' float32 grids */
    args_one_of(&a, "--hessian", hpath, "--inputs", xpath);
    if (args_finish(&a)) return ARGS_USAGE_EXIT;

    pdq_status st = {0};
    pdq_npy W = {0}, H = {0};
    float *h = NULL;
    long hrows = 0;
    int status = 1;
    if (pdq_npy_read_f32(wpath, &W, &st)) goto fail;
    if (W.ndim != 2) { pdq_fail(&st, PDQ_ERR_SHAPE, "%s: weight must be 2-D, got %d-D", wpath, W.ndim); goto fail; }
    if (W.shape[0] < 1 || W.shape[0] > 2147483647 || W.shape[1] < 1 || W.shape[1] > GPTQ_MATRIX_MAX_COLS) {
        pdq_fail(&st, PDQ_ERR_LIMIT, "%s: weight shape [%lld, %lld]: rows must be in [1, 2147483647], columns in [1, %d]",
                 wpath, (long long)W.shape[0], (long long)W.shape[1], GPTQ_MATRIX_MAX_COLS);
        goto fail;
    }
    if (check_finite(wpath, &W, &st)) goto fail;
    int rows = (int)W.shape[0], cols = (int)W.shape[1];
    if (hpath) {
        if (pdq_npy_read_f32(hpath, &H, &st)) goto fail;
        if (H.ndim != 2 || H.shape[0] != cols || H.shape[1] != cols) {
            pdq_fail(&st, PDQ_ERR_SHAPE, "%s: Hessian must be [%d, %d] for a weight with %d columns", hpath, cols, cols, cols);
            goto fail;
        }
        if (check_finite(hpath, &H, &st)) goto fail;
        h = H.data;
    } else {
        pdq_npy X = {0};
        if (pdq_npy_read_f32(xpath, &X, &st)) goto fail;
        if (X.ndim != 2 || X.shape[1] != cols) {
            pdq_fail(&st, PDQ_ERR_SHAPE, "%s: inputs must be [N, %d]", xpath, cols);
            pdq_npy_free(&X);
            goto fail;
        }
        if (check_finite(xpath, &X, &st) || X.shape[0] > 2147483647) {
            if (!st.code) pdq_fail(&st, PDQ_ERR_LIMIT, "%s: more than 2147483647 input rows", xpath);
            pdq_npy_free(&X);
            goto fail;
        }
        pdq_hessian hs;
        h = malloc((size_t)cols * cols * sizeof(float));
        pdq_code rc = h ? pdq_hessian_init(&hs, cols, &st) : pdq_fail(&st, PDQ_ERR_NOMEM, "out of memory");
        if (!rc) {
            rc = pdq_hessian_add(&hs, X.data, (int)X.shape[0], &st);
            if (!rc) pdq_hessian_get(&hs, h);
            hrows = hs.rows;
            pdq_hessian_free(&hs);
        }
        pdq_npy_free(&X);
        if (rc) { pdq_wrap(&st, "%s", xpath); goto fail; }
    }
    if (pdq_dir_make(out, 0, &st) != PDQ_OK) goto fail;
    pdq_qresult r;
    double t0 = pdq_now();
    if (pdq_gptq(&o, W.data, rows, cols, h, wpath, &r, &st)) goto fail;
    double secs = pdq_now() - t0;
    if (!write_outputs(out, &o, &r, secs, hrows, &st)) {
        printf("gptq loss %.6g  rtn loss %.6g  (%d x %d, %.3fs)\n", r.loss, r.rtn_loss, rows, cols, secs);
        status = 0;
    }
    pdq_qresult_free(&r);
    if (status) goto fail;
    goto done;
fail:
    fprintf(stderr, "pdq gptq-matrix: %s\n", st.msg);
done:
    if (!hpath) free(h);
    pdq_npy_free(&W);
    pdq_npy_free(&H);
    return status;
}
