/* libFuzzer target: the command-line parser (src/cli/args.c) on arbitrary argument vectors. The
 * input is split at NUL bytes into arguments; a fixed set of flags is read the way the commands
 * read them. Invariants: no crash or UB; a value returned by a range-checked read is within its
 * range and finite; every argument is either consumed or reported (args_finish fails). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.c"

static FILE *g_null;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    g_null = fopen("/dev/null", "w"); /* the parser's messages, not libFuzzer's or the sanitizers' */
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 4096) return 0;
    char *buf = malloc(size + 1);
    char *argv[257];
    if (!buf) return 0;
    memcpy(buf, data, size);
    buf[size] = '\0';
    int argc = 0;
    for (size_t i = 0, start = 0; i <= size && argc < 256; i++)
        if (buf[i] == '\0') {
            argv[argc++] = buf + start;
            start = i + 1;
        }
    argv[argc] = NULL;
    pdq_args a;
    args_init(&a, "fuzz", argc, argv);
    if (g_null) a.err = g_null;
    const char *model = args_str(&a, "--model");
    const char *rows[4];
    int n_rows = args_all(&a, "--ids", rows, 4);
    long seq = args_int_range(&a, "--max-seq", 7, 2, ARGS_MAX_SEQ_LIMIT);
    long any = args_int(&a, "--n", 0);
    double p = args_real(&a, "--top-p", 0.5, 0, 1, ARGS_LO_OPEN);
    double x = args_double(&a, "--x", 0);
    int threads = args_threads(&a), json = args_flag(&a, "--json");
    (void)args_required(&a, "--out");
    args_one_of(&a, "--prompt", args_str(&a, "--prompt"), "--ids", n_rows ? rows[0] : NULL);
    const char *pos = args_pos(&a, 0);
    int bad = args_finish(&a);
    if (!(seq == 7 || (seq >= 2 && seq <= ARGS_MAX_SEQ_LIMIT))) abort();
    if (any < INT_MIN || any > INT_MAX) abort();
    if (!(p == 0.5 || (p > 0 && p <= 1)) || !isfinite(x)) abort();
    if (threads < 0 || threads > ARGS_THREADS_LIMIT || n_rows > 4 || json < 0) abort();
    /* nothing slips through: an argument neither consumed nor reported would leave bad == 0 */
    if (!bad) {
        for (int i = 0; i < a.argc; i++)
            if (!a.used[i]) abort();
        if (!model && argc > 0 && strcmp(argv[0], "--model") == 0) abort();
    }
    (void)pos;
    free(buf);
    return 0;
}
