/* pdq chat: multi-turn through the static runtime. The first line is prefilled, later lines are
 * appended to the cache in buckets (append graph), replies are greedy decode steps. Reads lines
 * from stdin (works piped); stops at EOF or when the static context is full. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "commands.h"
#include "common.h"
#include "dir_defaults.h"
#include "pdq/eval.h"
#include "pdq/runtime.h"

static const char *k_usage =
    "usage: pdq chat --model DIR [--max-seq N (256)] [--bucket Q] [--max-new N] [--rope hf|pre_negated_sin]\n"
    "                [--scale-fusion none|k_proj] [--layout batched|unrolled] [--threads N]\n";

static int is_eos(const pdq_model *m, int id) {
    for (int e = 0; e < m->cfg.n_eos; e++)
        if (id == m->cfg.eos_token_ids[e]) return 1;
    return 0;
}

/* Appends ids to the single row; falls back to Q = 1 when the bucket no longer fits the past. */
static pdq_code feed(pdq_rt *rt, const int32_t *ids, int n, int Q, float *logits, pdq_status *st) {
    pdq_code rc = pdq_rt_append(rt, 1, n, ids, NULL, Q < n ? Q : n, logits, NULL, st);
    if (rc == PDQ_ERR_LIMIT && pdq_rt_len(rt, 0) + n <= pdq_rt_max_seq(rt))
        rc = pdq_rt_append(rt, 1, n, ids, NULL, 1, logits, NULL, st);
    return rc;
}

int cmd_chat(int argc, char **argv) {
    pdq_args a;
    args_init(&a, "chat", argc, argv);
    if (args_flag(&a, "--help")) { fputs(k_usage, stdout); return 0; }
    const char *dir = args_required(&a, "--model");
    int max_seq = (int)args_int_range(&a, "--max-seq", 0, 2, ARGS_MAX_SEQ_LIMIT);
    int Q = (int)args_int_range(&a, "--bucket", 8, 1, ARGS_MAX_SEQ_LIMIT);
    int max_new = (int)args_int_range(&a, "--max-new", 32, 0, CLI_MAX_NEW_LIMIT), threads = args_threads(&a);
    pdq_static_opts o;
    cli_static_opts(&a, &o, NULL);
    if (args_finish(&a)) return ARGS_USAGE_EXIT;
    max_seq = cli_resolve_max_seq(dir, max_seq);
    if (Q >= max_seq) {
        fprintf(stderr, "pdq chat: --bucket %d must be below max_seq %d\n", Q, max_seq);
        return ARGS_USAGE_EXIT;
    }
    pdq_tokenizer *tok = cli_load_tokenizer("chat", dir);
    if (!tok) return 1;
    pdq_model *m = cli_load_model("chat", dir, threads);
    if (!m) { pdq_tokenizer_free(tok); return 1; }
    pdq_status st = {0};
    pdq_rt *rt = NULL;
    int status = 1, V = m->cfg.vocab_size, turn = 0, pending = -1;
    float *logits = malloc(sizeof(float) * (size_t)V);
    int32_t *reply = malloc(sizeof(int32_t) * (size_t)(max_new + 1));
    char line[8192];
    if (!logits || !reply) { fprintf(stderr, "pdq chat: out of memory\n"); goto done; }
    if (pdq_rt_create(m, 1, max_seq, &o, &rt, &st) != PDQ_OK) { fprintf(stderr, "pdq chat: %s\n", st.msg); goto done; }
    while (fgets(line, sizeof line, stdin)) {
        size_t ll = strcspn(line, "\r\n");
        line[ll] = '\0';
        if (ll == 0) continue;
        int32_t *ids = NULL;
        size_t n;
        if (pdq_tokenizer_encode(tok, line, ll, turn == 0, &ids, &n, &st) != PDQ_OK) {
            fprintf(stderr, "pdq chat: %s\n", st.msg);
            goto done;
        }
        /* The last reply token was sampled but never fed: it opens this turn. */
        int32_t *blk = malloc(sizeof(int32_t) * (n + 1));
        int k = 0;
        if (blk && pending >= 0) blk[k++] = pending;
        if (blk) memcpy(blk + k, ids, sizeof(int32_t) * n);
        free(ids);
        if (!blk) { fprintf(stderr, "pdq chat: out of memory\n"); goto done; }
        int T = k + (int)n;
        pdq_code rc = T == 0 ? PDQ_OK
                      : turn == 0 ? pdq_rt_prefill(rt, 1, T, blk, NULL, PDQ_PAD_RIGHT, logits, NULL, &st)
                                  : feed(rt, blk, T, Q, logits, &st);
        free(blk);
        if (rc != PDQ_OK) {
            fprintf(stderr, "pdq chat: turn %d: %s\n", turn + 1, st.msg);
            goto done;
        }
        turn++;
        pending = -1;
        int nr = 0;
        for (int i = 0; i < max_new; i++) {
            int32_t next = pdq_argmax(logits, V);
            reply[nr++] = next;
            if (is_eos(m, next)) { pending = next; break; }
            if (pdq_rt_len(rt, 0) >= max_seq) { pending = next; break; }
            if (i + 1 == max_new) { pending = next; break; }
            if (pdq_rt_decode(rt, 1, &next, logits, &st) != PDQ_OK) {
                fprintf(stderr, "pdq chat: %s\n", st.msg);
                goto done;
            }
        }
        char *text = NULL;
        if (pdq_tokenizer_decode(tok, reply, (size_t)nr, 1, &text, &st) != PDQ_OK) {
            fprintf(stderr, "pdq chat: %s\n", st.msg);
            goto done;
        }
        printf("%s\n", text);
        fflush(stdout);
        free(text);
        if (pdq_rt_len(rt, 0) >= max_seq - 1) {
            fprintf(stderr, "pdq chat: context full (max_seq %d)\n", max_seq);
            break;
        }
    }
    status = 0;
done:
    free(logits);
    free(reply);
    pdq_rt_free(rt);
    pdq_model_free(m);
    pdq_tokenizer_free(tok);
    return status;
}
