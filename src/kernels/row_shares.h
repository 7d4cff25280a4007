/* A GEMV's output rows split among threads for streaming weights from DRAM. Each thread owns
 * one contiguous share, so its hardware and software prefetch run ahead on its own rows; it
 * claims the share from the front, half of what is left at a time. A thread done with its own
 * share takes QK_SHARE_STEAL rows at a time from the back of the share with the most rows left,
 * so neither thread waits long for the other at the end of a GEMV (with two fixed shares a
 * thread claimed in turn, a 2-thread decode spent about 5 % of its time there: the two cores
 * rarely stream at the same rate). A row is computed once, whole, by one thread: the split
 * changes no bit. Internal to src/kernels/. */
#ifndef PDQ_KERNELS_ROW_SHARES_H
#define PDQ_KERNELS_ROW_SHARES_H

#include <stdatomic.h>
#include <stdint.h>

#define QK_SHARE_MIN 64   /* rows an owner claims at least */
#define QK_SHARE_STEAL 32 /* rows taken from another share at a time */

typedef struct {
    _Alignas(64) atomic_uint_least64_t span; /* first << 32 | end: the rows nobody has claimed */
} qk_share;

static inline uint64_t qk_span(int first, int end) { return (uint64_t)(uint32_t)first << 32 | (uint32_t)end; }
static inline int qk_span_first(uint64_t v) { return (int)(uint32_t)(v >> 32); }
static inline int qk_span_end(uint64_t v) { return (int)(uint32_t)v; }

/* Rows [0, rows) in n shares whose boundaries are multiples of 8 (two 4-row blocks). */
static inline void qk_shares_init(qk_share *s, int n, int rows) {
    for (int t = 0; t < n; t++) {
        int a = (int)((int64_t)rows * t / n) / 8 * 8;
        int b = t + 1 == n ? rows : (int)((int64_t)rows * (t + 1) / n) / 8 * 8;
        atomic_init(&s[t].span, qk_span(a, b));
    }
}

/* The owner's next rows [*r0, *r1) of share s, and *rend, the share's end when claimed (how far
 * its prefetch may reach); 0 when nothing is left. */
static inline int qk_share_front(qk_share *s, int *r0, int *r1, int *rend) {
    uint64_t v = atomic_load_explicit(&s->span, memory_order_relaxed);
    for (;;) {
        int first = qk_span_first(v), end = qk_span_end(v);
        if (first >= end) return 0;
        int take = (end - first) / 2 < QK_SHARE_MIN ? QK_SHARE_MIN : ((end - first) / 2 + 7) / 8 * 8;
        int r = end - first > take ? first + take : end;
        if (atomic_compare_exchange_weak_explicit(&s->span, &v, qk_span(r, end), memory_order_relaxed,
                                                  memory_order_relaxed)) {
            *r0 = first;
            *r1 = r;
            *rend = end;
            return 1;
        }
    }
}

/* Rows [*r0, *r1) from the back of share s, for a thread done with its own; 0 when nothing is
 * left. The cut stays a multiple of 8. */
static inline int qk_share_back(qk_share *s, int *r0, int *r1) {
    uint64_t v = atomic_load_explicit(&s->span, memory_order_relaxed);
    for (;;) {
        int first = qk_span_first(v), end = qk_span_end(v);
        if (first >= end) return 0;
        int cut = end - QK_SHARE_STEAL <= first ? first : (end - QK_SHARE_STEAL + 7) / 8 * 8;
        if (atomic_compare_exchange_weak_explicit(&s->span, &v, qk_span(first, cut), memory_order_relaxed,
                                                  memory_order_relaxed)) {
            *r0 = cut;
            *r1 = end;
            return 1;
        }
    }
}

/* The share of the n with the most rows left, or -1 when all are claimed. */
static inline int qk_share_fullest(qk_share *s, int n) {
    int best = -1, most = 0;
    for (int t = 0; t < n; t++) {
        uint64_t v = atomic_load_explicit(&s[t].span, memory_order_relaxed);
        int left = qk_span_end(v) - qk_span_first(v);
        if (left > most) {
            most = left;
            best = t;
        }
    }
    return best;
}

#endif
