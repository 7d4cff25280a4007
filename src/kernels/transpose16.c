/* The 16-bit 2-D transpose of ir/layout.c's strided copy: d[r * cols + c] = s[c * cstride + r].
 * Whole 8 x 8 tiles by SSE2 unpacks (x86-64's baseline), the edges (and CPUs without SSE2)
 * element by element: the same values either way. */
#include <stddef.h>
#include <stdint.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "kernels/transpose16.h"

void pdq_k_transpose_u16(uint16_t *d, const uint16_t *sp, size_t rows, size_t cols, long cstride) {
#ifdef __SSE2__
    size_t r8 = rows / 8 * 8, c8 = cols / 8 * 8;
    for (size_t c0 = 0; c0 < c8; c0 += 8)
        for (size_t r0 = 0; r0 < r8; r0 += 8) {
            __m128i v[8], t[8];
            for (int i = 0; i < 8; i++) v[i] = _mm_loadu_si128((const __m128i *)(const void *)(sp + (c0 + i) * (size_t)cstride + r0));
            for (int i = 0; i < 4; i++) {
                t[i] = _mm_unpacklo_epi16(v[2 * i], v[2 * i + 1]);
                t[i + 4] = _mm_unpackhi_epi16(v[2 * i], v[2 * i + 1]);
            }
            /* t[0..3]: pairs of rows 0-1 | 2-3 | 4-5 | 6-7 for source positions r0..r0+3, t[4..7] r0+4.. */
            for (int h = 0; h < 2; h++) {
                __m128i a = _mm_unpacklo_epi32(t[4 * h], t[4 * h + 1]), b = _mm_unpackhi_epi32(t[4 * h], t[4 * h + 1]);
                __m128i e = _mm_unpacklo_epi32(t[4 * h + 2], t[4 * h + 3]), f = _mm_unpackhi_epi32(t[4 * h + 2], t[4 * h + 3]);
                uint16_t *o = d + (r0 + 4 * (size_t)h) * cols + c0;
                _mm_storeu_si128((__m128i *)(void *)o, _mm_unpacklo_epi64(a, e));
                _mm_storeu_si128((__m128i *)(void *)(o + cols), _mm_unpackhi_epi64(a, e));
                _mm_storeu_si128((__m128i *)(void *)(o + 2 * cols), _mm_unpacklo_epi64(b, f));
                _mm_storeu_si128((__m128i *)(void *)(o + 3 * cols), _mm_unpackhi_epi64(b, f));
            }
        }
#else
    size_t r8 = 0, c8 = 0;
#endif
    for (size_t r = 0; r < rows; r++)
        for (size_t c = r < r8 ? c8 : 0; c < cols; c++) d[r * cols + c] = sp[c * (size_t)cstride + r];
}
