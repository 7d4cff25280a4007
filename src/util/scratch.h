/* A buffer kept across calls: grown when a call needs more, never shrunk, freed by its owner.
 * Hot loops that need large temporaries (a forward's per-layer activations, a GEMM's prepared
 * rows) take them from one of these instead of malloc/free per call: at prefill sizes each fresh
 * block was fresh mmapped pages, faulted in on first touch every layer (a quarter of a 1-thread
 * packed prefill went to page faults). Not thread-safe: one user at a time. */
#ifndef PDQ_UTIL_SCRATCH_H
#define PDQ_UTIL_SCRATCH_H

#include <stddef.h>

typedef struct {
    void *p;    /* 64-byte aligned, or NULL */
    size_t cap; /* bytes at p */
} pdq_scratch;

/* At least `bytes` bytes (64-byte aligned); what it held is not kept when it grows. NULL when
 * the allocation fails (the old buffer is then freed too). */
void *pdq_scratch_get(pdq_scratch *s, size_t bytes);
void pdq_scratch_free(pdq_scratch *s);

/* Carving one pdq_scratch_get into several arrays: pdq_scratch_size of each size in turn gives
 * the total, and the same offsets (each a multiple of 64). */
static inline size_t pdq_scratch_size(size_t bytes) { return (bytes + 63) / 64 * 64; }

#endif
