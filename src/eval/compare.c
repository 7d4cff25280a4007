/* Logit comparison statistics used by verify and tests. */
#include <math.h>

#include "pdq/eval.h"

int pdq_argmax(const float *x, int n) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

void pdq_compare_logits(const float *ref, const float *got, int vocab, pdq_logit_cmp *out) {
    double sum = 0.0, mx = 0.0;
    float lo = ref[0], hi = ref[0];
    for (int i = 0; i < vocab; i++) {
        double d = fabs((double)ref[i] - (double)got[i]);
        if (isnan(d)) d = INFINITY; /* a NaN must never look like agreement */
        sum += d;
        if (d > mx) mx = d;
        if (ref[i] < lo) lo = ref[i];
        if (ref[i] > hi) hi = ref[i];
    }
    out->mean_abs_diff = sum / vocab;
    out->max_abs_diff = mx;
    out->peir = hi > lo ? mx / ((double)hi - (double)lo) : mx;
    out->top1_agree = pdq_argmax(ref, vocab) == pdq_argmax(got, vocab);
}
