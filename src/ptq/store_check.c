/* ptq.json validation (see store_check.h). Every grid that passes can be used by fake-quant and
 * written into a Circle file as it is: scale a normal float32, zero point inside [qmin, qmax],
 * [qmin, qmax] inside the dtype, int16 symmetric as ONE requires. */
#include "ptq/store_check.h"

#include <stdio.h>
#include <string.h>

#include "io/json_field.h"
#include "pdq/ptq.h"

static const char *const k_dtypes[] = {"float", "int16", "uint8", "int32"}; /* pdq_adtype order */
static const char *const k_obs[] = {"minmax", "ema"};
static const char *const k_rope[] = {"hf", "pre_negated_sin"};
static const char *const k_fusion[] = {"none", "k_proj"};
static const char *const k_layout[] = {"batched", "unrolled"};

/* The integer range of each activation dtype (float: the unused grid 0..0). */
static void dtype_range(int dt, int64_t *lo, int64_t *hi) {
    switch (dt) {
    case PDQ_ADT_INT16: *lo = -32768; *hi = 32767; return;
    case PDQ_ADT_UINT8: *lo = 0; *hi = 255; return;
    case PDQ_ADT_INT32: *lo = -2147483647LL - 1; *hi = 2147483647; return;
    default: *lo = 0; *hi = 0; return;
    }
}

/* Adds context after a field helper's message ("... must be in [a, b] (int16 grid)"). */
static pdq_code append(pdq_status *st, const char *what) {
    if (!st) return PDQ_ERR_FORMAT;
    size_t n = strlen(st->msg);
    snprintf(st->msg + n, sizeof st->msg - n, " (%s)", what);
    return st->code;
}

#define COUNT_MAX 9007199254740992.0 /* 2^53: counts stay exact in a double */

pdq_code pdq_ptq_group_check(const cJSON *o, int i, const char *path, ptq_group_doc *g, pdq_status *st) {
    char at[64];
    snprintf(at, sizeof at, "groups[%d]", i);
    pdq_jctx c = {path, at};
    memset(g, 0, sizeof *g);
    if (!cJSON_IsObject(o)) return pdq_fail(st, PDQ_ERR_FORMAT, "%s: %s must be an object", path, at);
    pdq_code rc;
    if ((rc = pdq_jf_str(&c, o, "name", PDQ_JF_REQUIRED, &g->name, st)) ||
        (rc = pdq_jf_enum(&c, o, "dtype", PDQ_JF_REQUIRED, k_dtypes, 4, &g->dtype, st)) ||
        (rc = pdq_jf_num(&c, o, "scale", PDQ_JF_REQUIRED, PDQ_PTQ_MIN_SCALE, PDQ_PTQ_MAX_SCALE, &g->scale, st)))
        return rc;
    int64_t lo, hi;
    dtype_range(g->dtype, &lo, &hi);
    char lim[96];
    if ((rc = pdq_jf_int(&c, o, "qmin", PDQ_JF_REQUIRED, lo, hi, &g->qmin, st)) ||
        (rc = pdq_jf_int(&c, o, "qmax", PDQ_JF_REQUIRED, lo, hi, &g->qmax, st)))
        return append(st, g->dtype == PDQ_ADT_FLOAT ? "a float group's grid is 0..0" : k_dtypes[g->dtype]);
    if (g->dtype != PDQ_ADT_FLOAT && g->qmin >= g->qmax)
        return pdq_fail(st, PDQ_ERR_FORMAT, "%s: %s: qmin = %lld, qmax = %lld: qmin must be < qmax", path, at,
                        (long long)g->qmin, (long long)g->qmax);
    /* int16 activations are symmetric in ONE: zero point 0 */
    int64_t zlo = g->dtype == PDQ_ADT_INT16 ? 0 : g->qmin, zhi = g->dtype == PDQ_ADT_INT16 ? 0 : g->qmax;
    if ((rc = pdq_jf_int(&c, o, "zero_point", PDQ_JF_REQUIRED, zlo, zhi, &g->zero_point, st))) {
        if (g->dtype == PDQ_ADT_INT16) return append(st, "int16 grids are symmetric");
        snprintf(lim, sizeof lim, "inside the %s grid [%lld, %lld]", k_dtypes[g->dtype], (long long)g->qmin,
                 (long long)g->qmax);
        return append(st, lim);
    }
    if (g->zero_point < g->qmin || g->zero_point > g->qmax) /* int16: 0 must lie on the grid */
        return pdq_fail(st, PDQ_ERR_FORMAT, "%s: %s.zero_point = %lld: outside the grid [qmin, qmax] = [%lld, %lld]",
                        path, at, (long long)g->zero_point, (long long)g->qmin, (long long)g->qmax);
    if ((rc = pdq_jf_num(&c, o, "min", PDQ_JF_REQUIRED, -1e30, 1e30, &g->min, st)) ||
        (rc = pdq_jf_num(&c, o, "max", PDQ_JF_REQUIRED, -1e30, 1e30, &g->max, st)))
        return rc;
    if (g->min > g->max)
        return pdq_fail(st, PDQ_ERR_FORMAT, "%s: %s: min = %.15g > max = %.15g", path, at, g->min, g->max);
    if ((rc = pdq_jf_bool(&c, o, "fixed", PDQ_JF_OPTIONAL, &g->fixed, st))) return rc;
    const cJSON *v;
    if ((v = cJSON_GetObjectItemCaseSensitive(o, "steps")) && !cJSON_IsNull(v)) {
        if ((rc = pdq_jf_int(&c, o, "steps", PDQ_JF_REQUIRED, 0, (int64_t)COUNT_MAX, &g->steps, st))) return rc;
        g->has_steps = 1;
    }
    if ((v = cJSON_GetObjectItemCaseSensitive(o, "counted")) && !cJSON_IsNull(v)) {
        if ((rc = pdq_jf_num(&c, o, "counted", PDQ_JF_REQUIRED, 0, COUNT_MAX, &g->counted, st))) return rc;
        g->has_counted = 1;
    }
    if ((v = cJSON_GetObjectItemCaseSensitive(o, "clipped")) && !cJSON_IsNull(v)) {
        double cap = g->has_counted ? g->counted : COUNT_MAX;
        if ((rc = pdq_jf_num(&c, o, "clipped", PDQ_JF_REQUIRED, 0, cap, &g->clipped, st)))
            return g->has_counted ? append(st, "clipped cannot exceed counted") : rc;
        g->has_clipped = 1;
    }
    return PDQ_OK;
}

pdq_code pdq_ptq_doc_check(const cJSON *root, const char *path, int max_seq_limit, ptq_doc *d, pdq_status *st) {
    memset(d, 0, sizeof *d);
    pdq_jctx c = {path, ""};
    if (!cJSON_IsObject(root)) return pdq_fail(st, PDQ_ERR_FORMAT, "%s: not a JSON object", path);
    const char *fmt = NULL;
    pdq_code rc;
    if ((rc = pdq_jf_str(&c, root, "format", PDQ_JF_REQUIRED, &fmt, st))) return rc;
    if (strcmp(fmt, "pdq-ptq") != 0)
        return pdq_fail(st, PDQ_ERR_FORMAT, "%s: format = \"%.40s\": must be \"pdq-ptq\"", path, fmt);
    int64_t version = 1;
    d->ema_momentum = 0.9;
    if ((rc = pdq_jf_int(&c, root, "version", PDQ_JF_OPTIONAL, 1, 1, &version, st)) ||
        (rc = pdq_jf_enum(&c, root, "activation_dtype", PDQ_JF_REQUIRED, k_dtypes, 4, &d->adtype, st)) ||
        (rc = pdq_jf_enum(&c, root, "observer", PDQ_JF_REQUIRED, k_obs, 2, &d->observer, st)) ||
        (rc = pdq_jf_num(&c, root, "ema_momentum", PDQ_JF_OPTIONAL, 0, 1, &d->ema_momentum, st)) ||
        (rc = pdq_jf_i32(&c, root, "max_seq", PDQ_JF_REQUIRED, 2, max_seq_limit, &d->max_seq, st)))
        return rc;
    const cJSON *so;
    if ((rc = pdq_jf_object(&c, root, "static_opts", PDQ_JF_REQUIRED, &so, st))) return rc;
    pdq_jctx cs = {path, "static_opts"};
    if ((rc = pdq_jf_enum(&cs, so, "rope", PDQ_JF_REQUIRED, k_rope, 2, &d->rope, st)) ||
        (rc = pdq_jf_enum(&cs, so, "scale_fusion", PDQ_JF_REQUIRED, k_fusion, 2, &d->scale_fusion, st)) ||
        (rc = pdq_jf_enum(&cs, so, "layout", PDQ_JF_REQUIRED, k_layout, 2, &d->layout, st)) ||
        (rc = pdq_jf_num(&cs, so, "mask_fill", PDQ_JF_REQUIRED, -1e9, 0, &d->mask_fill, st)))
        return rc;
    const cJSON *cal;
    if ((rc = pdq_jf_object(&c, root, "calibration", PDQ_JF_OPTIONAL, &cal, st))) return rc;
    if (cal) {
        pdq_jctx cc = {path, "calibration"};
        d->samples = d->decode_steps = -1;
        if ((rc = pdq_jf_i32(&cc, cal, "samples", PDQ_JF_OPTIONAL, 0, 1 << 30, &d->samples, st)) ||
            (rc = pdq_jf_i32(&cc, cal, "decode_steps", PDQ_JF_OPTIONAL, 0, d->max_seq - 1, &d->decode_steps, st)))
            return rc;
        d->has_samples = d->samples >= 0;
        d->has_decode_steps = d->decode_steps >= 0;
        if (!d->has_samples) d->samples = 0;
        if (!d->has_decode_steps) d->decode_steps = 0;
    }
    if ((rc = pdq_jf_array(&c, root, "groups", PDQ_JF_REQUIRED, PDQ_PTQ_MAX_GROUPS, &d->groups, st)) ||
        (rc = pdq_jf_object(&c, root, "edges", PDQ_JF_REQUIRED, &d->edges, st)))
        return rc;
    d->n_groups = cJSON_GetArraySize(d->groups);
    int i = 0;
    const cJSON *o;
    cJSON_ArrayForEach(o, d->groups) {
        ptq_group_doc g;
        if ((rc = pdq_ptq_group_check(o, i++, path, &g, st))) return rc;
    }
    const cJSON *e;
    char at[320];
    cJSON_ArrayForEach(e, d->edges) {
        int64_t gi;
        snprintf(at, sizeof at, "edges.%.300s", e->string ? e->string : "?");
        if ((rc = pdq_jf_int_value(&c, e, at, 0, d->n_groups - 1, &gi, st))) return append(st, "an index into groups");
        if (++d->n_edges > 4 * PDQ_PTQ_MAX_GROUPS)
            return pdq_fail(st, PDQ_ERR_LIMIT, "%s: edges has more than %d entries", path, 4 * PDQ_PTQ_MAX_GROUPS);
    }
    return PDQ_OK;
}
