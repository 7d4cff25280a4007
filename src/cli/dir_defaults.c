#include "dir_defaults.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>

#include "args.h"

/* Top-level "max_seq" of a JSON file, 0 if absent or unreadable (the loaders report bad files). */
static int json_max_seq(const char *dir, const char *name) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    char *buf = NULL;
    long n = -1;
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 && n < (1L << 30))
        buf = malloc((size_t)n + 1);
    int v = 0;
    if (buf && fread(buf, 1, (size_t)n, f) == (size_t)n) {
        cJSON *j = cJSON_ParseWithLength(buf, (size_t)n);
        const cJSON *x = cJSON_GetObjectItemCaseSensitive(j, "max_seq");
        if (cJSON_IsNumber(x) && x->valuedouble >= 2 && x->valuedouble <= ARGS_MAX_SEQ_LIMIT) v = (int)x->valuedouble;
        cJSON_Delete(j);
    }
    free(buf);
    fclose(f);
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
