/* The portable kernels: the summation order of qmatmul.h written with 16-element arrays and
 * fmaf, so they give the SIMD kernels' results bit for bit on any CPU. */
#include <math.h>

#include "kernels/qkernel_internal.h"

static float row_dot(const pdq_qmatrix *w, int r, const float *xt) {
    int b = qk_block(w), gs = qk_group_stride(w), ng = w->ngroups;
    const uint8_t *row = pdq_qmatrix_row(w, r);
    float acc[16] = {0};
    int32_t v[32];
    for (int g = 0; g < ng; g++) {
        int c0 = g * w->group, c1 = c0 + qk_group_len(w, g);
        const float *xg = xt + (size_t)g * gs;
        float d[16] = {0};
        for (int c = c0; c < c1; c += b) {
            qk_decode_block(w, row, c, c1, v);
            const float *xb = xg + (c - c0);
            for (int l = 0; l < 16; l++) d[l] = fmaf(xb[l], (float)v[l], d[l]);
            if (b == 32)
                for (int l = 0; l < 16; l++) d[l] = fmaf(xb[16 + l], (float)v[16 + l], d[l]);
        }
        float s = qk_scale(w, r, g);
        for (int l = 0; l < 16; l++) acc[l] = fmaf(s, d[l], acc[l]);
    }
    return qk_hsum16(acc) - qk_zero_term(w, r, xt);
}

void qk_gemv_u4_scalar(const pdq_qmatrix *w, const float *xt, int r0, int r1, float *y) {
    for (int r = r0; r < r1; r++) y[r] = row_dot(w, r, xt);
}

void qk_gemv_u8_scalar(const pdq_qmatrix *w, const float *xt, int r0, int r1, float *y) {
    for (int r = r0; r < r1; r++) y[r] = row_dot(w, r, xt);
}

/* Over the decoded slots, 8 floats at a time: vector q feeds lanes (q % 2) * 8 ... + 7, which is
 * the GEMV's lane of every slot (blocks are whole multiples of 16 slots). */
void qk_panel_scalar(const pdq_qmatrix *w, const float *xt, const float *wf, int r, int nr, float *y) {
    int b = qk_block(w), gs = qk_group_stride(w), ng = w->ngroups, len = qk_xt_stride(w);
    for (int k = 0; k < nr; k++) {
        const float *wk = wf + (size_t)k * len;
        float acc[16] = {0};
        for (int g = 0; g < ng; g++) {
            int nv = (qk_group_len(w, g) + b - 1) / b * b / 8;
            const float *xg = xt + (size_t)g * gs, *wg = wk + (size_t)g * gs;
            float d[16] = {0};
            for (int q = 0; q < nv; q++) {
                float *dh = d + (q & 1) * 8;
                for (int l = 0; l < 8; l++) dh[l] = fmaf(xg[8 * q + l], wg[8 * q + l], dh[l]);
            }
            float s = qk_scale(w, r + k, g);
            for (int l = 0; l < 16; l++) acc[l] = fmaf(s, d[l], acc[l]);
        }
        y[k] = qk_hsum16(acc) - qk_zero_term(w, r + k, xt);
    }
}
