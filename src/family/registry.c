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
    &pdq_family_gemma3,
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
        c = pdq_config_common(root, name, cfg, st);
        if (!c && cfg->family->read_config) c = cfg->family->read_config(root, name, cfg, st);
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
