/* Chat-template choice for pdq tokenize --chat and pdq chat. */
#include <stdio.h>
#include <string.h>

#include "chat_cli.h"

pdq_code cli_chat_template(const char *dir, const char *name, pdq_chat_template *t, int required, pdq_status *st) {
    pdq_code rc = pdq_chat_template_load(dir, name, t, st);
    if (rc == PDQ_OK && required && t->kind == PDQ_CHAT_NONE)
        rc = pdq_fail(st, PDQ_ERR_MISSING, "%s/tokenizer_config.json has no chat_template", dir);
    if (rc != PDQ_OK) {
        char msg[sizeof st->msg];
        snprintf(msg, sizeof msg, "%s", st->msg);
        if (name) pdq_fail(st, rc, "--chat-template %s: %s", name, msg);
        else pdq_fail(st, rc, "%s; choose one with --chat-template NAME (%s)", msg, pdq_chat_template_names());
    }
    return rc;
}

pdq_code cli_stop_ids(const char *dir, const pdq_config *cfg, pdq_stop_ids *out, pdq_status *st) {
    out->n = 0;
    pdq_code rc = PDQ_OK;
    for (int i = 0; i < cfg->n_eos && !rc; i++) rc = pdq_stop_ids_add(out, cfg->eos_token_ids[i], st);
    return rc ? rc : pdq_stop_ids_add_generation_config(out, dir, cfg->vocab_size, st);
}
