#include "circle/fb_builder.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "fb_builder writes host scalars as little-endian"
#endif

static void fail(fb_builder *b, pdq_code code, const char *msg) {
    if (b->err) return;
    b->err = code;
    snprintf(b->errmsg, sizeof b->errmsg, "%s", msg);
}

void fb_init(fb_builder *b) {
    memset(b, 0, sizeof *b);
    b->minalign = 1;
    b->dedup = 1;
}

void fb_free(fb_builder *b) {
    free(b->buf);
    free(b->slots);
    free(b->vtables);
    memset(b, 0, sizeof *b);
}

/* Makes room for n more bytes below the current data, moving the data to the new end. */
static int grow(fb_builder *b, size_t n) {
    if (b->err) return 0;
    if (n > FB_MAX_SIZE || b->size + n > FB_MAX_SIZE) {
        fail(b, PDQ_ERR_LIMIT, "flatbuffer would exceed 2 GiB");
        return 0;
    }
    if (b->cap - b->size >= n) return 1;
    size_t cap = b->cap ? b->cap : 1024;
    while (cap - b->size < n) cap *= 2;
    uint8_t *nb = malloc(cap);
    if (!nb) {
        fail(b, PDQ_ERR_NOMEM, "out of memory growing the flatbuffer");
        return 0;
    }
    if (b->size) memcpy(nb + cap - b->size, b->buf + b->cap - b->size, b->size);
    free(b->buf);
    b->buf = nb;
    b->cap = cap;
    return 1;
}

void fb_reserve(fb_builder *b, size_t bytes) { grow(b, bytes); }

static void pad(fb_builder *b, size_t n) {
    if (!n || !grow(b, n)) return;
    b->size += n;
    memset(b->buf + b->cap - b->size, 0, n);
}

/* Pads so that after `extra` more bytes the size is a multiple of align (a power of two). */
static void prep(fb_builder *b, size_t align, size_t extra) {
    if (align > b->minalign) b->minalign = align;
    pad(b, (~(b->size + extra) + 1) & (align - 1));
}

static fb_ref push(fb_builder *b, const void *p, size_t n) {
    if (!grow(b, n)) return 0;
    b->size += n;
    memcpy(b->buf + b->cap - b->size, p, n);
    return (fb_ref)b->size;
}

static fb_ref push_u32(fb_builder *b, uint32_t v) {
    prep(b, 4, 0);
    return push(b, &v, 4);
}

/* An offset stored at the next 4-byte slot, pointing forward to ref. */
static fb_ref push_offset(fb_builder *b, fb_ref ref) {
    prep(b, 4, 0);
    if (b->err) return 0;
    if (!ref || ref > b->size) {
        fail(b, PDQ_ERR_ARG, "offset to an object not yet written");
        return 0;
    }
    return push_u32(b, (uint32_t)(b->size + 4 - ref));
}

static int outside_table(fb_builder *b) {
    if (b->in_table) fail(b, PDQ_ERR_ARG, "vector or string built inside a table");
    return !b->err;
}

fb_ref fb_string(fb_builder *b, const char *s) {
    if (!outside_table(b)) return 0;
    size_t n = strlen(s);
    prep(b, 4, n + 1);
    pad(b, 1); /* NUL terminator */
    push(b, s, n);
    return push_u32(b, (uint32_t)n);
}

fb_ref fb_vec_scalars(fb_builder *b, const void *data, size_t n, size_t elem_size, size_t align) {
    if (!outside_table(b)) return 0;
    if (n > FB_MAX_SIZE / (elem_size ? elem_size : 1)) {
        fail(b, PDQ_ERR_LIMIT, "vector would exceed 2 GiB");
        return 0;
    }
    if (align < elem_size) align = elem_size;
    if (align < 4) align = 4;
    size_t bytes = n * elem_size;
    prep(b, 4, bytes);
    prep(b, align, bytes);
    if (bytes) push(b, data, bytes);
    return push_u32(b, (uint32_t)n);
}

fb_ref fb_vec_refs(fb_builder *b, const fb_ref *refs, size_t n) {
    if (!outside_table(b)) return 0;
    if (n > FB_MAX_SIZE / 4) {
        fail(b, PDQ_ERR_LIMIT, "vector would exceed 2 GiB");
        return 0;
    }
    prep(b, 4, n * 4);
    for (size_t i = n; i-- > 0;) push_offset(b, refs[i]);
    return push_u32(b, (uint32_t)n);
}

void fb_table_start(fb_builder *b) {
    if (b->in_table) fail(b, PDQ_ERR_ARG, "nested table");
    b->in_table = 1;
    b->nslots = 0;
    b->table_start = b->size;
}

static void set_slot(fb_builder *b, int slot, fb_ref ref) {
    if (b->err) return;
    if (!b->in_table || slot < 0 || slot > 1000) {
        fail(b, PDQ_ERR_ARG, "field outside a table or bad slot");
        return;
    }
    if (slot >= b->slots_cap) {
        int cap = b->slots_cap ? b->slots_cap * 2 : 16;
        while (cap <= slot) cap *= 2;
        fb_ref *ns = realloc(b->slots, (size_t)cap * sizeof *ns);
        if (!ns) {
            fail(b, PDQ_ERR_NOMEM, "out of memory");
            return;
        }
        b->slots = ns;
        b->slots_cap = cap;
    }
    while (b->nslots <= slot) b->slots[b->nslots++] = 0;
    b->slots[slot] = ref;
}

static fb_ref add_scalar(fb_builder *b, int slot, const void *v, size_t n) {
    prep(b, n, 0);
    fb_ref r = push(b, v, n);
    set_slot(b, slot, r);
    return b->err ? 0 : r;
}

fb_ref fb_add_u8(fb_builder *b, int slot, uint8_t v, uint8_t d) { return v == d ? 0 : add_scalar(b, slot, &v, 1); }
fb_ref fb_add_i8(fb_builder *b, int slot, int8_t v, int8_t d) { return v == d ? 0 : add_scalar(b, slot, &v, 1); }
fb_ref fb_add_i32(fb_builder *b, int slot, int32_t v, int32_t d) { return v == d ? 0 : add_scalar(b, slot, &v, 4); }
fb_ref fb_add_u32(fb_builder *b, int slot, uint32_t v, uint32_t d) { return v == d ? 0 : add_scalar(b, slot, &v, 4); }
fb_ref fb_add_u64(fb_builder *b, int slot, uint64_t v, uint64_t d) { return v == d ? 0 : add_scalar(b, slot, &v, 8); }
fb_ref fb_add_f32(fb_builder *b, int slot, float v, float d) {
    return memcmp(&v, &d, 4) == 0 ? 0 : add_scalar(b, slot, &v, 4);
}

void fb_add_ref(fb_builder *b, int slot, fb_ref ref) {
    if (!ref) return;
    set_slot(b, slot, push_offset(b, ref));
}

void fb_add_union(fb_builder *b, int type_slot, uint8_t type, fb_ref value) {
    if (!type || !value) return;
    fb_add_u8(b, type_slot, type, 0);
    fb_add_ref(b, type_slot + 1, value);
}

fb_ref fb_table_end(fb_builder *b) {
    if (!b->in_table) fail(b, PDQ_ERR_ARG, "table end without start");
    b->in_table = 0;
    fb_ref table = push_u32(b, 0); /* soffset to the vtable, patched below */
    if (b->err) return 0;
    int n = b->nslots;
    while (n > 0 && !b->slots[n - 1]) n--;
    size_t obj = table - b->table_start;
    if (obj > 0xffff || n > 0x7ffe) {
        fail(b, PDQ_ERR_LIMIT, "table too large for a vtable");
        return 0;
    }
    uint16_t vt[2 + 64];
    uint16_t *v = n <= 64 ? vt : malloc((size_t)(2 + n) * 2);
    if (!v) {
        fail(b, PDQ_ERR_NOMEM, "out of memory");
        return 0;
    }
    v[0] = (uint16_t)((2 + n) * 2);
    v[1] = (uint16_t)obj;
    for (int i = 0; i < n; i++) v[2 + i] = b->slots[i] ? (uint16_t)(table - b->slots[i]) : 0;
    fb_ref vtref = 0;
    for (size_t i = 0; b->dedup && i < b->nvtables && !vtref; i++) {
        const uint8_t *old = b->buf + b->cap - b->vtables[i];
        uint16_t len;
        memcpy(&len, old, 2);
        if (len == v[0] && memcmp(old, v, len) == 0) vtref = b->vtables[i];
    }
    if (!vtref) {
        vtref = push(b, v, v[0]);
        if (b->dedup && vtref) {
            if (b->nvtables == b->vtables_cap) {
                size_t cap = b->vtables_cap ? b->vtables_cap * 2 : 16;
                fb_ref *nv = realloc(b->vtables, cap * sizeof *nv);
                if (nv) { b->vtables = nv; b->vtables_cap = cap; }
            }
            if (b->nvtables < b->vtables_cap) b->vtables[b->nvtables++] = vtref;
        }
    }
    if (v != vt) free(v);
    if (b->err) return 0;
    /* table address - vtable address, both counted from the end */
    int32_t soff = (int32_t)((int64_t)vtref - (int64_t)table);
    memcpy(b->buf + b->cap - table, &soff, 4);
    return table;
}

pdq_code fb_finish(fb_builder *b, fb_ref root, const char *ident, uint8_t **out, size_t *len,
                   pdq_status *st) {
    if (b->in_table) fail(b, PDQ_ERR_ARG, "finish inside a table");
    size_t extra = 4 + (ident ? 4 : 0);
    prep(b, b->minalign > 4 ? b->minalign : 4, extra);
    if (ident) push(b, ident, 4);
    push_offset(b, root);
    if (b->err) return pdq_fail(st, b->err, "flatbuffer builder: %s", b->errmsg);
    *out = b->buf + b->cap - b->size;
    *len = b->size;
    return PDQ_OK;
}
