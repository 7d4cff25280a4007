/* A minimal FlatBuffers builder (the subset Circle needs: tables, scalar/offset vectors, strings,
 * unions, force_align, file identifier). Data is written back to front, as in the reference
 * builders; a "ref" is a position counted from the end of the buffer, stable while it grows.
 * Errors are sticky: after the first failure every call is a no-op and fb_finish reports it.
 * Assumes a little-endian host (checked at compile time). */
#ifndef PDQ_FB_BUILDER_H
#define PDQ_FB_BUILDER_H

#include <stddef.h>
#include <stdint.h>

#include "pdq/status.h"

#define FB_MAX_SIZE 0x7fffffffu /* FlatBuffers offsets are signed 32-bit: < 2 GiB */

typedef uint32_t fb_ref; /* 0 = none */

typedef struct fb_builder {
    uint8_t *buf;      /* the bytes live in buf[cap - size, cap) */
    size_t cap, size, minalign;
    fb_ref *slots;     /* field refs of the open table, 0 = absent */
    int nslots, slots_cap;
    size_t table_start;
    int in_table;
    fb_ref *vtables;   /* written vtables, for dedup */
    size_t nvtables, vtables_cap;
    int dedup;         /* share identical vtables (default on) */
    pdq_code err;
    char errmsg[128];
} fb_builder;

void fb_init(fb_builder *b);
void fb_free(fb_builder *b);
/* Grows the buffer ahead of time (avoids repeated copies for large inline data). */
void fb_reserve(fb_builder *b, size_t bytes);

fb_ref fb_string(fb_builder *b, const char *s);
/* n little-endian scalars of elem_size bytes; align = 0 means max(4, elem_size) (16 for force_align 16). */
fb_ref fb_vec_scalars(fb_builder *b, const void *data, size_t n, size_t elem_size, size_t align);
/* A vector of tables or strings (refs created earlier). */
fb_ref fb_vec_refs(fb_builder *b, const fb_ref *refs, size_t n);

void fb_table_start(fb_builder *b);
/* Scalars are skipped when equal to their schema default, as FlatBuffers does. Each returns the
 * ref of the written field (0 if skipped) so it can be patched after fb_finish. */
fb_ref fb_add_u8(fb_builder *b, int slot, uint8_t v, uint8_t dflt);
fb_ref fb_add_i8(fb_builder *b, int slot, int8_t v, int8_t dflt);
fb_ref fb_add_i32(fb_builder *b, int slot, int32_t v, int32_t dflt);
fb_ref fb_add_u32(fb_builder *b, int slot, uint32_t v, uint32_t dflt);
fb_ref fb_add_u64(fb_builder *b, int slot, uint64_t v, uint64_t dflt);
fb_ref fb_add_f32(fb_builder *b, int slot, float v, float dflt);
/* An offset field (table, vector, string); ref 0 = absent. */
void fb_add_ref(fb_builder *b, int slot, fb_ref ref);
/* Union: the type byte in type_slot, the value in type_slot + 1. */
void fb_add_union(fb_builder *b, int type_slot, uint8_t type, fb_ref value);
fb_ref fb_table_end(fb_builder *b);

/* Writes the root offset and the 4-byte identifier; returns the finished bytes (owned by b). */
pdq_code fb_finish(fb_builder *b, fb_ref root, const char *ident, uint8_t **out, size_t *len,
                   pdq_status *st);
/* Byte position of a ref in the finished buffer. */
static inline size_t fb_pos(const fb_builder *b, fb_ref r) { return b->size - r; }

#endif
