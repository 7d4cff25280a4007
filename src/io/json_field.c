/* Checked JSON field reads (see json_field.h). Range checks happen on the double cJSON parsed,
 * before any conversion, so no out-of-range double->int cast can happen. */
#include "io/json_field.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void pdq_jf_path(char *buf, size_t cap, const char *at, const char *key) {
    if (!at || !*at) snprintf(buf, cap, "%s", key);
    else snprintf(buf, cap, "%s.%s", at, key);
}

void pdq_jf_index(char *buf, size_t cap, const char *at, int i) { snprintf(buf, cap, "%s[%d]", at ? at : "", i); }

/* The value as JSON text, shortened for messages. */
static void show(const cJSON *v, char *buf, size_t cap) {
    if (cJSON_IsNumber(v)) {
        snprintf(buf, cap, "%.15g", v->valuedouble);
        return;
    }
    char *t = cJSON_PrintUnformatted(v);
    if (!t) { snprintf(buf, cap, "?"); return; }
    if (strlen(t) > 40) snprintf(buf, cap, "%.37s...", t);
    else snprintf(buf, cap, "%s", t);
    free(t);
}

static const char *file_of(const pdq_jctx *c) { return c && c->file ? c->file : "json"; }

/* Looks key up; returns 1 with *v set, 0 when absent (after failing if required). */
static int lookup(const pdq_jctx *c, const cJSON *obj, const char *key, int required, const cJSON **v,
                  pdq_code *rc, pdq_status *st) {
    *rc = PDQ_OK;
    *v = cJSON_IsObject(obj) ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;
    if (*v && !cJSON_IsNull(*v)) return 1;
    if (required) {
        char p[256];
        pdq_jf_path(p, sizeof p, c ? c->at : NULL, key);
        *rc = pdq_fail(st, PDQ_ERR_MISSING, "%s: required field %s is missing", file_of(c), p);
    }
    return 0;
}

pdq_code pdq_jf_int_value(const pdq_jctx *c, const cJSON *v, const char *name, int64_t lo, int64_t hi, int64_t *out,
                          pdq_status *st) {
    char shown[64];
    show(v, shown, sizeof shown);
    /* 2^63 is exactly representable: d < 2^63 guarantees the cast below is defined */
    double d = cJSON_IsNumber(v) ? v->valuedouble : NAN;
    if (!cJSON_IsNumber(v) || !isfinite(d) || d != floor(d) || d < (double)lo || d > (double)hi ||
        d >= 9223372036854775808.0 || d < -9223372036854775808.0 || (int64_t)d < lo || (int64_t)d > hi)
        return pdq_fail(st, PDQ_ERR_FORMAT, "%s: %s = %s: must be an integer in [%lld, %lld]", file_of(c), name,
                        shown, (long long)lo, (long long)hi);
    *out = (int64_t)d;
    return PDQ_OK;
}

pdq_code pdq_jf_int(const pdq_jctx *c, const cJSON *obj, const char *key, int required, int64_t lo, int64_t hi,
                    int64_t *out, pdq_status *st) {
    const cJSON *v;
    pdq_code rc;
    if (!lookup(c, obj, key, required, &v, &rc, st)) return rc;
    char p[256];
    pdq_jf_path(p, sizeof p, c ? c->at : NULL, key);
    return pdq_jf_int_value(c, v, p, lo, hi, out, st);
}

pdq_code pdq_jf_i32(const pdq_jctx *c, const cJSON *obj, const char *key, int required, int lo, int hi, int *out,
                    pdq_status *st) {
    int64_t v = *out;
    pdq_code rc = pdq_jf_int(c, obj, key, required, lo, hi, &v, st);
    if (rc == PDQ_OK) *out = (int)v;
    return rc;
}

pdq_code pdq_jf_num(const pdq_jctx *c, const cJSON *obj, const char *key, int required, double lo, double hi,
                    double *out, pdq_status *st) {
    const cJSON *v;
    pdq_code rc;
    if (!lookup(c, obj, key, required, &v, &rc, st)) return rc;
    double d = cJSON_IsNumber(v) ? v->valuedouble : NAN;
    if (!(d >= lo && d <= hi)) { /* also NaN, inf and non-numbers */
        char p[256], shown[64];
        pdq_jf_path(p, sizeof p, c ? c->at : NULL, key);
        show(v, shown, sizeof shown);
        return pdq_fail(st, PDQ_ERR_FORMAT, "%s: %s = %s: must be a finite number in [%.15g, %.15g]", file_of(c), p,
                        shown, lo, hi);
    }
    *out = d;
    return PDQ_OK;
}

pdq_code pdq_jf_bool(const pdq_jctx *c, const cJSON *obj, const char *key, int required, int *out, pdq_status *st) {
    const cJSON *v;
    pdq_code rc;
    if (!lookup(c, obj, key, required, &v, &rc, st)) return rc;
    if (!cJSON_IsBool(v)) {
        char p[256], shown[64];
        pdq_jf_path(p, sizeof p, c ? c->at : NULL, key);
        show(v, shown, sizeof shown);
        return pdq_fail(st, PDQ_ERR_FORMAT, "%s: %s = %s: must be true or false", file_of(c), p, shown);
    }
    *out = cJSON_IsTrue(v);
    return PDQ_OK;
}

pdq_code pdq_jf_str(const pdq_jctx *c, const cJSON *obj, const char *key, int required, const char **out,
                    pdq_status *st) {
    const cJSON *v;
    pdq_code rc;
    if (!lookup(c, obj, key, required, &v, &rc, st)) return rc;
    if (!cJSON_IsString(v)) {
        char p[256], shown[64];
        pdq_jf_path(p, sizeof p, c ? c->at : NULL, key);
        show(v, shown, sizeof shown);
        return pdq_fail(st, PDQ_ERR_FORMAT, "%s: %s = %s: must be a string", file_of(c), p, shown);
    }
    *out = v->valuestring;
    return PDQ_OK;
}

pdq_code pdq_jf_enum(const pdq_jctx *c, const cJSON *obj, const char *key, int required, const char *const *names,
                     int n, int *out, pdq_status *st) {
    const char *s = NULL;
    pdq_code rc = pdq_jf_str(c, obj, key, required, &s, st);
    if (rc || !s) return rc;
    for (int i = 0; i < n; i++)
        if (strcmp(s, names[i]) == 0) {
            *out = i;
            return PDQ_OK;
        }
    char p[256], list[256] = "";
    pdq_jf_path(p, sizeof p, c ? c->at : NULL, key);
    for (int i = 0; i < n; i++) {
        size_t l = strlen(list);
        snprintf(list + l, sizeof list - l, "%s%s", i ? ", " : "", names[i]);
    }
    return pdq_fail(st, PDQ_ERR_FORMAT, "%s: %s = \"%.40s\": must be one of %s", file_of(c), p, s, list);
}

static pdq_code typed(const pdq_jctx *c, const cJSON *obj, const char *key, int required, int want_array,
                      int max_items, const cJSON **out, pdq_status *st) {
    const cJSON *v;
    pdq_code rc;
    *out = NULL;
    if (!lookup(c, obj, key, required, &v, &rc, st)) return rc;
    char p[256];
    pdq_jf_path(p, sizeof p, c ? c->at : NULL, key);
    if (want_array ? !cJSON_IsArray(v) : !cJSON_IsObject(v)) {
        char shown[64];
        show(v, shown, sizeof shown);
        return pdq_fail(st, PDQ_ERR_FORMAT, "%s: %s = %s: must be %s", file_of(c), p, shown,
                        want_array ? "an array" : "an object");
    }
    int n = cJSON_GetArraySize(v);
    if (max_items >= 0 && n > max_items)
        return pdq_fail(st, PDQ_ERR_LIMIT, "%s: %s has %d entries: the limit is %d", file_of(c), p, n, max_items);
    *out = v;
    return PDQ_OK;
}

pdq_code pdq_jf_object(const pdq_jctx *c, const cJSON *obj, const char *key, int required, const cJSON **out,
                       pdq_status *st) {
    return typed(c, obj, key, required, 0, -1, out, st);
}

pdq_code pdq_jf_array(const pdq_jctx *c, const cJSON *obj, const char *key, int required, int max_items,
                      const cJSON **out, pdq_status *st) {
    return typed(c, obj, key, required, 1, max_items, out, st);
}

const cJSON *pdq_jf_get(const cJSON *obj, const char *a, const char *b, const char *c) {
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(obj, a);
    if (x && b) x = cJSON_GetObjectItemCaseSensitive(x, b);
    if (x && c) x = cJSON_GetObjectItemCaseSensitive(x, c);
    return x;
}

double pdq_jf_get_num(const cJSON *obj, const char *a, const char *b, const char *c, double fallback) {
    const cJSON *x = pdq_jf_get(obj, a, b, c);
    return cJSON_IsNumber(x) ? x->valuedouble : fallback;
}
