/* safetensors header validation: 8-byte LE length, JSON object of tensors, offsets that tile the
 * data area exactly (as the reference Rust implementation requires). Untrusted input: fuzzed. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "st_internal.h"

/* JSON numbers are doubles: integers are exact below 2^53, which bounds every size we accept. */
#define MAX_EXACT 9007199254740992.0

static int get_u64(const cJSON *v, uint64_t *out) {
    if (!cJSON_IsNumber(v)) return -1;
    double d = v->valuedouble;
    if (!(d >= 0) || d >= MAX_EXACT || d != floor(d)) return -1;
    *out = (uint64_t)d;
    return 0;
}

static pdq_code parse_entry(const cJSON *e, const char *file, const char *tname, size_t data_size,
                            const uint8_t *data, pdq_st_tensor *t, uint64_t *begin, pdq_status *st) {
    if (!cJSON_IsObject(e)) return pdq_fail(st, PDQ_ERR_FORMAT, "%s: tensor %s: entry is not an object", file, tname);
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(e, "dtype");
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(e, "shape");
    const cJSON *off = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
    if (!cJSON_IsString(dt))
        return pdq_fail(st, PDQ_ERR_FORMAT, "%s: tensor %s: missing or non-string dtype", file, tname);
    if (pdq_dtype_parse(dt->valuestring, &t->dtype) != 0)
        return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "%s: tensor %s: unknown dtype '%.32s'", file, tname, dt->valuestring);
    if (!cJSON_IsArray(sh)) return pdq_fail(st, PDQ_ERR_FORMAT, "%s: tensor %s: missing shape", file, tname);
    int nd = cJSON_GetArraySize(sh);
    if (nd > PDQ_ST_MAX_DIMS)
        return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "%s: tensor %s: %d dimensions (at most %d)", file, tname, nd,
                        PDQ_ST_MAX_DIMS);
    t->ndim = nd;
    /* Element count with overflow checks: every factor and the product stay below 2^53. */
    double numel = 1;
    const cJSON *d;
    int i = 0;
    cJSON_ArrayForEach(d, sh) {
        uint64_t v;
        if (get_u64(d, &v) != 0)
            return pdq_fail(st, PDQ_ERR_FORMAT, "%s: tensor %s: shape holds a non-integer or negative value",
                            file, tname);
        t->shape[i++] = (int64_t)v;
        numel *= (double)v;
        if (numel >= MAX_EXACT)
            return pdq_fail(st, PDQ_ERR_FORMAT, "%s: tensor %s: shape is implausibly large", file, tname);
    }
    if (!cJSON_IsArray(off) || cJSON_GetArraySize(off) != 2)
        return pdq_fail(st, PDQ_ERR_FORMAT, "%s: tensor %s: data_offsets must be [begin, end]", file, tname);
    uint64_t b, en;
    if (get_u64(cJSON_GetArrayItem(off, 0), &b) || get_u64(cJSON_GetArrayItem(off, 1), &en))
        return pdq_fail(st, PDQ_ERR_FORMAT, "%s: tensor %s: data_offsets must be non-negative integers", file, tname);
    if (en < b)
        return pdq_fail(st, PDQ_ERR_FORMAT, "%s: tensor %s: data_offsets [%llu, %llu] end before they begin", file,
                        tname, (unsigned long long)b, (unsigned long long)en);
    if (en > data_size)
        return pdq_fail(st, PDQ_ERR_FORMAT, "%s: tensor %s: data_offsets [%llu, %llu] run past the data area (%zu bytes)",
                        file, tname, (unsigned long long)b, (unsigned long long)en, data_size);
    double want = numel * (double)pdq_dtype_size(t->dtype);
    if (want >= MAX_EXACT || (uint64_t)want != en - b)
        return pdq_fail(st, PDQ_ERR_FORMAT,
                        "%s: tensor %s: data_offsets cover %llu bytes but shape and dtype %s need %.0f", file, tname,
                        (unsigned long long)(en - b), pdq_dtype_name(t->dtype), want);
    t->data = data + b;
    t->nbytes = (size_t)(en - b);
    t->file_index = 0;
    *begin = b;
    return PDQ_OK;
}

typedef struct {
    uint64_t begin, end;
    int idx;
} span;

static int cmp_span(const void *a, const void *b) {
    const span *x = a, *y = b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return 0;
}

static int cmp_name(const void *a, const void *b) {
    const pdq_st_tensor *const *x = a, *const *y = b;
    return strcmp((*x)->name, (*y)->name);
}

/* Checks tensor names are unique and their byte ranges tile [0, data_size) without overlap or gap. */
static pdq_code check_layout(pdq_st_tensor *t, const uint64_t *begins, int n, size_t data_size, const char *file,
                             pdq_status *st) {
    pdq_code c = PDQ_OK;
    span *sp = malloc(sizeof *sp * (size_t)(n ? n : 1));
    const pdq_st_tensor **by_name = malloc(sizeof *by_name * (size_t)(n ? n : 1));
    if (!sp || !by_name) {
        c = pdq_fail(st, PDQ_ERR_NOMEM, "%s: out of memory", file);
        goto done;
    }
    for (int i = 0; i < n; i++) by_name[i] = &t[i];
    qsort(by_name, (size_t)n, sizeof *by_name, cmp_name);
    for (int i = 1; i < n; i++)
        if (strcmp(by_name[i - 1]->name, by_name[i]->name) == 0) {
            c = pdq_fail(st, PDQ_ERR_FORMAT, "%s: tensor %s appears twice in the header", file, by_name[i]->name);
            goto done;
        }
    int m = 0;
    for (int i = 0; i < n; i++)
        if (t[i].nbytes > 0) sp[m++] = (span){begins[i], begins[i] + t[i].nbytes, i};
    qsort(sp, (size_t)m, sizeof *sp, cmp_span);
    uint64_t pos = 0;
    for (int i = 0; i < m; i++) {
        if (sp[i].begin < pos) {
            c = pdq_fail(st, PDQ_ERR_FORMAT, "%s: tensor %s [%llu, %llu) overlaps tensor %s", file, t[sp[i].idx].name,
                         (unsigned long long)sp[i].begin, (unsigned long long)sp[i].end, t[sp[i - 1].idx].name);
            goto done;
        }
        if (sp[i].begin > pos) {
            c = pdq_fail(st, PDQ_ERR_FORMAT, "%s: data area has %llu unused bytes before tensor %s", file,
                         (unsigned long long)(sp[i].begin - pos), t[sp[i].idx].name);
            goto done;
        }
        pos = sp[i].end;
    }
    if (pos != data_size)
        c = pdq_fail(st, PDQ_ERR_FORMAT, "%s: tensors cover %llu bytes of a %zu-byte data area", file,
                     (unsigned long long)pos, data_size);
done:
    free(sp);
    free(by_name);
    return c;
}

void pdq_st_tensors_free(pdq_st_tensor *t, int n) {
    if (!t) return;
    for (int i = 0; i < n; i++) free((char *)t[i].name);
    free(t);
}

pdq_code pdq_st_parse_header_ex(const uint8_t *buf, size_t file_size, const char *file, pdq_st_tensor **out,
                                int *n_out, char **metadata_json, pdq_status *st) {
    *out = NULL;
    *n_out = 0;
    if (metadata_json) *metadata_json = NULL;
    if (file_size < 8)
        return pdq_fail(st, PDQ_ERR_FORMAT, "%s: %zu bytes is too short for a safetensors file", file, file_size);
    uint64_t hl = 0;
    for (int i = 7; i >= 0; i--) hl = (hl << 8) | buf[i];
    if (hl > file_size - 8)
        return pdq_fail(st, PDQ_ERR_FORMAT, "%s: header length %llu runs past the end of the file (%zu bytes)", file,
                        (unsigned long long)hl, file_size);
    if (hl > PDQ_ST_MAX_HEADER)
        return pdq_fail(st, PDQ_ERR_LIMIT, "%s: header length %llu exceeds %u bytes", file, (unsigned long long)hl,
                        PDQ_ST_MAX_HEADER);
    const char *js = (const char *)buf + 8;
    if (hl < 2 || js[0] != '{')
        return pdq_fail(st, PDQ_ERR_FORMAT, "%s: header is not a JSON object", file);
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(js, (size_t)hl, &end, 0);
    if (!root || !cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return pdq_fail(st, PDQ_ERR_FORMAT, "%s: header is not valid JSON", file);
    }
    pdq_code c = PDQ_OK;
    pdq_st_tensor *t = NULL;
    uint64_t *begins = NULL;
    int n = 0;
    for (const char *p = end; p && p < js + hl; p++)
        if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') {
            c = pdq_fail(st, PDQ_ERR_FORMAT, "%s: header has trailing bytes after the JSON object", file);
            goto done;
        }
    size_t data_size = file_size - 8 - (size_t)hl;
    const uint8_t *data = buf + 8 + hl;
    int cap = cJSON_GetArraySize(root);
    t = calloc((size_t)(cap ? cap : 1), sizeof *t);
    begins = calloc((size_t)(cap ? cap : 1), sizeof *begins);
    if (!t || !begins) {
        c = pdq_fail(st, PDQ_ERR_NOMEM, "%s: out of memory", file);
        goto done;
    }
    const cJSON *e;
    cJSON_ArrayForEach(e, root) {
        if (strcmp(e->string, "__metadata__") == 0) {
            const cJSON *v;
            if (!cJSON_IsObject(e)) {
                c = pdq_fail(st, PDQ_ERR_FORMAT, "%s: __metadata__ is not an object", file);
                goto done;
            }
            cJSON_ArrayForEach(v, e) if (!cJSON_IsString(v)) {
                c = pdq_fail(st, PDQ_ERR_FORMAT, "%s: __metadata__ value '%.64s' is not a string", file, v->string);
                goto done;
            }
            if (metadata_json && !*metadata_json) {
                *metadata_json = cJSON_PrintUnformatted(e);
                if (!*metadata_json) {
                    c = pdq_fail(st, PDQ_ERR_NOMEM, "%s: out of memory", file);
                    goto done;
                }
            }
            continue;
        }
        t[n].name = strdup(e->string);
        if (!t[n].name) {
            c = pdq_fail(st, PDQ_ERR_NOMEM, "%s: out of memory", file);
            goto done;
        }
        n++;
        if ((c = parse_entry(e, file, e->string, data_size, data, &t[n - 1], &begins[n - 1], st))) goto done;
    }
    c = check_layout(t, begins, n, data_size, file, st);
done:
    cJSON_Delete(root);
    free(begins);
    if (c != PDQ_OK) {
        pdq_st_tensors_free(t, n);
        if (metadata_json) {
            free(*metadata_json);
            *metadata_json = NULL;
        }
        return c;
    }
    *out = t;
    *n_out = n;
    return PDQ_OK;
}

pdq_code pdq_st_parse_header(const uint8_t *buf, size_t file_size, const char *file_name, pdq_st_tensor **out,
                             int *n_out, pdq_status *st) {
    return pdq_st_parse_header_ex(buf, file_size, file_name, out, n_out, NULL, st);
}
