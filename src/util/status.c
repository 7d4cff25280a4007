#include "pdq/status.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

pdq_code pdq_fail(pdq_status *st, pdq_code code, const char *fmt, ...) {
    if (!st) return code;
    st->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(st->msg, sizeof st->msg, fmt, ap);
    va_end(ap);
    return code;
}

pdq_code pdq_wrap(pdq_status *st, const char *fmt, ...) {
    if (!st) return PDQ_ERR_ARG;
    char prefix[256], old[sizeof st->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, st->msg, sizeof old);
    size_t n = strlen(prefix);
    if (n > sizeof st->msg - 3) n = sizeof st->msg - 3;
    memcpy(st->msg, prefix, n);
    st->msg[n] = ':';
    st->msg[n + 1] = ' ';
    size_t rest = sizeof st->msg - n - 3;
    size_t m = strnlen(old, rest);
    memcpy(st->msg + n + 2, old, m);
    st->msg[n + 2 + m] = '\0';
    return st->code;
}

void pdq_status_clear(pdq_status *st) {
    if (!st) return;
    st->code = PDQ_OK;
    st->msg[0] = '\0';
}

const char *pdq_code_name(pdq_code code) {
    switch (code) {
    case PDQ_OK: return "ok";
    case PDQ_ERR_IO: return "io error";
    case PDQ_ERR_FORMAT: return "format error";
    case PDQ_ERR_SHAPE: return "shape error";
    case PDQ_ERR_MISSING: return "missing";
    case PDQ_ERR_UNSUPPORTED: return "unsupported";
    case PDQ_ERR_ARG: return "bad argument";
    case PDQ_ERR_LIMIT: return "limit exceeded";
    case PDQ_ERR_NUMERIC: return "numeric error";
    case PDQ_ERR_NOMEM: return "out of memory";
    }
    return "unknown error";
}
