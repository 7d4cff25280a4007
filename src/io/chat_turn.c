/* From rendered chat text to token ids: a whole conversation, or the next turn of a running chat. */
#include <stdlib.h>
#include <string.h>

#include "pdq/chat_template.h"

pdq_code pdq_chat_encode(const pdq_tokenizer *tok, const pdq_chat_template *t, const pdq_chat_msg *m, size_t n,
                         int32_t **ids, size_t *n_ids, pdq_status *st) {
    *ids = NULL;
    *n_ids = 0;
    char *text = NULL;
    pdq_code rc = pdq_chat_render(t, m, n, 1, &text, st);
    if (!rc) rc = pdq_tokenizer_encode(tok, text, strlen(text), 0, ids, n_ids, st);
    free(text);
    return rc;
}

pdq_code pdq_chat_next_ids(const pdq_tokenizer *tok, const pdq_chat_template *t, int32_t pending, const char *user,
                           int32_t **ids, size_t *n_ids, pdq_status *st) {
    *ids = NULL;
    *n_ids = 0;
    char *text = NULL;
    pdq_code rc = pdq_chat_render_next(t, user, &text, st);
    if (rc) return rc;
    const char *eot = pdq_chat_end_of_turn(t);
    size_t skip = 0;
    if (eot && pending >= 0) { /* is pending the end-of-turn token? */
        int32_t *e = NULL;
        size_t ne = 0;
        rc = pdq_tokenizer_encode(tok, eot, strlen(eot), 0, &e, &ne, st);
        skip = !rc && ne == 1 && e[0] == pending ? strlen(eot) : 0;
        free(e);
    }
    /* else the reply stopped on another token (the length limit, another EOS): its turn still ends */
    if (!rc) rc = pdq_tokenizer_encode(tok, text, strlen(text), 0, ids, n_ids, st);
    if (!rc && skip) {
        if (*n_ids == 0 || (*ids)[0] != pending) {
            free(*ids);
            *ids = NULL;
            *n_ids = 0;
            rc = pdq_fail(st, PDQ_ERR_FORMAT, "chat: the %s template's end-of-turn text does not encode to token %d",
                          pdq_chat_template_name(t->kind), (int)pending);
        } else
            memmove(*ids, *ids + 1, (--*n_ids) * sizeof **ids);
    }
    free(text);
    return rc;
}
