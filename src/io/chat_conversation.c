/* Reading a conversation file: a JSON list of {"role": ..., "content": ...}. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "pdq/chat_template.h"

/* A conversation longer than this is a mistake, not a chat. */
#define CHAT_MAX_MESSAGES 100000

void pdq_chat_msgs_free(pdq_chat_msg *msgs, size_t n) {
    for (size_t i = 0; msgs && i < n; i++) {
        free(msgs[i].role);
        free(msgs[i].content);
    }
    free(msgs);
}

static char *dup(const char *s) {
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p) memcpy(p, s, n);
    return p;
}

pdq_code pdq_chat_read_json(const char *text, size_t len, const char *name, pdq_chat_msg **msgs, size_t *n,
                            pdq_status *st) {
    *msgs = NULL;
    *n = 0;
    cJSON *j = cJSON_ParseWithLength(text, len);
    if (!cJSON_IsArray(j)) {
        cJSON_Delete(j);
        return pdq_fail(st, PDQ_ERR_FORMAT, "%s: not a JSON list of {\"role\", \"content\"} messages", name);
    }
    int count = cJSON_GetArraySize(j);
    if (count == 0 || count > CHAT_MAX_MESSAGES) {
        cJSON_Delete(j);
        return pdq_fail(st, PDQ_ERR_FORMAT, "%s: %d messages: must be 1 to %d", name, count, CHAT_MAX_MESSAGES);
    }
    pdq_chat_msg *m = calloc((size_t)count, sizeof *m);
    pdq_code rc = m ? PDQ_OK : pdq_fail(st, PDQ_ERR_NOMEM, "%s: out of memory", name);
    size_t k = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, j) {
        if (rc) break;
        const cJSON *r = cJSON_GetObjectItemCaseSensitive(e, "role"), *c = cJSON_GetObjectItemCaseSensitive(e, "content");
        if (!cJSON_IsString(r) || !cJSON_IsString(c)) {
            rc = pdq_fail(st, PDQ_ERR_FORMAT, "%s: message %zu: needs string fields \"role\" and \"content\"", name, k);
            break;
        }
        m[k].role = dup(r->valuestring);
        m[k].content = dup(c->valuestring);
        k++;
        if (!m[k - 1].role || !m[k - 1].content) rc = pdq_fail(st, PDQ_ERR_NOMEM, "%s: out of memory", name);
    }
    cJSON_Delete(j);
    if (rc) {
        pdq_chat_msgs_free(m, k);
        return rc;
    }
    *msgs = m;
    *n = k;
    return PDQ_OK;
}
