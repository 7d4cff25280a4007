/* safetensors reader: mmapped single files or shards listed by model.safetensors.index.json. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pdq/file.h"
#include "st_internal.h"

typedef struct {
    char *path;
    pdq_file_map *fm;
    const uint8_t *map;
    size_t size;
} st_file;

struct pdq_safetensors {
    st_file *files;
    int n_files;
    pdq_st_tensor *t; /* every tensor of every file; names owned */
    int n;
    int *by_name;     /* indices into t sorted by name, for lookup */
    char *metadata;
    char *label;      /* the file or index named in "tensor not found" errors */
};

static int exists(const char *path) { return pdq_file_exists(path); }

static pdq_code map_file(const char *path, st_file *f, pdq_status *st) {
    f->path = strdup(path);
    if (!f->path) return pdq_fail(st, PDQ_ERR_NOMEM, "%s: out of memory", path);
    pdq_code rc = pdq_file_map_open(path, &f->fm, st);
    if (rc) return rc;
    f->map = f->fm->data;
    f->size = f->fm->size;
    if (f->size < 8) return pdq_fail(st, PDQ_ERR_FORMAT, "%s: %zu bytes is too short for a safetensors file", path, f->size);
    return PDQ_OK;
}

static int cmp_names(const void *a, const void *b, void *ctx) {
    const pdq_st_tensor *t = ctx;
    return strcmp(t[*(const int *)a].name, t[*(const int *)b].name);
}

/* Appends one file's tensors to s; file index fi. */
static pdq_code add_file(pdq_safetensors *s, int fi, pdq_status *st) {
    st_file *f = &s->files[fi];
    pdq_st_tensor *t;
    int n;
    char *meta = NULL;
    pdq_code c = pdq_st_parse_header_ex(f->map, f->size, f->path, &t, &n, s->metadata ? NULL : &meta, st);
    if (c) return c;
    if (meta) s->metadata = meta;
    pdq_st_tensor *nt = realloc(s->t, sizeof *nt * (size_t)(s->n + n + 1));
    if (!nt) {
        pdq_st_tensors_free(t, n);
        return pdq_fail(st, PDQ_ERR_NOMEM, "%s: out of memory", f->path);
    }
    s->t = nt;
    for (int i = 0; i < n; i++) {
        t[i].file_index = fi;
        s->t[s->n++] = t[i];
    }
    free(t); /* names moved into s->t */
    return PDQ_OK;
}

/* Sorts the lookup index; a tensor present in two shards is an error. */
static pdq_code build_index(pdq_safetensors *s, pdq_status *st) {
    s->by_name = malloc(sizeof *s->by_name * (size_t)(s->n + 1));
    if (!s->by_name) return pdq_fail(st, PDQ_ERR_NOMEM, "%s: out of memory", s->label);
    for (int i = 0; i < s->n; i++) s->by_name[i] = i;
    qsort_r(s->by_name, (size_t)s->n, sizeof *s->by_name, cmp_names, s->t);
    for (int i = 1; i < s->n; i++) {
        const pdq_st_tensor *a = &s->t[s->by_name[i - 1]], *b = &s->t[s->by_name[i]];
        if (strcmp(a->name, b->name) == 0)
            return pdq_fail(st, PDQ_ERR_FORMAT, "%s: tensor %s is in both %s and %s", s->label, a->name,
                            s->files[a->file_index].path, s->files[b->file_index].path);
    }
    return PDQ_OK;
}

/* model.safetensors.index.json: a weight map, a few MiB for the largest models. */
static char *read_text(const char *path, size_t *len, pdq_status *st) {
    char *buf;
    return pdq_file_read(path, (size_t)64 << 20, &buf, len, st) ? NULL : buf;
}

static pdq_code open_index(pdq_safetensors *s, const char *index_path, pdq_status *st) {
    size_t len;
    char *text = read_text(index_path, &len, st);
    if (!text) return st ? st->code : PDQ_ERR_IO;
    pdq_code c = PDQ_OK;
    cJSON *root = cJSON_ParseWithLength(text, len);
    free(text);
    const cJSON *wm = root ? cJSON_GetObjectItemCaseSensitive(root, "weight_map") : NULL;
    if (!cJSON_IsObject(wm)) {
        c = pdq_fail(st, PDQ_ERR_FORMAT, "%s: not JSON with a 'weight_map' object", index_path);
        goto done;
    }
    /* Directory of the index: shard names are relative to it. */
    char dir[8192];
    if (snprintf(dir, sizeof dir, "%s", index_path) >= (int)sizeof dir) {
        c = pdq_fail(st, PDQ_ERR_LIMIT, "%s: path too long", index_path);
        goto done;
    }
    char *slash = strrchr(dir, '/');
    if (slash) *slash = '\0'; else snprintf(dir, sizeof dir, ".");
    int cap = cJSON_GetArraySize(wm);
    s->files = calloc((size_t)(cap ? cap : 1), sizeof *s->files);
    if (!s->files) {
        c = pdq_fail(st, PDQ_ERR_NOMEM, "%s: out of memory", index_path);
        goto done;
    }
    const cJSON *e;
    cJSON_ArrayForEach(e, wm) {
        if (!cJSON_IsString(e)) {
            c = pdq_fail(st, PDQ_ERR_FORMAT, "%s: weight_map entry %s is not a file name", index_path, e->string);
            goto done;
        }
        const char *shard = e->valuestring;
        if (!shard[0] || strchr(shard, '/') || strcmp(shard, "..") == 0) {
            c = pdq_fail(st, PDQ_ERR_FORMAT, "%s: weight_map entry %s names '%s', not a file beside the index",
                         index_path, e->string, shard);
            goto done;
        }
        char path[8192];
        if (snprintf(path, sizeof path, "%s/%s", dir, shard) >= (int)sizeof path) {
            c = pdq_fail(st, PDQ_ERR_LIMIT, "%s: shard path too long", index_path);
            goto done;
        }
        int seen = 0;
        for (int i = 0; i < s->n_files && !seen; i++) seen = strcmp(s->files[i].path, path) == 0;
        if (seen) continue;
        int fi = s->n_files++;
        if ((c = map_file(path, &s->files[fi], st)) || (c = add_file(s, fi, st))) {
            pdq_wrap(st, "%s", index_path);
            goto done;
        }
    }
    if ((c = build_index(s, st))) goto done;
    /* Every tensor the index names must be in the shard it names. */
    cJSON_ArrayForEach(e, wm) {
        const pdq_st_tensor *t = pdq_st_find(s, e->string);
        const char *want = e->valuestring;
        const char *have = t ? strrchr(s->files[t->file_index].path, '/') : NULL;
        have = have ? have + 1 : (t ? s->files[t->file_index].path : NULL);
        if (!t || strcmp(have, want) != 0) {
            c = pdq_fail(st, PDQ_ERR_MISSING, "%s: weight_map puts tensor %s in %s, which does not hold it",
                         index_path, e->string, want);
            goto done;
        }
    }
done:
    cJSON_Delete(root);
    return c;
}

pdq_code pdq_st_open(const char *path, pdq_safetensors **out, pdq_status *st) {
    *out = NULL;
    char buf[8192];
    const char *target = path;
    int is_index = 0;
    pdq_path_kind kind = pdq_path_stat(path, NULL, NULL);
    if (kind == PDQ_PATH_NONE) return pdq_fail(st, PDQ_ERR_IO, "%s: no such file or directory", path);
    if (kind == PDQ_PATH_DIR) {
        /* HF looks for the single file first, then the index. */
        snprintf(buf, sizeof buf, "%s/model.safetensors", path);
        if (!exists(buf)) {
            snprintf(buf, sizeof buf, "%s/model.safetensors.index.json", path);
            if (!exists(buf))
                return pdq_fail(st, PDQ_ERR_MISSING, "%s: holds neither model.safetensors nor model.safetensors.index.json",
                                path);
            is_index = 1;
        }
        target = buf;
    } else {
        size_t n = strlen(path);
        is_index = n >= 5 && strcmp(path + n - 5, ".json") == 0;
    }
    pdq_safetensors *s = calloc(1, sizeof *s);
    if (!s || !(s->label = strdup(target))) {
        free(s);
        return pdq_fail(st, PDQ_ERR_NOMEM, "out of memory");
    }
    pdq_code c;
    if (is_index) {
        c = open_index(s, target, st);
    } else {
        s->files = calloc(1, sizeof *s->files);
        if (!s->files) {
            c = pdq_fail(st, PDQ_ERR_NOMEM, "out of memory");
        } else {
            s->n_files = 1; /* counted before mapping so close() frees a half-opened file */
            if ((c = map_file(target, &s->files[0], st)) == PDQ_OK && (c = add_file(s, 0, st)) == PDQ_OK)
                c = build_index(s, st);
        }
    }
    if (c != PDQ_OK) {
        pdq_st_close(s);
        return c;
    }
    *out = s;
    return PDQ_OK;
}

void pdq_st_close(pdq_safetensors *s) {
    if (!s) return;
    for (int i = 0; i < s->n_files; i++) {
        pdq_file_map_close(s->files[i].fm);
        free(s->files[i].path);
    }
    free(s->files);
    pdq_st_tensors_free(s->t, s->n);
    free(s->by_name);
    free(s->metadata);
    free(s->label);
    free(s);
}

int pdq_st_count(const pdq_safetensors *s) { return s->n; }
int pdq_st_file_count(const pdq_safetensors *s) { return s->n_files; }
const pdq_st_tensor *pdq_st_at(const pdq_safetensors *s, int i) { return i >= 0 && i < s->n ? &s->t[i] : NULL; }
const char *pdq_st_metadata(const pdq_safetensors *s) { return s->metadata; }

const pdq_st_tensor *pdq_st_find(const pdq_safetensors *s, const char *name) {
    int lo = 0, hi = s->n - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        const pdq_st_tensor *t = &s->t[s->by_name[mid]];
        int c = strcmp(name, t->name);
        if (c == 0) return t;
        if (c < 0) hi = mid - 1; else lo = mid + 1;
    }
    return NULL;
}

const char *pdq_st_file_of(const pdq_safetensors *s, const pdq_st_tensor *t) {
    return t && t->file_index >= 0 && t->file_index < s->n_files ? s->files[t->file_index].path : s->label;
}

static void fmt_shape(char *buf, size_t cap, int ndim, const int64_t *shape) {
    size_t n = (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < ndim && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (n < cap) snprintf(buf + n, cap - n, "]");
}

pdq_code pdq_st_read_f32(const pdq_safetensors *s, const char *name, int ndim, const int64_t *shape, float *dst,
                         pdq_status *st) {
    const pdq_st_tensor *t = pdq_st_find(s, name);
    if (!t) return pdq_fail(st, PDQ_ERR_MISSING, "%s: tensor %s is missing", s->label, name);
    const char *file = pdq_st_file_of(s, t);
    int same = t->ndim == ndim;
    for (int i = 0; same && i < ndim; i++) same = t->shape[i] == shape[i];
    if (!same) {
        char have[160], want[160];
        fmt_shape(have, sizeof have, t->ndim, t->shape);
        fmt_shape(want, sizeof want, ndim, shape);
        return pdq_fail(st, PDQ_ERR_SHAPE, "%s: tensor %s has shape %s, expected %s", file, name, have, want);
    }
    size_t n = t->nbytes / pdq_dtype_size(t->dtype);
    const uint8_t *p = t->data;
    switch (t->dtype) {
    case PDQ_DT_F32:
        memcpy(dst, p, n * 4);
        break;
    case PDQ_DT_BF16:
        for (size_t i = 0; i < n; i++) {
            uint16_t h;
            memcpy(&h, p + 2 * i, 2);
            dst[i] = pdq_bf16_to_f32(h);
        }
        break;
    case PDQ_DT_F16:
        for (size_t i = 0; i < n; i++) {
            uint16_t h;
            memcpy(&h, p + 2 * i, 2);
            dst[i] = pdq_f16_to_f32(h);
        }
        break;
    case PDQ_DT_F64:
        for (size_t i = 0; i < n; i++) {
            double d;
            memcpy(&d, p + 8 * i, 8);
            dst[i] = (float)d;
        }
        break;
    default:
        return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "%s: tensor %s has dtype %s, expected F32, F16, BF16 or F64", file,
                        name, pdq_dtype_name(t->dtype));
    }
    return PDQ_OK;
}

const pdq_st_tensor *pdq_st_expect(const pdq_safetensors *s, const char *name, const char *suffix, pdq_dtype dt,
                                   int ndim, int64_t a, int64_t b, const char *file, pdq_status *st) {
    char nm[256];
    snprintf(nm, sizeof nm, "%s%s", name, suffix);
    const pdq_st_tensor *t = pdq_st_find(s, nm);
    if (!t) { pdq_fail(st, PDQ_ERR_MISSING, "%s: tensor %s is missing", file, nm); return NULL; }
    if (t->dtype != dt || t->ndim != ndim || t->shape[0] != a || (ndim > 1 && t->shape[1] != b)) {
        pdq_fail(st, PDQ_ERR_SHAPE, "%s: tensor %s should be %s [%lld%s%lld], got %s with %d dims", file, nm,
                 pdq_dtype_name(dt), (long long)a, ndim > 1 ? ", " : "", ndim > 1 ? (long long)b : 0LL,
                 pdq_dtype_name(t->dtype), t->ndim);
        return NULL;
    }
    return t;
}

void pdq_st_drop_pages(const pdq_safetensors *s, const char *name) {
    const pdq_st_tensor *t = pdq_st_find(s, name);
    if (t && t->data) pdq_file_drop_pages(t->data, t->nbytes);
}
