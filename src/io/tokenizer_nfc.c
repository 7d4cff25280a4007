/* Unicode NFC for the tokenizer.json "NFC" normalizer (Qwen2/Qwen3), through ICU, the library
 * whose tables JavaScript's String.prototype.normalize uses in V8 (the fixtures' reference). */
#include <unicode/unorm2.h>
#include <unicode/ustring.h>
#include <stdlib.h>

#include "tokenizer_internal.h"

/* UTF-16 lengths are int32 in ICU; sections longer than this are refused as out of memory. */
#define NFC_MAX_BYTES ((size_t)1 << 29)

int tk_nfc(const char *s, size_t n, tk_buf *out) {
    out->n = 0;
    size_t i = 0;
    while (i < n && (unsigned char)s[i] < 0x80) i++;
    if (i == n) return tk_buf_put(out, s, n); /* ASCII is already NFC */
    if (n > NFC_MAX_BYTES) return -1;
    UErrorCode e = U_ZERO_ERROR;
    const UNormalizer2 *nfc = unorm2_getNFCInstance(&e);
    if (U_FAILURE(e)) return -1;
    int32_t n16 = 0;
    UChar *a = malloc((n + 1) * sizeof *a), *b = NULL;
    int rc = -1;
    if (!a) return -1;
    u_strFromUTF8(a, (int32_t)n + 1, &n16, s, (int32_t)n, &e);
    if (U_FAILURE(e)) goto done;
    int32_t cap = n16 * 3 + 16; /* NFC can expand (e.g. U+0344 -> 2 code points) */
    if (!(b = malloc((size_t)cap * sizeof *b))) goto done;
    int32_t nb = unorm2_normalize(nfc, a, n16, b, cap, &e);
    if (U_FAILURE(e)) goto done;
    int32_t n8 = 0;
    u_strToUTF8(NULL, 0, &n8, b, nb, &e); /* preflight: the UTF-8 length */
    if (e != U_BUFFER_OVERFLOW_ERROR && U_FAILURE(e)) goto done;
    e = U_ZERO_ERROR;
    if ((size_t)n8 + 1 > out->cap) {
        char *p = realloc(out->p, (size_t)n8 + 1);
        if (!p) goto done;
        out->p = p;
        out->cap = (size_t)n8 + 1;
    }
    u_strToUTF8(out->p, n8 + 1, &n8, b, nb, &e);
    if (U_SUCCESS(e)) {
        out->n = (size_t)n8;
        out->p[n8] = '\0';
        rc = 0;
    }
done:
    free(a);
    free(b);
    return rc;
}
