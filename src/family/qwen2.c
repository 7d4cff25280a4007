/* Qwen2 / Qwen2.5 (Qwen2ForCausalLM): Llama with biases on q, k and v (never on o_proj). Its
 * sliding window applies only with use_sliding_window, and then (HF Qwen2Config) to the layers
 * i >= max_window_layers, or to the "sliding_attention" entries of an explicit layer_types. */
#include <string.h>

#include "family/families.h"
#include "family/roles_hf.h"
#include "io/config_common.h"
#include "io/json_field.h"

static pdq_code read_config(const void *json, const char *file, pdq_config *cfg, pdq_status *st) {
    const cJSON *root = json, *lt, *x;
    cfg->bias_mask = PDQ_BIAS_QKV;
    int use = 0, from = 0;
    pdq_jctx jc = {file, ""};
    pdq_code c = pdq_config_flag(root, "use_sliding_window", 0, file, &use, st);
    if (c || !use) {
        cfg->sliding_window = 0; /* configs carry a window they do not use */
        return c;
    }
    if ((c = pdq_config_window(root, file, cfg, st)) ||
        (c = pdq_jf_i32(&jc, root, "max_window_layers", PDQ_JF_OPTIONAL, 0, 1 << 20, &from, st)) ||
        (c = pdq_jf_array(&jc, root, "layer_types", PDQ_JF_OPTIONAL, PDQ_MAX_LAYERS, &lt, st)))
        return c;
    if (lt && cJSON_GetArraySize(lt) != cfg->n_layers)
        return pdq_fail(st, PDQ_ERR_FORMAT, "%s: layer_types has %d entries, num_hidden_layers is %d", file,
                        cJSON_GetArraySize(lt), cfg->n_layers);
    int l = 0;
    cJSON_ArrayForEach(x, lt) {
        int sliding = cJSON_IsString(x) && !strcmp(x->valuestring, "sliding_attention");
        if (!sliding && !(cJSON_IsString(x) && !strcmp(x->valuestring, "full_attention")))
            return pdq_fail(st, PDQ_ERR_FORMAT, "%s: layer_types[%d] must be \"full_attention\" or \"sliding_attention\"",
                            file, l);
        cfg->layer_sliding[l++] = (unsigned char)sliding;
    }
    for (l = 0; !lt && l < cfg->n_layers; l++) cfg->layer_sliding[l] = cfg->sliding_window > 0 && l >= from;
    return PDQ_OK;
}

static const pdq_tensor_role k_roles[] = {PDQ_ROLES_HF_LLAMA};
static const char *const k_types[] = {"qwen2", NULL};

const pdq_family pdq_family_qwen2 = {
    .name = "qwen2",
    .hf_class = "Qwen2ForCausalLM",
    .model_types = k_types,
    .read_config = read_config,
    .roles = PDQ_FAMILY_ROLES(k_roles),
    .block = PDQ_BLOCK_PRENORM,
};
