/* Errors are values: every fallible call returns a pdq_code and fills a pdq_status. */
#ifndef PDQ_STATUS_H
#define PDQ_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    PDQ_OK = 0,
    PDQ_ERR_IO,          /* file missing, unreadable, short read */
    PDQ_ERR_FORMAT,      /* malformed file: bad JSON, bad header, bad offsets */
    PDQ_ERR_SHAPE,       /* a tensor or argument has the wrong shape */
    PDQ_ERR_MISSING,     /* a required tensor / field is absent */
    PDQ_ERR_UNSUPPORTED, /* valid input we do not handle (model_type, dtype, feature) */
    PDQ_ERR_ARG,         /* bad argument / inconsistent options */
    PDQ_ERR_LIMIT,       /* a static limit exceeded: max_seq, cache full, bucket size */
    PDQ_ERR_NUMERIC,     /* NaN/Inf, singular matrix */
    PDQ_ERR_NOMEM
} pdq_code;

typedef struct pdq_status {
    pdq_code code;
    char msg[512];
} pdq_status;

/* Records the error (printf-style message) and returns code; safe with st == NULL. */
pdq_code pdq_fail(pdq_status *st, pdq_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prefixes an existing message with context ("loading X: <old message>"); returns st->code. */
pdq_code pdq_wrap(pdq_status *st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

void pdq_status_clear(pdq_status *st);
const char *pdq_code_name(pdq_code code);

#ifdef __cplusplus
}
#endif
#endif
