/* config.json -> pdq_config (HF LlamaConfig semantics and defaults). */
#include "pdq/config.h"

#include "io/json_field.h"
#include "pdq/file.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A config.json is a few KiB; anything past this is not one. */
#define PDQ_CONFIG_MAX_BYTES ((size_t)64 << 20)

/* Documented limits (README, "Files pdq reads"): far above any released LLaMA, small enough that
 * products of two of them cannot overflow and nothing is sized from an absurd value. */
#define MAX_HIDDEN (1 << 16)
#define MAX_INTERMEDIATE (1 << 20)
#define MAX_LAYERS 1024
#define MAX_HEADS 1024
#define MAX_HEAD_DIM 1024
#define MAX_VOCAB (1 << 24)
#define MAX_POSITIONS (1 << 24)

/* Reads an integer field in [min_value, max_value]. Absent or null -> *out = def and returns OK
 * unless required. */
static pdq_code get_int(const cJSON *root, const char *key, int required, int def, int min_value, int max_value,
                        const char *name, int *out, pdq_status *st) {
    pdq_jctx c = {name, ""};
    *out = def;
    return pdq_jf_i32(&c, root, key, required, min_value, max_value, out, st);
}

static pdq_code get_num(const cJSON *root, const char *key, int required, double def, double lo, double hi,
                        const char *name, double *out, pdq_status *st) {
    pdq_jctx c = {name, ""};
    *out = def;
    return pdq_jf_num(&c, root, key, required, lo, hi, out, st);
}

/* Boolean feature flags that must be false (absent counts as false). */
static pdq_code require_false(const cJSON *root, const char *key, const char *name, pdq_status *st) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!v || cJSON_IsNull(v) || cJSON_IsFalse(v)) return PDQ_OK;
    if (cJSON_IsTrue(v))
        return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "%s: '%s' = true is not supported", name, key);
    return pdq_fail(st, PDQ_ERR_FORMAT, "%s: field '%s' must be a boolean", name, key);
}

static pdq_code parse_eos(const cJSON *root, const char *name, pdq_config *cfg, pdq_status *st) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "eos_token_id");
    cfg->n_eos = 0;
    if (!v || cJSON_IsNull(v)) return PDQ_OK;
    if (cJSON_IsNumber(v)) {
        int id;
        pdq_code c = get_int(root, "eos_token_id", 0, -1, 0, 2147483647, name, &id, st);
        if (c) return c;
        cfg->eos_token_ids[cfg->n_eos++] = id;
        return PDQ_OK;
    }
    if (!cJSON_IsArray(v))
        return pdq_fail(st, PDQ_ERR_FORMAT, "%s: field 'eos_token_id' must be an integer or a list", name);
    const cJSON *e;
    cJSON_ArrayForEach(e, v) {
        if (!cJSON_IsNumber(e) || e->valuedouble != floor(e->valuedouble) || e->valuedouble < 0 ||
            e->valuedouble > 2147483647.0)
            return pdq_fail(st, PDQ_ERR_FORMAT, "%s: 'eos_token_id' list holds a non-integer", name);
        if (cfg->n_eos >= PDQ_MAX_EOS)
            return pdq_fail(st, PDQ_ERR_LIMIT, "%s: 'eos_token_id' has more than %d ids", name, PDQ_MAX_EOS);
        cfg->eos_token_ids[cfg->n_eos++] = (int)e->valuedouble;
    }
    return PDQ_OK;
}

/* rope_scaling: null, default, or llama3. (transformers >= 4.5x may call it rope_parameters and
 * put rope_theta inside it.) */
static pdq_code parse_rope(const cJSON *root, const char *name, pdq_config *cfg, pdq_status *st) {
    const char *key = "rope_scaling";
    const cJSON *rs = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!rs || cJSON_IsNull(rs)) {
        key = "rope_parameters";
        rs = cJSON_GetObjectItemCaseSensitive(root, key);
    }
    cfg->rope_type = PDQ_ROPE_DEFAULT;
    if (!rs || cJSON_IsNull(rs)) return PDQ_OK;
    if (!cJSON_IsObject(rs)) return pdq_fail(st, PDQ_ERR_FORMAT, "%s: '%s' must be an object or null", name, key);
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(rs, "rope_type");
    if (!t) t = cJSON_GetObjectItemCaseSensitive(rs, "type");
    if (t && !cJSON_IsString(t))
        return pdq_fail(st, PDQ_ERR_FORMAT, "%s: %s.rope_type must be a string", name, key);
    if (cJSON_GetObjectItemCaseSensitive(rs, "rope_theta")) {
        pdq_code c = get_num(rs, "rope_theta", 0, cfg->rope_theta, 1e-3, 1e15, name, &cfg->rope_theta, st);
        if (c) return c;
    }
    const char *type = t ? t->valuestring : "default";
    if (strcmp(type, "default") == 0) return PDQ_OK;
    if (strcmp(type, "llama3") != 0)
        return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "%s: %s type '%s' is not supported (only default and llama3)",
                        name, key, type);
    cfg->rope_type = PDQ_ROPE_LLAMA3;
    pdq_code c;
    char sub[64];
    snprintf(sub, sizeof sub, "%s (%s)", name, key);
    if ((c = get_num(rs, "factor", 1, 0, 1e-6, 1e6, sub, &cfg->rope_factor, st)) ||
        (c = get_num(rs, "low_freq_factor", 1, 0, 1e-6, 1e6, sub, &cfg->rope_low_freq_factor, st)) ||
        (c = get_num(rs, "high_freq_factor", 1, 0, 1e-6, 1e6, sub, &cfg->rope_high_freq_factor, st)) ||
        (c = get_int(rs, "original_max_position_embeddings", 1, 0, 1, MAX_POSITIONS, sub,
                     &cfg->rope_original_max_pos, st)))
        return c;
    if (!(cfg->rope_factor > 0) || !(cfg->rope_low_freq_factor > 0) ||
        !(cfg->rope_high_freq_factor > cfg->rope_low_freq_factor))
        return pdq_fail(st, PDQ_ERR_FORMAT,
                        "%s: llama3 rope_scaling needs factor > 0 and high_freq_factor > low_freq_factor > 0",
                        name);
    return PDQ_OK;
}

pdq_code pdq_config_parse(const char *json, size_t len, const char *name, pdq_config *cfg, pdq_status *st) {
    memset(cfg, 0, sizeof *cfg);
    cJSON *root = cJSON_ParseWithLength(json, len);
    if (!root || !cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return pdq_fail(st, PDQ_ERR_FORMAT, "%s: not a JSON object", name);
    }
    pdq_code c = PDQ_OK;
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(root, "model_type");
    if (!mt || !cJSON_IsString(mt)) {
        c = pdq_fail(st, PDQ_ERR_MISSING, "%s: required field 'model_type' is missing or not a string", name);
        goto done;
    }
    if (strcmp(mt->valuestring, "llama") != 0) {
        c = pdq_fail(st, PDQ_ERR_UNSUPPORTED, "%s: model_type '%s' is not supported (only 'llama')", name,
                     mt->valuestring);
        goto done;
    }
    const cJSON *act = cJSON_GetObjectItemCaseSensitive(root, "hidden_act");
    if (act && !cJSON_IsNull(act)) {
        if (!cJSON_IsString(act)) {
            c = pdq_fail(st, PDQ_ERR_FORMAT, "%s: field 'hidden_act' must be a string", name);
            goto done;
        }
        if (strcmp(act->valuestring, "silu") != 0) {
            c = pdq_fail(st, PDQ_ERR_UNSUPPORTED, "%s: hidden_act '%s' is not supported (only 'silu')", name,
                         act->valuestring);
            goto done;
        }
    }
    if ((c = require_false(root, "attention_bias", name, st)) || (c = require_false(root, "mlp_bias", name, st)))
        goto done;

    double eps = 0;
    if ((c = get_int(root, "hidden_size", 1, 0, 1, MAX_HIDDEN, name, &cfg->hidden_size, st)) ||
        (c = get_int(root, "intermediate_size", 1, 0, 1, MAX_INTERMEDIATE, name, &cfg->intermediate_size, st)) ||
        (c = get_int(root, "num_hidden_layers", 1, 0, 1, MAX_LAYERS, name, &cfg->n_layers, st)) ||
        (c = get_int(root, "num_attention_heads", 1, 0, 1, MAX_HEADS, name, &cfg->n_heads, st)) ||
        (c = get_int(root, "num_key_value_heads", 0, cfg->n_heads, 1, cfg->n_heads, name, &cfg->n_kv_heads, st)) ||
        (c = get_int(root, "vocab_size", 1, 0, 1, MAX_VOCAB, name, &cfg->vocab_size, st)) ||
        (c = get_int(root, "max_position_embeddings", 0, 2048, 1, MAX_POSITIONS, name, &cfg->max_position_embeddings,
                     st)) ||
        /* float32 keeps eps: below 1e-30 it is a denormal or zero, and a norm without eps divides by 0 */
        (c = get_num(root, "rms_norm_eps", 0, 1e-6, 1e-30, 1.0, name, &eps, st)) ||
        (c = get_num(root, "rope_theta", 0, 10000.0, 1e-3, 1e15, name, &cfg->rope_theta, st)) ||
        (c = get_int(root, "bos_token_id", 0, -1, 0, cfg->vocab_size - 1, name, &cfg->bos_token_id, st)) ||
        (c = get_int(root, "pad_token_id", 0, -1, 0, 2147483647, name, &cfg->pad_token_id, st)) ||
        (c = parse_eos(root, name, cfg, st)))
        goto done;
    cfg->rms_norm_eps = (float)eps;
    for (int i = 0; i < cfg->n_eos; i++)
        if (cfg->eos_token_ids[i] >= cfg->vocab_size) {
            c = pdq_fail(st, PDQ_ERR_FORMAT, "%s: eos_token_id = %d: must be in [0, %d] (vocab_size %d)", name,
                         cfg->eos_token_ids[i], cfg->vocab_size - 1, cfg->vocab_size);
            goto done;
        }

    const cJSON *hd = cJSON_GetObjectItemCaseSensitive(root, "head_dim");
    if (hd && !cJSON_IsNull(hd)) {
        if ((c = get_int(root, "head_dim", 1, 0, 1, MAX_HEAD_DIM, name, &cfg->head_dim, st))) goto done;
    } else {
        if (cfg->hidden_size % cfg->n_heads != 0) {
            c = pdq_fail(st, PDQ_ERR_UNSUPPORTED,
                         "%s: hidden_size %d is not divisible by num_attention_heads %d (and no head_dim)", name,
                         cfg->hidden_size, cfg->n_heads);
            goto done;
        }
        cfg->head_dim = cfg->hidden_size / cfg->n_heads;
    }
    if (cfg->head_dim % 2 != 0) {
        c = pdq_fail(st, PDQ_ERR_UNSUPPORTED, "%s: head_dim %d must be even for RoPE", name, cfg->head_dim);
        goto done;
    }
    if (cfg->n_heads % cfg->n_kv_heads != 0) {
        c = pdq_fail(st, PDQ_ERR_UNSUPPORTED,
                     "%s: num_attention_heads %d is not divisible by num_key_value_heads %d", name,
                     cfg->n_heads, cfg->n_kv_heads);
        goto done;
    }
    if (!(cfg->rope_theta > 0)) {
        c = pdq_fail(st, PDQ_ERR_FORMAT, "%s: field 'rope_theta' must be > 0", name);
        goto done;
    }
    if ((c = parse_rope(root, name, cfg, st))) goto done;

    const cJSON *tie = cJSON_GetObjectItemCaseSensitive(root, "tie_word_embeddings");
    if (tie && !cJSON_IsNull(tie) && !cJSON_IsBool(tie)) {
        c = pdq_fail(st, PDQ_ERR_FORMAT, "%s: field 'tie_word_embeddings' must be a boolean", name);
        goto done;
    }
    cfg->tie_word_embeddings = tie && cJSON_IsTrue(tie);

    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(root, "torch_dtype");
    if (!dt || cJSON_IsNull(dt)) dt = cJSON_GetObjectItemCaseSensitive(root, "dtype");
    if (dt && cJSON_IsString(dt)) snprintf(cfg->torch_dtype, sizeof cfg->torch_dtype, "%s", dt->valuestring);

    /* Guard the sizes that later code multiplies together. */
    long long qdim = (long long)cfg->n_heads * cfg->head_dim;
    if (qdim > (1 << 24) || (long long)cfg->vocab_size * cfg->hidden_size > (1LL << 40)) {
        c = pdq_fail(st, PDQ_ERR_LIMIT, "%s: model dimensions are implausibly large", name);
        goto done;
    }
done:
    cJSON_Delete(root);
    return c;
}

pdq_code pdq_config_load(const char *model_dir, pdq_config *cfg, pdq_status *st) {
    char path[4096];
    snprintf(path, sizeof path, "%s/config.json", model_dir);
    char *buf;
    size_t n;
    pdq_code rc = pdq_file_read(path, PDQ_CONFIG_MAX_BYTES, &buf, &n, st);
    if (rc) return rc;
    pdq_code c = pdq_config_parse(buf, n, path, cfg, st);
    free(buf);
    return c;
}

/* HF _compute_default_rope_parameters computes in float32:
 * 1 / (base ** (arange(0, dim, 2).float() / dim)); we round at the same points. */
void pdq_rope_inv_freq(const pdq_config *cfg, float *inv_freq) {
    int dim = cfg->head_dim, half = dim / 2;
    float base = (float)cfg->rope_theta;
    for (int i = 0; i < half; i++) {
        float e = (float)(2 * i) / (float)dim;
        float p = (float)pow((double)base, (double)e);
        inv_freq[i] = 1.0f / p;
    }
    if (cfg->rope_type != PDQ_ROPE_LLAMA3) return;
    /* _compute_llama3_parameters: long wavelengths are divided by factor, short ones kept,
     * the band in between interpolated smoothly. */
    double factor = cfg->rope_factor, lo = cfg->rope_low_freq_factor, hi = cfg->rope_high_freq_factor;
    double old_ctx = cfg->rope_original_max_pos;
    double low_wavelen = old_ctx / lo, high_wavelen = old_ctx / hi;
    for (int i = 0; i < half; i++) {
        double f = inv_freq[i];
        double wavelen = 2.0 * M_PI / f;
        double out;
        if (wavelen > low_wavelen) {
            out = f / factor;
        } else if (wavelen < high_wavelen) {
            out = f;
        } else {
            double smooth = (old_ctx / wavelen - lo) / (hi - lo);
            out = (1.0 - smooth) * f / factor + smooth * f;
        }
        inv_freq[i] = (float)out;
    }
}

long long pdq_config_param_count(const pdq_config *c) {
    long long D = c->hidden_size, I = c->intermediate_size, hd = c->head_dim;
    long long q = (long long)c->n_heads * hd, kv = (long long)c->n_kv_heads * hd;
    long long per_layer = 2 * D + q * D + 2 * kv * D + D * q + 3 * I * D;
    long long emb = (long long)c->vocab_size * D;
    return emb + c->n_layers * per_layer + D + (c->tie_word_embeddings ? 0 : emb);
}
