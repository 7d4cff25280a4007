/* A transformed model as an ordinary f32 HF checkpoint, so every later step (lazy quantization,
 * PTQ, export, the runtimes) reads it like any other model directory. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pdq/file.h"
#include "pdq/safetensors.h"
#include "run.h"

static pdq_code side_files(const pdq_model *m, const char *src, const char *out, pdq_status *st) {
    char a[4096], b[4096];
    snprintf(a, sizeof a, "%s/config.json", src);
    char *txt;
    size_t len;
    pdq_code rc = pdq_file_read(a, PDQ_FILE_MAX_JSON, &txt, &len, st);
    if (rc) return rc;
    cJSON *j = cJSON_ParseWithLength(txt, len);
    free(txt);
    if (!cJSON_IsObject(j)) { cJSON_Delete(j); return pdq_fail(st, PDQ_ERR_FORMAT, "%s: not a JSON object", a); }
    cJSON_DeleteItemFromObject(j, "torch_dtype");
    cJSON_AddStringToObject(j, "torch_dtype", "float32");
    cJSON_DeleteItemFromObject(j, "tie_word_embeddings");
    cJSON_AddBoolToObject(j, "tie_word_embeddings", m->cfg.tie_word_embeddings);
    txt = cJSON_Print(j);
    cJSON_Delete(j);
    if (!txt) return pdq_fail(st, PDQ_ERR_NOMEM, "out of memory");
    snprintf(b, sizeof b, "%s/config.json", out);
    rc = pdq_file_write_text(b, txt, 0, NULL, st);
    free(txt);
    static const char *const files[] = {"tokenizer.json", "tokenizer_config.json", "generation_config.json",
                                        "special_tokens_map.json"};
    for (size_t i = 0; !rc && i < sizeof files / sizeof files[0]; i++) {
        snprintf(a, sizeof a, "%s/%s", src, files[i]);
        if (!pdq_file_exists(a)) continue; /* optional */
        snprintf(b, sizeof b, "%s/%s", out, files[i]);
        rc = pdq_file_copy(a, b, PDQ_FILE_MAX_JSON, NULL, st);
    }
    return rc;
}

#define MAXT 4096

/* The checkpoint's tensors in the order the transform run finishes them (pdq_tensor_list's
 * PDQ_TORDER_TRANSFORM, stacked as the family's checkpoint stacks them). */
typedef struct {
    pdq_tensor_entry *e;
    pdq_st_tensor *t;
    char (*names)[176];
    int n;
} table;

static void table_free(table *tb) {
    free(tb->e);
    free(tb->t);
    free(tb->names);
}

static pdq_code table_make(const pdq_model *m, int tied, table *tb, pdq_status *st) {
    const pdq_config *c = &m->cfg;
    int nt = pdq_tensor_list(c, tied, PDQ_TORDER_TRANSFORM, 1, NULL, 0);
    if (nt > MAXT) return pdq_fail(st, PDQ_ERR_LIMIT, "%d tensors, at most %d", nt, MAXT);
    tb->n = nt;
    tb->e = calloc((size_t)nt + 1, sizeof *tb->e);
    tb->t = calloc((size_t)nt + 1, sizeof *tb->t);
    tb->names = calloc((size_t)nt + 1, sizeof *tb->names);
    if (!tb->e || !tb->t || !tb->names) {
        table_free(tb);
        return pdq_fail(st, PDQ_ERR_NOMEM, "out of memory");
    }
    pdq_tensor_list(c, tied, PDQ_TORDER_TRANSFORM, 1, tb->e, nt);
    for (int i = 0; i < nt; i++) {
        const pdq_tensor_entry *e = &tb->e[i];
        pdq_st_tensor *t = &tb->t[i];
        snprintf(tb->names[i], sizeof tb->names[0], "%s%s", e->name, e->suffix);
        t->name = tb->names[i];
        t->dtype = PDQ_DT_F32;
        t->ndim = e->cols ? 2 : 1;
        t->shape[0] = e->rows;
        t->shape[1] = e->cols;
        t->nbytes = sizeof(float) * (size_t)e->rows * (e->cols ? (size_t)e->cols : 1);
    }
    return PDQ_OK;
}

static pdq_code open_out(const char *out_dir, const table *tb, pdq_st_writer **w, pdq_status *st) {
    pdq_code rc = pdq_dir_make(out_dir, 0, st);
    if (rc != PDQ_OK) return rc;
    char path[4096];
    snprintf(path, sizeof path, "%s/model.safetensors", out_dir);
    return pdq_st_writer_open(path, tb->t, tb->n, "{\"format\": \"pt\"}", w, st);
}

pdq_code pdq_transform_save(const pdq_model *m, const char *src_dir, const char *out_dir, pdq_status *st) {
    if (m->lazy_src) return pdq_fail(st, PDQ_ERR_ARG, "saving a transformed model needs an eagerly loaded one");
    table tb;
    pdq_code rc = table_make(m, m->cfg.tie_word_embeddings, &tb, st);
    if (rc) return rc;
    pdq_st_writer *w = NULL;
    rc = open_out(out_dir, &tb, &w, st);
    for (int i = 0; !rc && i < tb.n; i++)
        for (int p = 0; !rc && p < pdq_tensor_entry_pieces(&tb.e[i]); p++) {
            long rows, cols;
            const float *d = pdq_tensor_entry_piece(m, &tb.e[i], p, &rows, &cols, NULL, 0);
            rc = d ? pdq_st_writer_put(w, d, sizeof(float) * (size_t)rows * (cols ? (size_t)cols : 1), st)
                   : pdq_fail(st, PDQ_ERR_ARG, "%s: the model holds no data for it", tb.names[i]);
        }
    if (!rc) rc = pdq_st_writer_close(w, st);
    else if (w) pdq_st_writer_abort(w);
    table_free(&tb);
    return rc ? rc : side_files(m, src_dir, out_dir, st);
}

/* --- streaming --- */

typedef struct {
    pdq_st_writer *w;
    const table *tb;
    int next, piece;
    size_t done; /* bytes of the current tensor written */
} stream;

static pdq_code stream_put(void *ctx, const pdq_tensor_entry *e, int piece, const float *data, size_t n,
                           pdq_status *st) {
    stream *s = ctx;
    const pdq_st_tensor *t = s->next < s->tb->n ? &s->tb->t[s->next] : NULL;
    const pdq_tensor_entry *want = t ? &s->tb->e[s->next] : NULL;
    size_t bytes = n * sizeof(float);
    if (!t || strcmp(want->name, e->name) || strcmp(want->suffix, e->suffix) || piece != s->piece ||
        s->done + bytes > t->nbytes)
        return pdq_fail(st, PDQ_ERR_ARG, "transform stream: tensor %s%s piece %d out of order (expected %s piece %d)",
                        e->name, e->suffix, piece, t ? t->name : "none", s->piece);
    s->done += bytes;
    if (++s->piece == pdq_tensor_entry_pieces(want)) {
        if (s->done != t->nbytes)
            return pdq_fail(st, PDQ_ERR_ARG, "transform stream: tensor %s has %zu bytes, needs %zu", t->name, s->done,
                            t->nbytes);
        s->next++;
        s->piece = 0;
        s->done = 0;
    }
    return pdq_st_writer_put(s->w, data, bytes, st);
}

pdq_code pdq_transform_write(pdq_model *m, pdq_transform_opts *o, const int32_t *calib, int ns, int T,
                             const char *src_dir, const char *out_dir, pdq_status *st) {
    pdq_transform_plan(m, o);
    table tb;
    pdq_code rc = table_make(m, m->cfg.tie_word_embeddings && !o->untied, &tb, st);
    if (rc) return rc;
    stream s = {NULL, &tb, 0, 0, 0};
    rc = open_out(out_dir, &tb, &s.w, st);
    pdq_tensor_sink k = {stream_put, &s};
    if (!rc) rc = pdq_transform_run(m, o, calib, ns, T, &k, NULL, st);
    if (!rc) rc = pdq_st_writer_close(s.w, st);
    else if (s.w) pdq_st_writer_abort(s.w);
    table_free(&tb);
    return rc ? rc : side_files(m, src_dir, out_dir, st);
}
