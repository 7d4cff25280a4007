/* pdq_quant.json validation (see quant_json_check.h). */
#include "io/quant_json_check.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "io/json_field.h"

static const char *const k_methods[] = {"gptq", "rtn"};
static const char *const k_scale_types[] = {"F32", "F16", "BF16"}; /* pdq_qscale_type order */

/* 0 (kept float) or a quantizer width 2..8. */
static pdq_code bits_or_none(const pdq_jctx *c, const cJSON *root, const char *key, pdq_status *st) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!v || cJSON_IsNull(v) || (cJSON_IsString(v) && strcmp(v->valuestring, "none") == 0)) return PDQ_OK;
    int64_t b = 0;
    pdq_code rc = pdq_jf_int(c, root, key, PDQ_JF_REQUIRED, 0, 8, &b, st);
    if (!rc && b == 1) rc = pdq_fail(st, PDQ_ERR_FORMAT, "%s: %s = 1: must be 0 (float) or in [2, 8]", c->file, key);
    return rc;
}

static pdq_code check_entry(const char *path, const char *name, const cJSON *e, pdq_status *st) {
    char at[320];
    snprintf(at, sizeof at, "tensors.%.300s", name);
    pdq_jctx c = {path, at};
    if (!cJSON_IsObject(e)) return pdq_fail(st, PDQ_ERR_FORMAT, "%s: %s must be an object", path, at);
    const cJSON *sh;
    pdq_code rc = pdq_jf_array(&c, e, "shape", PDQ_JF_REQUIRED, 2, &sh, st);
    if (rc) return rc;
    if (cJSON_GetArraySize(sh) != 2)
        return pdq_fail(st, PDQ_ERR_FORMAT, "%s: %s.shape has %d entries: must be [rows, cols]", path, at,
                        cJSON_GetArraySize(sh));
    int64_t rows, cols, bits, group;
    char nm[360];
    snprintf(nm, sizeof nm, "%s.shape[0]", at);
    if ((rc = pdq_jf_int_value(&c, cJSON_GetArrayItem(sh, 0), nm, 1, PDQ_QUANT_MAX_DIM, &rows, st))) return rc;
    snprintf(nm, sizeof nm, "%s.shape[1]", at);
    if ((rc = pdq_jf_int_value(&c, cJSON_GetArrayItem(sh, 1), nm, 1, PDQ_QUANT_MAX_DIM, &cols, st))) return rc;
    /* group and cols <= 2^24 keep ceil(cols / group) free of int overflow (a group wider than
     * cols is one partial group) */
    if ((rc = pdq_jf_int(&c, e, "bits", PDQ_JF_REQUIRED, 2, 8, &bits, st)) ||
        (rc = pdq_jf_int(&c, e, "group", PDQ_JF_REQUIRED, 0, PDQ_QUANT_MAX_DIM, &group, st)))
        return rc;
    int sym = 0, packed = bits <= 4, gidx = 0;
    if ((rc = pdq_jf_bool(&c, e, "sym", PDQ_JF_OPTIONAL, &sym, st)) ||
        (rc = pdq_jf_bool(&c, e, "g_idx", PDQ_JF_OPTIONAL, &gidx, st)) ||
        (rc = pdq_jf_bool(&c, e, "packed", PDQ_JF_OPTIONAL, &packed, st)))
        return rc;
    int stype = 0, zeros = 1;
    if ((rc = pdq_jf_enum(&c, e, "scale_dtype", PDQ_JF_OPTIONAL, k_scale_types, 3, &stype, st)) ||
        (rc = pdq_jf_bool(&c, e, "zeros", PDQ_JF_OPTIONAL, &zeros, st)))
        return rc;
    if (!zeros && !sym)
        return pdq_fail(st, PDQ_ERR_FORMAT, "%s: %s.zeros = false needs sym = true (only a symmetric grid has an implied "
                        "zero point)", path, at);
    if (packed != (bits <= 4))
        return pdq_fail(st, PDQ_ERR_FORMAT, "%s: %s.packed = %s with bits = %lld: codes are packed exactly when bits <= 4",
                        path, at, packed ? "true" : "false", (long long)bits);
    return PDQ_OK;
}

pdq_code pdq_quant_doc_check(const cJSON *root, const char *path, pdq_status *st) {
    pdq_jctx c = {path, ""};
    if (!cJSON_IsObject(root)) return pdq_fail(st, PDQ_ERR_FORMAT, "%s: not a JSON object", path);
    const char *fmt = NULL;
    pdq_code rc = pdq_jf_str(&c, root, "format", PDQ_JF_REQUIRED, &fmt, st);
    if (rc) return rc;
    if (strcmp(fmt, "pdq-quant") != 0)
        return pdq_fail(st, PDQ_ERR_FORMAT, "%s: format = \"%.40s\": must be \"pdq-quant\"", path, fmt);
    int64_t i64 = 0;
    int method = 0, b = 0;
    double d = 0;
    const cJSON *ver = cJSON_GetObjectItemCaseSensitive(root, "version");
    if (cJSON_IsNumber(ver) && ver->valuedouble > PDQ_QUANT_VERSION)
        return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "%s: format version %g is newer than this pdq reads (%d): re-quantize "
                        "the model with this pdq (pdq quantize MODEL OUTDIR ...) or update pdq", path, ver->valuedouble,
                        PDQ_QUANT_VERSION);
    if ((rc = pdq_jf_int(&c, root, "version", PDQ_JF_OPTIONAL, 1, PDQ_QUANT_VERSION, &i64, st)) ||
        (rc = pdq_jf_enum(&c, root, "method", PDQ_JF_OPTIONAL, k_methods, 2, &method, st)) ||
        (rc = pdq_jf_int(&c, root, "bits", PDQ_JF_OPTIONAL, 2, 8, &i64, st)) ||
        (rc = pdq_jf_int(&c, root, "group", PDQ_JF_OPTIONAL, 0, PDQ_QUANT_MAX_DIM, &i64, st)) ||
        (rc = pdq_jf_bool(&c, root, "partial_groups", PDQ_JF_OPTIONAL, &b, st)) ||
        (rc = pdq_jf_bool(&c, root, "sym", PDQ_JF_OPTIONAL, &b, st)) ||
        (rc = pdq_jf_enum(&c, root, "group_scale", PDQ_JF_OPTIONAL, k_scale_types, 3, &method, st)) ||
        (rc = pdq_jf_bool(&c, root, "per_tensor", PDQ_JF_OPTIONAL, &b, st)) ||
        (rc = pdq_jf_bool(&c, root, "mse", PDQ_JF_OPTIONAL, &b, st)) ||
        (rc = pdq_jf_int(&c, root, "mse_grid", PDQ_JF_OPTIONAL, 1, 1 << 16, &i64, st)) ||
        (rc = pdq_jf_num(&c, root, "mse_maxshrink", PDQ_JF_OPTIONAL, 0, 1, &d, st)) ||
        (rc = pdq_jf_num(&c, root, "mse_norm", PDQ_JF_OPTIONAL, 1e-3, 1e3, &d, st)) ||
        (rc = pdq_jf_bool(&c, root, "actorder", PDQ_JF_OPTIONAL, &b, st)) ||
        (rc = pdq_jf_bool(&c, root, "static_groups", PDQ_JF_OPTIONAL, &b, st)) ||
        (rc = pdq_jf_num(&c, root, "percdamp", PDQ_JF_OPTIONAL, 0, 1e3, &d, st)) ||
        (rc = pdq_jf_int(&c, root, "blocksize", PDQ_JF_OPTIONAL, 1, PDQ_QUANT_MAX_DIM, &i64, st)) ||
        (rc = pdq_jf_int(&c, root, "nsamples", PDQ_JF_OPTIONAL, 0, 1 << 30, &i64, st)) ||
        (rc = pdq_jf_int(&c, root, "seq_len", PDQ_JF_OPTIONAL, 0, PDQ_QUANT_MAX_DIM, &i64, st)) ||
        /* a uint64 seed written as a double: a record, not used for sizes */
        (rc = pdq_jf_num(&c, root, "seed", PDQ_JF_OPTIONAL, 0, 18446744073709551616.0, &d, st)) ||
        (rc = bits_or_none(&c, root, "embed_bits", st)) || (rc = bits_or_none(&c, root, "lm_head_bits", st)) ||
        (rc = pdq_jf_bool(&c, root, "lm_head_gptq", PDQ_JF_OPTIONAL, &b, st)))
        return rc;
    const cJSON *ov, *tens, *e;
    if ((rc = pdq_jf_array(&c, root, "overrides", PDQ_JF_OPTIONAL, PDQ_QUANT_MAX_TENSORS, &ov, st))) return rc;
    int i = 0;
    cJSON_ArrayForEach(e, ov) {
        if (!cJSON_IsString(e))
            return pdq_fail(st, PDQ_ERR_FORMAT, "%s: overrides[%d] must be a \"name=bits\" string", path, i);
        i++;
    }
    if ((rc = pdq_jf_object(&c, root, "tensors", PDQ_JF_REQUIRED, &tens, st))) return rc;
    if (cJSON_GetArraySize(tens) > PDQ_QUANT_MAX_TENSORS)
        return pdq_fail(st, PDQ_ERR_LIMIT, "%s: tensors has %d entries: the limit is %d", path,
                        cJSON_GetArraySize(tens), PDQ_QUANT_MAX_TENSORS);
    cJSON_ArrayForEach(e, tens) {
        if ((rc = check_entry(path, e->string ? e->string : "?", e, st))) return rc;
    }
    return PDQ_OK;
}
