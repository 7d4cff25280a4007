/* Chat templates: the built-in conversation formats (as llama.cpp keeps them, not a Jinja
 * interpreter), chosen from tokenizer_config.json's chat_template or by name, rendered so that the
 * text equals Hugging Face's apply_chat_template for the published templates. */
#ifndef PDQ_CHAT_TEMPLATE_H
#define PDQ_CHAT_TEMPLATE_H

#include <stddef.h>

#include "pdq/status.h"
#include "pdq/tokenizer.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    PDQ_CHAT_NONE = 0, /* the model has no chat template: lines are fed as plain text */
    PDQ_CHAT_CHATML,   /* <|im_start|>role\n...<|im_end|>\n (Qwen2/2.5, SmolLM) */
    PDQ_CHAT_QWEN3,    /* ChatML, earlier assistant turns without their <think> block */
    PDQ_CHAT_LLAMA3,   /* <|start_header_id|>role<|end_header_id|>\n\n...<|eot_id|> */
    PDQ_CHAT_PHI3,     /* <|role|>\n...<|end|>\n */
    PDQ_CHAT_GEMMA,    /* <start_of_turn>user|model\n...<end_of_turn>\n, system folded into the first user turn */
    PDQ_CHAT_QWEN25,   /* ChatML with a default system turn when the conversation has none (Qwen2/2.5) */
    PDQ_CHAT_LLAMA31,  /* Llama-3's headers, the system turn always, opening with its knowledge/date block */
    PDQ_CHAT_PHI4MINI, /* <|role|>...<|end|>, no newlines (Phi-4-mini) */
    PDQ_CHAT_MISTRAL   /* BOS [INST] user [/INST]assistant</s>, user/assistant alternating, no system (Mistral v0.1) */
} pdq_chat_kind;

typedef struct {
    pdq_chat_kind kind;
    char bos[64];             /* bos_token text of tokenizer_config.json (templates that start with it) */
    char eos[64];             /* eos_token text (Mistral ends assistant turns with it) */
    char reply_close[72];     /* mistral: what closes an assistant turn: eos, or eos and a space (the later v0.1 template) */
    char default_system[512]; /* qwen2.5: the system text the template writes when the conversation has none */
    char date[32];            /* llama3.1: "Today Date" ("26 Jul 2024", or today's when the template asks strftime_now) */
} pdq_chat_template;

typedef struct {
    char *role; /* "system", "user" or "assistant" */
    char *content;
} pdq_chat_msg;

/* "chatml, qwen3, llama3, phi3, gemma, qwen2.5, llama3.1, phi4-mini, mistral": the names
 * pdq_chat_template_load accepts. */
const char *pdq_chat_template_names(void);
const char *pdq_chat_template_name(pdq_chat_kind k); /* "none" for PDQ_CHAT_NONE */

/* Reads DIR/tokenizer_config.json (chat_template, a string or a list with a "default" entry, and
 * bos_token), else DIR/chat_template.jinja, and detects the format. `name` (may be NULL) overrides
 * the detection. No template at all gives PDQ_CHAT_NONE and PDQ_OK; a template that is none of the
 * built-in formats, or an unknown name, is PDQ_ERR_UNSUPPORTED naming the file or the name. */
pdq_code pdq_chat_template_load(const char *dir, const char *name, pdq_chat_template *out, pdq_status *st);
/* The format of a chat_template text, as llama.cpp's detection orders its checks. */
pdq_chat_kind pdq_chat_template_detect(const char *tmpl);

/* The whole conversation, with the generation prompt when add_generation_prompt. *text is
 * malloc'd, NUL-terminated; caller frees. Roles other than system/user/assistant, and what the
 * published template refuses (Gemma: roles not alternating user/assistant), are PDQ_ERR_ARG. */
pdq_code pdq_chat_render(const pdq_chat_template *t, const pdq_chat_msg *m, size_t n, int add_generation_prompt,
                         char **text, pdq_status *st);
/* What follows an assistant reply in a running chat: the end of the reply's turn (the end-of-turn
 * token first, when the template has one), the user turn and the generation prompt. */
pdq_code pdq_chat_render_next(const pdq_chat_template *t, const char *user, char **text, pdq_status *st);
/* The token that ends a turn ("<|im_end|>", "<|eot_id|>", "<|end|>", "<end_of_turn>", Mistral's eos
 * "</s>"), NULL for none. */
const char *pdq_chat_end_of_turn(const pdq_chat_template *t);

/* Token ids of a templated conversation, as apply_chat_template(tokenize=True) gives them: the
 * rendered text encoded without adding special tokens (the template writes its own BOS). */
pdq_code pdq_chat_encode(const pdq_tokenizer *tok, const pdq_chat_template *t, const pdq_chat_msg *m, size_t n,
                         int32_t **ids, size_t *n_ids, pdq_status *st);
/* The ids that continue a running chat with the user line `user`, after a reply whose last sampled
 * token `pending` (-1: none) the caller feeds first. When pending is the template's end-of-turn
 * token, the text is encoded with it in front (so a token's rstrip, as Phi-3's <|end|>, sees its
 * neighbour) and that leading id is dropped. */
pdq_code pdq_chat_next_ids(const pdq_tokenizer *tok, const pdq_chat_template *t, int32_t pending, const char *user,
                           int32_t **ids, size_t *n_ids, pdq_status *st);

/* A conversation file: a JSON list of {"role", "content"} (strings; other keys ignored). `name`
 * is the file name for messages. *msgs is malloc'd; free with pdq_chat_msgs_free. */
pdq_code pdq_chat_read_json(const char *text, size_t len, const char *name, pdq_chat_msg **msgs, size_t *n,
                            pdq_status *st);
void pdq_chat_msgs_free(pdq_chat_msg *msgs, size_t n);

#ifdef __cplusplus
}
#endif
#endif
