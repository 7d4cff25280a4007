/* pdq_qexact_*: exact integer sums of a per-channel uint4 or uint8 matrix against int16 activations, for
 * the integer executor, on the integer path's prepared planes and kernels (qmatmul.h). */
#include <string.h>

#include "kernels/qint_internal.h"
#include "kernels/qkernel_internal.h"

int pdq_qexact_ok(const pdq_qmatrix *w) { return w->group == w->cols && !w->perm; }

size_t pdq_qexact_bytes(const pdq_qmatrix *w) {
    qi_plan p;
    qi_plan_make(w, &p);
    return p.stride;
}

void pdq_qexact_prepare(const pdq_qmatrix *w, const int16_t *xq, uint8_t *buf) {
    qi_plan p;
    qi_plan_make(w, &p);
    int16_t *q = (int16_t *)(void *)buf;
    memcpy(q, xq, sizeof(int16_t) * (size_t)w->cols);
    memset(q + w->cols, 0, sizeof(int16_t) * (size_t)(p.ncolp - w->cols));
    if (w->type == PDQ_QT_U4) qi_prepare_planes(&p, buf); /* uint8 kernels read xq itself */
}

/* The reference: the sums written out. */
static void exact_scalar(const pdq_qmatrix *w, const int16_t *xq, int r0, int r1, int64_t *s) {
    for (int r = r0; r < r1; r++) {
        const uint8_t *row = pdq_qmatrix_row(w, r);
        int64_t t = 0;
        for (int c = 0; c < w->cols; c++) t += (int64_t)qk_code(w, row, c) * xq[c];
        s[r - r0] = t;
    }
}

int pdq_qexact_groups_fast(const pdq_qctx *ctx, pdq_qtype type, int G) {
    qi_traits k;
    qi_kernels_at(ctx, &k);
    return type == PDQ_QT_U4 && G > 0 && G % 32 == 0 && k.exact_groups;
}

void pdq_qexact_groups(const pdq_qctx *ctx, const pdq_qmatrix *w, const uint8_t *buf, int G, int r0, int r1, int rend,
                       int64_t *s) {
    qi_plan p;
    qi_plan_make(w, &p);
    int ng = (w->cols + G - 1) / G;
    qi_traits k;
    qi_kernels_at(ctx, &k);
    if (w->type == PDQ_QT_U4 && G > 0 && G % 32 == 0 && k.exact_groups) { /* pdq_qexact_groups_fast */
        k.exact_groups(w, &p, buf, G, r0, r1, rend, s);
        return;
    }
    const int16_t *xq = qi_xq(&p, buf);
    for (int r = r0; r < r1; r++) {
        const uint8_t *row = pdq_qmatrix_row(w, r);
        for (int g = 0; g < ng; g++) {
            int64_t t = 0;
            for (int c = g * G; c < w->cols && c < (g + 1) * G; c++) t += (int64_t)qk_code(w, row, c) * xq[c];
            s[(size_t)(r - r0) * ng + g] = t;
        }
    }
}

void pdq_qexact_rows(const pdq_qctx *ctx, const pdq_qmatrix *w, const uint8_t *buf, int r0, int r1, int rend,
                     int64_t *s) {
    qi_plan p;
    qi_plan_make(w, &p);
    qi_traits k;
    qi_kernels_at(ctx, &k);
    if (k.exact[w->type]) k.exact[w->type](w, &p, buf, r0, r1, rend, s);
    else exact_scalar(w, qi_xq(&p, buf), r0, r1, s);
}
