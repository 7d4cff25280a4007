/* Encoding: split on added tokens, normalize each section, pre-tokenize, BPE, post-process.
 * Section handling follows transformers.js (the fixtures' reference): every text section between
 * added tokens is normalized on its own, so a Prepend normalizer applies to each of them. */
#include <stdlib.h>
#include <string.h>

#include "tokenizer_internal.h"

typedef struct { const char *p; size_t n; int32_t added; /* id or -1 */ const tk_added *tok; } section;
typedef struct { section *p; size_t n, cap; } sections;

typedef struct {
    const pdq_tokenizer *t;
    pcre2_match_data *md;
    tk_cache *cache;
    tk_ids ids;
} enc;

static int sec_push(sections *v, section s) {
    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 16;
        section *p = realloc(v->p, cap * sizeof *p);
        if (!p) return -1;
        v->p = p;
        v->cap = cap;
    }
    v->p[v->n++] = s;
    return 0;
}

/* Longest added token (of the class `normalized`) starting at s[0..n); the first listed wins a tie. */
static const tk_added *match_added(const pdq_tokenizer *t, const char *s, size_t n, int normalized) {
    const tk_added *best = NULL;
    unsigned char c0 = (unsigned char)s[0];
    for (uint32_t k = t->add_from[c0]; k < t->add_from[c0 + 1]; k++) {
        const tk_added *a = &t->add[t->add_order[k]];
        int cls = a->normalized && t->n_norm > 0;
        if (cls != normalized || a->len > n || (best && a->len <= best->len)) continue;
        if (a->content[0] == s[0] && memcmp(a->content, s, a->len) == 0) best = a;
    }
    return best;
}

static size_t trim_end(const char *s, size_t n) {
    while (n > 0) {
        size_t k = n - 1;
        while (k > 0 && ((unsigned char)s[k] & 0xC0) == 0x80) k--;
        uint32_t cp;
        tk_utf8_decode1(s + k, n - k, &cp);
        if (!tk_is_js_space(cp)) break;
        n = k;
    }
    return n;
}

static size_t trim_start(const char *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        uint32_t cp;
        int l = tk_utf8_decode1(s + i, n - i, &cp);
        if (!tk_is_js_space(cp)) break;
        i += (size_t)l;
    }
    return i;
}

/* Splits s into text and added-token sections, then applies lstrip/rstrip to the neighbours. */
static int split_added(const pdq_tokenizer *t, const char *s, size_t n, int normalized, sections *out) {
    out->n = 0;
    size_t start = 0;
    int any = 0;
    for (int i = 0; i < t->n_add; i++) any |= (t->add[i].normalized && t->n_norm > 0) == normalized;
    for (size_t i = 0; any && i < n;) {
        const tk_added *a = match_added(t, s + i, n - i, normalized);
        if (!a) { i++; continue; }
        if (i > start && sec_push(out, (section){s + start, i - start, -1, NULL})) return -1;
        if (sec_push(out, (section){s + i, a->len, a->id, a})) return -1;
        i += a->len;
        start = i;
    }
    if (start < n && sec_push(out, (section){s + start, n - start, -1, NULL})) return -1;
    for (size_t i = 0; i < out->n; i++) {
        const tk_added *a = out->p[i].tok;
        if (!a) continue;
        if (a->lstrip && i > 0 && out->p[i - 1].added < 0) out->p[i - 1].n = trim_end(out->p[i - 1].p, out->p[i - 1].n);
        if (a->rstrip && i + 1 < out->n && out->p[i + 1].added < 0) {
            size_t k = trim_start(out->p[i + 1].p, out->p[i + 1].n);
            out->p[i + 1].p += k;
            out->p[i + 1].n -= k;
        }
    }
    return 0;
}

static int normalize(const pdq_tokenizer *t, const char *s, size_t n, tk_buf *out) {
    tk_buf a = {0}, b = {0};
    if (tk_buf_put(&a, s, n)) return -1;
    for (int k = 0; k < t->n_norm; k++) {
        const tk_norm *nm = &t->norm[k];
        b.n = 0;
        if (nm->kind == TK_NORM_PREPEND) {
            if (a.n && (tk_buf_put(&b, nm->a, strlen(nm->a)) || tk_buf_put(&b, a.p, a.n))) goto fail;
        } else if (nm->kind == TK_NORM_NFC) {
            if (tk_nfc(a.p, a.n, &b)) goto fail;
        } else {
            size_t pl = strlen(nm->a), cl = strlen(nm->b);
            size_t i = 0;
            for (;;) {
                const char *hit = memmem(a.p + i, a.n - i, nm->a, pl);
                size_t end = hit ? (size_t)(hit - a.p) : a.n;
                if (tk_buf_put(&b, a.p + i, end - i)) goto fail;
                if (!hit) break;
                if (tk_buf_put(&b, nm->b, cl)) goto fail;
                i = end + pl;
            }
        }
        if (tk_buf_put(&b, "", 0)) goto fail;
        tk_buf tmp = a;
        a = b;
        b = tmp;
    }
    free(b.p);
    out->n = 0;
    int rc = tk_buf_put(out, a.p ? a.p : "", a.n);
    free(a.p);
    return rc;
fail:
    free(a.p);
    free(b.p);
    return -1;
}

/* Pre-token pieces: byte ranges of an owned buffer. */
typedef struct { tk_buf buf; size_t *off, *len; size_t n, cap; } pieces;

static int piece_add(pieces *v, const char *s, size_t n) {
    if (n == 0) return 0;
    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 16;
        size_t *o = realloc(v->off, cap * sizeof *o);
        if (!o) return -1;
        v->off = o;
        size_t *l = realloc(v->len, cap * sizeof *l);
        if (!l) return -1;
        v->len = l;
        v->cap = cap;
    }
    v->off[v->n] = v->buf.n;
    v->len[v->n] = n;
    v->n++;
    return tk_buf_put(&v->buf, s, n);
}

static void pieces_free(pieces *v) {
    free(v->buf.p);
    free(v->off);
    free(v->len);
}

/* Regex split of one piece; `how` is a Split behaviour, or KEEP_MATCHES (ByteLevel's regex: the
 * text between matches is dropped). */
#define KEEP_MATCHES (-1)
static int re_split(enc *e, const pcre2_code *re, const char *s, size_t n, int how, pieces *out) {
    size_t pos = 0, prev = 0; /* prev: start of the piece not yet emitted */
    while (pos <= n) {
        int rc = pcre2_match(re, (PCRE2_SPTR)s, n, pos, PCRE2_NO_UTF_CHECK, e->md, NULL);
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0) return -1;
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(e->md);
        size_t ms = ov[0], me = ov[1];
        pos = me > ms ? me : me + (me < n ? (size_t)tk_utf8_len((unsigned char)s[me]) : 1);
        if (me == ms) continue; /* an empty match splits nothing */
        if (how == TK_SPLIT_MERGED_PREV) {
            if (piece_add(out, s + prev, me - prev)) return -1;
            prev = me;
            continue;
        }
        if (how != KEEP_MATCHES && piece_add(out, s + prev, ms - prev)) return -1;
        if (how == TK_SPLIT_MERGED_NEXT) {
            prev = ms;
            continue;
        }
        if ((how == TK_SPLIT_ISOLATED || how == KEEP_MATCHES) && piece_add(out, s + ms, me - ms)) return -1;
        prev = me;
    }
    if (how != KEEP_MATCHES && prev < n && piece_add(out, s + prev, n - prev)) return -1;
    return 0;
}

static int pre_step(enc *e, const tk_pre *pr, const char *s, size_t n, size_t section_index, pieces *out) {
    if (pr->kind == TK_PRE_SPLIT) return re_split(e, pr->re, s, n, (int)pr->behavior, out);
    if (pr->kind == TK_PRE_BYTELEVEL) {
        tk_buf b = {0};
        if (pr->add_prefix_space && !(n && s[0] == ' ')) {
            if (tk_buf_put(&b, " ", 1) || tk_buf_put(&b, s, n)) { free(b.p); return -1; }
            s = b.p;
            n = b.n;
        }
        int rc = pr->re ? re_split(e, pr->re, s, n, KEEP_MATCHES, out) : piece_add(out, s, n);
        free(b.p);
        return rc;
    }
    /* Metaspace: spaces -> replacement, optional prefix, split before each replacement. */
    tk_buf b = {0};
    size_t rl = strlen(pr->replacement);
    int rc = 0;
    if (pr->prepend == 1 || (pr->prepend == 2 && section_index == 0))
        if (!(n >= rl && memcmp(s, pr->replacement, rl) == 0) && !(n && s[0] == ' ')) rc |= tk_buf_put(&b, pr->replacement, rl);
    for (size_t i = 0; i < n && !rc; i++) rc |= s[i] == ' ' ? tk_buf_put(&b, pr->replacement, rl) : tk_buf_put(&b, s + i, 1);
    if (!rc && !pr->split) rc = piece_add(out, b.p, b.n);
    else if (!rc) {
        size_t st = 0;
        for (size_t i = 1; i + rl <= b.n && !rc; i++)
            if (memcmp(b.p + i, pr->replacement, rl) == 0) {
                rc = piece_add(out, b.p + st, i - st);
                st = i;
            }
        if (!rc) rc = piece_add(out, b.p + st, b.n - st);
    }
    free(b.p);
    return rc ? -1 : 0;
}

/* Pre-tokenizes and BPE-encodes one text subsection. */
static int encode_text(enc *e, const char *s, size_t n, size_t section_index) {
    const pdq_tokenizer *t = e->t;
    pieces cur = {0}, nxt = {0};
    int rc = piece_add(&cur, s, n);
    for (int k = 0; k < t->n_pre && !rc; k++) {
        nxt.n = 0;
        nxt.buf.n = 0;
        for (size_t i = 0; i < cur.n && !rc; i++)
            rc = pre_step(e, &t->pre[k], cur.buf.p + cur.off[i], cur.len[i], section_index, &nxt);
        pieces tmp = cur;
        cur = nxt;
        nxt = tmp;
    }
    size_t first = e->ids.n;
    for (size_t i = 0; i < cur.n && !rc; i++) rc = tk_bpe_word(t, cur.buf.p + cur.off[i], cur.len[i], &e->ids, e->cache);
    if (!rc && t->fuse_unk && t->unk_id >= 0) { /* consecutive unk -> one */
        size_t w = first;
        for (size_t i = first; i < e->ids.n; i++)
            if (!(e->ids.p[i] == t->unk_id && w > first && e->ids.p[w - 1] == t->unk_id)) e->ids.p[w++] = e->ids.p[i];
        e->ids.n = w;
    }
    pieces_free(&cur);
    pieces_free(&nxt);
    return rc;
}

pdq_code pdq_tokenizer_encode(const pdq_tokenizer *t, const char *text, size_t len, int add_special,
                              int32_t **ids, size_t *n_ids, pdq_status *st) {
    *ids = NULL;
    *n_ids = 0;
    if (len > (size_t)INT32_MAX / 2) /* symbol indices of one pre-token are int32 */
        return pdq_fail(st, PDQ_ERR_LIMIT, "tokenize: text of %zu bytes exceeds the limit of %d bytes", len, INT32_MAX / 2);
    size_t valid = tk_utf8_valid_prefix(text, len);
    if (valid != len) return pdq_fail(st, PDQ_ERR_ARG, "tokenize: text is not valid UTF-8 (byte %zu)", valid);
    enc e = {t, pcre2_match_data_create(1, NULL), tk_cache_new(), {0}};
    sections top = {0}, sub = {0};
    tk_buf norm = {0};
    int rc = (!e.md || !e.cache) ? -1 : 0;
    if (!rc && add_special)
        for (int i = 0; i < t->n_prefix && !rc; i++) rc = tk_ids_push(&e.ids, t->prefix[i]);
    if (!rc) rc = split_added(t, text, len, 0, &top);
    for (size_t i = 0; i < top.n && !rc; i++) {
        const section *sc = &top.p[i];
        if (sc->added >= 0) { rc = tk_ids_push(&e.ids, sc->added); continue; }
        if (sc->n == 0) continue;
        if ((rc = normalize(t, sc->p, sc->n, &norm))) break;
        if (norm.n == 0) continue;
        if ((rc = split_added(t, norm.p, norm.n, 1, &sub))) break;
        for (size_t j = 0; j < sub.n && !rc; j++) {
            if (sub.p[j].added >= 0) rc = tk_ids_push(&e.ids, sub.p[j].added);
            else if (sub.p[j].n) rc = encode_text(&e, sub.p[j].p, sub.p[j].n, i);
        }
    }
    if (!rc && add_special)
        for (int i = 0; i < t->n_suffix && !rc; i++) rc = tk_ids_push(&e.ids, t->suffix[i]);
    if (!rc && !e.ids.p) rc = tk_ids_push(&e.ids, 0), e.ids.n = 0;
    free(top.p);
    free(sub.p);
    free(norm.p);
    tk_cache_free(e.cache);
    pcre2_match_data_free(e.md);
    if (rc) {
        free(e.ids.p);
        return pdq_fail(st, PDQ_ERR_NOMEM, "tokenize: out of memory (or regex failure) on %zu bytes", len);
    }
    *ids = e.ids.p;
    *n_ids = e.ids.n;
    return PDQ_OK;
}
