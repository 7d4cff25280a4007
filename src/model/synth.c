/* Synthetic checkpoint generator: deterministic random weights written in chunks so even a
 * TinyLlama-sized model needs only a small buffer. */
#include "pdq/synth.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pdq/config.h"
#include "pdq/file.h"
#include "pdq/family.h"
#include "pdq/model.h"

#define CHUNK (1 << 16)

void pdq_synth_opts_default(pdq_synth_opts *o) {
    memset(o, 0, sizeof *o);
    o->hidden = 64;
    o->intermediate = 160;
    o->layers = 2;
    o->heads = 4;
    o->kv_heads = 2;
    o->vocab = 300;
    o->dtype = PDQ_DT_F32;
    o->rope_theta = 10000.0;
    o->max_pos = 256;
    o->seed = 1;
}

typedef struct {
    char name[128];
    int ndim;
    int64_t shape[2];
    int is_norm;
} spec;

static uint64_t splitmix(uint64_t *s) {
    uint64_t x = *s += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

static uint64_t name_seed(uint64_t seed, const char *name) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (const char *p = name; *p; p++) h = (h ^ (uint8_t)*p) * 1099511628211ull;
    uint64_t s = seed ^ h;
    splitmix(&s);
    return s;
}

/* Sum of four 16-bit uniforms, centred and scaled to unit variance (Irwin-Hall): cheap and close
 * enough to normal for weights. Rounded to bf16, and values below f16's normal range dropped to 0,
 * so the value is exact in bf16, f16 and f32 alike. */
static float next_value(uint64_t *s, int is_norm, float norm_centre) {
    uint64_t r = splitmix(s);
    uint32_t u = (uint32_t)(r & 0xffff) + (uint32_t)((r >> 16) & 0xffff) + (uint32_t)((r >> 32) & 0xffff) +
                 (uint32_t)(r >> 48);
    float n = (float)((int32_t)u - 131072) * (1.7320508f / 65536.0f);
    float x = is_norm ? norm_centre + 0.1f * n : 0.02f * n;
    x = pdq_bf16_to_f32(pdq_f32_to_bf16(x));
    if (x > -6.103515625e-05f && x < 6.103515625e-05f) x = 0.0f;
    return x;
}

/* One spec per tensor of the family's table present for c: the embedding, each layer's roles
 * in table order, the final norm, lm_head. */
static int build_specs(const pdq_config *c, spec **out) {
    const pdq_family *f = pdq_family_of(c);
    int n = 0;
    for (int i = 0; i < f->n_roles; i++)
        if (pdq_role_present(c, &f->roles[i])) n += pdq_role_per_layer(&f->roles[i]) ? c->n_layers : 1;
    spec *s = calloc((size_t)n, sizeof *s);
    if (!s) return -1;
    static const pdq_role_kind head[] = {PDQ_ROLE_EMBED, PDQ_ROLE_COUNT, PDQ_ROLE_FINAL_NORM, PDQ_ROLE_LM_HEAD};
    int k = 0;
    for (int h = 0; h < 4; h++)
        for (int l = 0; l < (head[h] == PDQ_ROLE_COUNT ? c->n_layers : 1); l++)
            for (int i = 0; i < f->n_roles; i++) {
                const pdq_tensor_role *r = &f->roles[i];
                int layer_pass = head[h] == PDQ_ROLE_COUNT;
                if (!pdq_role_present(c, r) || pdq_role_per_layer(r) != layer_pass || (!layer_pass && r->kind != head[h]))
                    continue;
                long rows, cols;
                pdq_role_shape(c, r, &rows, &cols);
                pdq_role_name(r, l, s[k].name, sizeof s[k].name);
                s[k].ndim = cols ? 2 : 1;
                s[k].shape[0] = rows;
                s[k].shape[1] = cols;
                s[k].is_norm = r->kind == PDQ_ROLE_FINAL_NORM || r->kind == PDQ_ROLE_ATTN_NORM ||
                               r->kind == PDQ_ROLE_FFN_NORM || r->kind == PDQ_ROLE_Q_NORM ||
                               r->kind == PDQ_ROLE_K_NORM || r->kind == PDQ_ROLE_POST_ATTN_NORM ||
                               r->kind == PDQ_ROLE_POST_FFN_NORM;
                k++;
            }
    *out = s;
    return k;
}

static const char *torch_dtype(pdq_dtype dt) {
    return dt == PDQ_DT_BF16 ? "bfloat16" : dt == PDQ_DT_F16 ? "float16" : "float32";
}

static pdq_code write_json(const char *path, cJSON *root, pdq_status *st) {
    char *text = root ? cJSON_Print(root) : NULL;
    if (!text) return pdq_fail(st, PDQ_ERR_NOMEM, "%s: out of memory", path);
    pdq_code rc = pdq_file_write_text(path, text, 1, NULL, st);
    free(text);
    return rc;
}

/* A family's name ("gemma3": the text model) or a model_type; text models only (a family whose
 * fields sit in a sub-object of config.json is not written). */
static const pdq_family *find_family(const char *name) {
    const pdq_family *f = pdq_family_named(name ? name : "llama");
    if (!f) f = pdq_family_find(name);
    return f && !f->config_object ? f : NULL;
}

/* Gemma's fields: the GELU-tanh MLP, the window and layer types, the scalar (head_dim, as the
 * released Gemma 3 models set it) and the local RoPE base. */
static void write_gemma(const pdq_synth_opts *o, cJSON *r) {
    cJSON_AddStringToObject(r, "hidden_activation", "gelu_pytorch_tanh");
    cJSON_AddNumberToObject(r, "sliding_window", o->window ? o->window : 4096);
    int pattern = o->window_pattern ? o->window_pattern : 6;
    cJSON *lt = cJSON_AddArrayToObject(r, "layer_types");
    for (int l = 0; l < o->layers; l++)
        cJSON_AddItemToArray(lt, cJSON_CreateString((l + 1) % pattern ? "sliding_attention" : "full_attention"));
    cJSON_AddNumberToObject(r, "query_pre_attn_scalar", o->head_dim ? o->head_dim : o->hidden / o->heads);
    cJSON_AddNumberToObject(r, "rope_local_base_freq", o->rope_local_theta > 0 ? o->rope_local_theta : 10000.0);
}

static pdq_code write_config(const pdq_synth_opts *o, pdq_status *st) {
    cJSON *r = cJSON_CreateObject();
    const pdq_family *f = find_family(o->family);
    int gemma = f->block == PDQ_BLOCK_SANDWICH;
    cJSON *arch = cJSON_AddArrayToObject(r, "architectures");
    cJSON_AddItemToArray(arch, cJSON_CreateString(f->hf_class));
    cJSON_AddStringToObject(r, "model_type", f->model_types[0]);
    cJSON_AddBoolToObject(r, "attention_bias", o->bias);
    if (!gemma) cJSON_AddBoolToObject(r, "mlp_bias", o->bias);
    if (gemma) write_gemma(o, r);
    else cJSON_AddStringToObject(r, pdq_config_field_act(&f->fields), "silu");
    cJSON_AddNumberToObject(r, "hidden_size", o->hidden);
    cJSON_AddNumberToObject(r, "intermediate_size", o->intermediate);
    cJSON_AddNumberToObject(r, pdq_config_field_n_layers(&f->fields), o->layers);
    cJSON_AddNumberToObject(r, "num_attention_heads", o->heads);
    cJSON_AddNumberToObject(r, "num_key_value_heads", o->kv_heads);
    if (o->head_dim) cJSON_AddNumberToObject(r, "head_dim", o->head_dim);
    cJSON_AddNumberToObject(r, "vocab_size", o->vocab);
    cJSON_AddNumberToObject(r, "max_position_embeddings", o->max_pos);
    cJSON_AddNumberToObject(r, pdq_config_field_norm_eps(&f->fields), 1e-5);
    cJSON_AddNumberToObject(r, "rope_theta", o->rope_theta);
    if (o->sliding_window > 0) {
        cJSON_AddNumberToObject(r, "sliding_window", o->sliding_window);
        if (!strcmp(f->name, "qwen2")) {
            cJSON_AddBoolToObject(r, "use_sliding_window", 1);
            cJSON_AddNumberToObject(r, "max_window_layers", o->max_window_layers);
        }
    }
    if (o->rope_llama3) {
        cJSON *rs = cJSON_AddObjectToObject(r, "rope_scaling");
        cJSON_AddStringToObject(rs, "rope_type", "llama3");
        cJSON_AddNumberToObject(rs, "factor", o->rope_factor);
        cJSON_AddNumberToObject(rs, "low_freq_factor", o->rope_low);
        cJSON_AddNumberToObject(rs, "high_freq_factor", o->rope_high);
        cJSON_AddNumberToObject(rs, "original_max_position_embeddings", o->rope_orig_max_pos);
    } else {
        cJSON_AddNullToObject(r, "rope_scaling");
    }
    cJSON_AddBoolToObject(r, "tie_word_embeddings", o->tied != 0);
    cJSON_AddNumberToObject(r, "bos_token_id", 1);
    cJSON_AddNumberToObject(r, "eos_token_id", 2);
    cJSON_AddStringToObject(r, "torch_dtype", torch_dtype(o->dtype));
    char path[4096];
    snprintf(path, sizeof path, "%s/config.json", o->out_dir);
    pdq_code c = write_json(path, r, st);
    cJSON_Delete(r);
    return c;
}

/* Streams the values of one tensor into w, converted to dtype. */
static pdq_code put_tensor(pdq_st_writer *w, const spec *s, uint64_t seed, pdq_dtype dt, float norm_centre, float *fbuf,
                           uint8_t *obuf, pdq_status *st) {
    uint64_t rs = name_seed(seed, s->name);
    size_t n = (size_t)s->shape[0] * (size_t)(s->ndim == 2 ? s->shape[1] : 1);
    size_t es = pdq_dtype_size(dt);
    for (size_t done = 0; done < n;) {
        size_t k = n - done < CHUNK ? n - done : CHUNK;
        for (size_t i = 0; i < k; i++) fbuf[i] = next_value(&rs, s->is_norm, norm_centre);
        if (dt == PDQ_DT_F32) {
            memcpy(obuf, fbuf, k * 4);
        } else {
            for (size_t i = 0; i < k; i++) {
                uint16_t h = dt == PDQ_DT_BF16 ? pdq_f32_to_bf16(fbuf[i]) : pdq_f32_to_f16(fbuf[i]);
                memcpy(obuf + 2 * i, &h, 2);
            }
        }
        pdq_code c = pdq_st_writer_put(w, obuf, k * es, st);
        if (c) return c;
        done += k;
    }
    return PDQ_OK;
}

static pdq_code check_opts(const pdq_synth_opts *o, pdq_config *c, pdq_status *st) {
    if (!o->out_dir) return pdq_fail(st, PDQ_ERR_ARG, "synth: no output directory");
    if (o->family && !find_family(o->family)) {
        char known[256];
        pdq_family_model_types(known, sizeof known);
        return pdq_fail(st, PDQ_ERR_ARG, "synth: unknown family '%s' (known: %s)", o->family, known);
    }
    if (o->dtype != PDQ_DT_F32 && o->dtype != PDQ_DT_BF16 && o->dtype != PDQ_DT_F16)
        return pdq_fail(st, PDQ_ERR_ARG, "synth: dtype must be F32, BF16 or F16");
    if (o->hidden <= 0 || o->intermediate <= 0 || o->layers <= 0 || o->heads <= 0 || o->kv_heads <= 0 ||
        o->vocab <= 0 || o->head_dim < 0 || o->heads % o->kv_heads != 0 ||
        (!o->head_dim && o->hidden % o->heads != 0))
        return pdq_fail(st, PDQ_ERR_ARG, "synth: inconsistent model dimensions");
    memset(c, 0, sizeof *c);
    c->hidden_size = o->hidden;
    c->intermediate_size = o->intermediate;
    c->n_layers = o->layers;
    c->n_heads = o->heads;
    c->n_kv_heads = o->kv_heads;
    c->head_dim = o->head_dim ? o->head_dim : o->hidden / o->heads;
    if (c->head_dim % 2) return pdq_fail(st, PDQ_ERR_ARG, "synth: head_dim must be even");
    c->vocab_size = o->vocab;
    c->tie_word_embeddings = o->tied;
    return pdq_dir_make(o->out_dir, 0, st);
}

static pdq_code write_index(const pdq_synth_opts *o, const spec *s, int n, int n_shards, uint64_t total,
                            pdq_status *st) {
    cJSON *r = cJSON_CreateObject();
    cJSON *meta = cJSON_AddObjectToObject(r, "metadata");
    cJSON_AddNumberToObject(meta, "total_size", (double)total);
    cJSON *wm = cJSON_AddObjectToObject(r, "weight_map");
    char fname[64];
    for (int i = 0; i < n; i++) {
        snprintf(fname, sizeof fname, "model-%05d-of-%05d.safetensors", (int)((long)i * n_shards / n) + 1, n_shards);
        cJSON_AddStringToObject(wm, s[i].name, fname);
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", o->out_dir);
    pdq_code c = write_json(path, r, st);
    cJSON_Delete(r);
    return c;
}

pdq_code pdq_synth_write(const pdq_synth_opts *o, pdq_status *st) {
    pdq_config cfg;
    pdq_code c = check_opts(o, &cfg, st);
    if (!c) c = write_config(o, st);
    /* the tensors are those the loaders will ask for: the config as the family reads it back */
    if (!c) c = pdq_config_load(o->out_dir, &cfg, st);
    if (c) return c;
    spec *s = NULL;
    int n = build_specs(&cfg, &s);
    int n_shards = o->shards > 1 ? o->shards : 1;
    float *fbuf = malloc(CHUNK * sizeof *fbuf);
    uint8_t *obuf = malloc(CHUNK * 4);
    pdq_st_tensor *t = calloc((size_t)(n > 0 ? n : 1), sizeof *t);
    if (n < 0 || !fbuf || !obuf || !t) {
        c = pdq_fail(st, PDQ_ERR_NOMEM, "synth: out of memory");
        goto done;
    }
    if (n_shards > n) {
        c = pdq_fail(st, PDQ_ERR_ARG, "synth: %d shards for %d tensors", n_shards, n);
        goto done;
    }
    uint64_t total = 0;
    float centre = cfg.norm_offset != 0.0f ? 0.0f : 1.0f; /* a (1 + w) norm stores w centred on 0 */
    for (int i = 0; i < n; i++) {
        t[i].name = s[i].name;
        t[i].dtype = o->dtype;
        t[i].ndim = s[i].ndim;
        t[i].shape[0] = s[i].shape[0];
        t[i].shape[1] = s[i].shape[1];
        total += (uint64_t)s[i].shape[0] * (uint64_t)(s[i].ndim == 2 ? s[i].shape[1] : 1) * pdq_dtype_size(o->dtype);
    }
    /* Tensor i goes to shard i * n_shards / n: contiguous runs, none empty. */
    for (int k = 0, first = 0; k < n_shards && c == PDQ_OK; k++) {
        int last = first;
        while (last < n && (int)((long)last * n_shards / n) == k) last++;
        char path[4096];
        if (n_shards == 1) snprintf(path, sizeof path, "%s/model.safetensors", o->out_dir);
        else snprintf(path, sizeof path, "%s/model-%05d-of-%05d.safetensors", o->out_dir, k + 1, n_shards);
        pdq_st_writer *w;
        if ((c = pdq_st_writer_open(path, t + first, last - first, "{\"format\":\"pt\"}", &w, st))) break;
        for (int i = first; i < last && c == PDQ_OK; i++) c = put_tensor(w, &s[i], o->seed, o->dtype, centre, fbuf, obuf, st);
        if (c) pdq_st_writer_abort(w);
        else c = pdq_st_writer_close(w, st);
        first = last;
    }
    if (c == PDQ_OK && n_shards > 1) c = write_index(o, s, n, n_shards, total, st);
    /* config.json was written first (the specs come from it) */
done:
    free(s);
    free(t);
    free(fbuf);
    free(obuf);
    return c;
}
