/* The layout arithmetic the kernels share: shapes and strides padded to 6 dims, and the strided
 * box copy that TRANSPOSE, SLICE and STRIDED_SLICE are (planned once, run by the float kernel and
 * the integer executor alike). Elements of any dtype move by their size. */
#include <stdint.h>
#include <string.h>

#include "ir/layout.h"
#include "kernels/transpose16.h"

void pdq_k_shape6(const pdq_tensor *t, int *s6) {
    int pad = PDQ_G_MAX_DIMS - t->ndim;
    for (int i = 0; i < PDQ_G_MAX_DIMS; i++) s6[i] = i < pad ? 1 : t->shape[i - pad];
}

void pdq_k_strides6(const pdq_tensor *t, const int *out6, long *str6) {
    int s6[PDQ_G_MAX_DIMS];
    pdq_k_shape6(t, s6);
    long acc = 1;
    for (int i = PDQ_G_MAX_DIMS - 1; i >= 0; i--) {
        str6[i] = (s6[i] == 1 && out6[i] != 1) ? 0 : acc;
        acc *= s6[i];
    }
}

void pdq_k_dense_strides6(const int *s6, long *str6) {
    long acc = 1;
    for (int d = PDQ_G_MAX_DIMS - 1; d >= 0; d--) { str6[d] = acc; acc *= s6[d]; }
}


/* dst[i] = src[i * stride] for n elements of esz bytes. A constant size per loop, so each
 * memcpy is one move: a call per element made the decode graph's K transposes a tenth of
 * integer decode. */
#define GATHER_N(N)                                                                            \
    for (size_t i = 0; i < n; i++) memcpy(dst + i * (N), src + (size_t)((long)i * stride) * (N), (N))
static void gather_row(char *dst, const char *src, size_t n, long stride, size_t esz) {
    switch (esz) {
    case 1: GATHER_N(1); break;
    case 2: GATHER_N(2); break;
    case 4: GATHER_N(4); break;
    case 8: GATHER_N(8); break;
    default: GATHER_N(esz); break;
    }
}
#undef GATHER_N

/* dst[r][c] = src[c * cstride + r] for a rows x cols block: the source's rows are the
 * destination's columns. In 8 x 8 tiles, so each tile reads 8 short runs and writes 8 short runs
 * instead of one strided read per element. */
#define TRANSPOSE_N(T)                                                                                   \
    do {                                                                                                 \
        T *d = (T *)(void *)dst;                                                                         \
        const T *sp = (const T *)(const void *)src;                                                      \
        for (size_t r0 = 0; r0 < rows; r0 += 8)                                                          \
            for (size_t c0 = 0; c0 < cols; c0 += 8) {                                                    \
                size_t r1 = r0 + 8 < rows ? r0 + 8 : rows, c1 = c0 + 8 < cols ? c0 + 8 : cols;           \
                for (size_t c = c0; c < c1; c++)                                                         \
                    for (size_t r = r0; r < r1; r++) d[r * cols + c] = sp[c * (size_t)cstride + r];      \
            }                                                                                            \
    } while (0)

static void transpose_2d(char *dst, const char *src, size_t rows, size_t cols, long cstride, size_t esz) {
    switch (esz) {
    case 1: TRANSPOSE_N(uint8_t); return;
    case 2: pdq_k_transpose_u16((uint16_t *)(void *)dst, (const uint16_t *)(const void *)src, rows, cols, cstride); return;
    default: TRANSPOSE_N(uint32_t); return; /* esz 4: the caller takes no other size */
    }
}
#undef TRANSPOSE_N

/* Plans the copy of a strided 6-d box: dst contiguous of shape box6, src at offset off with
 * strides sstr6. Dims of size 1 drop out and a dim that steps exactly over the next inner one
 * merges with it, so a slice of whole rows is one long copy. */
void pdq_k_box_strided(const int *box6, const long *sstr6, long off, size_t esz, pdq_k_box *b) {
    memset(b, 0, sizeof *b);
    b->off = off;
    b->esz = esz;
    b->nd = 1;
    b->n[0] = (size_t)box6[5]; /* innermost first */
    b->s[0] = sstr6[5];
    for (int d = PDQ_G_MAX_DIMS - 2; d >= 0; d--) {
        if (box6[d] == 1) continue;
        int k = b->nd - 1;
        if (b->n[k] == 1 || sstr6[d] == b->s[k] * (long)b->n[k]) {
            if (b->n[k] == 1) b->s[k] = sstr6[d];
            b->n[k] *= (size_t)box6[d];
        } else {
            b->n[b->nd] = (size_t)box6[d];
            b->s[b->nd] = sstr6[d];
            b->nd++;
        }
    }
    /* a block is the innermost dim (a row), or the two innermost when a transpose swapped them */
    b->tr = b->s[0] != 1 && b->s[0] > 0 && b->nd >= 2 && b->s[1] == 1 && (esz == 1 || esz == 2 || esz == 4);
}

/* Runs a planned copy: the blocks in destination order, walked by an odometer over the outer
 * dims (no division per row). */
void pdq_k_box_copy(const pdq_k_box *b, void *dstv, const void *srcv) {
    char *dst = dstv;
    const char *src = (const char *)srcv + (size_t)b->off * b->esz;
    size_t esz = b->esz;
    int first = b->tr ? 2 : 1, nd = b->nd;
    size_t block = b->tr ? b->n[0] * b->n[1] : b->n[0], blocks = 1;
    for (int d = first; d < nd; d++) blocks *= b->n[d];
    size_t idx[PDQ_G_MAX_DIMS] = {0};
    long off = 0;
    for (size_t k = 0; k < blocks; k++) {
        char *dblk = dst + k * block * esz;
        const char *sblk = src + (size_t)off * esz;
        if (b->tr) transpose_2d(dblk, sblk, b->n[1], b->n[0], b->s[0], esz);
        else if (b->s[0] == 1) memcpy(dblk, sblk, b->n[0] * esz);
        else gather_row(dblk, sblk, b->n[0], b->s[0], esz);
        for (int d = first; d < nd; d++) {
            off += b->s[d];
            if (++idx[d] < b->n[d]) break;
            off -= b->s[d] * (long)b->n[d];
            idx[d] = 0;
        }
    }
}

