/* The config.json fields every family shares (src/family/ reads a family's own on top). */
#ifndef PDQ_CONFIG_COMMON_H
#define PDQ_CONFIG_COMMON_H

#include <cjson/cJSON.h>

#include "pdq/config.h"

/* Sizes, heads, eps, RoPE (default / llama3 / longrope, partial_rotary_factor), token ids, tying
 * (absent: false, LlamaConfig's default) and dtype, with HF's defaults; `name` is the file.
 * `fields` names the layer count, eps and activation fields (NULL: Llama's names). */
pdq_code pdq_config_common(const cJSON *root, const char *name, const pdq_config_fields *fields, pdq_config *cfg,
                           pdq_status *st);
/* A boolean field: absent or null -> def; anything but a boolean is an error naming it. */
pdq_code pdq_config_flag(const cJSON *root, const char *key, int def, const char *name, int *out, pdq_status *st);
/* A feature flag pdq does not compute: absent, null or false passes, true is refused by name. */
pdq_code pdq_config_require_false(const cJSON *root, const char *key, const char *name, pdq_status *st);
/* sliding_window: an integer >= 1, or absent/null (0: none). */
pdq_code pdq_config_window(const cJSON *root, const char *name, pdq_config *cfg, pdq_status *st);

#endif
