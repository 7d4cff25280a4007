/* pdq tokenize --model DIR (--text T | --file F) [--no-special] [--json]: prints token ids. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "commands.h"
#include "common.h"
#include "pdq/tokenizer.h"

static void usage(FILE *f) {
    fprintf(f, "usage: pdq tokenize --model DIR (--text T | --file F) [--no-special] [--json]\n"
               "  DIR holds tokenizer.json (and optionally tokenizer_config.json).\n"
               "  Prints the ids on one line, special tokens added as HF add_special_tokens=True does\n"
               "  unless --no-special; --json prints {\"ids\": [...]}.\n");
}

int cmd_tokenize(int argc, char **argv) {
    pdq_args a;
    args_init(&a, "tokenize", argc, argv);
    if (args_flag(&a, "--help") || args_flag(&a, "-h")) {
        usage(stdout);
        return 0;
    }
    const char *model = args_required(&a, "--model"), *text = args_str(&a, "--text"), *file = args_str(&a, "--file");
    int no_special = args_flag(&a, "--no-special"), json = args_flag(&a, "--json");
    args_one_of(&a, "--text", text, "--file", file);
    if (args_finish(&a)) return ARGS_USAGE_EXIT;
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
        if (json) fputs("{\"ids\": [", stdout);
        for (size_t i = 0; i < n; i++) printf("%s%d", i ? (json ? ", " : " ") : "", (int)ids[i]);
        puts(json ? "]}" : "");
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
