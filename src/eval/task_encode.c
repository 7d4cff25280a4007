/* The harness's context/continuation token split (lm_eval/api/model.py _encode_pair and the
 * empty-context rule of loglikelihood), and the per-token log-probability. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pdq/tasks.h"

/* Bytes of trailing whitespace as Python's str.rstrip() sees it (Unicode White_Space plus the
 * ASCII separators \x1c-\x1f that str.isspace() also counts). */
static size_t trailing_space(const char *s, size_t n) {
    size_t k = n;
    while (k > 0) {
        const unsigned char *p = (const unsigned char *)s;
        unsigned char c = p[k - 1];
        if (c == ' ' || (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x1f)) { k--; continue; }
        if (k >= 2 && p[k - 2] == 0xc2 && (c == 0x85 || c == 0xa0)) { k -= 2; continue; }
        if (k >= 3) {
            unsigned cp = ((unsigned)(p[k - 3] & 0x0f) << 12) | ((unsigned)(p[k - 2] & 0x3f) << 6) | (c & 0x3f);
            int three = (p[k - 3] & 0xf0) == 0xe0 && (p[k - 2] & 0xc0) == 0x80 && (c & 0xc0) == 0x80;
            if (three && (cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 || cp == 0x2029 ||
                          cp == 0x202f || cp == 0x205f || cp == 0x3000)) {
                k -= 3;
                continue;
            }
        }
        break;
    }
    return n - k;
}

/* The text of the prefix token (BOS, else EOS), "" when the tokenizer has neither. */
static int prefix_token(const pdq_tokenizer *tok) {
    int bos = pdq_tokenizer_bos_id(tok);
    return bos >= 0 ? bos : pdq_tokenizer_eos_id(tok);
}

/* encode(text) as HF's tokenizer.encode with the harness's special-token choice: add_bos 0 is
 * add_special_tokens=False; 1 is the tokenizer's default, except that a text already starting
 * with the prefix token's text gets none (has_bos_prefix). */
static pdq_code encode(const pdq_tokenizer *tok, const char *text, size_t n, int add_bos, const char *prefix_text,
                       int32_t **ids, size_t *n_ids, pdq_status *st) {
    int special = add_bos;
    if (special && prefix_text[0] && strncmp(text, prefix_text, strlen(prefix_text)) == 0 && n >= strlen(prefix_text))
        special = 0;
    return pdq_tokenizer_encode(tok, text, n, special, ids, n_ids, st);
}

void pdq_ll_request_free(pdq_ll_request *r) {
    if (!r) return;
    free(r->ctx);
    free(r->cont);
    memset(r, 0, sizeof *r);
}

static pdq_code empty_context(const pdq_tokenizer *tok, const char *continuation, pdq_ll_request *out,
                              pdq_status *st) {
    int32_t *ids = NULL;
    size_t n = 0;
    int prefix = prefix_token(tok);
    if (prefix < 0) return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "empty context: the tokenizer has neither BOS nor EOS to stand for it");
    if (pdq_tokenizer_encode(tok, continuation, strlen(continuation), 0, &ids, &n, st) != PDQ_OK) return st->code;
    /* the continuation already starting with the prefix token keeps it as the context */
    int own = n > 0 && ids[0] == prefix;
    if (n == 0 || (own && n == 1)) {
        free(ids);
        return pdq_fail(st, PDQ_ERR_ARG, "empty context and a continuation of no tokens to score");
    }
    out->ctx = malloc(sizeof *out->ctx);
    out->cont = malloc((n - (size_t)own) * sizeof *out->cont);
    if (!out->ctx || !out->cont) {
        free(ids);
        pdq_ll_request_free(out);
        return pdq_fail(st, PDQ_ERR_NOMEM, "out of memory encoding a request");
    }
    out->ctx[0] = prefix;
    out->n_ctx = 1;
    out->n_cont = (int)(n - (size_t)own);
    memcpy(out->cont, ids + own, (size_t)out->n_cont * sizeof *ids);
    free(ids);
    return PDQ_OK;
}

pdq_code pdq_ll_encode(const pdq_tokenizer *tok, const char *context, const char *continuation, int add_bos,
                       pdq_ll_request *out, pdq_status *st) {
    memset(out, 0, sizeof *out);
    if (!context[0]) return empty_context(tok, continuation, out, st);
    size_t n_ctx = strlen(context), n_cont = strlen(continuation);
    size_t sp = trailing_space(context, n_ctx);
    n_ctx -= sp; /* the context's trailing whitespace starts the continuation */
    char *whole = malloc(n_ctx + sp + n_cont + 1);
    char *prefix_text = NULL;
    int prefix = prefix_token(tok);
    if (!whole) return pdq_fail(st, PDQ_ERR_NOMEM, "out of memory encoding a request");
    memcpy(whole, context, n_ctx + sp);
    memcpy(whole + n_ctx + sp, continuation, n_cont + 1);
    if (prefix >= 0 && pdq_tokenizer_decode(tok, &prefix, 1, 0, &prefix_text, st) != PDQ_OK) {
        free(whole);
        return st->code;
    }
    int32_t *w = NULL, *c = NULL;
    size_t nw = 0, nc = 0;
    pdq_code rc = encode(tok, whole, n_ctx + sp + n_cont, add_bos, prefix_text ? prefix_text : "", &w, &nw, st);
    if (rc == PDQ_OK) rc = encode(tok, whole, n_ctx, add_bos, prefix_text ? prefix_text : "", &c, &nc, st);
    free(whole);
    free(prefix_text);
    if (rc != PDQ_OK) {
        free(w);
        free(c);
        return rc;
    }
    if (nc == 0 || nw <= nc) {
        free(w);
        free(c);
        return pdq_fail(st, PDQ_ERR_ARG, nc == 0 ? "the context encodes to no tokens (whitespace only, without BOS)"
                                                 : "the continuation encodes to no tokens after the context's");
    }
    out->ctx = c;
    out->n_ctx = (int)nc;
    out->n_cont = (int)(nw - nc);
    out->cont = malloc((size_t)out->n_cont * sizeof *out->cont);
    if (!out->cont) {
        free(w);
        pdq_ll_request_free(out);
        return pdq_fail(st, PDQ_ERR_NOMEM, "out of memory encoding a request");
    }
    memcpy(out->cont, w + nc, (size_t)out->n_cont * sizeof *w);
    free(w);
    return PDQ_OK;
}

double pdq_ll_token(const float *logits, int vocab, int32_t target, int *is_argmax) {
    int best = 0;
    for (int v = 1; v < vocab; v++)
        if (logits[v] > logits[best]) best = v;
    double mx = logits[best], s = 0;
    for (int v = 0; v < vocab; v++) s += exp((double)logits[v] - mx);
    if (is_argmax) *is_argmax = best == target;
    return (double)logits[target] - mx - log(s);
}

long pdq_utf8_chars(const char *s) {
    long n = 0;
    for (; *s; s++)
        if (((unsigned char)*s & 0xc0) != 0x80) n++;
    return n;
}
