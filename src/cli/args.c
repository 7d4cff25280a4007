#include "args.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void args_init(pdq_args *a, const char *cmd, int argc, char **argv) {
    memset(a, 0, sizeof *a);
    a->cmd = cmd;
    a->argv = argv;
    a->argc = argc;
    a->err = stderr;
    if (argc > ARGS_MAX) {
        fprintf(a->err, "pdq %s: %d arguments given, at most %d are accepted\n", cmd, argc, ARGS_MAX);
        a->bad = 1;
        a->argc = ARGS_MAX;
    }
}

/* Notes flag as one this command reads; returns 1 the first time (errors are reported once even
 * when two parts of a command read the same flag). */
static int remember(pdq_args *a, const char *flag) {
    for (int i = 0; i < a->n_known; i++)
        if (strcmp(a->known[i], flag) == 0) return 0;
    if (a->n_known < ARGS_MAX_KNOWN) a->known[a->n_known++] = flag;
    return 1;
}

void args_error(pdq_args *a, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(a->err, "pdq %s: ", a->cmd);
    vfprintf(a->err, fmt, ap);
    fputc('\n', a->err);
    va_end(ap);
    a->bad = 1;
}

/* "--name": a value like "-5", "--" or "-- and then" is not an option */
static int looks_like_option(const char *s) { return s[0] == '-' && s[1] == '-' && isalpha((unsigned char)s[2]); }

/* Matches argv[i] against flag; returns the value (from "=v" or the next argv) or NULL. */
static const char *match(pdq_args *a, int i, const char *flag, int *consumed, int report) {
    size_t n = strlen(flag);
    const char *s = a->argv[i];
    if (strncmp(s, flag, n) != 0) return NULL;
    if (s[n] == '=') { *consumed = 1; return s + n + 1; }
    if (s[n] != '\0') return NULL;
    a->used[i] = 1;
    if (i + 1 < a->argc && !looks_like_option(a->argv[i + 1])) { *consumed = 2; return a->argv[i + 1]; }
    if (report) {
        if (i + 1 < a->argc)
            args_error(a, "%s needs a value, got the option '%s' (write %s=VALUE for a value starting with --)",
                       flag, a->argv[i + 1], flag);
        else
            args_error(a, "%s needs a value", flag);
    }
    a->bad = 1;
    return NULL;
}

const char *args_str(pdq_args *a, const char *flag) {
    int first = remember(a, flag), n = 0;
    const char *v = NULL;
    for (int i = 0; i < a->argc; i++) {
        int c = 0;
        const char *m = match(a, i, flag, &c, first);
        if (m) {
            if (n++ && first) args_error(a, "%s given more than once ('%s' and '%s')", flag, v, m);
            v = m;
            for (int k = 0; k < c; k++) a->used[i + k] = 1;
            i += c - 1;
        }
    }
    return v;
}

int args_all(pdq_args *a, const char *flag, const char **out, int max) {
    int first = remember(a, flag), n = 0;
    for (int i = 0; i < a->argc; i++) {
        int c = 0;
        const char *m = match(a, i, flag, &c, first);
        if (m) {
            if (n < max) out[n] = m;
            n++;
            for (int k = 0; k < c; k++) a->used[i + k] = 1;
            i += c - 1;
        }
    }
    if (n > max) {
        if (first) args_error(a, "%s given %d times, at most %d", flag, n, max);
        n = max;
    }
    return n;
}

int args_flag(pdq_args *a, const char *flag) {
    int found = 0;
    remember(a, flag);
    for (int i = 0; i < a->argc; i++)
        if (strcmp(a->argv[i], flag) == 0) { a->used[i] = 1; found = 1; }
    return found;
}

long args_int_range(pdq_args *a, const char *flag, long def, long lo, long hi) {
    const char *s = args_str(a, flag);
    if (!s) return def;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    /* whole string: no empty value, no blanks or trailing text ("12abc"), no out-of-range wrap */
    if (errno || end == s || *end || isspace((unsigned char)s[0]) || v < lo || v > hi) {
        args_error(a, "%s must be an integer in [%ld, %ld], got '%s'", flag, lo, hi, s);
        return def;
    }
    return v;
}

long args_int(pdq_args *a, const char *flag, long def) { return args_int_range(a, flag, def, INT_MIN, INT_MAX); }

static void describe_range(char *buf, size_t n, double lo, double hi, int open) {
    if (lo == -HUGE_VAL && hi == HUGE_VAL) snprintf(buf, n, "a finite number");
    else if (hi == HUGE_VAL) snprintf(buf, n, "a number %s %g", open & ARGS_LO_OPEN ? ">" : ">=", lo);
    else if (lo == -HUGE_VAL) snprintf(buf, n, "a number %s %g", open & ARGS_HI_OPEN ? "<" : "<=", hi);
    else snprintf(buf, n, "a number in %c%g, %g%c", open & ARGS_LO_OPEN ? '(' : '[', lo, hi, open & ARGS_HI_OPEN ? ')' : ']');
}

double args_real(pdq_args *a, const char *flag, double def, double lo, double hi, int open) {
    const char *s = args_str(a, flag);
    if (!s) return def;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    /* ERANGE on underflow (1e-400) is a tiny number, not garbage; overflow gives inf, rejected below */
    int ok = end != s && !*end && !isspace((unsigned char)s[0]) && isfinite(v) && !(errno && errno != ERANGE);
    ok = ok && (open & ARGS_LO_OPEN ? v > lo : v >= lo) && (open & ARGS_HI_OPEN ? v < hi : v <= hi);
    if (!ok) {
        char r[96];
        describe_range(r, sizeof r, lo, hi, open);
        args_error(a, "%s must be %s, got '%s'", flag, r, s);
        return def;
    }
    return v;
}

double args_double(pdq_args *a, const char *flag, double def) {
    return args_real(a, flag, def, -HUGE_VAL, HUGE_VAL, ARGS_CLOSED);
}

const char *args_required(pdq_args *a, const char *flag) {
    const char *v = args_str(a, flag);
    if (v) return v;
    size_t n = strlen(flag);
    for (int i = 0; i < a->argc; i++) /* given without a value: already reported as such */
        if (strncmp(a->argv[i], flag, n) == 0 && (a->argv[i][n] == '\0' || a->argv[i][n] == '=')) return NULL;
    args_error(a, "%s is required", flag);
    return NULL;
}

void args_one_of(pdq_args *a, const char *f1, const char *v1, const char *f2, const char *v2) {
    if (!v1 && !v2) args_error(a, "one of %s or %s is required", f1, f2);
    else if (v1 && v2) args_error(a, "%s and %s exclude each other: give one", f1, f2);
}

int args_threads(pdq_args *a) { return (int)args_int_range(a, "--threads", 0, 0, ARGS_THREADS_LIMIT); }

const char *args_pos(pdq_args *a, int idx) {
    int k = 0;
    for (int i = 0; i < a->argc; i++) {
        if (a->used[i] || looks_like_option(a->argv[i])) continue;
        if (k++ == idx) { a->used[i] = 1; return a->argv[i]; }
    }
    return NULL;
}

/* Edit distance of two short strings (longer ones: a large number). */
static int distance(const char *s, size_t ns, const char *t) {
    size_t nt = strlen(t);
    if (ns > 63 || nt > 63) return 99;
    int row[64];
    for (size_t j = 0; j <= nt; j++) row[j] = (int)j;
    for (size_t i = 1; i <= ns; i++) {
        int diag = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= nt; j++) {
            int up = row[j], best = diag + (s[i - 1] != t[j - 1]);
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            diag = up;
            row[j] = best;
        }
    }
    return row[nt];
}

const char *args_suggest(const char *word, const char *const *cands, int n) {
    size_t len = strcspn(word, "=");
    const char *best = NULL;
    int bd = 3; /* suggest only near misses: --max_seq, --maxseq, --temprature */
    for (int i = 0; i < n; i++) {
        int d = distance(word, len, cands[i]);
        if (d < bd) { bd = d; best = cands[i]; }
    }
    return best;
}

static const char *nearest(const pdq_args *a, const char *arg) { return args_suggest(arg, a->known, a->n_known); }

int args_finish(pdq_args *a) {
    int bad = a->bad;
    for (int i = 0; i < a->argc; i++) {
        if (a->used[i]) continue;
        const char *s = a->argv[i];
        if (looks_like_option(s)) {
            const char *near = nearest(a, s);
            if (near) fprintf(a->err, "pdq %s: unknown option '%s' (did you mean %s?)\n", a->cmd, s, near);
            else fprintf(a->err, "pdq %s: unknown option '%s'\n", a->cmd, s);
            /* its value, if any, is part of the same mistake */
            if (!strchr(s, '=') && i + 1 < a->argc && !a->used[i + 1] && !looks_like_option(a->argv[i + 1])) i++;
        } else {
            fprintf(a->err, "pdq %s: unexpected argument '%s'\n", a->cmd, s);
        }
        bad = 1;
    }
    if (bad) fprintf(a->err, "pdq %s: see 'pdq %s --help' for the options\n", a->cmd, a->cmd);
    return bad;
}
