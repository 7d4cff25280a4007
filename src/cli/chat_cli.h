/* The command line's side of chat templates: choosing one for a model directory, with errors
 * that name the --chat-template override. */
#ifndef PDQ_CLI_CHAT_CLI_H
#define PDQ_CLI_CHAT_CLI_H

#include "pdq/chat_template.h"
#include "pdq/config.h"
#include "pdq/stop_ids.h"

/* pdq_chat_template_load plus the override's name in every error; `required`: no template at all
 * is an error too (else PDQ_CHAT_NONE, plain text). */
pdq_code cli_chat_template(const char *dir, const char *name, pdq_chat_template *t, int required, pdq_status *st);

/* Every EOS the model lists: config.json's (cfg) and DIR/generation_config.json's. */
pdq_code cli_stop_ids(const char *dir, const pdq_config *cfg, pdq_stop_ids *out, pdq_status *st);

#endif
