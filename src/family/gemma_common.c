/* The config.json fields of the Gemma families, with Gemma's config-class defaults. */
#include "family/gemma_common.h"

#include <math.h>
#include <string.h>

#include "family/families.h"
#include "io/config_common.h"
#include "io/json_field.h"

/* layer_types: one "sliding_attention" or "full_attention" per layer. */
static pdq_code read_layer_types(const cJSON *types, const char *file, pdq_config *cfg, pdq_status *st) {
    if (!cJSON_IsArray(types)) return pdq_fail(st, PDQ_ERR_FORMAT, "%s: field 'layer_types' must be a list", file);
    if (cJSON_GetArraySize(types) != cfg->n_layers)
        return pdq_fail(st, PDQ_ERR_FORMAT, "%s: 'layer_types' has %d entries, num_hidden_layers is %d", file,
                        cJSON_GetArraySize(types), cfg->n_layers);
    int l = 0;
    const cJSON *t;
    cJSON_ArrayForEach(t, types) {
        const char *s = cJSON_IsString(t) ? t->valuestring : "";
        if (strcmp(s, "sliding_attention") == 0) cfg->layer_sliding[l] = 1;
        else if (strcmp(s, "full_attention") == 0) cfg->layer_sliding[l] = 0;
        else
            return pdq_fail(st, PDQ_ERR_UNSUPPORTED,
                            "%s: layer_types[%d] must be \"sliding_attention\" or \"full_attention\"", file, l);
        l++;
    }
    return PDQ_OK;
}

pdq_code pdq_gemma_common(const cJSON *root, const char *file, int default_pattern, pdq_config *cfg,
                          pdq_status *st) {
    pdq_jctx jc = {file, ""};
    const char *act = "gelu_pytorch_tanh";
    pdq_code c = pdq_jf_str(&jc, root, "hidden_activation", PDQ_JF_OPTIONAL, &act, st);
    if (c) return c;
    if (strcmp(act, "gelu_pytorch_tanh") != 0)
        return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "%s: hidden_activation '%s' is not supported (only 'gelu_pytorch_tanh')",
                        file, act);
    cfg->act = PDQ_ACT_GELU_TANH;
    cfg->norm_offset = 1.0f;
    /* HF: torch.tensor(hidden_size ** 0.5), a float32 scalar, cast to the weight dtype; pdq computes
     * in float32, as the references do (a bfloat16 run of HF would round it to 9.8125 for 96) */
    cfg->embed_scale = (float)sqrt((double)cfg->hidden_size);
    double qpas = 256, cap = 0;
    int attn_bias = 0, pattern = default_pattern;
    cfg->sliding_window = 4096;
    if ((c = pdq_jf_num(&jc, root, "query_pre_attn_scalar", PDQ_JF_OPTIONAL, 1e-6, 1e12, &qpas, st)) ||
        (c = pdq_jf_num(&jc, root, "final_logit_softcapping", PDQ_JF_OPTIONAL, 1e-6, 1e6, &cap, st)) ||
        (c = pdq_config_flag(root, "attention_bias", 0, file, &attn_bias, st)) ||
        (c = pdq_config_flag(root, "tie_word_embeddings", 1, file, &cfg->tie_word_embeddings, st)) ||
        (c = pdq_jf_i32(&jc, root, "sliding_window", PDQ_JF_OPTIONAL, 1, 1 << 24, &cfg->sliding_window, st)) ||
        (c = pdq_jf_i32(&jc, root, "_sliding_window_pattern", PDQ_JF_OPTIONAL, 1, PDQ_MAX_LAYERS, &pattern, st)) ||
        (c = pdq_jf_i32(&jc, root, "sliding_window_pattern", PDQ_JF_OPTIONAL, 1, PDQ_MAX_LAYERS, &pattern, st)))
        return c;
    cfg->attn_scale = (float)pow(qpas, -0.5); /* HF: query_pre_attn_scalar ** -0.5 */
    cfg->final_softcap = (float)cap;
    if (attn_bias) cfg->bias_mask |= PDQ_BIAS_QKV | PDQ_BIAS_O;
    const cJSON *types = cJSON_GetObjectItemCaseSensitive(root, "layer_types");
    if (types && !cJSON_IsNull(types)) return read_layer_types(types, file, cfg, st);
    for (int l = 0; l < cfg->n_layers; l++) cfg->layer_sliding[l] = (l + 1) % pattern != 0;
    return PDQ_OK;
}
