/* Decoding: ids -> token strings -> decoder chain -> optional clean-up of tokenization spaces,
 * as transformers.js / HF tokenizers do. Invalid UTF-8 from byte tokens becomes U+FFFD. */
#include <stdlib.h>
#include <string.h>

#include "tokenizer_internal.h"

typedef struct { tk_buf s; int added; } item;
typedef struct { item *p; size_t n; } items;

static void items_free(items *v) {
    for (size_t i = 0; i < v->n; i++) free(v->p[i].s.p);
    free(v->p);
    v->p = NULL;
    v->n = 0;
}

static int replace_all(tk_buf *s, const char *from, const char *to) {
    size_t fl = strlen(from), tl = strlen(to);
    if (!fl || s->n < fl) return 0;
    tk_buf r = {0};
    for (size_t i = 0; i < s->n;) {
        if (i + fl <= s->n && memcmp(s->p + i, from, fl) == 0) {
            if (tk_buf_put(&r, to, tl)) goto fail;
            i += fl;
        } else {
            if (tk_buf_put(&r, s->p + i, 1)) goto fail;
            i++;
        }
    }
    if (tk_buf_put(&r, "", 0)) goto fail;
    free(s->p);
    *s = r;
    return 0;
fail:
    free(r.p);
    return -1;
}

static int byte_token(const tk_buf *s) {
    static const char hex[] = "0123456789ABCDEFabcdef";
    if (s->n != 6 || memcmp(s->p, "<0x", 3) != 0 || s->p[5] != '>') return -1;
    const char *h = strchr(hex, s->p[3]), *l = strchr(hex, s->p[4]);
    if (!h || !l || !s->p[3] || !s->p[4]) return -1;
    int hv = (int)(h - hex), lv = (int)(l - hex);
    return (hv > 15 ? hv - 6 : hv) * 16 + (lv > 15 ? lv - 6 : lv);
}

/* Replaces runs of items selected by `pick` (byte tokens, or non-added tokens) by one item
 * holding their bytes decoded as UTF-8 with replacement. */
static int group_bytes(items *v, int bytelevel) {
    items out = {calloc(v->n + 1, sizeof(item)), 0};
    if (!out.p) return -1;
    tk_buf run = {0};
    int in_run = 0, rc = 0;
    for (size_t i = 0; i <= v->n && !rc; i++) {
        int b = -1, take = 0;
        if (i < v->n) {
            if (bytelevel) take = !v->p[i].added;
            else take = (b = byte_token(&v->p[i].s)) >= 0;
        }
        if (take) {
            unsigned char c = (unsigned char)b;
            rc = bytelevel ? tk_buf_put(&run, v->p[i].s.p, v->p[i].s.n) : tk_buf_put(&run, &c, 1);
            in_run = 1;
            continue;
        }
        if (in_run) {
            item *it = &out.p[out.n++];
            rc = tk_utf8_sanitize(&it->s, run.p, run.n) || tk_buf_put(&it->s, "", 0);
            run.n = 0;
            in_run = 0;
        }
        if (i < v->n && !rc) {
            out.p[out.n++] = v->p[i];
            v->p[i].s = (tk_buf){0};
        }
    }
    free(run.p);
    items_free(v);
    *v = out;
    return rc;
}

static int apply(const tk_dec *d, items *v) {
    switch (d->kind) {
    case TK_DEC_REPLACE:
        for (size_t i = 0; i < v->n; i++)
            if (replace_all(&v->p[i].s, d->a, d->b)) return -1;
        return 0;
    case TK_DEC_BYTEFALLBACK: return group_bytes(v, 0);
    case TK_DEC_BYTELEVEL: return group_bytes(v, 1);
    case TK_DEC_FUSE:
        for (size_t i = 1; i < v->n; i++) {
            if (tk_buf_put(&v->p[0].s, v->p[i].s.p, v->p[i].s.n)) return -1;
            free(v->p[i].s.p);
        }
        if (v->n > 1) v->n = 1;
        return 0;
    case TK_DEC_STRIP: {
        size_t cl = strlen(d->a);
        for (size_t i = 0; i < v->n && cl; i++) {
            tk_buf *s = &v->p[i].s;
            size_t a = 0, b = s->n;
            for (int k = 0; k < d->start && a + cl <= b && memcmp(s->p + a, d->a, cl) == 0; k++) a += cl;
            for (int k = 0; k < d->stop && b >= a + cl && memcmp(s->p + b - cl, d->a, cl) == 0; k++) b -= cl;
            memmove(s->p, s->p + a, b - a);
            s->n = b - a;
            if (s->p) s->p[s->n] = '\0';
        }
        return 0;
    }
    case TK_DEC_METASPACE:
        for (size_t i = 0; i < v->n; i++) {
            tk_buf *s = &v->p[i].s;
            if (replace_all(s, d->a, " ")) return -1;
            if (i == 0 && d->prepend && s->n && s->p[0] == ' ') {
                memmove(s->p, s->p + 1, s->n);
                s->n--;
            }
        }
        return 0;
    }
    return 0;
}

pdq_code pdq_tokenizer_decode(const pdq_tokenizer *t, const int32_t *ids, size_t n_ids, int skip_special,
                              char **text, pdq_status *st) {
    *text = NULL;
    items v = {calloc(n_ids + 1, sizeof(item)), 0};
    tk_buf out = {0};
    if (!v.p) return pdq_fail(st, PDQ_ERR_NOMEM, "decode: out of memory");
    for (size_t i = 0; i < n_ids; i++) {
        int32_t id = ids[i];
        if (id < 0 || id >= t->n_vocab || !t->tok[id]) {
            items_free(&v);
            return pdq_fail(st, PDQ_ERR_ARG, "decode: token id %d at position %zu is not in the vocabulary (size %d)",
                            (int)id, i, t->n_vocab);
        }
        if (skip_special && t->special[id]) continue;
        item *it = &v.p[v.n++];
        it->added = t->added[id];
        if (tk_buf_put(&it->s, t->tok[id], t->tok_len[id])) goto nomem;
    }
    for (int k = 0; k < t->n_dec; k++)
        if (apply(&t->dec[k], &v)) goto nomem;
    for (size_t i = 0; i < v.n; i++)
        if ((t->n_dec == 0 && i > 0 && tk_buf_put(&out, " ", 1)) || tk_buf_put(&out, v.p[i].s.p, v.p[i].s.n)) goto nomem;
    if (tk_buf_put(&out, "", 0)) goto nomem;
    if (t->cleanup) {
        static const char *const k_clean[][2] = {{" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"},
                                                  {" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
        for (size_t k = 0; k < sizeof k_clean / sizeof k_clean[0]; k++)
            if (replace_all(&out, k_clean[k][0], k_clean[k][1])) goto nomem;
    }
    items_free(&v);
    *text = out.p;
    return PDQ_OK;
nomem:
    items_free(&v);
    free(out.p);
    return pdq_fail(st, PDQ_ERR_NOMEM, "decode: out of memory");
}
