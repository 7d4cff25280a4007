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

/* The checkpoint's tensors in the order the transform run finishes them (embedding, lm_head,
 * final norm, then each layer's norms and linears); data from m where it holds them (eager). */
typedef struct {
    pdq_st_tensor *t;
    char (*names)[96];
    int n;
} table;

static void add(table *tb, const float *data, int64_t r, int64_t cc, const char *fmt, int l, int i) {
    pdq_st_tensor *t = &tb->t[tb->n];
    if (i >= 0) snprintf(tb->names[tb->n], sizeof tb->names[0], fmt, l, pdq_linear_parent((pdq_linear_id)i), pdq_linear_name((pdq_linear_id)i));
    else snprintf(tb->names[tb->n], sizeof tb->names[0], fmt, l);
    t->name = tb->names[tb->n];
    t->dtype = PDQ_DT_F32;
    t->data = data;
    t->ndim = cc ? 2 : 1;
    t->shape[0] = r;
    t->shape[1] = cc;
    t->nbytes = sizeof(float) * (size_t)r * (cc ? (size_t)cc : 1);
    tb->n++;
}

static pdq_code table_make(const pdq_model *m, int tied, table *tb, pdq_status *st) {
    const pdq_config *c = &m->cfg;
    int extra = __builtin_popcount(c->bias_mask) + (c->qk_norm ? 2 : 0);
    int nt = 2 + (9 + extra) * c->n_layers + !tied, D = c->hidden_size, V = c->vocab_size;
    if (nt > MAXT) return pdq_fail(st, PDQ_ERR_LIMIT, "%d tensors, at most %d", nt, MAXT);
    tb->n = 0;
    tb->t = calloc((size_t)nt, sizeof *tb->t);
    tb->names = calloc((size_t)nt, sizeof *tb->names);
    if (!tb->t || !tb->names) {
        free(tb->t);
        free(tb->names);
        return pdq_fail(st, PDQ_ERR_NOMEM, "out of memory");
    }
    add(tb, m->embed, V, D, "model.embed_tokens.weight", 0, -1);
    if (!tied) add(tb, m->lm_head, V, D, "lm_head.weight", 0, -1);
    add(tb, m->norm, D, 0, "model.norm.weight", 0, -1);
    for (int l = 0; l < c->n_layers; l++) {
        const pdq_layer *L = &m->layers[l];
        add(tb, L->attn_norm, D, 0, "model.layers.%d.input_layernorm.weight", l, -1);
        add(tb, L->ffn_norm, D, 0, "model.layers.%d.post_attention_layernorm.weight", l, -1);
        for (int i = 0; i < PDQ_LIN_COUNT; i++) {
            int o, in;
            pdq_linear_shape(c, (pdq_linear_id)i, &o, &in);
            add(tb, L->w[i], o, in, "model.layers.%d.%s.%s.weight", l, i);
        }
        /* the families' extras, after the Llama tensors */
        for (int i = 0; i < PDQ_LIN_COUNT; i++)
            if (c->bias_mask >> i & 1u) {
                int o, in;
                pdq_linear_shape(c, (pdq_linear_id)i, &o, &in);
                add(tb, L->bias[i], o, 0, "model.layers.%d.%s.%s.bias", l, i);
            }
        if (c->qk_norm) {
            add(tb, L->q_norm, c->head_dim, 0, "model.layers.%d.self_attn.q_norm.weight", l, -1);
            add(tb, L->k_norm, c->head_dim, 0, "model.layers.%d.self_attn.k_norm.weight", l, -1);
        }
    }
    return PDQ_OK;
}

static void table_free(table *tb) {
    free(tb->t);
    free(tb->names);
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
    for (int i = 0; !rc && i < tb.n; i++) rc = pdq_st_writer_put(w, tb.t[i].data, tb.t[i].nbytes, st);
    if (!rc) rc = pdq_st_writer_close(w, st);
    else if (w) pdq_st_writer_abort(w);
    table_free(&tb);
    return rc ? rc : side_files(m, src_dir, out_dir, st);
}

/* --- streaming --- */

typedef struct {
    pdq_st_writer *w;
    const table *tb;
    int next;
} stream;

static pdq_code stream_put(void *ctx, const char *name, const float *data, size_t n, pdq_status *st) {
    stream *s = ctx;
    const pdq_st_tensor *t = s->next < s->tb->n ? &s->tb->t[s->next] : NULL;
    if (!t || strcmp(t->name, name) || t->nbytes != n * sizeof(float))
        return pdq_fail(st, PDQ_ERR_ARG, "transform stream: tensor %s out of order (expected %s)", name, t ? t->name : "none");
    s->next++;
    return pdq_st_writer_put(s->w, data, t->nbytes, st);
}

pdq_code pdq_transform_write(pdq_model *m, pdq_transform_opts *o, const int32_t *calib, int ns, int T,
                             const char *src_dir, const char *out_dir, pdq_status *st) {
    pdq_transform_plan(m, o);
    table tb;
    pdq_code rc = table_make(m, m->cfg.tie_word_embeddings && !o->untied, &tb, st);
    if (rc) return rc;
    stream s = {NULL, &tb, 0};
    rc = open_out(out_dir, &tb, &s.w, st);
    pdq_tensor_sink k = {stream_put, &s};
    if (!rc) rc = pdq_transform_run(m, o, calib, ns, T, &k, NULL, st);
    if (!rc) rc = pdq_st_writer_close(s.w, st);
    else if (s.w) pdq_st_writer_abort(s.w);
    table_free(&tb);
    return rc ? rc : side_files(m, src_dir, out_dir, st);
}
