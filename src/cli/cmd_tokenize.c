/* pdq tokenize --model DIR (--text T | --file F | --chat CONV.json) [--no-special] [--json]: prints
 * token ids; --chat those of a templated conversation with the generation prompt. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "commands.h"
#include "chat_cli.h"
#include "common.h"
#include "pdq/chat_template.h"
#include "pdq/tokenizer.h"

static void usage(FILE *f) {
    fprintf(f, "usage: pdq tokenize --model DIR (--text T | --file F) [--no-special] [--json]\n"
               "       pdq tokenize --model DIR --chat CONV.json [--chat-template NAME] [--json | --render]\n"
               "  DIR holds tokenizer.json (and optionally tokenizer_config.json).\n"
               "  Prints the ids on one line, special tokens added as HF add_special_tokens=True does\n"
               "  unless --no-special; --json prints {\"ids\": [...]}.\n"
               "  --chat: CONV.json is a list of {\"role\", \"content\"}; prints the ids of the conversation in\n"
               "  the model's chat template (tokenizer_config.json's chat_template) with the generation prompt,\n"
               "  as HF apply_chat_template(add_generation_prompt=True) does. --chat-template NAME (%s)\n"
               "  overrides the detection. --render prints the templated text instead of its ids (only\n"
               "  tokenizer_config.json is read).\n", pdq_chat_template_names());
}

static void print_ids(const int32_t *ids, size_t n, int json) {
    if (json) fputs("{\"ids\": [", stdout);
    for (size_t i = 0; i < n; i++) printf("%s%d", i ? (json ? ", " : " ") : "", (int)ids[i]);
    puts(json ? "]}" : "");
}

/* --render: the templated text itself (only tokenizer_config.json is read), as
 * apply_chat_template(tokenize=False, add_generation_prompt=True) returns it. */
static int render_chat(const char *model, const pdq_chat_msg *msgs, size_t n, const char *tmpl, pdq_status *st) {
    pdq_chat_template t;
    char *text = NULL;
    if (cli_chat_template(model, tmpl, &t, 1, st) || pdq_chat_render(&t, msgs, n, 1, &text, st)) return 1;
    fputs(text, stdout);
    free(text);
    return fflush(stdout) == 0 ? 0 : 1;
}

static int tokenize_chat(const char *model, const char *conv, const char *tmpl, int json, int render) {
    size_t len = 0, n_msgs = 0, n = 0;
    char *buf = cli_read_text("tokenize", conv, &len);
    if (!buf) return 1;
    pdq_status st = {0};
    pdq_tokenizer *tok = NULL;
    pdq_chat_template t;
    pdq_chat_msg *msgs = NULL;
    int32_t *ids = NULL;
    int rc = 1;
    if (render) {
        if (pdq_chat_read_json(buf, len, conv, &msgs, &n_msgs, &st) || (rc = render_chat(model, msgs, n_msgs, tmpl, &st)))
            fprintf(stderr, "pdq tokenize: %s\n", st.msg);
    } else if (pdq_chat_read_json(buf, len, conv, &msgs, &n_msgs, &st) || pdq_tokenizer_load(model, &tok, &st) ||
        cli_chat_template(model, tmpl, &t, 1, &st) || pdq_chat_encode(tok, &t, msgs, n_msgs, &ids, &n, &st))
        fprintf(stderr, "pdq tokenize: %s\n", st.msg);
    else {
        print_ids(ids, n, json);
        rc = fflush(stdout) == 0 ? 0 : 1;
    }
    free(ids);
    pdq_chat_msgs_free(msgs, n_msgs);
    pdq_tokenizer_free(tok);
    free(buf);
    return rc;
}

int cmd_tokenize(int argc, char **argv) {
    pdq_args a;
    args_init(&a, "tokenize", argc, argv);
    if (args_flag(&a, "--help") || args_flag(&a, "-h")) {
        usage(stdout);
        return 0;
    }
    const char *model = args_required(&a, "--model"), *text = args_str(&a, "--text"), *file = args_str(&a, "--file");
    const char *conv = args_str(&a, "--chat"), *tmpl = args_str(&a, "--chat-template");
    int no_special = args_flag(&a, "--no-special"), json = args_flag(&a, "--json"), render = args_flag(&a, "--render");
    if (conv && (text || file || no_special)) args_error(&a, "--chat takes neither --text, --file nor --no-special");
    else if (!conv) args_one_of(&a, "--text", text, "--file", file);
    if (tmpl && !conv) args_error(&a, "--chat-template needs --chat CONV.json");
    if (render && (!conv || json)) args_error(&a, "--render needs --chat CONV.json and prints text, not --json");
    if (args_finish(&a)) return ARGS_USAGE_EXIT;
    if (conv) return tokenize_chat(model, conv, tmpl, json, render);
    char *buf = NULL;
    size_t len = 0;
    if (file) {
        if (!(buf = cli_read_text("tokenize", file, &len))) return 1; /* the reason is printed */
    } else
        len = strlen(text);
    pdq_status st = {0};
    pdq_tokenizer *tok = NULL;
    int32_t *ids = NULL;
    size_t n = 0;
    int rc = 1;
    if (pdq_tokenizer_load(model, &tok, &st) == PDQ_OK &&
        pdq_tokenizer_encode(tok, buf ? buf : text, len, !no_special, &ids, &n, &st) == PDQ_OK) {
        print_ids(ids, n, json);
        rc = fflush(stdout) == 0 ? 0 : 1;
    } else if (file)
        fprintf(stderr, "pdq tokenize: %s: %s\n", file, st.msg);
    else
        fprintf(stderr, "pdq tokenize: %s\n", st.msg);
    free(ids);
    pdq_tokenizer_free(tok);
    free(buf);
    return rc;
}
