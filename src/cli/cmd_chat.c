/* pdq chat: an interactive chat in the manner of llama-cli, through the static runtime (a
 * quantized directory runs its fake-quant graphs) or, with --circle, the exported pair. The first
 * line is prefilled, later lines appended in buckets; replies stream token by token. When the
 * cache cannot hold the next turn the oldest turns after the first are dropped and the rest is
 * prefilled again (or, with --on-full reset, the chat starts over); a first line longer than the
 * cache keeps its end, with a warning. Commands: /exit, /reset, /stats; Ctrl-D (EOF) ends.
 * An instruct model's lines go through its chat template (tokenizer_config.json's chat_template,
 * or --chat-template NAME): the first turn with the optional --system text, each later one after
 * the reply's end-of-turn token; a model without a template gets its lines as plain text. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "chat_cli.h"
#include "chat_engine.h"
#include "commands.h"
#include "common.h"
#include "dir_defaults.h"
#include "pdq/progress.h"
#include "pdq/sampling.h"

static const char *k_usage =
    "usage: pdq chat (--model DIR [--max-seq N (ptq.json's, else 256)] | --circle OUTDIR) [--bucket Q (8)] [--max-new N (64)]\n"
    "                [--temperature X (0: greedy) --top-p P --seed S] [--on-full drop|reset] [--threads N]\n"
    "                [--rope hf|pre_negated_sin] [--scale-fusion none|k_proj] [--layout batched|unrolled]\n"
    "                [--chat-template NAME] [--system TEXT]\n"
    "  --model DIR          static prefill/append/decode graphs; a quantized directory with ptq.json runs\n"
    "                       its quantized graphs in --mode (max_seq: the calibrated one)\n"
    "  --circle OUTDIR      the exported Circle pair (model_prefill / model_decode); later turns are\n"
    "                       appended through the export's append-prefill buckets, largest first\n"
    "    --per-layer        the per-layer files instead of the pair\n"
    "    --show-plan        each turn's bucket sequence on stderr\n"
    "    --chunk-prefill    the first turn through the buckets too (from an empty cache)\n"
    "  --on-full drop       when the cache is full, drop the oldest turns but the first (default);\n"
    "           reset       start over with the new line\n"
    "  --chat-template NAME chatml, qwen3, llama3, phi3 or gemma instead of the one detected from\n"
    "                       tokenizer_config.json's chat_template (none there: lines are plain text)\n"
    "  --system TEXT        a system turn before the first line (needs a chat template)\n"
    "  lines from stdin; /exit, /reset, /stats; Ctrl-D ends. Replies go to stdout, the rest to stderr.\n"
    EXEC_ARGS_USAGE;

typedef struct {
    chat_engine e;
    const pdq_tokenizer *tok;
    pdq_chat_template tmpl; /* PDQ_CHAT_NONE: plain text */
    const char *system;     /* --system, or NULL */
    int32_t *seq;      /* the tokens in the cache, in order */
    int len;
    int *turn_at;      /* start of each turn in seq */
    int n_turns;
    int pending;       /* the last reply token: sampled, not yet in the cache */
    long generated, fed, drops, resets, turns_total;
    double t_feed, t_gen;
} chat;


static void reset(chat *c) {
    c->len = 0;
    c->n_turns = 0;
    c->pending = -1;
}

/* Makes room for a turn of T tokens plus `reserve` reply tokens: drops the oldest turns after the
 * first; 1 when the cache must be refilled from seq (prefill), 0 when nothing changed. */
static int make_room(chat *c, int T, int reserve) {
    int S = c->e.max_seq;
    if (c->len + T + reserve <= S) return 0;
    int keep_end = c->n_turns > 1 ? c->turn_at[1] : c->len; /* the first turn */
    int j = 1;
    while (j < c->n_turns && keep_end + (c->len - c->turn_at[j]) + T + reserve > S) j++;
    if (keep_end + (j < c->n_turns ? c->len - c->turn_at[j] : 0) + T + reserve > S) return -1; /* first turn too big */
    int dropped = j - 1, from = j < c->n_turns ? c->turn_at[j] : c->len, shift = from - keep_end;
    memmove(c->seq + keep_end, c->seq + from, sizeof(int32_t) * (size_t)(c->len - from));
    c->len -= shift;
    for (int t = j; t < c->n_turns; t++) c->turn_at[t - dropped] = c->turn_at[t] - shift;
    c->n_turns -= dropped;
    c->drops += dropped;
    fprintf(stderr, "[context full: dropped the %d oldest turn%s after the first; %d tokens kept]\n", dropped,
            dropped == 1 ? "" : "s", c->len);
    return 1;
}

/* The ids of a user line: in the chat template (the first turn whole, later ones after the
 * pending end-of-turn token), or plain text with BOS on the first. */
static pdq_code encode_line(const chat *c, const char *line, size_t ll, int32_t **ids, size_t *n, pdq_status *st) {
    if (c->tmpl.kind == PDQ_CHAT_NONE) return pdq_tokenizer_encode(c->tok, line, ll, c->len == 0, ids, n, st);
    if (c->len > 0) return pdq_chat_next_ids(c->tok, &c->tmpl, c->pending, line, ids, n, st);
    pdq_chat_msg m[2] = {{"system", (char *)c->system}, {"user", (char *)line}};
    return c->system ? pdq_chat_encode(c->tok, &c->tmpl, m, 2, ids, n, st) : pdq_chat_encode(c->tok, &c->tmpl, m + 1, 1, ids, n, st);
}

/* One user line: into the cache, then the streamed reply. 0 ok, 1 fatal. */
static int turn(chat *c, const char *line, size_t ll, int on_full_reset, int max_new, pdq_sampler *smp, float *logits) {
    pdq_status st = {0};
    int S = c->e.max_seq, reserve = max_new < S / 4 ? max_new : S / 4;
    if (reserve < 1) reserve = 1;
    int32_t *ids = NULL;
    size_t n;
    for (int again = 0; again < 2; again++) {
        if (encode_line(c, line, ll, &ids, &n, &st) != PDQ_OK) {
            fprintf(stderr, "pdq chat: %s\n", st.msg);
            return 1;
        }
        int T = (int)n + (c->pending >= 0);
        if (c->len == 0 || c->len + T + reserve <= S || !on_full_reset) break;
        fprintf(stderr, "[context full: starting over]\n");
        c->resets++;
        reset(c);
        free(ids);
        ids = NULL;
    }
    int T = (int)n + (c->pending >= 0);
    int32_t *blk = malloc(sizeof(int32_t) * (size_t)(T > 0 ? T : 1));
    if (!blk) { free(ids); fprintf(stderr, "pdq chat: out of memory\n"); return 1; }
    int k = 0;
    if (c->pending >= 0) blk[k++] = c->pending;
    memcpy(blk + k, ids, sizeof(int32_t) * n);
    free(ids);
    c->pending = -1;
    int refill = 0;
    if (c->len > 0 && (refill = make_room(c, T, reserve)) < 0) {
        fprintf(stderr, "[context full: the first turn leaves no room; starting over]\n");
        c->resets++;
        reset(c);
        free(blk);
        return turn(c, line, ll, on_full_reset, max_new, smp, logits);
    }
    if (c->len == 0 && T + reserve > S) { /* a first line longer than the cache: keep BOS and its end */
        int keep = S - reserve, head = (T > 0 && blk[0] == pdq_tokenizer_bos_id(c->tok)) ? 1 : 0;
        fprintf(stderr, "[warning: the line has %d tokens, the cache holds %d: keeping its last %d]\n", T, S, keep - head);
        memmove(blk + head, blk + T - (keep - head), sizeof(int32_t) * (size_t)(keep - head));
        T = keep;
    }
    double t0 = pdq_now();
    c->turn_at[c->n_turns++] = c->len;
    memcpy(c->seq + c->len, blk, sizeof(int32_t) * (size_t)T);
    pdq_code rc;
    if (c->len == 0 || refill) rc = chat_engine_start(&c->e, c->seq, c->len + T, logits, &st);
    else rc = chat_engine_feed(&c->e, blk, T, logits, &st);
    c->len += T;
    c->fed += T;
    free(blk);
    c->t_feed += pdq_now() - t0;
    if (rc != PDQ_OK) { fprintf(stderr, "pdq chat: turn %ld: %s\n", c->turns_total + 1, st.msg); return 1; }
    c->turns_total++;
    /* the reply, streamed; its last token stays pending (it opens the next turn) */
    int32_t *reply = malloc(sizeof(int32_t) * (size_t)(max_new + 1));
    if (!reply) { fprintf(stderr, "pdq chat: out of memory\n"); return 1; }
    size_t printed = 0;
    int nr = 0;
    t0 = pdq_now();
    for (int i = 0; i < max_new; i++) {
        int32_t next = (int32_t)pdq_sample(smp, logits, c->e.vocab);
        reply[nr++] = next;
        pdq_status ds = {0};
        (void)cli_stream_text(c->tok, reply, (size_t)nr, &printed, &ds); /* an undecodable id prints nothing */
        c->generated++;
        if (chat_engine_is_eos(&c->e, next) || i + 1 == max_new || c->len >= S) { c->pending = next; break; }
        if ((rc = chat_engine_step(&c->e, next, logits, &st)) != PDQ_OK) {
            free(reply);
            fprintf(stderr, "\npdq chat: %s\n", st.msg);
            return 1;
        }
        c->seq[c->len++] = next;
    }
    c->t_gen += pdq_now() - t0;
    free(reply);
    printf("\n");
    fflush(stdout);
    return 0;
}

static void stats(const chat *c) {
    fprintf(stderr, "[turns %ld (%d in the cache), cache %d/%d tokens, fed %ld tokens (%.1f tok/s), generated %ld (%.1f tok/s), "
                    "dropped turns %ld, resets %ld]\n",
            c->turns_total, c->n_turns, c->len, c->e.max_seq, c->fed, c->t_feed > 0 ? c->fed / c->t_feed : 0, c->generated,
            c->t_gen > 0 ? c->generated / c->t_gen : 0, c->drops, c->resets);
}

int cmd_chat(int argc, char **argv) {
    pdq_args a;
    args_init(&a, "chat", argc, argv);
    if (args_flag(&a, "--help")) { fputs(k_usage, stdout); return 0; }
    const char *dir = args_str(&a, "--model"), *cdir = args_str(&a, "--circle"), *on_full = args_str(&a, "--on-full");
    int max_seq = (int)args_int_range(&a, "--max-seq", 0, 2, ARGS_MAX_SEQ_LIMIT);
    int Q = (int)args_int_range(&a, "--bucket", 8, 1, ARGS_MAX_SEQ_LIMIT);
    int max_new = (int)args_int_range(&a, "--max-new", 64, 1, CLI_MAX_NEW_LIMIT), threads = args_threads(&a);
    double temp = args_real(&a, "--temperature", 0.0, 0, HUGE_VAL, ARGS_CLOSED);
    double top_p = args_real(&a, "--top-p", 1.0, 0, 1, ARGS_LO_OPEN);
    unsigned long long seed = (unsigned long long)args_int_range(&a, "--seed", 0, 0, LONG_MAX);
    pdq_static_opts o;
    int given = cli_static_opts(&a, &o, NULL);
    int per_layer = args_flag(&a, "--per-layer"), show = args_flag(&a, "--show-plan"), chunk = args_flag(&a, "--chunk-prefill");
    const char *tmpl_name = args_str(&a, "--chat-template"), *system = args_str(&a, "--system");
    cli_exec ex;
    if (cli_exec_read(&a, &ex)) return ARGS_USAGE_EXIT;
    args_one_of(&a, "--model", dir, "--circle", cdir);
    if (on_full && strcmp(on_full, "drop") && strcmp(on_full, "reset"))
        args_error(&a, "--on-full must be drop or reset, got '%s'", on_full);
    if ((per_layer || show || chunk) && !cdir) args_error(&a, "--per-layer, --show-plan and --chunk-prefill need --circle OUTDIR");
    if (cdir && given > 0) args_error(&a, "--circle runs the export's own graph options: drop --rope/--scale-fusion/--layout");
    if (cdir && max_seq) args_error(&a, "--circle runs at the export's max_seq: drop --max-seq");
    if (args_finish(&a) || given < 0) return ARGS_USAGE_EXIT;
    if (dir) {
        max_seq = cli_resolve_max_seq(dir, max_seq);
        if (Q >= max_seq) {
            fprintf(stderr, "pdq chat: --bucket %d must be below max_seq %d\n", Q, max_seq);
            return ARGS_USAGE_EXIT;
        }
    }
    int on_full_reset = on_full && strcmp(on_full, "reset") == 0;
    pdq_tokenizer *tok = cli_load_tokenizer("chat", cdir ? cdir : dir);
    if (!tok) return 1;
    chat c = {0};
    c.tok = tok;
    c.system = system;
    pdq_status tst = {0};
    if (cli_chat_template(cdir ? cdir : dir, tmpl_name, &c.tmpl, system != NULL, &tst)) {
        fprintf(stderr, "pdq chat: %s\n", tst.msg);
        pdq_tokenizer_free(tok);
        return 1;
    }
    c.pending = -1;
    int status = 1;
    float *logits = NULL;
    if (chat_engine_open(&c.e, dir, cdir, max_seq, Q, &o, given > 0, &ex, per_layer, threads)) goto done;
    const char *eot = pdq_chat_end_of_turn(&c.tmpl);
    if (eot) { /* the template's end of turn ends a reply too */
        int32_t *e = NULL;
        size_t ne = 0;
        if (pdq_tokenizer_encode(tok, eot, strlen(eot), 0, &e, &ne, &tst) == PDQ_OK && ne == 1 &&
            pdq_stop_ids_add(&c.e.stop, e[0], &tst) != PDQ_OK)
            fprintf(stderr, "pdq chat: %s\n", tst.msg);
        free(e);
    }
    c.e.show_plan = show;
    c.e.chunk = chunk;
    int S = c.e.max_seq;
    c.seq = malloc(sizeof(int32_t) * (size_t)(S + 1));
    c.turn_at = malloc(sizeof(int) * (size_t)(S + 1));
    logits = malloc(sizeof(float) * (size_t)c.e.vocab);
    if (!c.seq || !c.turn_at || !logits) { fprintf(stderr, "pdq chat: out of memory\n"); goto done; }
    pdq_sampler smp;
    pdq_sampler_init(&smp, temp, top_p, seed);
    int tty = isatty(0);
    fprintf(stderr, "== chat template: %s\n", c.tmpl.kind ? pdq_chat_template_name(c.tmpl.kind) : "none (lines are plain text)");
    fprintf(stderr, "== pdq chat: %s\n== max_seq %d, bucket %d, up to %d new tokens a reply, %s, on a full cache: %s\n"
                    "== /exit ends (or Ctrl-D), /reset starts over, /stats shows the cache and speed\n",
            c.e.what, S, Q, max_new, temp > 0 ? "sampling" : "greedy", on_full_reset ? "reset" : "drop the oldest turns");
    if (temp > 0) fprintf(stderr, "== temperature %.3g, top-p %.3g, seed %llu\n", temp, top_p, seed);
    char line[16384];
    for (;;) {
        if (tty) { fputs("> ", stderr); fflush(stderr); }
        if (!fgets(line, sizeof line, stdin)) break;
        size_t ll = strcspn(line, "\r\n");
        if (line[ll] == 0 && ll == sizeof line - 1) { /* an overlong line: the rest is dropped */
            int ch;
            while ((ch = getchar()) != EOF && ch != '\n') {}
            fprintf(stderr, "[warning: line cut at %zu bytes]\n", ll);
        }
        line[ll] = '\0';
        if (ll == 0) continue;
        if (strcmp(line, "/exit") == 0 || strcmp(line, "/quit") == 0) break;
        if (strcmp(line, "/stats") == 0) { stats(&c); continue; }
        if (strcmp(line, "/reset") == 0) { reset(&c); c.resets++; fprintf(stderr, "[reset: the cache is empty]\n"); continue; }
        if (turn(&c, line, ll, on_full_reset, max_new, &smp, logits)) goto done;
    }
    if (tty) fputc('\n', stderr);
    status = 0;
done:
    free(logits);
    free(c.seq);
    free(c.turn_at);
    chat_engine_close(&c.e);
    pdq_tokenizer_free(tok);
    return status;
}
