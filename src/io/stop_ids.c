/* Stop ids: config.json's EOS list (given by the caller) plus generation_config.json's. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>

#include "pdq/file.h"
#include "pdq/stop_ids.h"

pdq_code pdq_stop_ids_add(pdq_stop_ids *s, int id, pdq_status *st) {
    if (id < 0 || pdq_stop_ids_has(s, id)) return PDQ_OK;
    if (s->n >= PDQ_MAX_STOP_IDS) return pdq_fail(st, PDQ_ERR_LIMIT, "more than %d stop ids", PDQ_MAX_STOP_IDS);
    s->ids[s->n++] = id;
    return PDQ_OK;
}

int pdq_stop_ids_has(const pdq_stop_ids *s, int id) {
    for (int i = 0; i < s->n; i++)
        if (s->ids[i] == id) return 1;
    return 0;
}

static pdq_code add_one(pdq_stop_ids *s, const cJSON *v, const char *path, int vocab_size, pdq_status *st) {
    if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble >= vocab_size || v->valuedouble != (int)v->valuedouble)
        return pdq_fail(st, PDQ_ERR_FORMAT, "%s: eos_token_id holds %s: must be integers in [0, %d)", path,
                        cJSON_IsNumber(v) ? "a number out of range" : "a non-integer", vocab_size);
    int id = (int)v->valuedouble;
    if (!pdq_stop_ids_has(s, id) && s->n >= PDQ_MAX_STOP_IDS)
        return pdq_fail(st, PDQ_ERR_LIMIT, "%s: more than %d stop ids", path, PDQ_MAX_STOP_IDS);
    return pdq_stop_ids_add(s, id, st);
}

pdq_code pdq_stop_ids_add_generation_config(pdq_stop_ids *s, const char *dir, int vocab_size, pdq_status *st) {
    char path[4096], *buf = NULL;
    size_t len = 0;
    snprintf(path, sizeof path, "%s/generation_config.json", dir);
    pdq_status rst = {0};
    if (pdq_file_read(path, PDQ_FILE_MAX_JSON, &buf, &len, &rst) != PDQ_OK) {
        if (rst.code == PDQ_ERR_IO) return PDQ_OK; /* absent: nothing to add */
        if (st) *st = rst;
        return rst.code;
    }
    cJSON *j = cJSON_ParseWithLength(buf, len);
    free(buf);
    pdq_code rc = PDQ_OK;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, "eos_token_id"), *e;
    if (!cJSON_IsObject(j)) rc = pdq_fail(st, PDQ_ERR_FORMAT, "%s: not a valid JSON object", path);
    else if (cJSON_IsArray(v)) {
        cJSON_ArrayForEach(e, v) if ((rc = add_one(s, e, path, vocab_size, st))) break;
    } else if (v && !cJSON_IsNull(v))
        rc = add_one(s, v, path, vocab_size, st);
    cJSON_Delete(j);
    return rc;
}
