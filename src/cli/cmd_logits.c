/* pdq logits: float32 logits for every position of one sequence, as .npy (S, vocab). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "commands.h"
#include "common.h"
#include "pdq/eval.h"
#include "pdq/npy.h"

static const char *k_usage =
    "usage: pdq logits --model DIR (--prompt T | --ids \"1 2 3\" | --ids-file F) --out FILE.npy [--threads N]\n";

int cmd_logits(int argc, char **argv) {
    pdq_args a;
    args_init(&a, "logits", argc, argv);
    if (args_flag(&a, "--help")) { fputs(k_usage, stdout); return 0; }
    const char *dir = args_required(&a, "--model"), *prompt = args_str(&a, "--prompt");
    const char *ids_s = args_str(&a, "--ids"), *ids_file = args_str(&a, "--ids-file");
    const char *out = args_required(&a, "--out");
    int threads = args_threads(&a);
    if (!!prompt + !!ids_s + !!ids_file != 1) args_error(&a, "give exactly one of --prompt, --ids or --ids-file");
    if (args_finish(&a)) return ARGS_USAGE_EXIT;
    if (cli_check_out_file("logits", "--out", out)) return 1;

    int32_t *ids = NULL;
    long n = 0;
    pdq_status st = {0};
    if (prompt) {
        pdq_tokenizer *tok = cli_load_tokenizer("logits", dir);
        if (!tok) return 1;
        size_t nn = 0;
        pdq_code rc = pdq_tokenizer_encode(tok, prompt, strlen(prompt), 1, &ids, &nn, &st);
        pdq_tokenizer_free(tok);
        if (rc != PDQ_OK) { fprintf(stderr, "pdq logits: %s\n", st.msg); return 1; }
        n = (long)nn;
    } else if (ids_s) {
        if ((n = cli_parse_ids("logits", ids_s, &ids)) < 0) return 1;
    } else if (cli_check_in_file("logits", "--ids-file", ids_file)) {
        return 1;
    } else if (pdq_read_ids_file(ids_file, &ids, &n, &st) != PDQ_OK) {
        fprintf(stderr, "pdq logits: %s\n", st.msg);
        return 1;
    }
    if (n == 0) { fprintf(stderr, "pdq logits: empty sequence\n"); free(ids); return 1; }
    pdq_model *m = cli_load_model_packed("logits", dir, threads);
    if (!m) { free(ids); return 1; }
    int status = 1;
    int V = m->cfg.vocab_size;
    float *logits = malloc((size_t)n * V * sizeof *logits);
    if (!logits) {
        fprintf(stderr, "pdq logits: out of memory\n");
    } else if (pdq_model_forward(m, NULL, 1, (int)n, ids, NULL, NULL, logits, 0, &st) != PDQ_OK) {
        fprintf(stderr, "pdq logits: %s\n", st.msg);
    } else {
        int64_t shape[2] = {n, V};
        if (pdq_npy_write(out, PDQ_NPY_F32, 2, shape, logits, &st) != PDQ_OK)
            fprintf(stderr, "pdq logits: %s\n", st.msg);
        else
            status = 0;
    }
    free(logits);
    free(ids);
    pdq_model_free(m);
    return status;
}
