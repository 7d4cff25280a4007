/* Loading tokenizer.json (+ tokenizer_config.json) into the pipeline of tokenizer_internal.h.
 * Anything we do not implement is refused with PDQ_ERR_UNSUPPORTED naming the file and the
 * component, rather than silently tokenizing differently from Hugging Face. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pdq/file.h"
#include "tokenizer_internal.h"

/* GPT-2 pre-tokenizer regex used by ByteLevel with use_regex: true. */
static const char k_gpt2_re[] = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

typedef struct {
    pdq_tokenizer *t;
    const char *path; /* file being parsed, for messages */
    pdq_status *st;
} loader;

/* tokenizer.json files of real models are a few MiB; 256 MiB bounds what we read. */
static char *read_all(const char *path, size_t *len, pdq_status *st) {
    char *buf;
    return pdq_file_read(path, PDQ_FILE_MAX_JSON, &buf, len, st) ? NULL : buf;
}

static int jbool(const cJSON *o, const char *k, int def) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsBool(v) ? cJSON_IsTrue(v) : def;
}

static const char *jstr(const cJSON *o, const char *k) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static char *dupstr(const char *s) {
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p) memcpy(p, s, n);
    return p;
}

/* ByteLevel vocab strings -> raw bytes; strings outside the byte alphabet stay as they are. */
static char *to_bytes(const pdq_tokenizer *t, const char *s, uint32_t *len) {
    size_t n = strlen(s);
    char *p = malloc(n + 1);
    if (!p) return NULL;
    size_t k = 0;
    int ok = t->byte_level;
    for (size_t i = 0; ok && i < n;) {
        uint32_t cp;
        i += (size_t)tk_utf8_decode1(s + i, n - i, &cp);
        int b = tk_cp_to_byte(cp);
        if (b < 0) ok = 0;
        else p[k++] = (char)b;
    }
    if (!ok) {
        memcpy(p, s, n);
        k = n;
    }
    p[k] = '\0';
    *len = (uint32_t)k;
    return p;
}

/* id of a token string: added tokens first, then the model vocab. */
static int32_t lookup_token(const pdq_tokenizer *t, const char *s) {
    for (int i = 0; i < t->n_add; i++)
        if (strcmp(t->add[i].content, s) == 0) return t->add[i].id;
    uint32_t n;
    char *b = to_bytes(t, s, &n);
    if (!b) return -1;
    int32_t id = tk_strmap_get(&t->vocab, b, n);
    free(b);
    return id;
}

static int contains_type(const cJSON *o, const char *type) {
    if (!cJSON_IsObject(o)) return 0;
    const char *ty = jstr(o, "type");
    if (ty && strcmp(ty, type) == 0) return 1;
    const cJSON *a, *e;
    const char *lists[] = {"pretokenizers", "decoders", "normalizers", "processors"};
    for (int i = 0; i < 4; i++)
        if ((a = cJSON_GetObjectItemCaseSensitive(o, lists[i])) && cJSON_IsArray(a))
            cJSON_ArrayForEach(e, a) if (contains_type(e, type)) return 1;
    return 0;
}

static pdq_code unsupported(loader *L, const char *what, const char *type) {
    return pdq_fail(L->st, PDQ_ERR_UNSUPPORTED, "%s: %s type '%s' is not supported", L->path, what,
                    type ? type : "(missing)");
}

/* add_order / add_from: the added tokens grouped by first byte (a stable counting sort, so the
 * first listed of two equal-length matches stays first). */
static pdq_code index_added(loader *L) {
    pdq_tokenizer *t = L->t;
    t->add_order = malloc(((size_t)t->n_add + 1) * sizeof *t->add_order);
    if (!t->add_order) return pdq_fail(L->st, PDQ_ERR_NOMEM, "%s: out of memory", L->path);
    uint32_t count[257] = {0};
    for (int i = 0; i < t->n_add; i++) count[(unsigned char)t->add[i].content[0] + 1]++;
    for (int b = 0; b < 256; b++) count[b + 1] += count[b];
    memcpy(t->add_from, count, sizeof count);
    for (int i = 0; i < t->n_add; i++) t->add_order[count[(unsigned char)t->add[i].content[0]]++] = i;
    return PDQ_OK;
}

static pdq_code load_vocab(loader *L, const cJSON *model, const cJSON *added) {
    pdq_tokenizer *t = L->t;
    const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(model, "vocab"), *e;
    if (!cJSON_IsObject(vocab) || !vocab->child)
        return pdq_fail(L->st, PDQ_ERR_MISSING, "%s: model.vocab is missing or empty", L->path);
    double maxid = -1;
    cJSON_ArrayForEach(e, vocab) {
        if (!cJSON_IsNumber(e) || e->valuedouble < 0 || e->valuedouble > 1e8 || e->valuedouble != (int)e->valuedouble)
            return pdq_fail(L->st, PDQ_ERR_FORMAT, "%s: model.vocab[\"%.40s\"] is not a valid id", L->path, e->string);
        if (e->valuedouble > maxid) maxid = e->valuedouble;
    }
    if (cJSON_IsArray(added))
        cJSON_ArrayForEach(e, added) {
            const cJSON *id = cJSON_GetObjectItemCaseSensitive(e, "id");
            if (!cJSON_IsNumber(id) || id->valuedouble < 0 || id->valuedouble > 1e8 || !jstr(e, "content"))
                return pdq_fail(L->st, PDQ_ERR_FORMAT, "%s: added_tokens entry without a valid id/content", L->path);
            if (id->valuedouble > maxid) maxid = id->valuedouble;
        }
    t->n_vocab = (int)maxid + 1;
    size_t n = (size_t)t->n_vocab;
    L->t->mtok = calloc(n, sizeof *L->t->mtok);
    t->tok = calloc(n, sizeof *t->tok);
    t->tok_len = calloc(n, sizeof *t->tok_len);
    t->special = calloc(n, 1);
    t->added = calloc(n, 1);
    if (!L->t->mtok || !t->tok || !t->tok_len || !t->special || !t->added)
        return pdq_fail(L->st, PDQ_ERR_NOMEM, "%s: out of memory for %zu tokens", L->path, n);
    cJSON_ArrayForEach(e, vocab) {
        int id = (int)e->valuedouble;
        if (L->t->mtok[id]) return pdq_fail(L->st, PDQ_ERR_FORMAT, "%s: model.vocab id %d used twice", L->path, id);
        uint32_t len;
        char *b = to_bytes(t, e->string, &len);
        if (!b || tk_strmap_put(&t->vocab, b, len, id)) {
            free(b);
            return pdq_fail(L->st, PDQ_ERR_NOMEM, "%s: out of memory", L->path);
        }
        L->t->mtok[id] = b;
        t->tok[id] = b;
        t->tok_len[id] = len;
    }
    if (cJSON_IsArray(added)) {
        t->add = calloc((size_t)cJSON_GetArraySize(added) + 1, sizeof *t->add);
        if (!t->add) return pdq_fail(L->st, PDQ_ERR_NOMEM, "%s: out of memory", L->path);
        cJSON_ArrayForEach(e, added) {
            tk_added *a = &t->add[t->n_add++];
            a->content = dupstr(jstr(e, "content"));
            if (!a->content) return pdq_fail(L->st, PDQ_ERR_NOMEM, "%s: out of memory", L->path);
            a->len = (uint32_t)strlen(a->content);
            a->id = (int32_t)cJSON_GetObjectItemCaseSensitive(e, "id")->valuedouble;
            a->special = jbool(e, "special", 0);
            a->lstrip = jbool(e, "lstrip", 0);
            a->rstrip = jbool(e, "rstrip", 0);
            a->normalized = jbool(e, "normalized", !a->special);
            if (a->len == 0) return pdq_fail(L->st, PDQ_ERR_FORMAT, "%s: added token %d is empty", L->path, a->id);
            t->tok[a->id] = a->content; /* decode shows the added content */
            t->tok_len[a->id] = a->len;
            t->added[a->id] = 1;
            t->special[a->id] = a->special;
        }
    }
    return index_added(L);
}

static int merge_parts(const char *s, const char **a, size_t *na, const char **b, size_t *nb) {
    const char *sp = strchr(s, ' ');
    if (!sp) return -1;
    *a = s;
    *na = (size_t)(sp - s);
    *b = sp + 1;
    const char *end = strchr(sp + 1, ' '); /* "a b c" keeps "b", like split(" ", 2) */
    *nb = end ? (size_t)(end - sp - 1) : strlen(sp + 1);
    return 0;
}

static pdq_code load_merges(loader *L, const cJSON *model) {
    pdq_tokenizer *t = L->t;
    const cJSON *merges = cJSON_GetObjectItemCaseSensitive(model, "merges"), *e;
    if (!merges) return PDQ_OK;
    if (!cJSON_IsArray(merges)) return pdq_fail(L->st, PDQ_ERR_FORMAT, "%s: model.merges is not an array", L->path);
    int rank = 0;
    char *tmp = NULL;
    size_t cap = 0;
    pdq_code rc = PDQ_OK;
    cJSON_ArrayForEach(e, merges) {
        const char *a, *b;
        size_t na, nb;
        if (cJSON_IsString(e)) {
            if (merge_parts(e->valuestring, &a, &na, &b, &nb)) { rc = pdq_fail(L->st, PDQ_ERR_FORMAT, "%s: merge %d \"%.40s\" has no space", L->path, rank, e->valuestring); break; }
        } else if (cJSON_IsArray(e) && cJSON_GetArraySize(e) == 2 && cJSON_IsString(e->child) && cJSON_IsString(e->child->next)) {
            a = e->child->valuestring;
            na = strlen(a);
            b = e->child->next->valuestring;
            nb = strlen(b);
        } else {
            rc = pdq_fail(L->st, PDQ_ERR_FORMAT, "%s: merge %d is neither \"a b\" nor [a, b]", L->path, rank);
            break;
        }
        if (na + nb + 2 > cap) {
            cap = (na + nb + 2) * 2;
            char *p = realloc(tmp, cap);
            if (!p) { rc = pdq_fail(L->st, PDQ_ERR_NOMEM, "%s: out of memory", L->path); break; }
            tmp = p;
        }
        /* both halves to bytes, then look up left, right and their concatenation */
        memcpy(tmp, a, na);
        tmp[na] = '\0';
        uint32_t la, lb;
        char *ba = to_bytes(t, tmp, &la);
        memcpy(tmp, b, nb);
        tmp[nb] = '\0';
        char *bb = to_bytes(t, tmp, &lb);
        if (!ba || !bb) { free(ba); free(bb); rc = pdq_fail(L->st, PDQ_ERR_NOMEM, "%s: out of memory", L->path); break; }
        int32_t ia = tk_strmap_get(&t->vocab, ba, la), ib = tk_strmap_get(&t->vocab, bb, lb), im = -1;
        if (ia >= 0 && ib >= 0) {
            char *cat = malloc((size_t)la + lb + 1);
            if (cat) {
                memcpy(cat, ba, la);
                memcpy(cat + la, bb, lb);
                im = tk_strmap_get(&t->vocab, cat, la + lb);
                free(cat);
            }
        }
        free(ba);
        free(bb);
        /* a merge whose parts or result are not tokens can never apply to vocab symbols */
        if (im >= 0 && tk_pairmap_put(&t->merges, ia, ib, rank, im)) { rc = pdq_fail(L->st, PDQ_ERR_NOMEM, "%s: out of memory", L->path); break; }
        rank++;
    }
    free(tmp);
    return rc;
}

static pdq_code compile_re(loader *L, const char *pat, uint32_t extra, pcre2_code **out) {
    int err;
    PCRE2_SIZE off;
    uint32_t ucp = (extra & PCRE2_LITERAL) ? 0 : PCRE2_UCP; /* PCRE2 refuses UCP with LITERAL */
    *out = pcre2_compile((PCRE2_SPTR)pat, PCRE2_ZERO_TERMINATED, PCRE2_UTF | ucp | extra, &err, &off, NULL);
    if (!*out) {
        PCRE2_UCHAR msg[160];
        pcre2_get_error_message(err, msg, sizeof msg);
        return pdq_fail(L->st, PDQ_ERR_UNSUPPORTED, "%s: regex /%.80s/ at %zu: %s", L->path, pat, (size_t)off, (char *)msg);
    }
    pcre2_jit_compile(*out, PCRE2_JIT_COMPLETE); /* optional speed-up; interpreter otherwise */
    return PDQ_OK;
}

static int prepend_scheme(const cJSON *o) {
    const char *s = jstr(o, "prepend_scheme");
    if (s) return strcmp(s, "never") == 0 ? 0 : strcmp(s, "first") == 0 ? 2 : 1;
    return jbool(o, "add_prefix_space", 1);
}

static pdq_code load_normalizer(loader *L, const cJSON *o) {
    if (!o || cJSON_IsNull(o)) return PDQ_OK;
    const char *ty = jstr(o, "type");
    if (!ty) return unsupported(L, "normalizer", NULL);
    pdq_tokenizer *t = L->t;
    if (strcmp(ty, "Sequence") == 0) {
        const cJSON *e, *a = cJSON_GetObjectItemCaseSensitive(o, "normalizers");
        pdq_code rc;
        cJSON_ArrayForEach(e, a) if ((rc = load_normalizer(L, e))) return rc;
        return PDQ_OK;
    }
    tk_norm nm = {0};
    if (strcmp(ty, "NFC") == 0) {
        nm.kind = TK_NORM_NFC;
        nm.a = dupstr("NFC"); /* a is never NULL for a loaded normalizer */
    } else if (strcmp(ty, "Prepend") == 0 && jstr(o, "prepend")) {
        nm.kind = TK_NORM_PREPEND;
        nm.a = dupstr(jstr(o, "prepend"));
    } else if (strcmp(ty, "Replace") == 0) {
        const char *pat = jstr(cJSON_GetObjectItemCaseSensitive(o, "pattern"), "String");
        if (!pat || !*pat) return unsupported(L, "normalizer Replace (non-String pattern)", ty);
        nm.kind = TK_NORM_REPLACE;
        nm.a = dupstr(pat);
        nm.b = dupstr(jstr(o, "content") ? jstr(o, "content") : "");
    } else
        return unsupported(L, "normalizer", ty);
    tk_norm *p = realloc(t->norm, (size_t)(t->n_norm + 1) * sizeof *p);
    if (p) t->norm = p;
    if (!p || !nm.a) { free(nm.a); free(nm.b); return pdq_fail(L->st, PDQ_ERR_NOMEM, "out of memory"); }
    t->norm[t->n_norm++] = nm;
    return PDQ_OK;
}

static pdq_code add_pre(loader *L, tk_pre pr) {
    tk_pre *p = realloc(L->t->pre, (size_t)(L->t->n_pre + 1) * sizeof *p);
    if (!p) {
        pcre2_code_free(pr.re);
        free(pr.replacement);
        return pdq_fail(L->st, PDQ_ERR_NOMEM, "out of memory");
    }
    L->t->pre = p;
    p[L->t->n_pre++] = pr;
    return PDQ_OK;
}

static pdq_code load_pretok(loader *L, const cJSON *o) {
    if (!o || cJSON_IsNull(o)) return PDQ_OK;
    const char *ty = jstr(o, "type");
    if (!ty) return unsupported(L, "pre_tokenizer", NULL);
    pdq_code rc;
    if (strcmp(ty, "Sequence") == 0) {
        const cJSON *e, *a = cJSON_GetObjectItemCaseSensitive(o, "pretokenizers");
        cJSON_ArrayForEach(e, a) if ((rc = load_pretok(L, e))) return rc;
        return PDQ_OK;
    }
    tk_pre pr = {0};
    if (strcmp(ty, "Split") == 0) {
        const cJSON *pat = cJSON_GetObjectItemCaseSensitive(o, "pattern");
        const char *beh = jstr(o, "behavior");
        if (jbool(o, "invert", 0)) return unsupported(L, "pre_tokenizer Split with invert", ty);
        static const char *const behaviors[] = {"Isolated", "Removed", "MergedWithPrevious", "MergedWithNext"};
        int b = 0;
        while (beh && b < 4 && strcmp(beh, behaviors[b])) b++;
        if (!beh || b == 4) return unsupported(L, "pre_tokenizer Split behavior", beh);
        pr.kind = TK_PRE_SPLIT;
        pr.behavior = (tk_split_kind)b;
        if (jstr(pat, "Regex")) rc = compile_re(L, jstr(pat, "Regex"), 0, &pr.re);
        else if (jstr(pat, "String")) rc = compile_re(L, jstr(pat, "String"), PCRE2_LITERAL, &pr.re);
        else return pdq_fail(L->st, PDQ_ERR_FORMAT, "%s: Split pre_tokenizer without a pattern", L->path);
        if (rc) return rc;
    } else if (strcmp(ty, "ByteLevel") == 0) {
        pr.kind = TK_PRE_BYTELEVEL;
        pr.add_prefix_space = jbool(o, "add_prefix_space", 0);
        if (jbool(o, "use_regex", 1) && (rc = compile_re(L, k_gpt2_re, 0, &pr.re))) return rc;
    } else if (strcmp(ty, "Metaspace") == 0) {
        pr.kind = TK_PRE_METASPACE;
        pr.replacement = dupstr(jstr(o, "replacement") ? jstr(o, "replacement") : "\xE2\x96\x81");
        pr.prepend = prepend_scheme(o);
        pr.split = jbool(o, "split", 1);
        if (!pr.replacement) return pdq_fail(L->st, PDQ_ERR_NOMEM, "out of memory");
    } else
        return unsupported(L, "pre_tokenizer", ty);
    return add_pre(L, pr);
}

static pdq_code add_ids(loader *L, int32_t **v, int *n, const cJSON *item) {
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(item, "SpecialToken");
    const char *name = jstr(st, "id");
    if (!name) return pdq_fail(L->st, PDQ_ERR_FORMAT, "%s: TemplateProcessing item without an id", L->path);
    int32_t id = lookup_token(L->t, name);
    if (id < 0) return pdq_fail(L->st, PDQ_ERR_MISSING, "%s: post_processor special token '%s' is not in the vocabulary", L->path, name);
    int32_t *p = realloc(*v, (size_t)(*n + 1) * sizeof *p);
    if (!p) return pdq_fail(L->st, PDQ_ERR_NOMEM, "out of memory");
    *v = p;
    p[(*n)++] = id;
    return PDQ_OK;
}

static pdq_code load_post(loader *L, const cJSON *o) {
    if (!o || cJSON_IsNull(o)) return PDQ_OK;
    const char *ty = jstr(o, "type");
    pdq_code rc;
    if (ty && strcmp(ty, "Sequence") == 0) {
        const cJSON *e, *a = cJSON_GetObjectItemCaseSensitive(o, "processors");
        cJSON_ArrayForEach(e, a) if ((rc = load_post(L, e))) return rc;
        return PDQ_OK;
    }
    if (ty && strcmp(ty, "ByteLevel") == 0) return PDQ_OK; /* offsets only */
    if (!ty || strcmp(ty, "TemplateProcessing")) return unsupported(L, "post_processor", ty);
    const cJSON *single = cJSON_GetObjectItemCaseSensitive(o, "single"), *e;
    int seen_a = 0;
    pdq_tokenizer *t = L->t;
    cJSON_ArrayForEach(e, single) {
        if (cJSON_GetObjectItemCaseSensitive(e, "Sequence")) seen_a = 1;
        else if ((rc = seen_a ? add_ids(L, &t->suffix, &t->n_suffix, e) : add_ids(L, &t->prefix, &t->n_prefix, e)))
            return rc;
    }
    return PDQ_OK;
}

static pdq_code load_decoder(loader *L, const cJSON *o) {
    if (!o || cJSON_IsNull(o)) return PDQ_OK;
    const char *ty = jstr(o, "type");
    if (!ty) return unsupported(L, "decoder", NULL);
    pdq_code rc;
    if (strcmp(ty, "Sequence") == 0) {
        const cJSON *e, *a = cJSON_GetObjectItemCaseSensitive(o, "decoders");
        cJSON_ArrayForEach(e, a) if ((rc = load_decoder(L, e))) return rc;
        return PDQ_OK;
    }
    tk_dec d = {0};
    if (strcmp(ty, "Replace") == 0) {
        const char *pat = jstr(cJSON_GetObjectItemCaseSensitive(o, "pattern"), "String");
        if (!pat || !*pat) return unsupported(L, "decoder Replace (non-String pattern)", ty);
        d.kind = TK_DEC_REPLACE;
        d.a = dupstr(pat);
        d.b = dupstr(jstr(o, "content") ? jstr(o, "content") : "");
    } else if (strcmp(ty, "ByteFallback") == 0) d.kind = TK_DEC_BYTEFALLBACK;
    else if (strcmp(ty, "Fuse") == 0) d.kind = TK_DEC_FUSE;
    else if (strcmp(ty, "ByteLevel") == 0) d.kind = TK_DEC_BYTELEVEL;
    else if (strcmp(ty, "Strip") == 0) {
        d.kind = TK_DEC_STRIP;
        d.a = dupstr(jstr(o, "content") ? jstr(o, "content") : " ");
        const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, "start"), *b = cJSON_GetObjectItemCaseSensitive(o, "stop");
        d.start = cJSON_IsNumber(a) ? a->valueint : 0;
        d.stop = cJSON_IsNumber(b) ? b->valueint : 0;
    } else if (strcmp(ty, "Metaspace") == 0) {
        d.kind = TK_DEC_METASPACE;
        d.a = dupstr(jstr(o, "replacement") ? jstr(o, "replacement") : "\xE2\x96\x81");
        d.prepend = prepend_scheme(o) != 0;
    } else
        return unsupported(L, "decoder", ty);
    tk_dec *p = realloc(L->t->dec, (size_t)(L->t->n_dec + 1) * sizeof *p);
    if (!p) { free(d.a); free(d.b); return pdq_fail(L->st, PDQ_ERR_NOMEM, "out of memory"); }
    L->t->dec = p;
    p[L->t->n_dec++] = d;
    return PDQ_OK;
}

static pdq_code load_model(loader *L, const cJSON *root) {
    pdq_tokenizer *t = L->t;
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
    if (!cJSON_IsObject(model)) return pdq_fail(L->st, PDQ_ERR_MISSING, "%s: no \"model\" object", L->path);
    const char *ty = jstr(model, "type");
    if (ty ? strcmp(ty, "BPE") != 0 : !cJSON_GetObjectItemCaseSensitive(model, "merges"))
        return pdq_fail(L->st, PDQ_ERR_UNSUPPORTED, "%s: model type '%s' is not supported (only BPE)", L->path,
                        ty ? ty : "(missing)");
    const char *csp = jstr(model, "continuing_subword_prefix"), *eow = jstr(model, "end_of_word_suffix");
    if ((csp && *csp) || (eow && *eow)) /* "" (Qwen) is the same as none */
        return pdq_fail(L->st, PDQ_ERR_UNSUPPORTED, "%s: BPE continuing_subword_prefix/end_of_word_suffix are not supported", L->path);
    t->byte_level = contains_type(cJSON_GetObjectItemCaseSensitive(root, "pre_tokenizer"), "ByteLevel") ||
                    contains_type(cJSON_GetObjectItemCaseSensitive(root, "decoder"), "ByteLevel");
    pdq_code rc;
    if ((rc = load_vocab(L, model, cJSON_GetObjectItemCaseSensitive(root, "added_tokens")))) return rc;
    if ((rc = load_merges(L, model))) return rc;
    t->byte_fallback = jbool(model, "byte_fallback", 0);
    t->ignore_merges = jbool(model, "ignore_merges", 0);
    t->fuse_unk = jbool(model, "fuse_unk", 0);
    t->unk_id = jstr(model, "unk_token") ? lookup_token(t, jstr(model, "unk_token")) : -1;
    for (int b = 0; b < 256; b++) {
        char name[8];
        snprintf(name, sizeof name, "<0x%02X>", b);
        t->byte_id[b] = t->byte_fallback ? tk_strmap_get(&t->vocab, name, 6) : -1;
    }
    return PDQ_OK;
}

/* tokenizer_config.json: BOS/EOS, add_bos/eos_token (LlamaTokenizer rebuilds its template from
 * them), clean_up_tokenization_spaces, additional_special_tokens. */
static const char *token_name(const cJSON *v) {
    if (cJSON_IsString(v)) return v->valuestring;
    return cJSON_IsObject(v) ? jstr(v, "content") : NULL;
}

static pdq_code load_config(loader *L, const cJSON *cfg) {
    pdq_tokenizer *t = L->t;
    const char *bos = token_name(cJSON_GetObjectItemCaseSensitive(cfg, "bos_token"));
    const char *eos = token_name(cJSON_GetObjectItemCaseSensitive(cfg, "eos_token"));
    if (bos) t->bos_id = lookup_token(t, bos);
    if (eos) t->eos_id = lookup_token(t, eos);
    t->cleanup = jbool(cfg, "clean_up_tokenization_spaces", 1);
    const cJSON *e, *extra = cJSON_GetObjectItemCaseSensitive(cfg, "additional_special_tokens");
    cJSON_ArrayForEach(e, extra) {
        const char *n = token_name(e);
        int32_t id = n ? lookup_token(t, n) : -1;
        if (id >= 0) t->special[id] = 1;
    }
    const char *cls = jstr(cfg, "tokenizer_class");
    const cJSON *ab = cJSON_GetObjectItemCaseSensitive(cfg, "add_bos_token");
    const cJSON *ae = cJSON_GetObjectItemCaseSensitive(cfg, "add_eos_token");
    if (cls && strstr(cls, "Llama") && (cJSON_IsBool(ab) || cJSON_IsBool(ae))) {
        int add_bos = cJSON_IsBool(ab) ? cJSON_IsTrue(ab) : 1, add_eos = cJSON_IsBool(ae) && cJSON_IsTrue(ae);
        if ((add_bos && t->bos_id < 0) || (add_eos && t->eos_id < 0))
            return pdq_fail(L->st, PDQ_ERR_MISSING, "%s: add_bos/eos_token set but the bos/eos token is unknown", L->path);
        free(t->prefix);
        free(t->suffix);
        t->prefix = t->suffix = NULL;
        t->n_prefix = t->n_suffix = 0;
        if (add_bos && !(t->prefix = malloc(sizeof(int32_t)))) return pdq_fail(L->st, PDQ_ERR_NOMEM, "out of memory");
        if (add_bos) t->prefix[t->n_prefix++] = t->bos_id;
        if (add_eos && !(t->suffix = malloc(sizeof(int32_t)))) return pdq_fail(L->st, PDQ_ERR_NOMEM, "out of memory");
        if (add_eos) t->suffix[t->n_suffix++] = t->eos_id;
    }
    return PDQ_OK;
}

static cJSON *parse_file(const char *path, int required, pdq_status *st, pdq_code *rc) {
    size_t len;
    pdq_status rst = {0};
    char *text = read_all(path, &len, &rst);
    *rc = PDQ_OK;
    if (!text) {
        if (required || rst.code != PDQ_ERR_IO) { /* absent optional files are fine, oversized ones not */
            if (st) *st = rst;
            *rc = rst.code;
        }
        return NULL;
    }
    /* JSON text is UTF-8 (RFC 8259). Every string of the file (vocab, merges, normalizer and
     * pre-tokenizer pieces) ends up in text handed to PCRE2 without a UTF check, so invalid bytes
     * are refused here, once, for the whole file. */
    size_t valid = tk_utf8_valid_prefix(text, len);
    if (valid != len) {
        *rc = pdq_fail(st, PDQ_ERR_FORMAT, "%s: not valid UTF-8 (byte %zu); JSON text must be UTF-8", path, valid);
        free(text);
        return NULL;
    }
    const char *end = NULL;
    cJSON *j = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    if (!j || !cJSON_IsObject(j)) {
        size_t at = j ? 0 : (size_t)(cJSON_GetErrorPtr() ? cJSON_GetErrorPtr() - text : 0);
        *rc = pdq_fail(st, PDQ_ERR_FORMAT, "%s: not a valid JSON object (error near byte %zu)", path, at);
        cJSON_Delete(j);
        j = NULL;
    }
    free(text);
    return j;
}

pdq_code pdq_tokenizer_load(const char *dir, pdq_tokenizer **out, pdq_status *st) {
    *out = NULL;
    char path[4096], cpath[4096];
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    snprintf(cpath, sizeof cpath, "%s/tokenizer_config.json", dir);
    pdq_code rc;
    cJSON *root = parse_file(path, 1, st, &rc);
    if (!root) return rc;
    pdq_tokenizer *t = calloc(1, sizeof *t);
    loader L = {t, path, st};
    if (!t) { cJSON_Delete(root); return pdq_fail(st, PDQ_ERR_NOMEM, "out of memory"); }
    t->unk_id = t->bos_id = t->eos_id = -1;
    t->cleanup = 1; /* transformers.js default when tokenizer_config.json does not say */
    if (!(rc = load_model(&L, root)) && !(rc = load_normalizer(&L, cJSON_GetObjectItemCaseSensitive(root, "normalizer"))) &&
        !(rc = load_pretok(&L, cJSON_GetObjectItemCaseSensitive(root, "pre_tokenizer"))) &&
        !(rc = load_post(&L, cJSON_GetObjectItemCaseSensitive(root, "post_processor"))))
        rc = load_decoder(&L, cJSON_GetObjectItemCaseSensitive(root, "decoder"));
    cJSON_Delete(root);
    if (!rc) {
        cJSON *cfg = parse_file(cpath, 0, st, &rc);
        L.path = cpath;
        if (cfg) rc = load_config(&L, cfg);
        cJSON_Delete(cfg);
    }
    if (!rc && t->bos_id < 0 && t->n_prefix == 1) t->bos_id = t->prefix[0];
    if (!rc && t->eos_id < 0 && t->n_suffix == 1) t->eos_id = t->suffix[0];
    if (rc) {
        pdq_tokenizer_free(t);
        return rc;
    }
    *out = t;
    return PDQ_OK;
}

void pdq_tokenizer_free(pdq_tokenizer *t) {
    if (!t) return;
    if (t->mtok)
        for (int i = 0; i < t->n_vocab; i++) free(t->mtok[i]);
    free(t->mtok);
    free(t->tok);
    free(t->tok_len);
    free(t->special);
    free(t->added);
    tk_strmap_free(&t->vocab);
    tk_pairmap_free(&t->merges);
    for (int i = 0; i < t->n_add; i++) free(t->add[i].content);
    free(t->add);
    free(t->add_order);
    for (int i = 0; i < t->n_norm; i++) { free(t->norm[i].a); free(t->norm[i].b); }
    free(t->norm);
    for (int i = 0; i < t->n_pre; i++) { pcre2_code_free(t->pre[i].re); free(t->pre[i].replacement); }
    free(t->pre);
    for (int i = 0; i < t->n_dec; i++) { free(t->dec[i].a); free(t->dec[i].b); }
    free(t->dec);
    free(t->prefix);
    free(t->suffix);
    free(t);
}

int pdq_tokenizer_vocab_size(const pdq_tokenizer *t) { return t->n_vocab; }
int pdq_tokenizer_bos_id(const pdq_tokenizer *t) { return t->bos_id; }
int pdq_tokenizer_eos_id(const pdq_tokenizer *t) { return t->eos_id; }
const char *pdq_tokenizer_family(const pdq_tokenizer *t) { return t->byte_level ? "llama3-bpe" : "llama2-bpe"; }
