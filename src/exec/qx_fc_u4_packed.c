/* Decode (GEMV) of an integer FULLY_CONNECTED with uint4 weights, reading packed nibbles: half
 * the bytes of the one-code-per-byte form the Circle importer gives, which is what decode is
 * bound by. Weights are repacked once at create (row r: ld4 bytes, column 2j in the low nibble
 * of byte j, 2j+1 in the high one), four rows at a time interleaved by 32-byte chunks (the 64
 * columns one step reads: chunk j of rows 4b..4b+3 at 4b * ld4 + 128 j + 32 i), so a decode
 * task reads one stream, which the hardware prefetchers follow, not four 1 KiB apart (the
 * packed kernels' 4-row layout, src/kernels/qmatmul.h); per call each activation row is split, per 64 columns, into
 * its even and odd columns, so one 32-byte load feeds two vpdpwssd (AVX-512 VNNI) or four
 * vpmaddwd (AVX2). The sums are exact (int32 lanes flushed to int64), so the result equals every
 * other path's bit for bit. */
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "qx_hsum.h"
#include "qx_internal.h"

/* int32 lane budget: a lane adds 4 (AVX-512) or 8 (AVX2) products of |x| <= 32768 and code <= 15
 * per 64 columns, so 512 chunks (32768 columns) stay below 2^31 - 1 (512 * 8 * 491520 =
 * 2,013,265,920). */
#define U4P_FLUSH_CHUNKS 512

int pdq_qx_u4p_pack(qx_prep *p) {
    int k64 = p->fin / 64 * 64, full = p->fout / 4 * 4; /* rows of whole 4-row blocks: the rest never read here */
    if (k64 == 0 || full == 0) return 0;
    p->ld4 = (size_t)k64 / 2;
    p->w4 = malloc(p->ld4 * (size_t)full);
    p->xp = malloc(sizeof(int16_t) * (size_t)k64 * 4);
    if (!p->w4 || !p->xp) return -1;
    p->k64 = k64;
    for (int r = 0; r < full; r++) {
        const uint8_t *src = p->w + (size_t)r * p->fin;
        uint8_t *dst = p->w4 + (size_t)(r & ~3) * p->ld4 + (size_t)(r & 3) * 32;
        for (int j = 0; j < k64 / 2; j++) dst[j / 32 * 128 + j % 32] = (uint8_t)(src[2 * j] | src[2 * j + 1] << 4);
    }
    return 0;
}

void pdq_qx_u4p_planes(const qx_prep *p, const int16_t *x, int16_t *xp) {
    /* chunk c: xp[c*64 + j] = x[c*64 + 2j] (j < 32), xp[c*64 + 32 + j] = x[c*64 + 2j + 1] */
    for (int c = 0; c < p->k64; c += 64)
        for (int j = 0; j < 32; j++) {
            xp[c + j] = x[c + 2 * j];
            xp[c + 32 + j] = x[c + 2 * j + 1];
        }
}

#if defined(__x86_64__) || defined(__i386__)
#define VNNI __attribute__((target("avx512f,avx512bw,avx512vnni")))

VNNI void pdq_qx_dot4_u4p_vnni(const qx_prep *p, const int16_t *xp, int r, size_t pf, int64_t *out) {
    const uint8_t *w = p->w4 + (size_t)r * p->ld4; /* r % 4 == 0: its block */
    const __m256i m15 = _mm256_set1_epi8(0x0F);
    int64_t res[4] = {0};
    for (int c0 = 0; c0 < p->k64;) {
        int c1 = c0 + U4P_FLUSH_CHUNKS * 64 < p->k64 ? c0 + U4P_FLUSH_CHUNKS * 64 : p->k64;
        __m512i a[4];
        for (int i = 0; i < 4; i++) a[i] = _mm512_setzero_si512();
        for (int c = c0; c < c1; c += 64) {
            __m512i xe = _mm512_loadu_si512((const void *)(xp + c)), xo = _mm512_loadu_si512((const void *)(xp + c + 32));
            size_t off = (size_t)c / 64 * 128;
            for (int i = 0; i < 4; i++) {
                const uint8_t *wi = w + off + 32 * i;
                _mm_prefetch((const char *)(wi + pf), _MM_HINT_T0);
                __m256i v = _mm256_loadu_si256((const __m256i *)wi);
                __m512i lo = _mm512_cvtepu8_epi16(_mm256_and_si256(v, m15));
                __m512i hi = _mm512_cvtepu8_epi16(_mm256_and_si256(_mm256_srli_epi16(v, 4), m15));
                a[i] = _mm512_dpwssd_epi32(a[i], xe, lo);
                a[i] = _mm512_dpwssd_epi32(a[i], xo, hi);
            }
        }
        for (int i = 0; i < 4; i++) res[i] += qx_hsum_avx512(a[i]);
        c0 = c1;
    }
    memcpy(out, res, sizeof res);
}
#define AVX2 __attribute__((target("avx2")))

AVX2 void pdq_qx_dot4_u4p_avx2(const qx_prep *p, const int16_t *xp, int r, size_t pf, int64_t *out) {
    const uint8_t *w = p->w4 + (size_t)r * p->ld4; /* r % 4 == 0: its block */
    const __m256i m15 = _mm256_set1_epi8(0x0F);
    int64_t res[4] = {0};
    for (int c0 = 0; c0 < p->k64;) {
        int c1 = c0 + U4P_FLUSH_CHUNKS * 64 < p->k64 ? c0 + U4P_FLUSH_CHUNKS * 64 : p->k64;
        __m256i a[4];
        for (int i = 0; i < 4; i++) a[i] = _mm256_setzero_si256();
        for (int c = c0; c < c1; c += 64) {
            const __m256i *xc = (const __m256i *)(xp + c);
            __m256i xe0 = _mm256_loadu_si256(xc), xe1 = _mm256_loadu_si256(xc + 1);
            __m256i xo0 = _mm256_loadu_si256(xc + 2), xo1 = _mm256_loadu_si256(xc + 3);
            size_t off = (size_t)c / 64 * 128;
            for (int i = 0; i < 4; i++) {
                const uint8_t *wi = w + off + 32 * i;
                _mm_prefetch((const char *)(wi + pf), _MM_HINT_T1);
                __m256i v = _mm256_loadu_si256((const __m256i *)wi);
                __m256i lo = _mm256_and_si256(v, m15), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m15);
                __m256i s = _mm256_madd_epi16(xe0, _mm256_cvtepu8_epi16(_mm256_castsi256_si128(lo)));
                s = _mm256_add_epi32(s, _mm256_madd_epi16(xe1, _mm256_cvtepu8_epi16(_mm256_extracti128_si256(lo, 1))));
                s = _mm256_add_epi32(s, _mm256_madd_epi16(xo0, _mm256_cvtepu8_epi16(_mm256_castsi256_si128(hi))));
                s = _mm256_add_epi32(s, _mm256_madd_epi16(xo1, _mm256_cvtepu8_epi16(_mm256_extracti128_si256(hi, 1))));
                a[i] = _mm256_add_epi32(a[i], s);
            }
        }
        for (int i = 0; i < 4; i++) res[i] += qx_hsum_avx2(a[i]);
        c0 = c1;
    }
    memcpy(out, res, sizeof res);
}
#else
void pdq_qx_dot4_u4p_vnni(const qx_prep *p, const int16_t *xp, int r, size_t pf, int64_t *out) {
    (void)p; (void)xp; (void)r; (void)pf; (void)out; /* never chosen: simd is 0 off x86 */
}
void pdq_qx_dot4_u4p_avx2(const qx_prep *p, const int16_t *xp, int r, size_t pf, int64_t *out) {
    (void)p; (void)xp; (void)r; (void)pf; (void)out;
}
#endif
