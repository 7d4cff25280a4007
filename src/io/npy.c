#include "pdq/npy.h"

#include "pdq/file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const struct { pdq_npy_dtype dt; const char *descr; size_t size; } k_types[] = {
    {PDQ_NPY_F32, "<f4", 4}, {PDQ_NPY_F64, "<f8", 8}, {PDQ_NPY_I32, "<i4", 4},
    {PDQ_NPY_I64, "<i8", 8}, {PDQ_NPY_U8, "|u1", 1},  {PDQ_NPY_I16, "<i2", 2},
    {PDQ_NPY_U16, "<u2", 2}, {PDQ_NPY_I8, "|i1", 1},
};

size_t pdq_npy_dtype_size(pdq_npy_dtype dt) {
    for (size_t i = 0; i < sizeof k_types / sizeof k_types[0]; i++)
        if (k_types[i].dt == dt) return k_types[i].size;
    return 0;
}

static const char *descr_of(pdq_npy_dtype dt) {
    for (size_t i = 0; i < sizeof k_types / sizeof k_types[0]; i++)
        if (k_types[i].dt == dt) return k_types[i].descr;
    return NULL;
}

void pdq_npy_free(pdq_npy *a) {
    if (!a) return;
    free(a->data);
    memset(a, 0, sizeof *a);
}

/* Parses the python-dict header: {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } */
static pdq_code parse_header(const char *path, const char *h, pdq_npy *out, pdq_status *st) {
    const char *d = strstr(h, "'descr'");
    const char *f = strstr(h, "'fortran_order'");
    const char *s = strstr(h, "'shape'");
    if (!d || !f || !s) return pdq_fail(st, PDQ_ERR_FORMAT, "%s: npy header lacks descr/fortran_order/shape", path);
    d = strchr(d + 7, '\'');
    if (!d) return pdq_fail(st, PDQ_ERR_FORMAT, "%s: bad npy descr", path);
    int found = 0;
    for (size_t i = 0; i < sizeof k_types / sizeof k_types[0]; i++) {
        size_t n = strlen(k_types[i].descr);
        if (strncmp(d + 1, k_types[i].descr, n) == 0 && d[1 + n] == '\'') {
            out->dtype = k_types[i].dt;
            found = 1;
        }
    }
    if (!found && (strncmp(d + 1, "<u1'", 4) == 0 || strncmp(d + 1, "|b1'", 4) == 0)) { out->dtype = PDQ_NPY_U8; found = 1; }
    if (!found && strncmp(d + 1, "<i1'", 4) == 0) { out->dtype = PDQ_NPY_I8; found = 1; }
    if (!found) return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "%s: unsupported npy dtype %.8s", path, d + 1);
    f = strchr(f + 15, ':');
    if (!f) return pdq_fail(st, PDQ_ERR_FORMAT, "%s: bad fortran_order", path);
    while (*++f == ' ') {}
    if (strncmp(f, "False", 5) != 0) return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "%s: Fortran-order npy not supported", path);
    s = strchr(s, '(');
    if (!s) return pdq_fail(st, PDQ_ERR_FORMAT, "%s: bad npy shape", path);
    s++;
    out->ndim = 0;
    out->count = 1;
    while (*s && *s != ')') {
        while (*s == ' ' || *s == ',') s++;
        if (*s == ')') break;
        char *end;
        long long v = strtoll(s, &end, 10);
        if (end == s || v < 0) return pdq_fail(st, PDQ_ERR_FORMAT, "%s: bad npy shape", path);
        if (out->ndim >= PDQ_NPY_MAX_DIMS) return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "%s: npy has more than %d dims", path, PDQ_NPY_MAX_DIMS);
        if (v > 0 && out->count > ((size_t)1 << 40) / (size_t)v) return pdq_fail(st, PDQ_ERR_FORMAT, "%s: npy shape too large", path);
        out->shape[out->ndim++] = v;
        out->count *= (size_t)v;
        s = end;
    }
    if (*s != ')') return pdq_fail(st, PDQ_ERR_FORMAT, "%s: unterminated npy shape", path);
    return PDQ_OK;
}

pdq_code pdq_npy_read(const char *path, pdq_npy *out, pdq_status *st) {
    memset(out, 0, sizeof *out);
    pdq_file_map *fm;
    pdq_code rc = pdq_file_map_open(path, &fm, st); /* bounded by the file's own size */
    if (rc) return rc;
    const unsigned char *p = fm->data;
    size_t size = fm->size, at;
    char *hdr = NULL;
    if (size < 8 || memcmp(p, "\x93NUMPY", 6) != 0) {
        rc = pdq_fail(st, PDQ_ERR_FORMAT, "%s: not a .npy file", path);
        goto done;
    }
    size_t hlen;
    if (p[6] == 1) {
        if (size < 10) { rc = pdq_fail(st, PDQ_ERR_FORMAT, "%s: short npy header", path); goto done; }
        hlen = (size_t)p[8] | ((size_t)p[9] << 8);
        at = 10;
    } else if (p[6] == 2 || p[6] == 3) {
        if (size < 12) { rc = pdq_fail(st, PDQ_ERR_FORMAT, "%s: short npy header", path); goto done; }
        hlen = (size_t)p[8] | ((size_t)p[9] << 8) | ((size_t)p[10] << 16) | ((size_t)p[11] << 24);
        if (hlen > (1u << 20)) { rc = pdq_fail(st, PDQ_ERR_FORMAT, "%s: npy header too long", path); goto done; }
        at = 12;
    } else {
        rc = pdq_fail(st, PDQ_ERR_UNSUPPORTED, "%s: npy version %d", path, p[6]);
        goto done;
    }
    if (hlen > size - at) { rc = pdq_fail(st, PDQ_ERR_FORMAT, "%s: short npy header", path); goto done; }
    hdr = malloc(hlen + 1);
    if (!hdr) { rc = pdq_fail(st, PDQ_ERR_NOMEM, "%s: npy header", path); goto done; }
    memcpy(hdr, p + at, hlen);
    hdr[hlen] = '\0';
    at += hlen;
    if ((rc = parse_header(path, hdr, out, st)) != PDQ_OK) goto done;
    /* Size from the data actually present: the shape must fit in what follows the header
     * before anything is allocated for it (count <= 2^40 and size <= 8: no overflow). */
    size_t bytes = out->count * pdq_npy_dtype_size(out->dtype);
    size_t avail = size - at;
    if (bytes > avail) {
        rc = pdq_fail(st, PDQ_ERR_FORMAT,
                      "%s: npy data shorter than its shape: %zu elements of %zu bytes need %zu bytes, the file holds %zu "
                      "after the header",
                      path, out->count, pdq_npy_dtype_size(out->dtype), bytes, avail);
        goto done;
    }
    out->data = malloc(bytes ? bytes : 1);
    if (!out->data) { rc = pdq_fail(st, PDQ_ERR_NOMEM, "%s: %zu bytes", path, bytes); goto done; }
    if (bytes) memcpy(out->data, p + at, bytes);
done:
    free(hdr);
    pdq_file_map_close(fm);
    if (rc != PDQ_OK) pdq_npy_free(out);
    return rc;
}

pdq_code pdq_npy_read_f32(const char *path, pdq_npy *out, pdq_status *st) {
    pdq_code rc = pdq_npy_read(path, out, st);
    if (rc != PDQ_OK) return rc;
    if (out->dtype == PDQ_NPY_F32) return PDQ_OK;
    if (out->dtype == PDQ_NPY_F64) {
        float *f = malloc(out->count * sizeof *f + 1);
        if (!f) { pdq_npy_free(out); return pdq_fail(st, PDQ_ERR_NOMEM, "%s", path); }
        const double *d = out->data;
        for (size_t i = 0; i < out->count; i++) f[i] = (float)d[i];
        free(out->data);
        out->data = f;
        out->dtype = PDQ_NPY_F32;
        return PDQ_OK;
    }
    pdq_npy_free(out);
    return pdq_fail(st, PDQ_ERR_SHAPE, "%s: expected a float32 array", path);
}

pdq_code pdq_npy_write(const char *path, pdq_npy_dtype dt, int ndim, const int64_t *shape,
                       const void *data, pdq_status *st) {
    const char *descr = descr_of(dt);
    if (!descr || ndim < 0 || ndim > PDQ_NPY_MAX_DIMS) return pdq_fail(st, PDQ_ERR_ARG, "%s: bad npy dtype/ndim", path);
    char dict[512];
    int n = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
    size_t count = 1;
    for (int i = 0; i < ndim; i++) {
        n += snprintf(dict + n, sizeof dict - (size_t)n, "%lld%s", (long long)shape[i], ndim == 1 ? "," : (i + 1 < ndim ? ", " : ""));
        count *= (size_t)shape[i];
    }
    n += snprintf(dict + n, sizeof dict - (size_t)n, "), }");
    size_t total = 10 + (size_t)n + 1;
    size_t pad = (64 - total % 64) % 64;
    size_t hlen = (size_t)n + pad + 1;
    pdq_file_writer *w;
    pdq_code rc = pdq_file_begin(path, NULL, &w, st);
    if (rc) return rc;
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(hlen & 0xff), (unsigned char)(hlen >> 8)};
    char spaces[64]; /* pad is at most 63 */
    memset(spaces, ' ', sizeof spaces);
    rc = pdq_file_put(w, pre, 10, st);
    if (!rc) rc = pdq_file_put(w, dict, (size_t)n, st);
    if (!rc) rc = pdq_file_put(w, spaces, pad, st);
    if (!rc) rc = pdq_file_put(w, "\n", 1, st);
    if (!rc) rc = pdq_file_put(w, data, count * pdq_npy_dtype_size(dt), st);
    if (rc) {
        pdq_file_abort(w);
        return rc;
    }
    return pdq_file_commit(w, st);
}
