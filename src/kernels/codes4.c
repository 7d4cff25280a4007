/* 4-bit codes, two a byte, low nibble first: the one packing every quantized file and kernel
 * input uses (pdq_quant's qweight, Circle's UINT4 buffers, the packed matrices). */
#include <stddef.h>
#include <stdint.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "kernels/codes4.h"

void pdq_pack4(const uint8_t *codes, size_t n, uint8_t *packed) {
    for (size_t i = 0; i < n; i += 2) {
        uint8_t lo = codes[i] & 0x0f, hi = i + 1 < n ? (uint8_t)(codes[i + 1] & 0x0f) : 0;
        packed[i / 2] = (uint8_t)(lo | (hi << 4));
    }
}

void pdq_unpack4(const uint8_t *packed, size_t n, uint8_t *codes) { pdq_unpack4_at(packed, 0, n, codes); }

void pdq_unpack4_at(const uint8_t *packed, size_t i0, size_t n, uint8_t *codes) {
    size_t j = 0;
    if (i0 & 1 && n) codes[j++] = (uint8_t)(packed[i0 / 2] >> 4);
    const uint8_t *p = packed + (i0 + j) / 2;
#ifdef __SSE2__
    /* 32 codes from 16 bytes: the same bytes as the loop below */
    const __m128i low = _mm_set1_epi8(15);
    for (; j + 32 <= n; j += 32, p += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
        __m128i lo = _mm_and_si128(v, low), hi = _mm_and_si128(_mm_srli_epi16(v, 4), low);
        _mm_storeu_si128((__m128i *)(void *)(codes + j), _mm_unpacklo_epi8(lo, hi));
        _mm_storeu_si128((__m128i *)(void *)(codes + j + 16), _mm_unpackhi_epi8(lo, hi));
    }
#endif
    for (; j + 2 <= n; j += 2, p++) {
        codes[j] = *p & 15;
        codes[j + 1] = (uint8_t)(*p >> 4);
    }
    if (j < n) codes[j] = *p & 15;
}

void pdq_pack4_at(const uint8_t *codes, size_t n, uint8_t *packed, size_t i0) {
    size_t j = 0;
    if (i0 & 1 && n) packed[i0 / 2] = (uint8_t)((packed[i0 / 2] & 15) | (codes[j++] & 15) << 4);
    pdq_pack4(codes + j, n - j, packed + (i0 + j) / 2);
}
