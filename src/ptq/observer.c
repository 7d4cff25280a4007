/* Range observers: min/max over everything seen, or a moving average of per-step ranges. A step
 * is one runtime call, so an edge seen several times in a call (shared groups, per-head edges)
 * contributes one range per call. */
#include <math.h>
#include <string.h>

#include "pdq/ptq.h"

const char *pdq_obs_name(pdq_obs_kind k) { return k == PDQ_OBS_EMA ? "ema" : "minmax"; }

int pdq_obs_parse(const char *s) {
    if (!strcmp(s, "minmax")) return PDQ_OBS_MINMAX;
    if (!strcmp(s, "ema")) return PDQ_OBS_EMA;
    return -1;
}

void pdq_observer_init(pdq_observer *o, pdq_obs_kind kind, double momentum) {
    memset(o, 0, sizeof *o);
    o->kind = kind;
    o->momentum = momentum;
}

void pdq_observer_see(pdq_observer *o, const float *x, size_t n) {
    float mn = INFINITY, mx = -INFINITY;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        float v = x[i];
        if (!isfinite(v)) continue;
        if (v < mn) mn = v;
        if (v > mx) mx = v;
        k++;
    }
    o->values += (double)n;
    if (!k) return;
    if (!o->pending || mn < o->cur_min) o->cur_min = mn;
    if (!o->pending || mx > o->cur_max) o->cur_max = mx;
    o->pending = 1;
}

void pdq_observer_step(pdq_observer *o) {
    if (!o->pending) return;
    if (!o->have) {
        o->min = o->cur_min;
        o->max = o->cur_max;
        o->have = 1;
    } else if (o->kind == PDQ_OBS_EMA) {
        o->min = o->momentum * o->min + (1.0 - o->momentum) * o->cur_min;
        o->max = o->momentum * o->max + (1.0 - o->momentum) * o->cur_max;
    } else {
        if (o->cur_min < o->min) o->min = o->cur_min;
        if (o->cur_max > o->max) o->max = o->cur_max;
    }
    o->pending = 0;
    o->steps++;
}
