/* pdq generate: text generation with the reference model and its dynamic KV cache.
 * Greedy by default; --temperature/--top-p/--seed sample. Text streams as it is produced. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "commands.h"
#include "chat_cli.h"
#include "common.h"
#include "pdq/eval.h"
#include "pdq/progress.h"
#include "pdq/sampling.h"
#include "gen_json.h"

static const char *k_usage =
    "usage: pdq generate --model DIR (--prompt T | --ids \"1 2 3\") [--max-new N] [--temperature X --top-p P --seed S]\n"
    "                    [--ignore-eos] [--json] [--threads N]\n"
    "       pdq generate --static --max-seq N ... (static graphs; see pdq generate --static --help)\n"
    "       pdq generate --circle OUTDIR ... (exported Circle files; see pdq generate --circle X --help)\n";

/* Prints the text of ids[0..n) not yet printed (cli_stream_text), naming the sizes on a decode
 * error: e.g. a model whose vocab_size exceeds the tokenizer's must never print nothing and exit 0. */
static int stream_text(const pdq_tokenizer *tok, const int32_t *ids, size_t n, size_t *printed, int model_vocab) {
    pdq_status st = {0};
    if (cli_stream_text(tok, ids, n, printed, &st) == PDQ_OK) return 0;
    fprintf(stderr, "\npdq generate: %s (the model's vocab_size is %d, the tokenizer has %d tokens)\n", st.msg,
            model_vocab, pdq_tokenizer_vocab_size(tok));
    return -1;
}

int cmd_generate(int argc, char **argv) {
    for (int i = 0; i < argc; i++)
        if (strcmp(argv[i], "--static") == 0) return cmd_generate_static(argc, argv); /* static_generate.c */
    for (int i = 0; i < argc; i++)
        if (strcmp(argv[i], "--circle") == 0) return cmd_generate_circle(argc, argv); /* circle_cli.c */
    pdq_args a;
    args_init(&a, "generate", argc, argv);
    if (args_flag(&a, "--help")) { fputs(k_usage, stdout); return 0; }
    const char *dir = args_required(&a, "--model"), *prompt = args_str(&a, "--prompt"), *ids_s = args_str(&a, "--ids");
    int max_new = (int)args_int_range(&a, "--max-new", 64, 0, CLI_MAX_NEW_LIMIT);
    pdq_sampler smp;
    double temp = args_real(&a, "--temperature", 0.0, 0, HUGE_VAL, ARGS_CLOSED);
    double top_p = args_real(&a, "--top-p", 1.0, 0, 1, ARGS_LO_OPEN);
    pdq_sampler_init(&smp, temp, top_p, (unsigned long long)args_int_range(&a, "--seed", 0, 0, LONG_MAX));
    int ignore_eos = args_flag(&a, "--ignore-eos"), json = args_flag(&a, "--json");
    int threads = args_threads(&a);
    args_one_of(&a, "--prompt", prompt, "--ids", ids_s);
    if (args_finish(&a)) return ARGS_USAGE_EXIT;

    pdq_status st = {0};
    pdq_tokenizer *tok = NULL;
    int32_t *ids = NULL;
    long n = 0;
    if (prompt) {
        if (!(tok = cli_load_tokenizer("generate", dir))) return 1;
        size_t nn;
        if (pdq_tokenizer_encode(tok, prompt, strlen(prompt), 1, &ids, &nn, &st) != PDQ_OK) {
            fprintf(stderr, "pdq generate: %s\n", st.msg);
            pdq_tokenizer_free(tok);
            return 1;
        }
        n = (long)nn;
    } else {
        if ((n = cli_parse_ids("generate", ids_s, &ids)) < 0) return 1;
        pdq_status ignore = {0};
        if (pdq_tokenizer_load(dir, &tok, &ignore) != PDQ_OK) tok = NULL; /* ids-only dirs work */
    }
    double t_load = pdq_now();
    pdq_model *m = cli_load_model_packed("generate", dir, threads);
    t_load = pdq_now() - t_load;
    if (!m) { free(ids); pdq_tokenizer_free(tok); return 1; }
    int status = 1, V = m->cfg.vocab_size;
    pdq_stop_ids stop;
    int cap = (int)n + max_new;
    pdq_kvcache kv = {0};
    float *logits = malloc((size_t)V * sizeof *logits);
    /* all = prompt ids followed by the generated ones; out points at the generated part. */
    int32_t *all = malloc(((size_t)n + (size_t)max_new + 1) * sizeof *all);
    int32_t *out = all ? all + n : NULL;
    int n_out = 0;
    size_t printed = 0;
    if (!logits || !out) {
        fprintf(stderr, "pdq generate: out of memory\n");
        goto done;
    }
    if (cli_stop_ids(dir, &m->cfg, &stop, &st)) {
        fprintf(stderr, "pdq generate: %s\n", st.msg);
        goto done;
    }
    if (tok && pdq_tokenizer_vocab_size(tok) < V)
        fprintf(stderr, "pdq generate: warning: the tokenizer has %d tokens, the model's vocab %d: ids from %d on cannot be printed\n",
                pdq_tokenizer_vocab_size(tok), V, pdq_tokenizer_vocab_size(tok));
    if (cap > m->cfg.max_position_embeddings)
        fprintf(stderr, "pdq generate: warning: %d tokens exceed max_position_embeddings %d\n", cap, m->cfg.max_position_embeddings);
    double t_pre = pdq_now(), t_dec = 0;
    long n_dec = 0;
    if (pdq_kvcache_init(&kv, &m->cfg, 1, cap > 0 ? cap : 1, &st) != PDQ_OK ||
        pdq_model_forward(m, &kv, 1, (int)n, ids, NULL, NULL, logits, 1, &st) != PDQ_OK) {
        fprintf(stderr, "pdq generate: %s\n", st.msg);
        goto done;
    }
    t_pre = pdq_now() - t_pre;
    memcpy(all, ids, (size_t)n * sizeof *ids);
    if (!json && tok) {
        /* Echo the prompt as the tokenizer reads it back, then stream what follows it. */
        printed = 0;
        if (stream_text(tok, all, (size_t)n, &printed, V)) goto done;
    }
    for (int i = 0; i < max_new; i++) {
        int32_t next = (int32_t)pdq_sample(&smp, logits, V);
        out[n_out++] = next;
        if (!json && tok && stream_text(tok, all, (size_t)n + (size_t)n_out, &printed, V)) goto done;
        if (pdq_stop_ids_has(&stop, next) && !ignore_eos) break;
        double t1 = pdq_now();
        if (i + 1 < max_new && pdq_model_forward(m, &kv, 1, 1, &next, NULL, NULL, logits, 1, &st) != PDQ_OK) {
            fprintf(stderr, "\npdq generate: %s\n", st.msg);
            goto done;
        }
        if (i + 1 < max_new) { t_dec += pdq_now() - t1; n_dec++; }
    }
    if (json) {
        cJSON *o = cJSON_CreateObject();
        gen_json_row(o, tok, ids, (int)n, out, n_out);
        gen_json_timing(o, t_load, t_pre, n, t_dec, n_dec, n_out);
        gen_json_print(o);
    } else if (!tok) {
        for (int i = 0; i < n_out; i++) printf("%s%d", i ? " " : "", out[i]);
        printf("\n");
    } else {
        printf("\n");
    }
    status = 0;
done:
    pdq_kvcache_free(&kv);
    free(logits);
    free(all);
    free(ids);
    pdq_tokenizer_free(tok);
    pdq_model_free(m);
    return status;
}
