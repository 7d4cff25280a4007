/* Whitespace-separated decimal token ids. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "pdq/eval.h"
#include "pdq/file.h"

static int is_space(int c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

pdq_code pdq_read_ids_file(const char *path, int32_t **ids, long *n, pdq_status *st) {
    *ids = NULL;
    *n = 0;
    char *text;
    size_t len;
    pdq_code rc = pdq_file_read(path, PDQ_FILE_MAX_TEXT, &text, &len, st);
    if (rc) return pdq_wrap(st, "ids file");
    long cap = 1024, count = 0;
    int32_t *buf = malloc((size_t)cap * sizeof *buf);
    char word[32];
    size_t i = 0;
    while (buf) {
        int wl = 0;
        while (i < len && is_space(text[i])) i++;
        while (i < len && !is_space(text[i])) {
            if (wl < (int)sizeof word - 1) word[wl++] = text[i++];
            else { rc = pdq_fail(st, PDQ_ERR_FORMAT, "%s: token %ld is too long to be an id", path, count); goto done; }
        }
        if (!wl) break;
        word[wl] = '\0';
        char *end;
        errno = 0;
        long v = strtol(word, &end, 10);
        if (errno || *end || v < 0 || v > INT32_MAX) {
            rc = pdq_fail(st, PDQ_ERR_FORMAT, "%s: '%s' (entry %ld) is not a token id", path, word, count);
            goto done;
        }
        if (count == cap) {
            cap *= 2;
            int32_t *nb = realloc(buf, (size_t)cap * sizeof *buf);
            if (!nb) { rc = pdq_fail(st, PDQ_ERR_NOMEM, "%s: out of memory for %ld ids", path, cap); goto done; }
            buf = nb;
        }
        buf[count++] = (int32_t)v;
    }
    if (!buf) rc = pdq_fail(st, PDQ_ERR_NOMEM, "%s", path);
done:
    free(text);
    if (rc != PDQ_OK) { free(buf); return rc; }
    *ids = buf;
    *n = count;
    return PDQ_OK;
}
