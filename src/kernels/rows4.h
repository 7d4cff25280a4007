/* Four consecutive rows of a packed matrix, as the 4-row GEMVs walk them. Rows past the end
 * (k >= nr) repeat the last one: the kernels compute them and do not store them. */
#ifndef PDQ_KERNELS_ROWS4_H
#define PDQ_KERNELS_ROWS4_H

#include "kernels/qmatmul.h"

typedef struct {
    const uint8_t *row[4], *zero[4];
    const float *scale[4];
} qk_rows4;

static inline void qk_rows4_init(const pdq_qmatrix *w, int r, int nr, qk_rows4 *p) {
    for (int k = 0; k < 4; k++) {
        int rk = r + (k < nr ? k : nr - 1);
        p->row[k] = w->codes + (size_t)rk * w->row_bytes;
        p->zero[k] = w->zeros + (size_t)rk * w->ngroups;
        p->scale[k] = w->scales + (size_t)rk * w->ngroups;
    }
}

#endif
