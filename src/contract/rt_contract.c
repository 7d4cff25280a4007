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

static void negate_sin(float *sin, int n, int rd) {
    for (size_t p = 0; sin && p < (size_t)n; p++)
        for (int i = 0; i < rd / 2; i++) sin[p * (size_t)rd + i] = -sin[p * (size_t)rd + i];
}

void pdq_ctr_rope_tables(const pdq_model *m, int n, const int32_t *pos, int pre_negate, const pdq_ctr_rope *tab) {
    int rd = pdq_cfg_rotary_dim(&m->cfg), sliding = -1;
    pdq_rope_tables(m, n, pos, tab->cos, tab->sin);
    for (int l = 0; l < m->cfg.n_layers && sliding < 0; l++)
        if (pdq_ctr_rope_local(&m->cfg, l)) sliding = l;
    if (tab->cos_local && tab->sin_local && sliding >= 0)
        pdq_rope_tables_layer(m, sliding, n, pos, tab->cos_local, tab->sin_local);
    if (pre_negate) {
        negate_sin(tab->sin, n, rd);
        if (tab->cos_local) negate_sin(tab->sin_local, n, rd);
    }
}

static void copy_row(const float *tab, int rd, int pos, float *rows, size_t row) {
    if (tab && rows) memcpy(rows + row * (size_t)rd, tab + (size_t)pos * rd, sizeof(float) * (size_t)rd);
}

void pdq_ctr_rope_rows(const pdq_ctr_rope *tab, int rd, int pos, const pdq_ctr_rope *rows, size_t row) {
    if (pos < 0) pos = 0;
    copy_row(tab->cos, rd, pos, rows->cos, row);
    copy_row(tab->sin, rd, pos, rows->sin, row);
    copy_row(tab->cos_local, rd, pos, rows->cos_local, row);
    copy_row(tab->sin_local, rd, pos, rows->sin_local, row);
}

void pdq_ctr_whole_io_of(int has_full, int has_ring, int has_local, pdq_ctr_whole_io *io) {
    int n = 0;
    io->ids = n++;
    io->mask_full = has_full ? n++ : -1;
    io->mask_ring = has_ring ? n++ : -1;
    io->cos = n++;
    io->sin = n++;
    io->cos_local = has_local ? n++ : -1;
    io->sin_local = has_local ? n++ : -1;
    io->past = n;
    io->n_shared = n;
}
