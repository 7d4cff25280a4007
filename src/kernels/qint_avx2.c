/* AVX2 kernels of the integer path, with and without AVX-VNNI (qint_avx2_body.h, compiled once
 * per variant); the same structure as the AVX-512 kernels (qint_avx512.c) at half the width.
 * Then the uint8 GEMV and panel decoder, which reuse the body's epilogue. Compiled per function
 * for the target, called only after run-time detection. */
#include <string.h>

#include "kernels/qint_internal.h"
#include "kernels/rows4.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

/* Four rows' epilogue state, one row per lane (see qint_avx512.c). */
typedef struct {
    __m128 y, t;
    __m128i z;
    int g, left;  /* current group, its blocks still to come */
} epi4;

/* *a + the 16-bit dot products of wl and x, *b + those of wh and x (vpmaddwd, vpaddd), in one
 * asm block with the accumulators tied: with the intrinsics GCC 12 copies each of the tile's 8
 * accumulators once per iteration and spills one (the problem pdq_dpwssd512 in simd_acc.h works
 * around). */
__attribute__((target("avx2,fma"))) static inline void madd2_acc(__m256i *a, __m256i *b, __m256i wl, __m256i wh,
                                                                  __m256i x) {
    __m256i t, u;
    __asm__("vpmaddwd %4, %5, %2\n\tvpmaddwd %4, %6, %3\n\tvpaddd %2, %0, %0\n\tvpaddd %3, %1, %1"
            : "+x"(*a), "+x"(*b), "=&x"(t), "=&x"(u)
            : "x"(x), "x"(wl), "x"(wh));
}

#define QI_VNNI 0
#define QI_TARGET __attribute__((target("avx2,fma")))
#define QI_NAME(x) x##_avx2
#include "kernels/qint_avx2_body.h"
#undef QI_VNNI
#undef QI_TARGET
#undef QI_NAME

/* uint8 codes: the planes trick of the uint4 kernels does not apply (code * xh overflows the
 * int16 pair sums of vpmaddubsw), so codes widen to int16 and vpmaddwd takes them against xq
 * itself: exact int32 pair sums, |2 * 255 * 32767| < 2^24. The AVX2 levels and the shapes the
 * AVX-512 VNNI uint8 GEMV does not take (qint_avx512.c: vpdpbusd on byte planes) run it. */
#define QI_U8 __attribute__((target("avx2,fma")))

/* Eight int32 lanes whose sum is the exact sum of code * xq over 32 columns (x0, x1: their xq). */
QI_U8 static inline __m256i u8_dot32(const uint8_t *c, __m256i x0, __m256i x1) {
    __m256i c0 = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)c));
    __m256i c1 = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(c + 16)));
    return _mm256_add_epi32(_mm256_madd_epi16(c0, x0), _mm256_madd_epi16(c1, x1));
}

/* Rows [r0, r1) of the uint8 GEMV (y) or of pdq_qexact_rows (s, when y is NULL: per-channel,
 * so a block is a step of 128 columns, whose 4-row sums go into int64 lanes: each lane sums 16
 * products, |S| <= 16 * 255 * 32768, and the reduction of 8 lanes stays below 2^31). rend (>= r1,
 * how far the task's prefetch may reach) bounds the grids' prefetch: codes are not prefetched
 * (below). */
__attribute__((always_inline)) QI_U8 static inline void u8_rows(const pdq_qmatrix *w, const qi_plan *pl,
                                                                 const uint8_t *xt, int r0, int r1, int rend, float *y,
                                                                 int64_t *s) {
    const int16_t *xq = qi_xq(pl, xt);
    const float *xs = qi_xs(pl, xt);
    const int32_t *sx = qi_sx(pl, xt);
    size_t rb = w->row_bytes, pf = qi_prefetch_bytes(rb);
    for (int r = r0; r < r1; r += 4) {
        qk_rows4 p;
        int nr = qi_rows4_begin(w, r, r1, rend, pf, &p); /* grids (grouped rows) still prefetched */
        epi4 e = {_mm_setzero_ps(), _mm_setzero_ps(), _mm_setzero_si128(), -1, 0};
        __m256i tot = _mm256_setzero_si256();
        int b = -1, qmask = pl->B / 32 - 1; /* B / 32 sub-blocks of 32 columns per block */
        uint8_t tail[4][QI_STEP];
        for (int s = 0; s < pl->nsteps; s++) {
            size_t off = (size_t)s * QI_STEP;
            /* named, not an array: an array of them went through the stack. A step is two 64-byte
             * chunks: cN + 32 q is qk_rows4_at(&p, N, off + 32 q) once the second chunk is reached */
            const uint8_t *c0 = qk_rows4_at(&p, 0, off), *c1 = qk_rows4_at(&p, 1, off), *c2 = qk_rows4_at(&p, 2, off),
                          *c3 = qk_rows4_at(&p, 3, off);
            size_t skip = p.step - 64; /* from a step's first chunk's end to its second */
            /* No software prefetch of codes: the 4-row block is one sequential stream, which the
             * hardware prefetcher follows; prefetching 20 KiB ahead as well stalled on full miss
             * queues (perf: 40 % of this kernel's samples at the prefetch) and cost a fifth of
             * the bytes/s from DRAM (24 against 19-20 GB/s of CPU time, 5632 x 2048 per-channel). */
            if (off + QI_STEP > rb) { /* the row's last bytes, copied: past them lie the next row or the buffer's end */
                for (int k = 0; k < 4; k++) {
                    memset(tail[k], 0, QI_STEP);
                    for (size_t j = 0; j < rb - off; j += 64)
                        memcpy(tail[k] + j, qk_rows4_at(&p, k, off + j), rb - off - j < 64 ? rb - off - j : 64);
                }
                c0 = tail[0], c1 = tail[1], c2 = tail[2], c3 = tail[3];
                skip = 0;
            }
            __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
#pragma GCC unroll 4
            for (int q = 0; q < QI_STEP / 32; q++) {
                if (q == 2) c0 += skip, c1 += skip, c2 += skip, c3 += skip;
                const int16_t *xx = xq + off + 32 * q;
                __m256i x0 = _mm256_loadu_si256((const __m256i *)xx), x1 = _mm256_loadu_si256((const __m256i *)(xx + 16));
                a0 = _mm256_add_epi32(a0, u8_dot32(c0 + 32 * q, x0, x1));
                a1 = _mm256_add_epi32(a1, u8_dot32(c1 + 32 * q, x0, x1));
                a2 = _mm256_add_epi32(a2, u8_dot32(c2 + 32 * q, x0, x1));
                a3 = _mm256_add_epi32(a3, u8_dot32(c3 + 32 * q, x0, x1));
                if ((q + 1) & qmask) continue; /* the block goes on */
                if (++b < pl->nblocks) {       /* blocks counted, not divided out (see qint_avx512.c) */
                    __m256i v[4] = {a0, a1, a2, a3};
                    __m256i t = reduce4_avx2(v); /* lane 4j + k: row k, quad j */
                    __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(t), _mm256_extracti128_si256(t, 1));
                    if (y) epi4_block_avx2(&e, &p, pl, xs, sx, b, s4);
                    else tot = _mm256_add_epi64(tot, _mm256_cvtepi32_epi64(s4));
                }
                a0 = a1 = a2 = a3 = _mm256_setzero_si256();
            }
        }
        if (!y) {
            int64_t out[4];
            _mm256_storeu_si256((__m256i *)out, tot);
            for (int k = 0; k < nr; k++) s[r + k - r0] = out[k];
            continue;
        }
        float out[4];
        _mm_storeu_ps(out, e.y);
        for (int k = 0; k < nr; k++) y[r + k] = out[k];
    }
}

QI_U8 void qi_gemv_u8_avx2(const pdq_qmatrix *w, const qi_plan *pl, const uint8_t *xt, int r0, int r1, int rend,
                           float *y) {
    u8_rows(w, pl, xt, r0, r1, rend, y, NULL);
}

QI_U8 void qi_exact_u8_avx2(const pdq_qmatrix *w, const qi_plan *pl, const uint8_t *xt, int r0, int r1, int rend,
                            int64_t *s) {
    u8_rows(w, pl, xt, r0, r1, rend, NULL, s);
}

/* The 8 x 8 int32 transpose: v[l][j] -> v[j][l]. */
QI_U8 static inline void transpose8(__m256i *v) {
    __m256i t[8], u[8];
    for (int i = 0; i < 4; i++) {
        t[2 * i] = _mm256_unpacklo_epi32(v[2 * i], v[2 * i + 1]);
        t[2 * i + 1] = _mm256_unpackhi_epi32(v[2 * i], v[2 * i + 1]);
    }
    for (int i = 0; i < 2; i++) { /* u[4i + e]: element e (| e + 4) of rows 4i..4i+3 */
        u[4 * i + 0] = _mm256_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
        u[4 * i + 1] = _mm256_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
        u[4 * i + 2] = _mm256_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
        u[4 * i + 3] = _mm256_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
    }
    for (int e = 0; e < 4; e++) {
        v[e] = _mm256_permute2x128_si256(u[e], u[4 + e], 0x20);
        v[e + 4] = _mm256_permute2x128_si256(u[e], u[4 + e], 0x31);
    }
}

/* The 16 codes of a row from column 16q as int16: uint8 16 bytes, uint4 8 bytes (low nibble
 * first: the bytes' low and high nibbles interleave back into column order). */
QI_U8 static inline __m256i codes16(const pdq_qmatrix *w, const uint8_t *row, int q) {
    if (w->type == PDQ_QT_U8) return _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)pdq_qmatrix_at(w, row, 16 * (size_t)q)));
    __m128i b = _mm_loadl_epi64((const __m128i *)pdq_qmatrix_at(w, row, 8 * (size_t)q)), m = _mm_set1_epi8(0x0F);
    __m128i lo = _mm_and_si128(b, m), hi = _mm_and_si128(_mm_srli_epi16(b, 4), m);
    return _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(lo, hi));
}

/* qi_panel_decode (uint8 and uint4): 16 codes of a row widen to int16 minus the zero (16 columns
 * never straddle a group: groups on this path are multiples of 32), which is 8 column pairs as
 * int32 words; eight rows of them transpose into the panel's [pair][row] order. Missing rows are
 * zeros; columns past the last whole 16 take the portable decoder. */
QI_U8 void qi_panel_decode_avx2(const pdq_qmatrix *w, const qi_plan *pl, int r, int nr, int32_t *panel,
                                float *pscale, int32_t *zt) {
    int full = w->cols / 16;
    qi_panel_decode_tail(w, pl, r, nr, panel, pscale, zt, 8 * full);
    for (int h = 0; h < QI_PANEL / 8; h++) {
        const uint8_t *row[8], *z[8];
        for (int l = 0; l < 8; l++) {
            int rl = r + (8 * h + l < nr ? 8 * h + l : nr - 1);
            row[l] = pdq_qmatrix_row(w, rl);
            z[l] = w->zeros + (size_t)rl * w->zero_stride;
        }
        for (int g = 0; g < w->ngroups; g++) {
            __m256i zv[8];
            for (int l = 0; l < 8; l++) zv[l] = _mm256_set1_epi16((short)z[l][g]);
            int q0 = g * w->group / 16, q1 = (g + 1) * w->group / 16;
            if (q1 > full) q1 = full;
            for (int q = q0; q < q1; q++) {
                __m256i v[8];
                for (int l = 0; l < 8; l++)
                    v[l] = 8 * h + l < nr ? _mm256_sub_epi16(codes16(w, row[l], q), zv[l]) : _mm256_setzero_si256();
                transpose8(v);
                for (int j = 0; j < 8; j++) _mm256_store_si256((__m256i *)(panel + (size_t)(8 * q + j) * QI_PANEL + 8 * h), v[j]);
            }
        }
    }
}

/* acc + the 16-bit dot products of a and b, as _mm256_dpwssd_avx_epi32 (VEX-coded, AVX-VNNI):
 * tied asm operand for the reason given in simd_acc.h (GCC copies the intrinsic's
 * accumulators twice per iteration). */
__attribute__((target("avx2,fma,avxvnni"))) static inline __m256i dpwssd_vex(__m256i acc, __m256i a, __m256i b) {
    __asm__("%{vex%} vpdpwssd %2, %1, %0" : "+x"(acc) : "x"(a), "x"(b));
    return acc;
}

#define QI_VNNI 1
#define QI_TARGET __attribute__((target("avx2,fma,avxvnni")))
#define QI_NAME(x) x##_avx2_vnni
#include "kernels/qint_avx2_body.h"
#undef QI_VNNI
#undef QI_TARGET
#undef QI_NAME
#endif
