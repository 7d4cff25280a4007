/* The config.json fields every family reads, with HF's defaults (src/family/ adds each family's
 * own fields and picks the family), and the RoPE frequencies they define. */
#include "io/config_common.h"

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
#define MAX_LAYERS PDQ_MAX_LAYERS
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

/* rope_scaling: null, default, llama3 or longrope. (transformers >= 4.5x may call it rope_parameters and
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
    if (strcmp(type, "longrope") == 0) { /* its factor lists need rotary_dim: parse_rotary */
        cfg->rope_type = PDQ_ROPE_LONGROPE;
        return PDQ_OK;
    }
    pdq_code c;
    char sub[64];
    snprintf(sub, sizeof sub, "%s (%s)", name, key);
    if (strcmp(type, "linear") == 0) { /* positions divided by factor: inv_freq / factor */
        cfg->rope_type = PDQ_ROPE_LINEAR;
        return get_num(rs, "factor", 1, 0, 1e-6, 1e6, sub, &cfg->rope_factor, st);
    }
    if (strcmp(type, "llama3") != 0)
        return pdq_fail(st, PDQ_ERR_UNSUPPORTED,
                        "%s: %s type '%s' is not supported (only default, linear, llama3 and longrope)", name, key,
                        type);
    cfg->rope_type = PDQ_ROPE_LLAMA3;
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

/* Partial RoPE (partial_rotary_factor, read by HF's rope utilities for any family) and the
 * longrope factor lists, once head_dim is known. */
static pdq_code parse_rotary(const cJSON *root, const char *name, pdq_config *cfg, pdq_status *st) {
    double prf = 1.0;
    pdq_code c = get_num(root, "partial_rotary_factor", 0, 1.0, 1e-6, 1.0, name, &prf, st);
    if (c) return c;
    cfg->rotary_dim = (int)(cfg->head_dim * prf); /* HF: int(head_dim * partial_rotary_factor) */
    if (cfg->rotary_dim < 2 || cfg->rotary_dim % 2)
        return pdq_fail(st, PDQ_ERR_UNSUPPORTED,
                        "%s: partial_rotary_factor %g gives %d rotary dims of head_dim %d: must be even and >= 2",
                        name, prf, cfg->rotary_dim, cfg->head_dim);
    cfg->rope_attn_factor = 1.0f;
    if (cfg->rope_type != PDQ_ROPE_LONGROPE) return PDQ_OK;
    const cJSON *rs = cJSON_GetObjectItemCaseSensitive(root, "rope_scaling");
    if (!rs || cJSON_IsNull(rs)) rs = cJSON_GetObjectItemCaseSensitive(root, "rope_parameters");
    char sub[64];
    snprintf(sub, sizeof sub, "%s (rope_scaling)", name);
    pdq_jctx jc = {sub, ""};
    int pairs = cfg->rotary_dim / 2;
    const char *keys[2] = {"short_factor", "long_factor"};
    float *dst[2] = {cfg->rope_short, cfg->rope_long};
    for (int k = 0; k < 2; k++) {
        const cJSON *a;
        if ((c = pdq_jf_array(&jc, rs, keys[k], 1, PDQ_MAX_ROPE_PAIRS, &a, st))) return c;
        if (cJSON_GetArraySize(a) != pairs)
            return pdq_fail(st, PDQ_ERR_FORMAT, "%s: rope_scaling.%s has %d values, rotary_dim / 2 = %d needs %d",
                            name, keys[k], cJSON_GetArraySize(a), pairs, pairs);
        int i = 0;
        const cJSON *e;
        cJSON_ArrayForEach(e, a) {
            if (!cJSON_IsNumber(e) || !(e->valuedouble > 0) || e->valuedouble > 1e6)
                return pdq_fail(st, PDQ_ERR_FORMAT, "%s: rope_scaling.%s[%d] must be a number in (0, 1e6]", name,
                                keys[k], i);
            dst[k][i++] = (float)e->valuedouble;
        }
    }
    /* HF: a config with original_max_position_embeddings (Phi-3) takes the scaling factor as
     * max_position_embeddings / original; else rope_scaling.factor over max_position_embeddings. */
    double factor = 1.0, attn = 0.0;
    const cJSON *orig = cJSON_GetObjectItemCaseSensitive(root, "original_max_position_embeddings");
    if (orig && !cJSON_IsNull(orig)) {
        if ((c = get_int(root, "original_max_position_embeddings", 1, 0, 2, MAX_POSITIONS, name,
                         &cfg->rope_original_max_pos, st)))
            return c;
        factor = (double)cfg->max_position_embeddings / cfg->rope_original_max_pos;
    } else {
        cfg->rope_original_max_pos = cfg->max_position_embeddings;
        if ((c = get_num(rs, "factor", 0, 1.0, 1e-6, 1e6, sub, &factor, st))) return c;
    }
    if ((c = get_num(rs, "attention_factor", 0, 0.0, 0.0, 1e6, sub, &attn, st))) return c;
    if (!(attn > 0)) attn = factor <= 1.0 ? 1.0 : sqrt(1.0 + log(factor) / log((double)cfg->rope_original_max_pos));
    cfg->rope_attn_factor = (float)attn;
    cfg->rope_factor = factor;
    return PDQ_OK;
}

const char *pdq_config_field_n_layers(const pdq_config_fields *f) {
    return f && f->n_layers ? f->n_layers : "num_hidden_layers";
}

const char *pdq_config_field_norm_eps(const pdq_config_fields *f) {
    return f && f->norm_eps ? f->norm_eps : "rms_norm_eps";
}

const char *pdq_config_field_act(const pdq_config_fields *f) {
    return f && f->act ? f->act : "hidden_act";
}

pdq_code pdq_config_common(const cJSON *root, const char *name, const pdq_config_fields *fields, pdq_config *cfg,
                           pdq_status *st) {
    pdq_code c;
    const char *act_key = pdq_config_field_act(fields);
    const cJSON *act = cJSON_GetObjectItemCaseSensitive(root, act_key);
    if (act && !cJSON_IsNull(act)) {
        if (!cJSON_IsString(act)) return pdq_fail(st, PDQ_ERR_FORMAT, "%s: field '%s' must be a string", name, act_key);
        if (strcmp(act->valuestring, "silu") != 0)
            return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "%s: %s '%s' is not supported (only 'silu')", name, act_key,
                            act->valuestring);
    }
    double eps = 0;
    if ((c = get_int(root, "hidden_size", 1, 0, 1, MAX_HIDDEN, name, &cfg->hidden_size, st)) ||
        (c = get_int(root, "intermediate_size", 1, 0, 1, MAX_INTERMEDIATE, name, &cfg->intermediate_size, st)) ||
        (c = get_int(root, pdq_config_field_n_layers(fields), 1, 0, 1, MAX_LAYERS, name, &cfg->n_layers, st)) ||
        (c = get_int(root, "num_attention_heads", 1, 0, 1, MAX_HEADS, name, &cfg->n_heads, st)) ||
        (c = get_int(root, "num_key_value_heads", 0, cfg->n_heads, 1, cfg->n_heads, name, &cfg->n_kv_heads, st)) ||
        (c = get_int(root, "vocab_size", 1, 0, 1, MAX_VOCAB, name, &cfg->vocab_size, st)) ||
        (c = get_int(root, "max_position_embeddings", 0, 2048, 1, MAX_POSITIONS, name, &cfg->max_position_embeddings,
                     st)) ||
        /* float32 keeps eps: below 1e-30 it is a denormal or zero, and a norm without eps divides by 0 */
        (c = get_num(root, pdq_config_field_norm_eps(fields), 0, 1e-6, 1e-30, 1.0, name, &eps, st)) ||
        (c = get_num(root, "rope_theta", 0, 10000.0, 1e-3, 1e15, name, &cfg->rope_theta, st)) ||
        (c = get_int(root, "bos_token_id", 0, -1, 0, cfg->vocab_size - 1, name, &cfg->bos_token_id, st)) ||
        (c = get_int(root, "pad_token_id", 0, -1, 0, 2147483647, name, &cfg->pad_token_id, st)) ||
        (c = parse_eos(root, name, cfg, st)))
        return c;
    cfg->rms_norm_eps = (float)eps;
    for (int i = 0; i < cfg->n_eos; i++)
        if (cfg->eos_token_ids[i] >= cfg->vocab_size)
            return pdq_fail(st, PDQ_ERR_FORMAT, "%s: eos_token_id = %d: must be in [0, %d] (vocab_size %d)", name,
                            cfg->eos_token_ids[i], cfg->vocab_size - 1, cfg->vocab_size);

    const cJSON *hd = cJSON_GetObjectItemCaseSensitive(root, "head_dim");
    if (hd && !cJSON_IsNull(hd)) {
        if ((c = get_int(root, "head_dim", 1, 0, 1, MAX_HEAD_DIM, name, &cfg->head_dim, st))) return c;
    } else {
        if (cfg->hidden_size % cfg->n_heads != 0)
            return pdq_fail(st, PDQ_ERR_UNSUPPORTED,
                            "%s: hidden_size %d is not divisible by num_attention_heads %d (and no head_dim)", name,
                            cfg->hidden_size, cfg->n_heads);
        cfg->head_dim = cfg->hidden_size / cfg->n_heads;
    }
    if (cfg->head_dim % 2 != 0)
        return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "%s: head_dim %d must be even for RoPE", name, cfg->head_dim);
    if (cfg->n_heads % cfg->n_kv_heads != 0)
        return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "%s: num_attention_heads %d is not divisible by num_key_value_heads %d",
                        name, cfg->n_heads, cfg->n_kv_heads);
    if (!(cfg->rope_theta > 0)) return pdq_fail(st, PDQ_ERR_FORMAT, "%s: field 'rope_theta' must be > 0", name);
    if ((c = parse_rope(root, name, cfg, st)) || (c = parse_rotary(root, name, cfg, st))) return c;

    const cJSON *tie = cJSON_GetObjectItemCaseSensitive(root, "tie_word_embeddings");
    if (tie && !cJSON_IsNull(tie) && !cJSON_IsBool(tie))
        return pdq_fail(st, PDQ_ERR_FORMAT, "%s: field 'tie_word_embeddings' must be a boolean", name);
    /* absent: LlamaConfig's default (false); families whose config class defaults to true say so */
    cfg->tie_word_embeddings = tie && cJSON_IsTrue(tie);

    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(root, "torch_dtype");
    if (!dt || cJSON_IsNull(dt)) dt = cJSON_GetObjectItemCaseSensitive(root, "dtype");
    if (dt && cJSON_IsString(dt)) snprintf(cfg->torch_dtype, sizeof cfg->torch_dtype, "%s", dt->valuestring);

    /* Guard the sizes that later code multiplies together. */
    long long qdim = (long long)cfg->n_heads * cfg->head_dim;
    if (qdim > (1 << 24) || (long long)cfg->vocab_size * cfg->hidden_size > (1LL << 40))
        return pdq_fail(st, PDQ_ERR_LIMIT, "%s: model dimensions are implausibly large", name);
    return PDQ_OK;
}

pdq_code pdq_config_flag(const cJSON *root, const char *key, int def, const char *name, int *out, pdq_status *st) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
    *out = def;
    if (!v || cJSON_IsNull(v)) return PDQ_OK;
    if (!cJSON_IsBool(v)) return pdq_fail(st, PDQ_ERR_FORMAT, "%s: field '%s' must be a boolean", name, key);
    *out = cJSON_IsTrue(v);
    return PDQ_OK;
}

pdq_code pdq_config_require_false(const cJSON *root, const char *key, const char *name, pdq_status *st) {
    return require_false(root, key, name, st);
}

pdq_code pdq_config_window(const cJSON *root, const char *name, pdq_config *cfg, pdq_status *st) {
    pdq_code c = get_int(root, "sliding_window", 0, 0, 1, MAX_POSITIONS, name, &cfg->sliding_window, st);
    for (int l = 0; !c && l < cfg->n_layers; l++) cfg->layer_sliding[l] = cfg->sliding_window > 0;
    return c;
}

int pdq_cfg_mixed_attention(const pdq_config *c) {
    int sliding = 0, full = 0;
    for (int l = 0; l < c->n_layers; l++) {
        if (pdq_cfg_layer_window(c, l)) sliding = 1;
        else full = 1;
    }
    return sliding && full;
}

/* HF _compute_default_rope_parameters computes in float32:
 * 1 / (base ** (arange(0, dim, 2).float() / dim)); we round at the same points. */
static void default_inv_freq(const pdq_config *cfg, double theta, float *inv_freq) {
    int dim = pdq_cfg_rotary_dim(cfg), half = dim / 2;
    float base = (float)theta;
    for (int i = 0; i < half; i++) {
        float e = (float)(2 * i) / (float)dim;
        float p = (float)pow((double)base, (double)e);
        inv_freq[i] = 1.0f / p;
    }
}

void pdq_rope_inv_freq_local(const pdq_config *cfg, float *inv_freq) {
    default_inv_freq(cfg, cfg->rope_local_theta > 0 ? cfg->rope_local_theta : cfg->rope_theta, inv_freq);
}

int pdq_rope_local_differs(const pdq_config *c) {
    if (!(c->rope_local_theta > 0) || pdq_cfg_rotary_dim(c) / 2 > PDQ_MAX_ROPE_PAIRS) return c->rope_local_theta > 0;
    float g[PDQ_MAX_ROPE_PAIRS], l[PDQ_MAX_ROPE_PAIRS];
    if (c->rope_type == PDQ_ROPE_LONGROPE) return 1;
    pdq_rope_inv_freq(c, g);
    pdq_rope_inv_freq_local(c, l);
    return memcmp(g, l, sizeof(float) * (size_t)(pdq_cfg_rotary_dim(c) / 2)) != 0;
}

void pdq_rope_inv_freq(const pdq_config *cfg, float *inv_freq) {
    int dim = pdq_cfg_rotary_dim(cfg), half = dim / 2;
    default_inv_freq(cfg, cfg->rope_theta, inv_freq);
    if (cfg->rope_type == PDQ_ROPE_LINEAR) { /* _compute_linear_scaling_rope_parameters, float32 */
        for (int i = 0; i < half; i++) inv_freq[i] /= (float)cfg->rope_factor;
        return;
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

/* _compute_longrope_parameters: 1 / (factor[i] * base ** (2i / dim)), in float32. */
void pdq_rope_inv_freq_longrope(const pdq_config *cfg, int long_factors, float *inv_freq) {
    int dim = pdq_cfg_rotary_dim(cfg), half = dim / 2;
    const float *f = long_factors ? cfg->rope_long : cfg->rope_short;
    float base = (float)cfg->rope_theta;
    for (int i = 0; i < half; i++) {
        float e = (float)(2 * i) / (float)dim;
        float p = (float)pow((double)base, (double)e);
        inv_freq[i] = 1.0f / (f[i] * p);
    }
}

long long pdq_config_param_count(const pdq_config *c) {
    long long D = c->hidden_size, I = c->intermediate_size, hd = c->head_dim;
    long long q = (long long)c->n_heads * hd, kv = (long long)c->n_kv_heads * hd;
    long long per_layer = 2 * D + q * D + 2 * kv * D + D * q + 3 * I * D;
    long long bias_rows[7] = {q, kv, kv, D, I, I, D};
    for (int i = 0; i < 7; i++)
        if (c->bias_mask >> i & 1u) per_layer += bias_rows[i];
    if (c->qk_norm) per_layer += 2 * hd;
    long long emb = (long long)c->vocab_size * D;
    return emb + c->n_layers * per_layer + D + (c->tie_word_embeddings ? 0 : emb);
}
