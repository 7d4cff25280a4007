/* The packed weight matrix: a checked description of codes, scales and zero points. */
#include <stdlib.h>
#include <string.h>

#include "kernels/qkernel_internal.h"

pdq_code pdq_qmatrix_init(pdq_qmatrix *w, pdq_qtype type, int rows, int cols, int group, const uint8_t *codes,
                          const float *scales, const uint8_t *zeros, const int32_t *perm, const char *name,
                          pdq_status *st) {
    int g = group <= 0 || group > cols ? cols : group;
    size_t ng = cols > 0 ? (size_t)(cols + g - 1) / (size_t)g : 1;
    return pdq_qmatrix_init_grids(w, type, rows, cols, group, codes, scales, PDQ_QSCALE_F32, zeros, ng, perm, name, st);
}

pdq_code pdq_qmatrix_init_grids(pdq_qmatrix *w, pdq_qtype type, int rows, int cols, int group, const uint8_t *codes,
                                const void *scales, pdq_qscale_type scale_type, const uint8_t *zeros,
                                size_t zero_stride, const int32_t *perm, const char *name, pdq_status *st) {
    memset(w, 0, sizeof *w);
    if (!name) name = "packed weight";
    if (type != PDQ_QT_U4 && type != PDQ_QT_U8)
        return pdq_fail(st, PDQ_ERR_ARG, "%s: unknown packed type %d", name, (int)type);
    if (rows <= 0 || cols <= 0) return pdq_fail(st, PDQ_ERR_SHAPE, "%s: empty matrix [%d, %d]", name, rows, cols);
    if (group <= 0 || group > cols) group = cols;
    if (!codes || !scales || !zeros) return pdq_fail(st, PDQ_ERR_ARG, "%s: codes, scales and zeros are required", name);
    int ng = (cols + group - 1) / group;
    int maxz = type == PDQ_QT_U4 ? 15 : 255;
    if (scale_type != PDQ_QSCALE_F32 && scale_type != PDQ_QSCALE_F16 && scale_type != PDQ_QSCALE_BF16)
        return pdq_fail(st, PDQ_ERR_ARG, "%s: unknown scale type %d", name, (int)scale_type);
    if (scale_type != PDQ_QSCALE_F32 && ng > PDQ_QMATRIX_MAX_COMPACT_GROUPS)
        return pdq_fail(st, PDQ_ERR_LIMIT, "%s: %d groups with %s scales: at most %d (widen them to F32)", name, ng,
                        pdq_qscale_name(scale_type), PDQ_QMATRIX_MAX_COMPACT_GROUPS);
    if (zero_stride != 0 && zero_stride != (size_t)ng)
        return pdq_fail(st, PDQ_ERR_ARG, "%s: zero-point stride %zu: must be 0 or %d", name, zero_stride, ng);
    for (size_t i = 0; i < (zero_stride ? (size_t)rows : 1) * ng; i++)
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
    w->layout = PDQ_QL_ROWS;
    w->row_step = w->row_bytes;
    w->chunk_step = 64;
    w->codes = codes;
    w->scale_type = scale_type;
    if (scale_type == PDQ_QSCALE_F32) w->scales = scales;
    else w->scales16 = scales;
    w->zeros = zeros;
    w->zero_stride = zero_stride;
    w->perm = perm;
    return PDQ_OK;
}

void pdq_qmatrix_free(pdq_qmatrix *w) {
    if (!w) return;
    free(w->owned);
    free(w->owned_codes);
    memset(w, 0, sizeof *w);
}

int pdq_qmatrix_rows4_ok(const pdq_qmatrix *w) {
    size_t gb = w->type == PDQ_QT_U4 ? (size_t)w->group / 2 : (size_t)w->group;
    int whole = w->type == PDQ_QT_U8 || w->group % 2 == 0;
    return w->layout == PDQ_QL_ROWS && w->row_bytes % 64 == 0 && (w->group == w->cols || (whole && gb % 16 == 0));
}

size_t pdq_qmatrix_rows4_bytes(const pdq_qmatrix *w) { return ((size_t)w->rows + 3) / 4 * 4 * w->row_bytes; }

pdq_code pdq_qmatrix_pack_rows4(pdq_qmatrix *w, pdq_status *st) {
    if (!pdq_qmatrix_rows4_ok(w)) return PDQ_OK;
    size_t rb = w->row_bytes, n = pdq_qmatrix_rows4_bytes(w);
    /* groups of 32: compact scales in 4-row blocks, what the AVX-512 GEMV reads (the other
     * kernels widen row-major ones faster): in place in W's own block, else copied after the codes */
    int relay = w->group == 32 && w->cols % 128 == 0 && w->scales16 && !w->scales_rows4 &&
                w->rows % 4 == 0;
    size_t nsc = relay ? (size_t)w->rows * (size_t)w->ngroups : 0;
    int in_place = relay && w->owned && (const void *)w->scales16 == w->owned;
    uint16_t *tmp = relay ? malloc(sizeof(uint16_t) * nsc) : NULL;
    uint8_t *dst = aligned_alloc(64, n + (relay && !in_place ? (nsc * sizeof(uint16_t) + 63) / 64 * 64 : 0));
    if (!dst || (relay && !tmp)) {
        free(dst);
        free(tmp);
        return pdq_fail(st, PDQ_ERR_NOMEM, "out of memory for %zu bytes of packed codes", n);
    }
    if (relay) {
        memcpy(tmp, w->scales16, sizeof(uint16_t) * nsc);
        uint16_t *sd = in_place ? (uint16_t *)w->owned : (uint16_t *)(dst + n);
        size_t ng = (size_t)w->ngroups;
        for (size_t r = 0; r < (size_t)w->rows; r++)
            for (size_t g = 0; g < ng; g++) sd[r / 4 * 4 * ng + 4 * g + r % 4] = tmp[r * ng + g];
        free(tmp);
        w->scales16 = sd;
        w->scales_rows4 = 1;
    }
    memset(dst + (size_t)w->rows / 4 * 4 * rb, 0, n - (size_t)w->rows / 4 * 4 * rb);
    for (int r = 0; r < w->rows; r++) {
        const uint8_t *src = pdq_qmatrix_row(w, r);
        uint8_t *d = dst + (size_t)(r >> 2) * 4 * rb + (size_t)(r & 3) * 64;
        for (size_t j = 0; j < rb; j += 64) memcpy(d + j / 64 * 256, src + j, 64);
    }
    free(w->owned_codes);
    w->owned_codes = dst;
    w->codes = dst;
    w->layout = PDQ_QL_ROWS4;
    w->row_step = 64;
    w->chunk_step = 256;
    return PDQ_OK;
}

size_t pdq_qmatrix_bytes(const pdq_qmatrix *w) {
    size_t grids = (size_t)w->rows * (size_t)w->ngroups;
    size_t zeros = (w->zero_stride ? (size_t)w->rows : 1) * (size_t)w->ngroups;
    return (size_t)w->rows * w->row_bytes + grids * pdq_qscale_size(w->scale_type) + zeros +
           (w->perm ? (size_t)w->cols * 4 : 0);
}

void pdq_qmatrix_dequant_row(const pdq_qmatrix *w, int r, float *out) {
    const uint8_t *row = pdq_qmatrix_row(w, r);
    for (int c = 0; c < w->cols; c++) {
        int g = c / w->group;
        out[w->perm ? w->perm[c] : c] = qk_scale(w, r, g) * ((float)qk_code(w, row, c) - (float)qk_zeros(w, r)[g]);
    }
}
