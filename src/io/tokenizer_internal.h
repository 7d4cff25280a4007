/* Private structures of the tokenizer (src/io/tokenizer_*.c). The pipeline mirrors Hugging Face
 * tokenizers: added-token split -> normalizer -> pre-tokenizer -> BPE -> post-processor, and
 * decoders -> clean-up on the way back. Byte-level vocabularies are stored as raw bytes. */
#ifndef PDQ_TOKENIZER_INTERNAL_H
#define PDQ_TOKENIZER_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "pdq/tokenizer.h"

/* Growable byte buffer / int32 vector. */
typedef struct { char *p; size_t n, cap; } tk_buf;
typedef struct { int32_t *p; size_t n, cap; } tk_ids;
int tk_buf_put(tk_buf *b, const void *s, size_t n); /* 0 ok, -1 no memory */
int tk_ids_push(tk_ids *v, int32_t x);

/* Open-addressing map: byte string -> int32. Keys are borrowed (must outlive the map). */
typedef struct { const char *key; uint32_t len; uint32_t hash; int32_t val; } tk_slot;
typedef struct { tk_slot *slots; uint32_t cap, n; } tk_strmap;
int tk_strmap_put(tk_strmap *m, const char *key, uint32_t len, int32_t val); /* keeps first */
int32_t tk_strmap_get(const tk_strmap *m, const char *key, uint32_t len); /* -1 if absent */
void tk_strmap_free(tk_strmap *m);

/* Merge table: (left id, right id) -> rank and merged id. */
typedef struct { uint64_t key; int32_t rank, merged; } tk_pslot;
typedef struct { tk_pslot *slots; uint32_t cap, n; } tk_pairmap;
int tk_pairmap_put(tk_pairmap *m, int32_t a, int32_t b, int32_t rank, int32_t merged);
const tk_pslot *tk_pairmap_get(const tk_pairmap *m, int32_t a, int32_t b);
void tk_pairmap_free(tk_pairmap *m);

typedef struct {
    char *content;
    uint32_t len;
    int32_t id;
    unsigned special : 1, lstrip : 1, rstrip : 1, normalized : 1;
} tk_added;

typedef enum { TK_NORM_PREPEND, TK_NORM_REPLACE, TK_NORM_NFC } tk_norm_kind;
typedef struct { tk_norm_kind kind; char *a, *b; } tk_norm; /* prepend a / replace a by b / NFC */

typedef enum { TK_PRE_SPLIT, TK_PRE_BYTELEVEL, TK_PRE_METASPACE } tk_pre_kind;
/* What a Split keeps of a match: its own piece, nothing, or glued to the piece before / after. */
typedef enum { TK_SPLIT_ISOLATED, TK_SPLIT_REMOVED, TK_SPLIT_MERGED_PREV, TK_SPLIT_MERGED_NEXT } tk_split_kind;
typedef struct {
    tk_pre_kind kind;
    pcre2_code *re;       /* SPLIT, or BYTELEVEL with use_regex */
    tk_split_kind behavior; /* SPLIT */
    int add_prefix_space; /* BYTELEVEL */
    char *replacement;    /* METASPACE */
    int prepend;          /* METASPACE: 0 never, 1 always, 2 first */
    int split;            /* METASPACE */
} tk_pre;

typedef enum { TK_DEC_REPLACE, TK_DEC_BYTEFALLBACK, TK_DEC_FUSE, TK_DEC_STRIP, TK_DEC_BYTELEVEL, TK_DEC_METASPACE } tk_dec_kind;
typedef struct {
    tk_dec_kind kind;
    char *a, *b;     /* REPLACE: a -> b; STRIP: content a; METASPACE: replacement a */
    int start, stop; /* STRIP */
    int prepend;     /* METASPACE: strip the leading space of the first token */
} tk_dec;

struct pdq_tokenizer {
    int byte_level; /* vocab strings are ByteLevel-mapped (stored here as raw bytes) */
    int n_vocab;    /* max id + 1 over the model vocab and added tokens */
    char **mtok;    /* id -> model vocab bytes (owned; the keys of vocab) */
    char **tok;     /* id -> bytes shown by decode: mtok or an added content (borrowed) */
    uint32_t *tok_len;
    unsigned char *special; /* id is a special token (skipped by skip_special) */
    unsigned char *added;   /* id is an added token (passes decoders unchanged) */
    tk_strmap vocab;        /* model vocab: bytes -> id */
    tk_pairmap merges;
    int byte_fallback, ignore_merges, fuse_unk;
    int32_t unk_id;
    int32_t byte_id[256]; /* <0xNN> ids, -1 if absent */

    tk_added *add;
    int n_add;
    int32_t *add_order;      /* indices of add sorted by first byte (Gemma 3 has 6,415 of them) */
    uint32_t add_from[257];  /* add_order[add_from[b] .. add_from[b+1]) start with byte b */
    tk_norm *norm;
    int n_norm;
    tk_pre *pre;
    int n_pre;
    tk_dec *dec;
    int n_dec;

    int32_t *prefix, *suffix; /* post-processor ids around the sequence */
    int n_prefix, n_suffix;
    int cleanup; /* clean_up_tokenization_spaces */
    int32_t bos_id, eos_id;
};

/* UTF-8 helpers. */
int tk_utf8_len(unsigned char c);                       /* sequence length from the lead byte */
size_t tk_utf8_valid_prefix(const char *s, size_t n);   /* bytes of the longest valid prefix */
int tk_utf8_decode1(const char *s, size_t n, uint32_t *cp); /* length of the char, s valid */
int tk_is_js_space(uint32_t cp);                        /* JavaScript String.trim() whitespace */
/* Appends bytes to out as UTF-8, invalid sequences replaced by U+FFFD (WHATWG decoder). */
int tk_utf8_sanitize(tk_buf *out, const char *s, size_t n);

/* Unicode NFC of valid UTF-8 into out (replacing its contents); 0 ok, -1 no memory. */
int tk_nfc(const char *s, size_t n, tk_buf *out);

/* ByteLevel byte <-> code point table (GPT-2). */
uint32_t tk_byte_to_cp(unsigned char b);
int tk_cp_to_byte(uint32_t cp); /* -1 if not in the table */

/* BPE of one pre-token; appends ids to out. cache may be NULL. */
typedef struct tk_cache tk_cache;
tk_cache *tk_cache_new(void);
void tk_cache_free(tk_cache *c);
int tk_bpe_word(const pdq_tokenizer *t, const char *s, size_t n, tk_ids *out, tk_cache *cache);

#endif
