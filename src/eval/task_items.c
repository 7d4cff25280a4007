/* A task's items as requests, and the text rules of the harness's task files (strip, hellaswag's
 * preprocess). */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "task_items.h"

static int py_space(unsigned char c) { return c == ' ' || (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x1f); }

char *pdq_task_strip(const char *s, size_t n) {
    size_t a = 0;
    while (a < n && py_space((unsigned char)s[a])) a++;
    while (n > a && py_space((unsigned char)s[n - 1])) n--;
    char *o = malloc(n - a + 1);
    if (!o) return NULL;
    memcpy(o, s + a, n - a);
    o[n - a] = 0;
    return o;
}

/* Replaces every `from` by `to` (Python's str.replace), in a new string. */
static char *replace(const char *s, const char *from, const char *to) {
    size_t nf = strlen(from), nt = strlen(to), hits = 0;
    for (const char *p = strstr(s, from); p; p = strstr(p + nf, from)) hits++;
    char *o = malloc(strlen(s) + hits * nt + 1), *w = o;
    if (!o) return NULL;
    for (const char *p = s, *q; ; p = q + nf) {
        q = strstr(p, from);
        if (!q) { strcpy(w, p); break; }
        memcpy(w, p, (size_t)(q - p));
        w += q - p;
        memcpy(w, to, nt);
        w += nt;
    }
    return o;
}

char *pdq_task_hellaswag_preprocess(const char *s) {
    char *a = pdq_task_strip(s, strlen(s));
    char *b = a ? replace(a, " [title]", ". ") : NULL;
    free(a);
    if (!b) return NULL;
    /* re.sub("\\[.*?\\]", "", text): each '[' up to the nearest ']' (none: kept) */
    char *w = b;
    for (const char *p = b; *p;) {
        const char *close = *p == '[' ? strchr(p, ']') : NULL;
        if (close) p = close + 1;
        else *w++ = *p++;
    }
    *w = 0;
    char *c = replace(b, "  ", " ");
    free(b);
    return c;
}

pdq_code task_fail(pdq_status *st, pdq_code code, const char *file, long line, const char *fmt, ...) {
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return pdq_fail(st, code, "%s:%ld: %s", file, line, msg);
}

static pdq_task_item *next_item(pdq_task *t, int n, pdq_status *st) {
    if (t->n_items == t->cap) {
        int cap = t->cap ? t->cap * 2 : 64;
        pdq_task_item *it = realloc(t->items, (size_t)cap * sizeof *it);
        if (!it) return pdq_fail(st, PDQ_ERR_NOMEM, "out of memory for %d items", cap), NULL;
        t->items = it;
        t->cap = cap;
    }
    pdq_task_item *it = &t->items[t->n_items];
    memset(it, 0, sizeof *it);
    it->ctx = calloc((size_t)n, sizeof *it->ctx);
    it->cont = calloc((size_t)n, sizeof *it->cont);
    it->choice = calloc((size_t)n, sizeof *it->choice);
    it->n = n;
    it->subject = -1;
    t->n_items++; /* counted at once so that pdq_task_free frees it on any later failure */
    if (!it->ctx || !it->cont || !it->choice) return pdq_fail(st, PDQ_ERR_NOMEM, "out of memory for an item"), NULL;
    return it;
}

static char *concat(const char *a, const char *b) {
    size_t na = strlen(a), nb = strlen(b);
    char *o = malloc(na + nb + 1);
    if (!o) return NULL;
    memcpy(o, a, na);
    memcpy(o + na, b, nb + 1);
    return o;
}

pdq_code task_add_choice(pdq_task *t, const char *file, long line, const char *ctx, const char *const *choices,
                         int n, int gold, int subject, pdq_status *st) {
    if (n < 1) return task_fail(st, PDQ_ERR_FORMAT, file, line, "no choices");
    if (gold < 0 || gold >= n) return task_fail(st, PDQ_ERR_FORMAT, file, line, "gold %d is not one of the %d choices", gold, n);
    pdq_task_item *it = next_item(t, n, st);
    if (!it) return st->code;
    it->gold = gold;
    it->subject = subject;
    it->line = line;
    for (int j = 0; j < n; j++) {
        it->ctx[j] = strdup(ctx);
        it->cont[j] = concat(" ", choices[j]); /* the harness's target delimiter */
        it->choice[j] = strdup(choices[j]);
        if (!it->ctx[j] || !it->cont[j] || !it->choice[j]) return pdq_fail(st, PDQ_ERR_NOMEM, "out of memory for an item");
    }
    return PDQ_OK;
}

pdq_code task_add_partial(pdq_task *t, const char *file, long line, const char *const *ctxs, int n,
                          const char *cont, int gold, pdq_status *st) {
    if (gold < 0 || gold >= n) return task_fail(st, PDQ_ERR_FORMAT, file, line, "gold %d is not one of the %d options", gold, n);
    pdq_task_item *it = next_item(t, n, st);
    if (!it) return st->code;
    it->gold = gold;
    it->line = line;
    char *stripped = pdq_task_strip(cont, strlen(cont));
    for (int j = 0; j < n; j++) {
        it->ctx[j] = strdup(ctxs[j]);
        it->cont[j] = stripped ? concat(" ", stripped) : NULL;
        it->choice[j] = strdup(ctxs[j]);
        if (!it->ctx[j] || !it->cont[j] || !it->choice[j]) { free(stripped); return pdq_fail(st, PDQ_ERR_NOMEM, "out of memory for an item"); }
    }
    free(stripped);
    return PDQ_OK;
}

pdq_code task_add_greedy(pdq_task *t, long line, const char *ctx, const char *cont, pdq_status *st) {
    pdq_task_item *it = next_item(t, 1, st);
    if (!it) return st->code;
    it->line = line;
    it->ctx[0] = strdup(ctx);
    it->cont[0] = strdup(cont);
    it->choice[0] = strdup(cont);
    if (!it->ctx[0] || !it->cont[0] || !it->choice[0]) return pdq_fail(st, PDQ_ERR_NOMEM, "out of memory for an item");
    return PDQ_OK;
}

void task_item_free(pdq_task_item *it) {
    for (int j = 0; j < it->n; j++) {
        if (it->ctx) free(it->ctx[j]);
        if (it->cont) free(it->cont[j]);
        if (it->choice) free(it->choice[j]);
    }
    free(it->ctx);
    free(it->cont);
    free(it->choice);
}

void pdq_task_free(pdq_task *t) {
    if (!t) return;
    for (int i = 0; i < t->n_items; i++) task_item_free(&t->items[i]);
    free(t->items);
    for (int s = 0; s < t->n_subjects; s++) free(t->subjects[s]);
    free(t->subjects);
    free(t);
}

char *task_capitalize(const char *s) {
    char *o = strdup(s);
    if (!o) return NULL;
    for (size_t i = 0; o[i]; i++) {
        unsigned char c = (unsigned char)o[i];
        if (c < 0x80) o[i] = (char)(i == 0 ? toupper(c) : tolower(c));
    }
    return o;
}

char *task_strcat(const char *a, const char *b) { return concat(a, b); }

char *task_strcat3(const char *a, const char *b, const char *c) {
    char *ab = concat(a, b);
    char *o = ab ? concat(ab, c) : NULL;
    free(ab);
    return o;
}
