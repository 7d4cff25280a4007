/* The integer path's block plan and activation rounding (the rule of qmatmul.h), shared by every
 * kernel so that they all see the same xq, and the GEMM's weight panels. */
#include <float.h>
#include <string.h>

#include "kernels/qint_internal.h"
#include "kernels/qkernel_internal.h"

int qi_plan_make(const pdq_qmatrix *w, qi_plan *p) {
    memset(p, 0, sizeof *p);
    if (w->type != PDQ_QT_U4 && w->type != PDQ_QT_U8) return 0;
    int per_channel = w->group >= w->cols;
    if (per_channel || w->group % QI_STEP == 0) p->B = QI_STEP;
    else if (w->group == 32 || w->group == 64) p->B = w->group;
    else return 0;
    p->nblocks = (w->cols + p->B - 1) / p->B;
    p->nsteps = (w->cols + QI_STEP - 1) / QI_STEP;
    p->ncolp = p->nsteps * QI_STEP;
    p->bpg = per_channel ? p->nblocks : w->group / p->B;
    p->off_planes = (size_t)p->ncolp * 2;
    p->off_xs = p->off_planes + (size_t)p->nsteps * 4 * 64; /* the byte planes (uint4 and uint8 layouts) */
    p->off_sx = p->off_xs + (size_t)p->nblocks * 4;
    p->stride = (p->off_sx + (size_t)p->nblocks * 4 + 63) / 64 * 64;
    return 1;
}

void qi_prepare_x(const pdq_qmatrix *w, const qi_plan *p, const float *x, uint8_t *out, int planes) {
    int16_t *xq = (int16_t *)out;
    float *xs = (float *)(out + p->off_xs);
    int32_t *sx = (int32_t *)(out + p->off_sx);
    for (int b = 0; b < p->nblocks; b++) {
        int c0 = b * p->B, c1 = c0 + p->B < w->cols ? c0 + p->B : w->cols;
        float m = 0.0f;
        int finite = 1;
        for (int c = c0; c < c1; c++) {
            float a = fabsf(x[w->perm ? w->perm[c] : c]);
            if (!(a <= FLT_MAX)) finite = 0; /* Inf or NaN */
            else if (a > m) m = a;
        }
        float s = finite ? m / 32767.0f : NAN;
        int32_t sum = 0;
        for (int c = c0; c < c1; c++) {
            int32_t q = 0;
            if (finite && s > 0.0f) {
                float v = rintf(x[w->perm ? w->perm[c] : c] / s); /* half to even (the default mode) */
                q = v > 32767.0f ? 32767 : v < -32767.0f ? -32767 : (int32_t)v;
            }
            xq[c] = (int16_t)q;
            sum += q;
        }
        xs[b] = s;
        sx[b] = sum;
    }
    for (int c = w->cols; c < p->ncolp; c++) xq[c] = 0;
    if (planes) (w->type == PDQ_QT_U4 ? qi_prepare_planes : qi_prepare_planes_u8)(p, out);
}

void qi_prepare_planes_u8(const qi_plan *p, uint8_t *out) {
    const int16_t *xq = (const int16_t *)out;
    uint8_t *pl = out + p->off_planes;
    for (int s = 0; s < p->nsteps; s++, pl += 256)
        for (int j = 0; j < QI_STEP; j++) {
            int q = xq[s * QI_STEP + j];
            pl[j] = (uint8_t)(int8_t)(q >> 8); /* xh, as the uint4 planes, in column order */
            pl[QI_STEP + j] = (uint8_t)(q & 0xFF);
        }
}

void qi_prepare_planes(const qi_plan *p, uint8_t *out) {
    const int16_t *xq = (const int16_t *)out;
    int8_t *pl = (int8_t *)(out + p->off_planes);
    for (int s = 0; s < p->nsteps; s++, pl += 256)
        for (int j = 0; j < 64; j++)
            for (int odd = 0; odd < 2; odd++) {
                int q = xq[s * QI_STEP + 2 * j + odd];
                pl[odd * 64 + j] = (int8_t)(q >> 8);          /* xh: floor(q / 256), in [-128, 127] */
                ((uint8_t *)pl)[128 + odd * 64 + j] = (uint8_t)(q & 0xFF); /* xl = q - 256 xh */
            }
}

void qi_panel_decode_tail(const pdq_qmatrix *w, const qi_plan *p, int r, int nr, int32_t *panel, float *pscale,
                          int32_t *zt, int j0) {
    int pairs = p->ncolp / 2;
    for (int l = 0; l < QI_PANEL; l++) {
        if (l >= nr) {
            for (int j = j0; j < pairs; j++) panel[(size_t)j * QI_PANEL + l] = 0;
            for (int g = 0; g < w->ngroups; g++) pscale[g * QI_PANEL + l] = 0.0f, zt[g * QI_PANEL + l] = 0;
            continue;
        }
        const uint8_t *row = pdq_qmatrix_row(w, r + l);
        const uint8_t *z = qk_zeros(w, r + l);
        for (int j = j0; j < pairs; j++) {
            int c = 2 * j, v0 = 0, v1 = 0;
            /* groups have an even number of columns (or there is one), so both share a zero */
            int zz = c < w->cols ? z[c / w->group] : 0;
            if (c < w->cols) v0 = qk_code(w, row, c) - zz;
            if (c + 1 < w->cols) v1 = qk_code(w, row, c + 1) - zz;
            panel[(size_t)j * QI_PANEL + l] = (int32_t)((uint32_t)(uint16_t)v0 | (uint32_t)(uint16_t)v1 << 16);
        }
        for (int g = 0; g < w->ngroups; g++) {
            pscale[g * QI_PANEL + l] = qk_scale(w, r + l, g);
            zt[g * QI_PANEL + l] = (int32_t)z[g] * 0x10001;
        }
    }
}

