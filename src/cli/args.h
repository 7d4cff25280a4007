/* Strict flag parsing for subcommands: `--flag value`, `--flag=value`, boolean `--flag`,
 * repeated flags. Every argument must be consumed, so typos are errors, not silently ignored.
 * Numbers are parsed whole-string, range-checked and (floats) finite; every error names the
 * command, the option, the value and the allowed range, and makes args_finish fail (exit 2). */
#ifndef PDQ_CLI_ARGS_H
#define PDQ_CLI_ARGS_H

#include <stdarg.h>
#include <stdio.h>

/* More arguments than this is an error (named), never a silent truncation. */
#define ARGS_MAX 4096
#define ARGS_MAX_KNOWN 160

/* Exit status of a command-line (usage) error; 1 is for failures of the work itself. */
#define ARGS_USAGE_EXIT 2

/* Bounds of args_real: which ends are open. */
#define ARGS_CLOSED 0
#define ARGS_LO_OPEN 1
#define ARGS_HI_OPEN 2

typedef struct {
    int argc;
    char **argv;
    unsigned char used[ARGS_MAX];
    int bad;            /* a value failed to parse; message already printed */
    const char *cmd;    /* subcommand name for messages */
    const char *known[ARGS_MAX_KNOWN]; /* flags asked for: "did you mean" for unknown ones */
    int n_known;
    FILE *err;          /* where the messages go: stderr (tests and the fuzzer redirect it) */
} pdq_args;

void args_init(pdq_args *a, const char *cmd, int argc, char **argv);
/* Value of --flag, or NULL. Given twice is an error (use args_all for repeatable flags). A value
 * that looks like an option ("--x") is an error too: write --flag=--x for such a value. */
const char *args_str(pdq_args *a, const char *flag);
/* All values of a repeated flag, in order; returns count (at most max; more is an error). */
int args_all(pdq_args *a, const char *flag, const char **out, int max);
int args_flag(pdq_args *a, const char *flag); /* boolean presence */
/* An integer that fits in int. */
long args_int(pdq_args *a, const char *flag, long def);
/* An integer in [lo, hi]. */
long args_int_range(pdq_args *a, const char *flag, long def, long lo, long hi);
/* A finite number. */
double args_double(pdq_args *a, const char *flag, double def);
/* A finite number within lo..hi (-HUGE_VAL / HUGE_VAL: unbounded), ends open per `open`. */
double args_real(pdq_args *a, const char *flag, double def, double lo, double hi, int open);
/* Value of a flag that must be given: a missing one is named ("--model is required"). */
const char *args_required(pdq_args *a, const char *flag);
/* Exactly one of two alternatives (either value may be NULL); names both otherwise. */
void args_one_of(pdq_args *a, const char *f1, const char *v1, const char *f2, const char *v2);
/* Records a usage error: prints "pdq CMD: <message>" and makes args_finish fail. */
void args_error(pdq_args *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Positional (non-flag) argument number i, or NULL. Only valid after all flags are read. */
const char *args_pos(pdq_args *a, int i);
/* Prints unknown/unused arguments (with the nearest known flag) and a pointer to --help; returns
 * non-zero if any, or if any error was recorded. */
int args_finish(pdq_args *a);
/* The candidate within edit distance 2 of word (up to a "="), or NULL: "did you mean". */
const char *args_suggest(const char *word, const char *const *cands, int n);
/* --threads N: 0 = all cores (the default), else 1..1024. */
int args_threads(pdq_args *a);

/* Limits shared by the commands (README, tests/README.md). */
#define ARGS_MAX_SEQ_LIMIT 32768   /* static graph length: --max-seq in [2, this] */
#define ARGS_MAX_SEQ_DEFAULT 256   /* one default everywhere (quantize, export, verify, ...) */
#define ARGS_THREADS_LIMIT 1024
#define CLI_MAX_NEW_LIMIT 65536   /* --max-new */
#define CLI_PPL_LEN_LIMIT 1048576 /* pdq ppl --max-len / --stride (the model's own limit applies too) */

#endif
