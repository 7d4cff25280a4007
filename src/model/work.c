/* The forward's kept scratch (work.h). */
#include "model/work.h"

#include <stdlib.h>

struct pdq_fwd_work *pdq_fwd_work_new(void) { return calloc(1, sizeof(struct pdq_fwd_work)); }

void pdq_fwd_work_free(struct pdq_fwd_work *w) {
    if (!w) return;
    pdq_scratch_free(&w->layer);
    pdq_scratch_free(&w->hidden);
    pdq_scratch_free(&w->head);
    pdq_scratch_free(&w->kern);
    free(w);
}
