/* Append-prefill buckets: the list an export is asked for (--append-bucket 1,4,16) and the bucket
 * sequence the runtime uses for one turn. A turn of n tokens at cache length len is fed greedily:
 * the largest bucket Q with Q <= the tokens left and len + Q <= max_seq (the append graph's past
 * holds max_seq - Q slots), then smaller ones; Q = 1 is the decode graph and always fits while
 * the context has room, so every length is covered without padding. */
#include <stdlib.h>
#include <string.h>

#include "pdq/circle_export.h"

static int cmp_int(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

pdq_code pdq_buckets_parse(const char *s, int max_seq, int *out, int *n, pdq_status *st) {
    *n = 0;
    if (!s || !*s) return pdq_fail(st, PDQ_ERR_ARG, "append buckets: empty list");
    const char *p = s;
    while (*p) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || (*end && *end != ','))
            return pdq_fail(st, PDQ_ERR_ARG, "append buckets: '%s' is not a comma-separated list of integers", s);
        if (v < 1 || v >= max_seq)
            return pdq_fail(st, PDQ_ERR_LIMIT, "append buckets: %ld must be in [1, max_seq-1 = %d]", v, max_seq - 1);
        int seen = 0;
        for (int i = 0; i < *n; i++) seen |= out[i] == (int)v;
        if (!seen) {
            if (*n >= PDQ_MAX_BUCKETS)
                return pdq_fail(st, PDQ_ERR_LIMIT, "append buckets: more than %d distinct sizes in '%s'", PDQ_MAX_BUCKETS, s);
            out[(*n)++] = (int)v;
        }
        p = *end ? end + 1 : end;
        if (*end && !*p) return pdq_fail(st, PDQ_ERR_ARG, "append buckets: '%s' ends with a comma", s);
    }
    qsort(out, (size_t)*n, sizeof *out, cmp_int);
    return PDQ_OK;
}

int pdq_buckets_plan(const int *buckets, int nb, int len, int n, int max_seq, int *plan, int cap) {
    int k = 0;
    while (n > 0) {
        if (len + 1 > max_seq || k >= cap) return -1;
        int q = 1; /* decode: always available */
        for (int i = 0; i < nb; i++)
            if (buckets[i] > q && buckets[i] <= n && len + buckets[i] <= max_seq) q = buckets[i];
        plan[k++] = q;
        len += q;
        n -= q;
    }
    return k;
}
