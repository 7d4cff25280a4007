/* The packed weight matrix: a checked description of codes, scales and zero points. */
#include <stdlib.h>
#include <string.h>

#include "kernels/qkernel_internal.h"

pdq_code pdq_qmatrix_init(pdq_qmatrix *w, pdq_qtype type, int rows, int cols, int group, const uint8_t *codes,
                          const float *scales, const uint8_t *zeros, const int32_t *perm, const char *name,
                          pdq_status *st) {
    memset(w, 0, sizeof *w);
    if (!name) name = "packed weight";
    if (type != PDQ_QT_U4 && type != PDQ_QT_U8)
        return pdq_fail(st, PDQ_ERR_ARG, "%s: unknown packed type %d", name, (int)type);
    if (rows <= 0 || cols <= 0) return pdq_fail(st, PDQ_ERR_SHAPE, "%s: empty matrix [%d, %d]", name, rows, cols);
    if (group <= 0 || group > cols) group = cols;
    if (!codes || !scales || !zeros) return pdq_fail(st, PDQ_ERR_ARG, "%s: codes, scales and zeros are required", name);
    int ng = (cols + group - 1) / group;
    int maxz = type == PDQ_QT_U4 ? 15 : 255;
    for (size_t i = 0; i < (size_t)rows * ng; i++)
        if (zeros[i] > maxz)
            return pdq_fail(st, PDQ_ERR_FORMAT, "%s: zero point %d of grid %zu exceeds the %s range [0, %d]", name,
                            zeros[i], i, type == PDQ_QT_U4 ? "uint4" : "uint8", maxz);
    if (perm)
        for (int c = 0; c < cols; c++)
            if (perm[c] < 0 || perm[c] >= cols)
                return pdq_fail(st, PDQ_ERR_FORMAT, "%s: permutation entry %d = %d outside [0, %d)", name, c, perm[c], cols);
    w->type = type;
    w->rows = rows;
    w->cols = cols;
    w->group = group;
    w->ngroups = ng;
    w->row_bytes = type == PDQ_QT_U4 ? (size_t)(cols + 1) / 2 : (size_t)cols;
    w->codes = codes;
    w->scales = scales;
    w->zeros = zeros;
    w->perm = perm;
    return PDQ_OK;
}

void pdq_qmatrix_free(pdq_qmatrix *w) {
    if (!w) return;
    free(w->owned);
    memset(w, 0, sizeof *w);
}

size_t pdq_qmatrix_bytes(const pdq_qmatrix *w) {
    size_t grids = (size_t)w->rows * (size_t)w->ngroups;
    return (size_t)w->rows * w->row_bytes + grids * (sizeof(float) + 1) + (w->perm ? (size_t)w->cols * 4 : 0);
}

void pdq_qmatrix_dequant_row(const pdq_qmatrix *w, int r, float *out) {
    const uint8_t *row = w->codes + (size_t)r * w->row_bytes;
    for (int c = 0; c < w->cols; c++) {
        size_t g = (size_t)r * w->ngroups + (size_t)(c / w->group);
        out[w->perm ? w->perm[c] : c] = w->scales[g] * ((float)qk_code(w, row, c) - (float)w->zeros[g]);
    }
}
