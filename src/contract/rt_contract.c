/* The runtime contract (rt_contract.h). */
#include "contract/rt_contract.h"

#include <stddef.h>
#include <string.h>

/* Key position k is in the window of query position p (window 0: no window). */
static int in_window(int k, int p, int window) { return window <= 0 || k > p - window; }

int pdq_ctr_has_type(const pdq_config *c, int max_seq, int ring) {
    for (int l = 0; l < c->n_layers; l++)
        if ((pdq_ctr_ring(c, max_seq, l) > 0) == (ring != 0)) return 1;
    return 0;
}

void pdq_ctr_prefill_mask(const int *pos, int S, int window, float fill, float *mask) {
    for (int i = 0; i < S; i++) {
        float *row = mask + (size_t)i * S;
        int pi = pos[i];
        for (int j = 0; j < S; j++)
            row[j] = (pi >= 0 && pos[j] >= 0 && pos[j] <= pi && in_window(pos[j], pi, window)) ? 0.0f : fill;
    }
}

void pdq_ctr_append_mask_row(int max_seq, int Q, int len, int q, int real, int window, float fill, float *row) {
    int P = max_seq - Q;
    for (int j = 0; j < max_seq; j++) row[j] = fill;
    if (!real) {
        row[P + q] = 0.0f;
        return;
    }
    for (int j = 0; j < len; j++)
        if (in_window(j, len + q, window)) row[j] = 0.0f;
    for (int i = 0; i <= q; i++)
        if (in_window(len + i, len + q, window)) row[P + i] = 0.0f;
}

void pdq_ctr_ring_mask_row(int ring, int window, int Q, int len, int q, int real, float fill, float *row) {
    for (int j = 0; j < ring + Q; j++) row[j] = fill;
    if (!real) {
        row[ring + q] = 0.0f;
        return;
    }
    for (int j = 0; j < ring && j < len; j++) {
        int p = j + ring * ((len - 1 - j) / ring); /* the latest position < len in slot j */
        if (in_window(p, len + q, window)) row[j] = 0.0f;
    }
    for (int i = 0; i <= q; i++)
        if (in_window(len + i, len + q, window)) row[ring + i] = 0.0f;
}

void pdq_ctr_type_mask_row(int ring, int window, int max_seq, int Q, int len, int q, int real, float fill, float *row) {
    if (ring) pdq_ctr_ring_mask_row(ring, window, Q, len, q, real, fill, row);
    else pdq_ctr_append_mask_row(max_seq, Q, len, q, real, 0, fill, row);
}

void pdq_ctr_rope_row(const float *cos_tab, const float *sin_tab, int hd, int pos, float *cos, float *sin) {
    memcpy(cos, cos_tab + (size_t)pos * hd, sizeof(float) * (size_t)hd);
    memcpy(sin, sin_tab + (size_t)pos * hd, sizeof(float) * (size_t)hd);
}

void pdq_ctr_whole_io_of(int has_full, int has_ring, pdq_ctr_whole_io *io) {
    int n = 0;
    io->ids = n++;
    io->mask_full = has_full ? n++ : -1;
    io->mask_ring = has_ring ? n++ : -1;
    io->cos = n++;
    io->sin = n++;
    io->past = n;
    io->n_shared = n;
}
