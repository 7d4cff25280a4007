#include "args.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void args_init(pdq_args *a, const char *cmd, int argc, char **argv) {
    memset(a, 0, sizeof *a);
    a->cmd = cmd;
    a->argc = argc < 512 ? argc : 512;
    a->argv = argv;
}

/* Matches argv[i] against flag; returns the value (from "=v" or the next argv) or NULL. */
static const char *match(pdq_args *a, int i, const char *flag, int *consumed) {
    size_t n = strlen(flag);
    const char *s = a->argv[i];
    if (strncmp(s, flag, n) != 0) return NULL;
    if (s[n] == '=') { *consumed = 1; return s + n + 1; }
    if (s[n] != '\0') return NULL;
    if (i + 1 < a->argc) { *consumed = 2; return a->argv[i + 1]; }
    fprintf(stderr, "pdq %s: %s needs a value\n", a->cmd, flag);
    a->bad = 1;
    a->used[i] = 1;
    return NULL;
}

const char *args_str(pdq_args *a, const char *flag) {
    const char *v = NULL;
    for (int i = 0; i < a->argc; i++) {
        int c = 0;
        const char *m = match(a, i, flag, &c);
        if (m) {
            v = m;
            for (int k = 0; k < c; k++) a->used[i + k] = 1;
            i += c - 1;
        }
    }
    return v;
}

int args_all(pdq_args *a, const char *flag, const char **out, int max) {
    int n = 0;
    for (int i = 0; i < a->argc; i++) {
        int c = 0;
        const char *m = match(a, i, flag, &c);
        if (m) {
            if (n < max) out[n] = m;
            n++;
            for (int k = 0; k < c; k++) a->used[i + k] = 1;
            i += c - 1;
        }
    }
    if (n > max) {
        fprintf(stderr, "pdq %s: %s given more than %d times\n", a->cmd, flag, max);
        a->bad = 1;
        n = max;
    }
    return n;
}

int args_flag(pdq_args *a, const char *flag) {
    int found = 0;
    for (int i = 0; i < a->argc; i++)
        if (strcmp(a->argv[i], flag) == 0) { a->used[i] = 1; found = 1; }
    return found;
}

long args_int(pdq_args *a, const char *flag, long def) {
    const char *s = args_str(a, flag);
    if (!s) return def;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end) {
        fprintf(stderr, "pdq %s: %s expects an integer, got '%s'\n", a->cmd, flag, s);
        a->bad = 1;
        return def;
    }
    return v;
}

double args_double(pdq_args *a, const char *flag, double def) {
    const char *s = args_str(a, flag);
    if (!s) return def;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end) {
        fprintf(stderr, "pdq %s: %s expects a number, got '%s'\n", a->cmd, flag, s);
        a->bad = 1;
        return def;
    }
    return v;
}

const char *args_pos(pdq_args *a, int idx) {
    int k = 0;
    for (int i = 0; i < a->argc; i++) {
        if (a->used[i] || (a->argv[i][0] == '-' && a->argv[i][1] == '-')) continue;
        if (k++ == idx) { a->used[i] = 1; return a->argv[i]; }
    }
    return NULL;
}

int args_finish(pdq_args *a) {
    int bad = a->bad;
    for (int i = 0; i < a->argc; i++)
        if (!a->used[i]) {
            fprintf(stderr, "pdq %s: unknown or unexpected argument '%s'\n", a->cmd, a->argv[i]);
            bad = 1;
        }
    return bad;
}
