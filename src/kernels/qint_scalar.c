/* The integer path's reference GEMV: the rule of qmatmul.h written out, one row at a time. */
#include "kernels/qint_internal.h"
#include "kernels/qkernel_internal.h"

void qi_gemv_scalar(const pdq_qmatrix *w, const qi_plan *p, const uint8_t *xt, int r0, int r1, int rend, float *y) {
    (void)rend; /* nothing prefetched */
    const int16_t *xq = qi_xq(p, xt);
    const float *xs = qi_xs(p, xt);
    for (int r = r0; r < r1; r++) {
        const uint8_t *row = pdq_qmatrix_row(w, r);
        const uint8_t *z = qk_zeros(w, r);
        float acc = 0.0f, t = 0.0f;
        for (int b = 0; b < p->nblocks; b++) {
            int c0 = b * p->B, c1 = c0 + p->B < w->cols ? c0 + p->B : w->cols, g = b / p->bpg;
            int32_t s = 0, zz = z[g];
            for (int c = c0; c < c1; c++) s += (qk_code(w, row, c) - zz) * xq[c];
            t = fmaf(xs[b], (float)s, t);
            if (qi_last_in_group(p, b)) {
                acc = fmaf(qk_scale(w, r, g), t, acc);
                t = 0.0f;
            }
        }
        y[r] = acc;
    }
}
