/* Whitespace-separated decimal token ids. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "pdq/eval.h"

pdq_code pdq_read_ids_file(const char *path, int32_t **ids, long *n, pdq_status *st) {
    *ids = NULL;
    *n = 0;
    FILE *f = fopen(path, "r");
    if (!f) return pdq_fail(st, PDQ_ERR_IO, "%s: cannot open ids file", path);
    long cap = 1024, count = 0;
    int32_t *buf = malloc((size_t)cap * sizeof *buf);
    pdq_code rc = PDQ_OK;
    char word[32];
    int c = 0;
    while (buf && c != EOF) {
        int len = 0;
        while ((c = fgetc(f)) != EOF && (c == ' ' || c == '\n' || c == '\t' || c == '\r')) {}
        while (c != EOF && c != ' ' && c != '\n' && c != '\t' && c != '\r') {
            if (len < (int)sizeof word - 1) word[len++] = (char)c;
            else { rc = pdq_fail(st, PDQ_ERR_FORMAT, "%s: token %ld is too long to be an id", path, count); goto done; }
            c = fgetc(f);
        }
        if (!len) break;
        word[len] = '\0';
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
            if (!nb) break;
            buf = nb;
        }
        buf[count++] = (int32_t)v;
    }
    if (!buf) rc = pdq_fail(st, PDQ_ERR_NOMEM, "%s", path);
done:
    fclose(f);
    if (rc != PDQ_OK) { free(buf); return rc; }
    *ids = buf;
    *n = count;
    return PDQ_OK;
}
