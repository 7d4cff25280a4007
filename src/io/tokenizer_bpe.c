/* BPE on one pre-token: a doubly linked list of symbols and a binary heap of candidate merges
 * ordered by (rank, position), so the lowest-rank pair merges first and ties go to the leftmost
 * pair (HF tokenizers / transformers.js). Stale heap entries are dropped when popped. A Llama-2
 * section is one pre-token (the whole text), so this must be O(n log n). */
#include <stdlib.h>
#include <string.h>

#include "tokenizer_internal.h"

typedef struct {
    uint32_t start, len;
    int32_t id; /* -1: not in the vocab (byte fallback / unk) */
    int32_t prev, next;
    int alive;
} sym;

typedef struct { int32_t rank; uint32_t pos; int32_t left, right; } cand;

typedef struct { cand *p; size_t n, cap; } heap;

static int cand_less(const cand *a, const cand *b) {
    return a->rank != b->rank ? a->rank < b->rank : a->pos < b->pos;
}

static int heap_push(heap *h, cand c) {
    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 64;
        cand *p = realloc(h->p, cap * sizeof *p);
        if (!p) return -1;
        h->p = p;
        h->cap = cap;
    }
    size_t i = h->n++;
    while (i > 0) {
        size_t up = (i - 1) / 2;
        if (!cand_less(&c, &h->p[up])) break;
        h->p[i] = h->p[up];
        i = up;
    }
    h->p[i] = c;
    return 0;
}

static cand heap_pop(heap *h) {
    cand top = h->p[0], last = h->p[--h->n];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        const cand *best = &last;
        if (l < h->n && cand_less(&h->p[l], best)) { m = l; best = &h->p[l]; }
        if (r < h->n && cand_less(&h->p[r], best)) m = r;
        if (m == i) break;
        h->p[i] = h->p[m];
        i = m;
    }
    if (h->n) h->p[i] = last;
    return top;
}

static int try_pair(const pdq_tokenizer *t, heap *h, const sym *s, int32_t l) {
    int32_t r = s[l].next;
    if (r < 0 || s[l].id < 0 || s[r].id < 0) return 0;
    const tk_pslot *m = tk_pairmap_get(&t->merges, s[l].id, s[r].id);
    if (!m) return 0;
    return heap_push(h, (cand){m->rank, s[l].start, l, r});
}

/* Final symbol -> ids: the vocab id, else its bytes as <0xNN> tokens, else unk (else dropped). */
static int emit(const pdq_tokenizer *t, const char *s, const sym *y, tk_ids *out) {
    if (y->id >= 0) return tk_ids_push(out, y->id);
    if (t->byte_fallback) {
        int all = 1;
        for (uint32_t i = 0; i < y->len; i++) all &= t->byte_id[(unsigned char)s[y->start + i]] >= 0;
        if (all) {
            for (uint32_t i = 0; i < y->len; i++)
                if (tk_ids_push(out, t->byte_id[(unsigned char)s[y->start + i]])) return -1;
            return 0;
        }
    }
    return t->unk_id >= 0 ? tk_ids_push(out, t->unk_id) : 0;
}

static int bpe_merge(const pdq_tokenizer *t, const char *s, size_t n, tk_ids *out) {
    size_t cap = n ? n : 1;
    sym *y = malloc(cap * sizeof *y);
    heap h = {0};
    int rc = -1;
    if (!y) return -1;
    int32_t ns = 0;
    for (size_t i = 0; i < n;) {
        uint32_t l = t->byte_level ? 1 : (uint32_t)tk_utf8_len((unsigned char)s[i]);
        if (i + l > n) l = (uint32_t)(n - i);
        y[ns] = (sym){(uint32_t)i, l, tk_strmap_get(&t->vocab, s + i, l), ns - 1, -1, 1};
        if (ns > 0) y[ns - 1].next = ns;
        ns++;
        i += l;
    }
    for (int32_t i = 0; i + 1 < ns; i++)
        if (try_pair(t, &h, y, i)) goto done;
    while (h.n) {
        cand c = heap_pop(&h);
        sym *L = &y[c.left], *R = &y[c.right];
        if (!L->alive || !R->alive || L->next != c.right) continue;
        const tk_pslot *m = tk_pairmap_get(&t->merges, L->id, R->id);
        if (!m || m->rank != c.rank) continue;
        L->id = m->merged;
        L->len += R->len;
        R->alive = 0;
        L->next = R->next;
        if (R->next >= 0) y[R->next].prev = c.left;
        if (L->prev >= 0 && try_pair(t, &h, y, L->prev)) goto done;
        if (try_pair(t, &h, y, c.left)) goto done;
    }
    for (int32_t i = ns ? 0 : -1; i >= 0; i = y[i].next)
        if (emit(t, s, &y[i], out)) goto done;
    rc = 0;
done:
    free(h.p);
    free(y);
    return rc;
}

/* Word cache: pre-token bytes -> ids, for the many repeated words of a ByteLevel text. */
struct tk_cache {
    tk_strmap map; /* key -> index into spans */
    char **blocks; /* one malloc per key: keys must not move */
    size_t n_blocks;
    tk_ids ids;
    uint32_t (*spans)[2];
    size_t n_spans, cap_spans;
};

#define CACHE_MAX_KEY 128
#define CACHE_MAX_ENTRIES 200000

tk_cache *tk_cache_new(void) { return calloc(1, sizeof(tk_cache)); }

void tk_cache_free(tk_cache *c) {
    if (!c) return;
    tk_strmap_free(&c->map);
    for (size_t i = 0; i < c->n_blocks; i++) free(c->blocks[i]);
    free(c->blocks);
    free(c->ids.p);
    free(c->spans);
    free(c);
}

static void cache_put(tk_cache *c, const char *s, size_t n, const int32_t *ids, size_t k) {
    if (n > CACHE_MAX_KEY || c->n_spans >= CACHE_MAX_ENTRIES) return;
    if (c->n_spans == c->cap_spans) {
        size_t cap = c->cap_spans ? c->cap_spans * 2 : 256;
        void *p = realloc(c->spans, cap * sizeof *c->spans);
        if (!p) return;
        c->spans = p;
        c->cap_spans = cap;
    }
    char **nb = realloc(c->blocks, (c->n_blocks + 1) * sizeof *nb);
    if (!nb) return;
    c->blocks = nb;
    char *key = malloc(n ? n : 1);
    if (!key) return;
    memcpy(key, s, n);
    size_t off = c->ids.n;
    for (size_t i = 0; i < k; i++)
        if (tk_ids_push(&c->ids, ids[i])) { c->ids.n = off; free(key); return; }
    if (tk_strmap_put(&c->map, key, (uint32_t)n, (int32_t)c->n_spans)) { c->ids.n = off; free(key); return; }
    c->blocks[c->n_blocks++] = key;
    c->spans[c->n_spans][0] = (uint32_t)off;
    c->spans[c->n_spans][1] = (uint32_t)k;
    c->n_spans++;
}

int tk_bpe_word(const pdq_tokenizer *t, const char *s, size_t n, tk_ids *out, tk_cache *cache) {
    if (n == 0) return 0;
    if (t->ignore_merges) {
        int32_t id = tk_strmap_get(&t->vocab, s, (uint32_t)n);
        if (id >= 0) return tk_ids_push(out, id);
    }
    if (cache && n <= CACHE_MAX_KEY) {
        int32_t e = tk_strmap_get(&cache->map, s, (uint32_t)n);
        if (e >= 0) {
            for (uint32_t i = 0; i < cache->spans[e][1]; i++)
                if (tk_ids_push(out, cache->ids.p[cache->spans[e][0] + i])) return -1;
            return 0;
        }
    }
    size_t before = out->n;
    if (bpe_merge(t, s, n, out)) return -1;
    if (cache && out->n > before) cache_put(cache, s, n, out->p + before, out->n - before);
    return 0;
}
