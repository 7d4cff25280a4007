/* Tokenizer support: growable buffers, hash maps, UTF-8 and the GPT-2 byte<->unicode table. */
#include <stdlib.h>
#include <string.h>

#include "tokenizer_internal.h"

int tk_buf_put(tk_buf *b, const void *s, size_t n) {
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->n + n + 1) cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) return -1;
        b->p = p;
        b->cap = cap;
    }
    if (n) memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
    return 0;
}

int tk_ids_push(tk_ids *v, int32_t x) {
    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 64;
        int32_t *p = realloc(v->p, cap * sizeof *p);
        if (!p) return -1;
        v->p = p;
        v->cap = cap;
    }
    v->p[v->n++] = x;
    return 0;
}

/* FNV-1a; good enough for token strings. */
static uint32_t hash_bytes(const char *s, uint32_t n) {
    uint32_t h = 2166136261u;
    for (uint32_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h;
}

static int strmap_grow(tk_strmap *m) {
    uint32_t cap = m->cap ? m->cap * 2 : 1024;
    tk_slot *s = calloc(cap, sizeof *s);
    if (!s) return -1;
    for (uint32_t i = 0; i < m->cap; i++) {
        if (!m->slots[i].key) continue;
        uint32_t j = m->slots[i].hash & (cap - 1);
        while (s[j].key) j = (j + 1) & (cap - 1);
        s[j] = m->slots[i];
    }
    free(m->slots);
    m->slots = s;
    m->cap = cap;
    return 0;
}

int tk_strmap_put(tk_strmap *m, const char *key, uint32_t len, int32_t val) {
    if ((m->n + 1) * 2 > m->cap && strmap_grow(m)) return -1;
    uint32_t h = hash_bytes(key, len), j = h & (m->cap - 1);
    for (; m->slots[j].key; j = (j + 1) & (m->cap - 1))
        if (m->slots[j].hash == h && m->slots[j].len == len && memcmp(m->slots[j].key, key, len) == 0)
            return 0;
    m->slots[j] = (tk_slot){key, len, h, val};
    m->n++;
    return 0;
}

int32_t tk_strmap_get(const tk_strmap *m, const char *key, uint32_t len) {
    if (!m->cap) return -1;
    uint32_t h = hash_bytes(key, len), j = h & (m->cap - 1);
    for (; m->slots[j].key; j = (j + 1) & (m->cap - 1))
        if (m->slots[j].hash == h && m->slots[j].len == len && memcmp(m->slots[j].key, key, len) == 0)
            return m->slots[j].val;
    return -1;
}

void tk_strmap_free(tk_strmap *m) {
    free(m->slots);
    memset(m, 0, sizeof *m);
}

#define PAIR_EMPTY UINT64_MAX

static uint32_t hash_pair(uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return (uint32_t)k;
}

static int pairmap_grow(tk_pairmap *m) {
    uint32_t cap = m->cap ? m->cap * 2 : 1024;
    tk_pslot *s = malloc((size_t)cap * sizeof *s);
    if (!s) return -1;
    for (uint32_t i = 0; i < cap; i++) s[i].key = PAIR_EMPTY;
    for (uint32_t i = 0; i < m->cap; i++) {
        if (m->slots[i].key == PAIR_EMPTY) continue;
        uint32_t j = hash_pair(m->slots[i].key) & (cap - 1);
        while (s[j].key != PAIR_EMPTY) j = (j + 1) & (cap - 1);
        s[j] = m->slots[i];
    }
    free(m->slots);
    m->slots = s;
    m->cap = cap;
    return 0;
}

int tk_pairmap_put(tk_pairmap *m, int32_t a, int32_t b, int32_t rank, int32_t merged) {
    if ((m->n + 1) * 2 > m->cap && pairmap_grow(m)) return -1;
    uint64_t k = (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
    uint32_t j = hash_pair(k) & (m->cap - 1);
    for (; m->slots[j].key != PAIR_EMPTY; j = (j + 1) & (m->cap - 1))
        if (m->slots[j].key == k) return 0; /* first (lowest) rank wins */
    m->slots[j] = (tk_pslot){k, rank, merged};
    m->n++;
    return 0;
}

const tk_pslot *tk_pairmap_get(const tk_pairmap *m, int32_t a, int32_t b) {
    if (!m->cap) return NULL;
    uint64_t k = (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
    uint32_t j = hash_pair(k) & (m->cap - 1);
    for (; m->slots[j].key != PAIR_EMPTY; j = (j + 1) & (m->cap - 1))
        if (m->slots[j].key == k) return &m->slots[j];
    return NULL;
}

void tk_pairmap_free(tk_pairmap *m) {
    free(m->slots);
    memset(m, 0, sizeof *m);
}

int tk_utf8_len(unsigned char c) {
    if (c < 0x80) return 1;
    if ((c & 0xE0) == 0xC0) return 2;
    if ((c & 0xF0) == 0xE0) return 3;
    if ((c & 0xF8) == 0xF0) return 4;
    return 1;
}

/* Length of one well-formed UTF-8 sequence at s (Unicode table 3-7), 0 if ill-formed. */
static size_t utf8_wellformed(const unsigned char *s, size_t n) {
    unsigned c = s[0];
    if (c < 0x80) return 1;
    size_t len;
    unsigned lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
    } else
        return 0;
    for (size_t i = 1; i < len; i++) {
        if (i >= n) return 0;
        unsigned d = s[i];
        if (d < lo || d > hi) return 0;
        lo = 0x80;
        hi = 0xBF;
    }
    return len;
}

size_t tk_utf8_valid_prefix(const char *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        size_t l = utf8_wellformed((const unsigned char *)s + i, n - i);
        if (!l) break;
        i += l;
    }
    return i;
}

int tk_utf8_decode1(const char *s, size_t n, uint32_t *cp) {
    const unsigned char *u = (const unsigned char *)s;
    int l = tk_utf8_len(u[0]);
    if ((size_t)l > n) l = 1;
    uint32_t c = l == 1 ? u[0] : u[0] & (0xFF >> (l + 1));
    for (int i = 1; i < l; i++) c = c << 6 | (u[i] & 0x3F);
    *cp = c;
    return l;
}

int tk_is_js_space(uint32_t c) {
    return (c >= 9 && c <= 13) || c == 0x20 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) ||
           c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000 || c == 0xFEFF;
}

/* WHATWG "maximal subpart" replacement: an ill-formed prefix becomes one U+FFFD and decoding
 * resumes at the first byte that broke it (what TextDecoder and Rust's from_utf8_lossy do). */
int tk_utf8_sanitize(tk_buf *out, const char *s, size_t n) {
    static const char repl[3] = {(char)0xEF, (char)0xBF, (char)0xBD};
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        size_t l = utf8_wellformed(u + i, n - i);
        if (l) {
            if (tk_buf_put(out, s + i, l)) return -1;
            i += l;
            continue;
        }
        /* length of the maximal subpart: lead byte plus valid continuation bytes */
        size_t j = 1;
        unsigned c = u[i];
        unsigned lo = 0x80, hi = 0xBF;
        size_t need = 0;
        if (c >= 0xC2 && c <= 0xDF) need = 2;
        else if (c >= 0xE0 && c <= 0xEF) {
            need = 3;
            if (c == 0xE0) lo = 0xA0;
            if (c == 0xED) hi = 0x9F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            need = 4;
            if (c == 0xF0) lo = 0x90;
            if (c == 0xF4) hi = 0x8F;
        }
        while (j < need && i + j < n && u[i + j] >= lo && u[i + j] <= hi) {
            j++;
            lo = 0x80;
            hi = 0xBF;
        }
        if (tk_buf_put(out, repl, 3)) return -1;
        i += j;
    }
    return 0;
}

/* GPT-2 bytes_to_unicode: printable bytes map to themselves, the rest to 256.. in order. */
uint32_t tk_byte_to_cp(unsigned char b) {
    if ((b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE)) return b;
    uint32_t n = 0;
    for (unsigned i = 0; i < b; i++)
        if (!((i >= '!' && i <= '~') || (i >= 0xA1 && i <= 0xAC) || i >= 0xAE)) n++;
    return 256 + n;
}

int tk_cp_to_byte(uint32_t cp) {
    if (cp < 256) return tk_byte_to_cp((unsigned char)cp) == cp ? (int)cp : -1;
    if (cp >= 256 + 68) return -1; /* 68 = bytes outside the printable ranges */
    uint32_t n = cp - 256;
    for (unsigned i = 0; i < 256; i++)
        if (!((i >= '!' && i <= '~') || (i >= 0xA1 && i <= 0xAC) || i >= 0xAE) && n-- == 0) return (int)i;
    return -1;
}
