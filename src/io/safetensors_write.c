/* safetensors writer: header as HF writes it (padded with spaces to 8 bytes), data streamed
 * through the atomic file layer (pdq/file.h), so a crash or a full disk never leaves a
 * half-written checkpoint under the real name. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pdq/file.h"
#include "st_internal.h"

struct pdq_st_writer {
    pdq_file_writer *fw;
    char *path;
    uint64_t total, written;
};

static int tensor_bytes(const pdq_st_tensor *t, uint64_t *out) {
    size_t es = pdq_dtype_size(t->dtype);
    if (!es || t->ndim < 0 || t->ndim > PDQ_ST_MAX_DIMS) return -1;
    uint64_t n = es;
    for (int i = 0; i < t->ndim; i++) {
        if (t->shape[i] < 0) return -1;
        if (t->shape[i] && n > (UINT64_C(1) << 52) / (uint64_t)t->shape[i]) return -1;
        n *= (uint64_t)t->shape[i];
    }
    *out = n;
    return 0;
}

/* Header JSON text (unpadded) or NULL with st filled; *total gets the data size. */
static char *build_header(const char *path, const pdq_st_tensor *t, int n, const char *metadata_json,
                          uint64_t *total, pdq_status *st) {
    cJSON *root = cJSON_CreateObject();
    char *text = NULL;
    if (!root) goto nomem;
    if (metadata_json) {
        cJSON *meta = cJSON_Parse(metadata_json);
        const cJSON *v;
        int ok = cJSON_IsObject(meta);
        if (ok) cJSON_ArrayForEach(v, meta) ok &= cJSON_IsString(v);
        if (!ok) {
            cJSON_Delete(meta);
            cJSON_Delete(root);
            pdq_fail(st, PDQ_ERR_ARG, "%s: metadata must be a JSON object of strings", path);
            return NULL;
        }
        cJSON_AddItemToObject(root, "__metadata__", meta);
    }
    uint64_t off = 0;
    for (int i = 0; i < n; i++) {
        uint64_t nb;
        if (!t[i].name || !t[i].name[0] || strcmp(t[i].name, "__metadata__") == 0 || tensor_bytes(&t[i], &nb)) {
            cJSON_Delete(root);
            pdq_fail(st, PDQ_ERR_ARG, "%s: tensor %d (%s) has a bad name, dtype or shape", path, i,
                     t[i].name ? t[i].name : "(null)");
            return NULL;
        }
        if (cJSON_GetObjectItemCaseSensitive(root, t[i].name)) {
            cJSON_Delete(root);
            pdq_fail(st, PDQ_ERR_ARG, "%s: tensor %s given twice", path, t[i].name);
            return NULL;
        }
        cJSON *e = cJSON_CreateObject();
        cJSON *shape = cJSON_CreateArray();
        cJSON *offs = cJSON_CreateArray();
        if (!e || !shape || !offs) {
            cJSON_Delete(e);
            cJSON_Delete(shape);
            cJSON_Delete(offs);
            goto nomem;
        }
        cJSON_AddItemToObject(root, t[i].name, e);
        cJSON_AddStringToObject(e, "dtype", pdq_dtype_name(t[i].dtype));
        for (int d = 0; d < t[i].ndim; d++) cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)t[i].shape[d]));
        cJSON_AddItemToObject(e, "shape", shape);
        cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)off));
        cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)(off + nb)));
        cJSON_AddItemToObject(e, "data_offsets", offs);
        off += nb;
    }
    text = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    if (!text) goto nomem;
    *total = off;
    return text;
nomem:
    cJSON_Delete(root);
    pdq_fail(st, PDQ_ERR_NOMEM, "%s: out of memory building the header", path);
    return NULL;
}

void pdq_st_writer_abort(pdq_st_writer *w) {
    if (!w) return;
    pdq_file_abort(w->fw);
    free(w->path);
    free(w);
}

pdq_code pdq_st_writer_open(const char *path, const pdq_st_tensor *tensors, int n, const char *metadata_json,
                            pdq_st_writer **out, pdq_status *st) {
    *out = NULL;
    uint64_t total = 0;
    char *hdr = build_header(path, tensors, n, metadata_json, &total, st);
    if (!hdr) return st ? st->code : PDQ_ERR_ARG;
    pdq_st_writer *w = calloc(1, sizeof *w);
    if (w) w->path = strdup(path);
    if (!w || !w->path) {
        free(hdr);
        pdq_st_writer_abort(w);
        return pdq_fail(st, PDQ_ERR_NOMEM, "%s: out of memory", path);
    }
    pdq_code c = pdq_file_begin(path, NULL, &w->fw, st);
    if (c) {
        free(hdr);
        pdq_st_writer_abort(w);
        return c;
    }
    size_t hl = strlen(hdr);
    size_t pad = (8 - hl % 8) % 8;
    uint64_t len = hl + pad;
    uint8_t le[8];
    for (int i = 0; i < 8; i++) le[i] = (uint8_t)(len >> (8 * i));
    c = pdq_file_put(w->fw, le, 8, st);
    if (!c) c = pdq_file_put(w->fw, hdr, hl, st);
    if (!c) c = pdq_file_put(w->fw, "        ", pad, st);
    free(hdr);
    if (c) {
        pdq_st_writer_abort(w);
        return c;
    }
    w->total = total;
    *out = w;
    return PDQ_OK;
}

pdq_code pdq_st_writer_put(pdq_st_writer *w, const void *data, size_t nbytes, pdq_status *st) {
    if (nbytes > w->total - w->written)
        return pdq_fail(st, PDQ_ERR_ARG, "%s: %zu more bytes than the header declares", w->path,
                        (size_t)(nbytes - (w->total - w->written)));
    pdq_code c = pdq_file_put(w->fw, data, nbytes, st);
    if (c) return c;
    w->written += nbytes;
    return PDQ_OK;
}

pdq_code pdq_st_writer_close(pdq_st_writer *w, pdq_status *st) {
    pdq_code c = PDQ_OK;
    if (w->written != w->total) {
        c = pdq_fail(st, PDQ_ERR_ARG, "%s: %llu of %llu data bytes written", w->path,
                     (unsigned long long)w->written, (unsigned long long)w->total);
    } else {
        c = pdq_file_commit(w->fw, st); /* frees fw, removes the temp on failure */
        w->fw = NULL;
    }
    pdq_st_writer_abort(w); /* frees; removes the temp file only when it was not committed */
    return c;
}

pdq_code pdq_st_write(const char *path, const pdq_st_tensor *tensors, int n, const char *metadata_json,
                      pdq_status *st) {
    pdq_st_writer *w;
    pdq_code c = pdq_st_writer_open(path, tensors, n, metadata_json, &w, st);
    if (c) return c;
    for (int i = 0; i < n; i++) {
        uint64_t nb = 0;
        tensor_bytes(&tensors[i], &nb);
        if (nb && !tensors[i].data) c = pdq_fail(st, PDQ_ERR_ARG, "%s: tensor %s has no data", path, tensors[i].name);
        else if (tensors[i].nbytes && tensors[i].nbytes != nb)
            c = pdq_fail(st, PDQ_ERR_ARG, "%s: tensor %s has %zu bytes, its shape needs %llu", path, tensors[i].name,
                         tensors[i].nbytes, (unsigned long long)nb);
        else c = pdq_st_writer_put(w, tensors[i].data, (size_t)nb, st);
        if (c) {
            pdq_st_writer_abort(w);
            return c;
        }
    }
    return pdq_st_writer_close(w, st);
}
