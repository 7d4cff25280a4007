/* pdq chat --circle OUTDIR: multi-turn over the exported files. The first line goes through the
 * exported prefill; every later line is appended through the export's append-prefill buckets in
 * the runtime's plan (largest bucket that fits, then smaller; Q = 1 is the decode graph), and the
 * reply is greedy decode steps. --chunk-prefill sends the first line through the buckets as well. --show-plan prints each turn's bucket sequence on stderr. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "commands.h"
#include "common.h"
#include "pdq/circle_export.h"
#include "pdq/eval.h"
#include "pdq/tokenizer.h"

static const char *k_usage =
    "usage: pdq chat --circle OUTDIR [--per-layer] [--max-new N (32)] [--show-plan] [--chunk-prefill]\n"
    "  lines from stdin; turns after the first are appended in the manifest's append_buckets;\n"
    "  --chunk-prefill feeds the first turn through the buckets too (from an empty cache)\n";

static int is_eos(const pdq_config *c, int have, int id) {
    for (int e = 0; have && e < c->n_eos; e++)
        if (id == c->eos_token_ids[e]) return 1;
    return 0;
}

int cmd_chat_circle(int argc, char **argv) {
    pdq_args a;
    args_init(&a, "chat", argc, argv);
    if (args_flag(&a, "--help")) { fputs(k_usage, stdout); return 0; }
    const char *dir = args_str(&a, "--circle");
    int per_layer = args_flag(&a, "--per-layer"), max_new = (int)args_int(&a, "--max-new", 32);
    int show = args_flag(&a, "--show-plan"), chunk = args_flag(&a, "--chunk-prefill");
    if (args_finish(&a) || !dir || max_new < 0) { fputs(k_usage, stderr); return 2; }
    pdq_tokenizer *tok = cli_load_tokenizer("chat", dir);
    if (!tok) return 1;
    pdq_status st = {0};
    pdq_crt *rt = NULL;
    if (pdq_crt_open(dir, !per_layer, &rt, &st) != PDQ_OK) {
        fprintf(stderr, "pdq chat: %s\n", st.msg);
        pdq_tokenizer_free(tok);
        return 1;
    }
    pdq_config cfg;
    int have_cfg = pdq_config_load(dir, &cfg, &st) == PDQ_OK;
    int V = pdq_crt_vocab(rt), S = pdq_crt_max_seq(rt), status = 1, turn = 0, pending = -1;
    float *logits = malloc(sizeof(float) * (size_t)V);
    int32_t *reply = malloc(sizeof(int32_t) * (size_t)(max_new + 1));
    int *plan = malloc(sizeof(int) * (size_t)(S + 1));
    char line[8192];
    if (!logits || !reply || !plan) { fprintf(stderr, "pdq chat: out of memory\n"); goto done; }
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
        /* the last reply token was sampled but never fed: it opens this turn */
        int32_t *blk = malloc(sizeof(int32_t) * (n + 1));
        int k = 0;
        if (blk && pending >= 0) blk[k++] = pending;
        if (blk && n) memcpy(blk + k, ids, sizeof(int32_t) * n);
        free(ids);
        if (!blk) { fprintf(stderr, "pdq chat: out of memory\n"); goto done; }
        int T = k + (int)n;
        if (T == 0) { free(blk); continue; }
        if (pdq_crt_len(rt) + T > S) {
            free(blk);
            fprintf(stderr, "pdq chat: context full (max_seq %d)\n", S);
            break;
        }
        if (show && (turn > 0 || chunk)) {
            int np = pdq_crt_plan(rt, T, plan, S + 1);
            fprintf(stderr, "turn %d: %d tokens at length %d: buckets", turn + 1, T, pdq_crt_len(rt));
            for (int i = 0; i < np; i++) fprintf(stderr, " %d", plan[i]);
            fprintf(stderr, "\n");
        }
        pdq_code rc = turn == 0 && !chunk ? pdq_crt_prefill(rt, blk, T, logits, &st) : pdq_crt_append(rt, blk, T, logits, NULL, &st);
        free(blk);
        if (rc != PDQ_OK) { fprintf(stderr, "pdq chat: turn %d: %s\n", turn + 1, st.msg); goto done; }
        turn++;
        pending = -1;
        int nr = 0;
        for (int i = 0; i < max_new; i++) {
            int32_t next = pdq_argmax(logits, V);
            reply[nr++] = next;
            if (is_eos(&cfg, have_cfg, next) || pdq_crt_len(rt) >= S || i + 1 == max_new) { pending = next; break; }
            if (pdq_crt_decode(rt, next, logits, &st) != PDQ_OK) { fprintf(stderr, "pdq chat: %s\n", st.msg); goto done; }
        }
        char *text = NULL;
        if (pdq_tokenizer_decode(tok, reply, (size_t)nr, 1, &text, &st) != PDQ_OK) {
            fprintf(stderr, "pdq chat: %s\n", st.msg);
            goto done;
        }
        printf("%s\n", text);
        fflush(stdout);
        free(text);
        if (pdq_crt_len(rt) >= S - 1) { fprintf(stderr, "pdq chat: context full (max_seq %d)\n", S); break; }
    }
    status = 0;
done:
    free(logits);
    free(reply);
    free(plan);
    pdq_crt_free(rt);
    pdq_tokenizer_free(tok);
    return status;
}
