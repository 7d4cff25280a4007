/* Minimal flag parsing for subcommands: `--flag value`, `--flag=value`, boolean `--flag`,
 * repeated flags. Every argument must be consumed, so typos are errors, not silently ignored. */
#ifndef PDQ_CLI_ARGS_H
#define PDQ_CLI_ARGS_H

typedef struct {
    int argc;
    char **argv;
    unsigned char used[512];
    int bad;            /* a value failed to parse; message already printed */
    const char *cmd;    /* subcommand name for messages */
} pdq_args;

void args_init(pdq_args *a, const char *cmd, int argc, char **argv);
/* Value of --flag (last occurrence), or NULL. */
const char *args_str(pdq_args *a, const char *flag);
/* All values of a repeated flag, in order; returns count (at most max). */
int args_all(pdq_args *a, const char *flag, const char **out, int max);
int args_flag(pdq_args *a, const char *flag); /* boolean presence */
long args_int(pdq_args *a, const char *flag, long def);
double args_double(pdq_args *a, const char *flag, double def);
/* Positional (non-flag) argument number i, or NULL. Only valid after all flags are read. */
const char *args_pos(pdq_args *a, int i);
/* Prints unknown/unused arguments and returns non-zero if any, or if a value was bad. */
int args_finish(pdq_args *a);

#endif
