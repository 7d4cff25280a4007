/* config.json -> the family its model_type names -> pdq_config: the common fields, then the
 * family's own. The list below is the one place a new family is registered. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "family/families.h"
#include "io/config_common.h"
#include "pdq/file.h"

/* A config.json is a few KiB; anything past this is not one. */
#define PDQ_CONFIG_MAX_BYTES ((size_t)64 << 20)

static const pdq_family *const k_families[] = {
    &pdq_family_llama, &pdq_family_mistral, &pdq_family_qwen2, &pdq_family_qwen3, &pdq_family_phi3,
    &pdq_family_gemma3, &pdq_family_gemma3_mm, &pdq_family_exaone,
};
#define N_FAMILIES ((int)(sizeof k_families / sizeof k_families[0]))

const pdq_family *pdq_family_of(const pdq_config *cfg) {
    return cfg->family ? cfg->family : &pdq_family_llama;
}

const pdq_family *pdq_family_named(const char *name) {
    for (int i = 0; name && i < N_FAMILIES; i++)
        if (strcmp(k_families[i]->name, name) == 0) return k_families[i];
    return NULL;
}

const pdq_family *pdq_family_find(const char *model_type) {
    for (int i = 0; i < N_FAMILIES; i++)
        for (const char *const *t = k_families[i]->model_types; *t; t++)
            if (strcmp(*t, model_type) == 0) return k_families[i];
    return NULL;
}

void pdq_family_model_types(char *buf, size_t cap) {
    size_t n = 0;
    buf[0] = '\0';
    for (int i = 0; i < N_FAMILIES; i++)
        for (const char *const *t = k_families[i]->model_types; *t && n < cap; t++)
            n += (size_t)snprintf(buf + n, cap - n, "%s'%s'", n ? ", " : "", *t);
}

/* The object the family's fields live in: the root, or a copy of its config_object with the
 * root's token ids, dtype and tying where the object has none (the caller frees a copy); NULL
 * with *c set when the object is missing. `sub` names it in messages. */
static cJSON *model_fields(cJSON *root, const pdq_family *f, const char *name, char *sub, size_t cap, pdq_code *c,
                           pdq_status *st) {
    snprintf(sub, cap, "%s", name);
    *c = PDQ_OK;
    if (!f->config_object) return root;
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(root, f->config_object);
    if (!cJSON_IsObject(o)) {
        *c = pdq_fail(st, PDQ_ERR_MISSING, "%s: '%s' (the %s text model's fields) is missing or not an object", name,
                      f->config_object, f->hf_class);
        return NULL;
    }
    cJSON *copy = cJSON_Duplicate(o, 1);
    static const char *const from_root[] = {"eos_token_id", "bos_token_id", "pad_token_id", "torch_dtype", "dtype",
                                            "tie_word_embeddings"};
    for (size_t i = 0; copy && i < sizeof from_root / sizeof from_root[0]; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, from_root[i]);
        if (v && !cJSON_GetObjectItemCaseSensitive(copy, from_root[i]))
            cJSON_AddItemToObject(copy, from_root[i], cJSON_Duplicate(v, 1));
    }
    if (!copy) *c = pdq_fail(st, PDQ_ERR_NOMEM, "%s: out of memory", name);
    snprintf(sub, cap, "%s (%s)", name, f->config_object);
    return copy;
}

pdq_code pdq_config_parse(const char *json, size_t len, const char *name, pdq_config *cfg, pdq_status *st) {
    memset(cfg, 0, sizeof *cfg);
    cJSON *root = cJSON_ParseWithLength(json, len);
    if (!root || !cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return pdq_fail(st, PDQ_ERR_FORMAT, "%s: not a JSON object", name);
    }
    pdq_code c;
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(root, "model_type");
    if (!mt || !cJSON_IsString(mt)) {
        c = pdq_fail(st, PDQ_ERR_MISSING, "%s: required field 'model_type' is missing or not a string", name);
    } else if (!(cfg->family = pdq_family_find(mt->valuestring))) {
        char known[256];
        pdq_family_model_types(known, sizeof known);
        c = pdq_fail(st, PDQ_ERR_UNSUPPORTED, "%s: model_type '%s' is not supported (known: %s)", name,
                     mt->valuestring, known);
    } else {
        char sub[512];
        cJSON *fields = model_fields(root, cfg->family, name, sub, sizeof sub, &c, st);
        if (fields) {
            c = pdq_config_common(fields, sub, &cfg->family->fields, cfg, st);
            if (!c && cfg->family->read_config) c = cfg->family->read_config(fields, sub, cfg, st);
            if (fields != root) cJSON_Delete(fields);
        }
    }
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
