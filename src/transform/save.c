/* A transformed model as an ordinary f32 HF checkpoint, so every later step (lazy quantization,
 * PTQ, export, the runtimes) reads it like any other model directory. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "pdq/safetensors.h"
#include "pdq/transform.h"

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    long n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (n >= 0 && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n + 1))) {
        if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
            free(buf);
            buf = NULL;
        } else {
            buf[n] = 0;
        }
    }
    fclose(f);
    return buf;
}

static pdq_code write_text(const char *path, const char *text, pdq_status *st) {
    FILE *f = fopen(path, "wb");
    int bad = !f || fputs(text, f) < 0;
    if (f && fclose(f)) bad = 1;
    return bad ? pdq_fail(st, PDQ_ERR_IO, "%s: cannot write", path) : PDQ_OK;
}

static pdq_code side_files(const pdq_model *m, const char *src, const char *out, pdq_status *st) {
    char a[4096], b[4096];
    snprintf(a, sizeof a, "%s/config.json", src);
    char *txt = slurp(a);
    if (!txt) return pdq_fail(st, PDQ_ERR_IO, "%s: cannot read", a);
    cJSON *j = cJSON_Parse(txt);
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
    pdq_code rc = write_text(b, txt, st);
    free(txt);
    static const char *const files[] = {"tokenizer.json", "tokenizer_config.json", "generation_config.json",
                                        "special_tokens_map.json"};
    for (size_t i = 0; !rc && i < sizeof files / sizeof files[0]; i++) {
        snprintf(a, sizeof a, "%s/%s", src, files[i]);
        char *t = slurp(a);
        if (!t) continue; /* optional */
        snprintf(b, sizeof b, "%s/%s", out, files[i]);
        rc = write_text(b, t, st);
        free(t);
    }
    return rc;
}

#define MAXT 4096

pdq_code pdq_transform_save(const pdq_model *m, const char *src_dir, const char *out_dir, pdq_status *st) {
    const pdq_config *c = &m->cfg;
    if (m->lazy_src) return pdq_fail(st, PDQ_ERR_ARG, "saving a transformed model needs an eagerly loaded one");
    if (mkdir(out_dir, 0777) != 0 && errno != EEXIST) return pdq_fail(st, PDQ_ERR_IO, "%s: cannot create: %s", out_dir, strerror(errno));
    pdq_code rc = side_files(m, src_dir, out_dir, st);
    if (rc) return rc;
    int nt = 2 + 9 * c->n_layers + !c->tie_word_embeddings;
    if (nt > MAXT) return pdq_fail(st, PDQ_ERR_LIMIT, "%d tensors, at most %d", nt, MAXT);
    pdq_st_tensor *t = calloc((size_t)nt, sizeof *t);
    char (*names)[96] = calloc((size_t)nt, sizeof *names);
    if (!t || !names) { free(t); free(names); return pdq_fail(st, PDQ_ERR_NOMEM, "out of memory"); }
    int n = 0, D = c->hidden_size, V = c->vocab_size;
#define ADD(ptr, r, cc, ...)                                                      \
    do {                                                                          \
        snprintf(names[n], sizeof names[n], __VA_ARGS__);                         \
        t[n].name = names[n]; t[n].dtype = PDQ_DT_F32; t[n].data = ptr;           \
        t[n].ndim = (cc) ? 2 : 1; t[n].shape[0] = r; t[n].shape[1] = cc;          \
        t[n].nbytes = sizeof(float) * (size_t)(r) * ((cc) ? (size_t)(cc) : 1);    \
        n++;                                                                      \
    } while (0)
    ADD(m->embed, V, D, "model.embed_tokens.weight");
    for (int l = 0; l < c->n_layers; l++) {
        const pdq_layer *L = &m->layers[l];
        ADD(L->attn_norm, D, 0, "model.layers.%d.input_layernorm.weight", l);
        ADD(L->ffn_norm, D, 0, "model.layers.%d.post_attention_layernorm.weight", l);
        for (int i = 0; i < PDQ_LIN_COUNT; i++) {
            int o, in;
            pdq_linear_shape(c, (pdq_linear_id)i, &o, &in);
            ADD(L->w[i], o, in, "model.layers.%d.%s.%s.weight", l, pdq_linear_parent((pdq_linear_id)i),
                pdq_linear_name((pdq_linear_id)i));
        }
    }
    ADD(m->norm, D, 0, "model.norm.weight");
    if (!c->tie_word_embeddings) ADD(m->lm_head, V, D, "lm_head.weight");
#undef ADD
    char path[4096];
    snprintf(path, sizeof path, "%s/model.safetensors", out_dir);
    pdq_st_writer *w = NULL;
    rc = pdq_st_writer_open(path, t, n, "{\"format\": \"pt\"}", &w, st);
    for (int i = 0; !rc && i < n; i++) rc = pdq_st_writer_put(w, t[i].data, t[i].nbytes, st);
    if (!rc) rc = pdq_st_writer_close(w, st);
    else if (w) pdq_st_writer_abort(w);
    free(t);
    free(names);
    return rc;
}
