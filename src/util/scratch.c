/* The buffer of scratch.h. Growth takes the larger of the request and 1.5x the old size, so a
 * sequence of slowly growing calls (a prompt's KV length) reallocates a logarithmic number of
 * times. */
#include "util/scratch.h"

#include <stdlib.h>

void *pdq_scratch_get(pdq_scratch *s, size_t bytes) {
    if (bytes <= s->cap && s->p) return s->p;
    size_t want = s->cap + s->cap / 2 > bytes ? s->cap + s->cap / 2 : bytes;
    want = pdq_scratch_size(want ? want : 64);
    free(s->p);
    s->p = aligned_alloc(64, want);
    s->cap = s->p ? want : 0;
    return s->p;
}

void pdq_scratch_free(pdq_scratch *s) {
    free(s->p);
    s->p = NULL;
    s->cap = 0;
}
