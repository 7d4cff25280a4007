#include "dir_defaults.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>

#include "args.h"
#include "pdq/file.h"
#include "pdq/runtime.h"

/* dir/name parsed, or NULL if absent or unreadable (the loaders report bad files). */
static cJSON *load_json(const char *dir, const char *name) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    char *buf;
    size_t n;
    if (pdq_file_read(path, PDQ_FILE_MAX_JSON, &buf, &n, NULL)) return NULL;
    cJSON *j = cJSON_ParseWithLength(buf, n);
    free(buf);
    return j;
}

/* Top-level "max_seq" of a JSON file, 0 if absent. */
static int json_max_seq(const char *dir, const char *name) {
    cJSON *j = load_json(dir, name);
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(j, "max_seq");
    int v = cJSON_IsNumber(x) && x->valuedouble >= 2 && x->valuedouble <= ARGS_MAX_SEQ_LIMIT ? (int)x->valuedouble : 0;
    cJSON_Delete(j);
    return v;
}

int cli_stored_max_seq(const char *dir) {
    if (!dir) return 0;
    int v = json_max_seq(dir, "ptq.json");
    return v ? v : json_max_seq(dir, "manifest.json");
}

int cli_resolve_max_seq(const char *dir, int given) {
    if (given > 0) return given;
    int v = cli_stored_max_seq(dir);
    return v ? v : ARGS_MAX_SEQ_DEFAULT;
}

/* One given graph option against the calibrated one (both spelled as the parser reads them). */
static int same_opt(const char *cmd, const char *dir, const char *flag, const char *given, const cJSON *so,
                    const char *key, int (*parse)(const char *)) {
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(so, key);
    if (!given || !cJSON_IsString(x) || parse(given) == parse(x->valuestring)) return 1;
    fprintf(stderr, "pdq %s: %s %s, but %s/ptq.json was calibrated with %s %s: drop the option (the calibrated one "
                    "applies) or quantize again with it\n", cmd, flag, given, dir, key, x->valuestring);
    return 0;
}

int cli_check_graph_opts(const char *cmd, const char *dir, const char *rope, const char *scale, const char *layout) {
    cJSON *j = load_json(dir, "ptq.json");
    const cJSON *so = cJSON_GetObjectItemCaseSensitive(j, "static_opts");
    int ok = same_opt(cmd, dir, "--rope", rope, so, "rope", pdq_rope_conv_parse) &&
             same_opt(cmd, dir, "--scale-fusion", scale, so, "scale_fusion", pdq_scale_fusion_parse) &&
             same_opt(cmd, dir, "--layout", layout, so, "layout", pdq_attn_layout_parse);
    cJSON_Delete(j);
    return ok ? 0 : ARGS_USAGE_EXIT;
}
