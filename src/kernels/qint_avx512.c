/* AVX-512 VNNI kernels of the integer path (the rule in qmatmul.h). GEMV: one 64-byte load is
 * 128 uint4 columns of a row; with xq = 256 xh + xl, code * xq = 256 (code * xh) + code * xl,
 * which is four vpdpbusd per row and step (codes as the unsigned operand against xh, xl as the
 * unsigned operand against codes, valid signed bytes 0..15). Four rows run at once; their lanes
 * are reduced to exact block sums in integers, then the epilogue runs on four rows in the lanes
 * of one register, each lane in the scalar order. GEMM: panels of 16 rows hold (code - zero) as
 * int16 pairs, so vpdpwssd against one broadcast pair of xq accumulates 16 rows at once and a
 * block needs no horizontal sum at all. Compiled per function for the target, called only after
 * run-time detection. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "kernels/qint_internal.h"
#include "kernels/rows4.h"
#include "kernels/simd_acc.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#define QI_AVX512 __attribute__((target("avx512f,avx512dq,avx512vl,avx512bw,avx512vnni,avx2,fma")))

/* The epilogue of one block for four rows (lanes): S = sum - zero * sum(xq), t += xs * S, and at
 * the group's end y += scale * t. Blocks come in order; the group and the blocks left in it are
 * counted, not divided out (two integer divisions per block cost more than the block's dot
 * products). */
typedef struct {
    __m128 y, t;
    __m128i z;
    int g, left;  /* current group, its blocks still to come */
} epi4;

QI_AVX512 static inline void epi4_block(epi4 *e, const qk_rows4 *p, const qi_plan *pl, const float *xs,
                                        const int32_t *sx, int b, __m128i s) {
    if (e->left == 0) {
        int g = ++e->g;
        e->z = _mm_setr_epi32(p->zero[0][g], p->zero[1][g], p->zero[2][g], p->zero[3][g]);
        e->left = pl->nblocks - b < pl->bpg ? pl->nblocks - b : pl->bpg;
    }
    s = _mm_sub_epi32(s, _mm_mullo_epi32(e->z, _mm_set1_epi32(sx[b])));
    e->t = _mm_fmadd_ps(_mm_set1_ps(xs[b]), _mm_cvtepi32_ps(s), e->t);
    if (--e->left == 0) {
        int g = e->g;
        __m128 sc = _mm_setr_ps(p->scale[0][g], p->scale[1][g], p->scale[2][g], p->scale[3][g]);
        e->y = _mm_fmadd_ps(sc, e->t, e->y);
        e->t = _mm_setzero_ps();
    }
}

/* Groups of 32 (one block each), four whole groups g0..g0+3 of four rows at once, in lane 4j + k
 * (group g0 + j, row k) as q has them: the same S, t = fmaf(xs, S, 0) and then, group by group,
 * y = fmaf(scale, t, y) as epi4_block, with the per-block loads done once per step. */
QI_AVX512 static inline void epi16_groups32(epi4 *e, const qk_rows4 *p, const float *xs, const int32_t *sx, int g0,
                                            __m512i q) {
    const __m512i lane_j = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
    const __m512i transpose = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    /* dword k: row k's zeros of g0..g0+3, loaded in place (a stack copy read back as one vector
     * waited on four narrow stores: a quarter of the GEMV's time) */
    __m128i z01 = _mm_unpacklo_epi32(_mm_loadu_si32(p->zero[0] + g0), _mm_loadu_si32(p->zero[1] + g0));
    __m128i z23 = _mm_unpacklo_epi32(_mm_loadu_si32(p->zero[2] + g0), _mm_loadu_si32(p->zero[3] + g0));
    __m128i zb = _mm_unpacklo_epi64(z01, z23);
    __m512i z = _mm512_permutexvar_epi32(transpose, _mm512_cvtepu8_epi32(zb));
    __m512i sxv = _mm512_permutexvar_epi32(lane_j, _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)(sx + g0))));
    __m512 xsv = _mm512_permutexvar_ps(lane_j, _mm512_castps128_ps512(_mm_loadu_ps(xs + g0)));
    __m512 sc = _mm512_castps128_ps512(_mm_loadu_ps(p->scale[0] + g0));
    sc = _mm512_insertf32x4(sc, _mm_loadu_ps(p->scale[1] + g0), 1);
    sc = _mm512_insertf32x4(sc, _mm_loadu_ps(p->scale[2] + g0), 2);
    sc = _mm512_insertf32x4(sc, _mm_loadu_ps(p->scale[3] + g0), 3);
    sc = _mm512_permutexvar_ps(transpose, sc);
    __m512i sv = _mm512_sub_epi32(q, _mm512_mullo_epi32(z, sxv));
    __m512 t = _mm512_fmadd_ps(xsv, _mm512_cvtepi32_ps(sv), _mm512_setzero_ps());
    e->y = _mm_fmadd_ps(_mm512_castps512_ps128(sc), _mm512_castps512_ps128(t), e->y);
    e->y = _mm_fmadd_ps(_mm512_extractf32x4_ps(sc, 1), _mm512_extractf32x4_ps(t, 1), e->y);
    e->y = _mm_fmadd_ps(_mm512_extractf32x4_ps(sc, 2), _mm512_extractf32x4_ps(t, 2), e->y);
    e->y = _mm_fmadd_ps(_mm512_extractf32x4_ps(sc, 3), _mm512_extractf32x4_ps(t, 3), e->y);
}

/* One row's step: 16 int32 lanes, lane i the exact sum of code * xq over columns 8i..8i+7. */
QI_AVX512 static inline __m512i step_row(__m512i c, __m512i xhe, __m512i xho, __m512i xle, __m512i xlo) {
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    __m512i lo = _mm512_and_si512(c, m4), hi = _mm512_and_si512(_mm512_srli_epi16(c, 4), m4);
    __m512i h = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), lo, xhe), hi, xho);
    __m512i l = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), xle, lo), xlo, hi);
    return _mm512_add_epi32(_mm512_slli_epi32(h, 8), l);
}

/* One step (64 bytes of each of four rows, from byte off) against the step's planes x4: lane
 * 4j + k the exact sum of code * xq over columns 32j..32j+31 of the step for row k. Prefetches
 * p->pf bytes ahead; a row's last bytes are loaded masked (past them lie the next row or the
 * buffer's end). */
QI_AVX512 static inline __attribute__((always_inline)) __m512i step4(const qk_rows4 *p, size_t off, size_t rb, const int8_t *x4) {
    __m512i xhe = _mm512_loadu_si512(x4), xho = _mm512_loadu_si512(x4 + 64);
    __m512i xle = _mm512_loadu_si512(x4 + 128), xlo = _mm512_loadu_si512(x4 + 192);
    __m512i v0, v1, v2, v3; /* named: an array of them went through the stack */
    if (off + 64 <= rb) {
        _mm_prefetch((const char *)(qk_rows4_at(p, 0, off) + p->pf), _MM_HINT_T1);
        _mm_prefetch((const char *)(qk_rows4_at(p, 1, off) + p->pf), _MM_HINT_T1);
        _mm_prefetch((const char *)(qk_rows4_at(p, 2, off) + p->pf), _MM_HINT_T1);
        _mm_prefetch((const char *)(qk_rows4_at(p, 3, off) + p->pf), _MM_HINT_T1);
        v0 = step_row(_mm512_loadu_si512(qk_rows4_at(p, 0, off)), xhe, xho, xle, xlo);
        v1 = step_row(_mm512_loadu_si512(qk_rows4_at(p, 1, off)), xhe, xho, xle, xlo);
        v2 = step_row(_mm512_loadu_si512(qk_rows4_at(p, 2, off)), xhe, xho, xle, xlo);
        v3 = step_row(_mm512_loadu_si512(qk_rows4_at(p, 3, off)), xhe, xho, xle, xlo);
    } else {
        __mmask64 m = _cvtu64_mask64(~0ull >> (64 - (rb - off)));
        v0 = step_row(_mm512_maskz_loadu_epi8(m, qk_rows4_at(p, 0, off)), xhe, xho, xle, xlo);
        v1 = step_row(_mm512_maskz_loadu_epi8(m, qk_rows4_at(p, 1, off)), xhe, xho, xle, xlo);
        v2 = step_row(_mm512_maskz_loadu_epi8(m, qk_rows4_at(p, 2, off)), xhe, xho, xle, xlo);
        v3 = step_row(_mm512_maskz_loadu_epi8(m, qk_rows4_at(p, 3, off)), xhe, xho, xle, xlo);
    }
    __m512i a = _mm512_add_epi32(_mm512_unpacklo_epi32(v0, v1), _mm512_unpackhi_epi32(v0, v1));
    __m512i b = _mm512_add_epi32(_mm512_unpacklo_epi32(v2, v3), _mm512_unpackhi_epi32(v2, v3));
    return _mm512_add_epi32(_mm512_unpacklo_epi64(a, b), _mm512_unpackhi_epi64(a, b));
}

/* Groups of 32 whose steps are whole groups (cols > 128 (ns - 1); uint8: cols a multiple of
 * 128, a step being 128 bytes of a row), at most G32_GROUPS a row:
 * sixteen rows at a time, as four 4-row blocks read one after the other (the same stream as
 * four rows at a time). A block's step leaves t = fmaf(xs, S, 0) of its four groups and rows and
 * their scales, in tb / sb at [group][row of the sixteen]; then one chain y = fmaf(scale, t, y)
 * over the groups, in the rule's order, runs for all sixteen rows in one register. Run for four
 * rows in the lanes of an __m128 that chain (a dependent fma per group) bounded the GEMV; the
 * stack copy of widened scales cost another tenth. */
#define G32_GROUPS 256

/* Groups g0..g0+3 of rows rk[0..3]'s scales in lane 4j + k (group g0 + j, row k), f16 and bf16
 * converted in registers (exact, as the widening copy); scales in 4-row blocks (rk[0] a block's
 * first row, rk the block's rows) are one 32-byte load. */
QI_AVX512 static inline __attribute__((always_inline)) __m512 scales_4x4(const pdq_qmatrix *w, const int *rk, int g0) {
    const __m512i transpose = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    size_t ng = (size_t)w->ngroups;
    __m512 f; /* lane 4k + j */
    if (w->scales_rows4) { /* the block's [group][row]: lane 4j + k as stored */
        __m256i h = _mm256_loadu_si256((const __m256i *)(w->scales16 + pdq_qmatrix_scale_index(w, rk[0], g0)));
        return w->scale_type == PDQ_QSCALE_F16 ? _mm512_cvtph_ps(h)
                                               : _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    }
    if (w->scales16) {
        const uint16_t *s = w->scales16 + g0;
        __m128i a = _mm_unpacklo_epi64(_mm_loadl_epi64((const __m128i *)(s + (size_t)rk[0] * ng)),
                                       _mm_loadl_epi64((const __m128i *)(s + (size_t)rk[1] * ng)));
        __m128i b = _mm_unpacklo_epi64(_mm_loadl_epi64((const __m128i *)(s + (size_t)rk[2] * ng)),
                                       _mm_loadl_epi64((const __m128i *)(s + (size_t)rk[3] * ng)));
        __m256i h = _mm256_inserti128_si256(_mm256_castsi128_si256(a), b, 1);
        f = w->scale_type == PDQ_QSCALE_F16 ? _mm512_cvtph_ps(h)
                                           : _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    } else {
        const float *s = w->scales + g0;
        f = _mm512_castps128_ps512(_mm_loadu_ps(s + (size_t)rk[0] * ng));
        f = _mm512_insertf32x4(f, _mm_loadu_ps(s + (size_t)rk[1] * ng), 1);
        f = _mm512_insertf32x4(f, _mm_loadu_ps(s + (size_t)rk[2] * ng), 2);
        f = _mm512_insertf32x4(f, _mm_loadu_ps(s + (size_t)rk[3] * ng), 3);
    }
    return _mm512_permutexvar_ps(transpose, f);
}

/* uint8, one row's 128 columns (its 64-byte chunks c0, c1) against the step's planes x8 (xh of
 * the 128 columns, then xl): code * xq = 256 (code * xh) + (code - 128) * xl + 128 xl, the first
 * with codes as the unsigned operand of vpdpbusd, the second with xl as it (code ^ 0x80 is
 * code - 128 as a signed byte); the 128 xl is left to the caller (vnni_xl128). Lane i of the
 * result: columns 4i..4i+3 of the chunk, |.| <= 4 * 255 * 128 * 257 < 2^26. */
QI_AVX512 static inline __m512i chunk_u8(__m512i c, __m512i xh, __m512i xl) {
    __m512i h = _mm512_dpbusd_epi32(_mm512_setzero_si512(), c, xh);
    __m512i l = _mm512_dpbusd_epi32(_mm512_setzero_si512(), xl, _mm512_xor_si512(c, _mm512_set1_epi8((char)0x80)));
    return _mm512_add_epi32(_mm512_slli_epi32(h, 8), l);
}

/* 128 * the sum of xl over each 32 columns of step s, as int32 (the share chunk_u8 leaves out):
 * lane j of the result for columns 32j.. of the step. */
QI_AVX512 static inline __m128i vnni_xl128(const uint8_t *x8) {
    __m512i v = _mm512_sad_epu8(_mm512_loadu_si512(x8 + QI_STEP), _mm512_setzero_si512()); /* 8 sums of 8 */
    __m512i w = _mm512_sad_epu8(_mm512_loadu_si512(x8 + QI_STEP + 64), _mm512_setzero_si512());
    __m512i idx = _mm512_setr_epi64(0, 2, 4, 6, 8, 10, 12, 14), idx1 = _mm512_setr_epi64(1, 3, 5, 7, 9, 11, 13, 15);
    __m512i pr = _mm512_add_epi64(_mm512_permutex2var_epi64(v, idx, w), _mm512_permutex2var_epi64(v, idx1, w));
    __m256i q = _mm512_cvtepi64_epi32(pr); /* 8 sums of 16 columns */
    __m128i a = _mm_hadd_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
    return _mm_slli_epi32(a, 7);
}

/* step4 for uint8 codes on the byte planes (whole steps: cols a multiple of 128; x8 the step's
 * 256 bytes): lane 4j + k the sum of code * xq over columns 32j.. of the step for row k, but for
 * the 128 xl share (vnni_xl128's lane j, the same for every row). */
QI_AVX512 static inline __attribute__((always_inline)) __m512i step4_u8_vnni(const qk_rows4 *p, int s, const uint8_t *x8) {
    size_t off = (size_t)s * 128;
    __m512i xh0 = _mm512_loadu_si512(x8), xh1 = _mm512_loadu_si512(x8 + 64);
    __m512i xl0 = _mm512_loadu_si512(x8 + 128), xl1 = _mm512_loadu_si512(x8 + 192);
    __m512i v[4];
    for (int k = 0; k < 4; k++) {
        const uint8_t *c0 = qk_rows4_at(p, k, off), *c1 = qk_rows4_at(p, k, off + 64);
        _mm_prefetch((const char *)(c0 + p->pf), _MM_HINT_T1);
        _mm_prefetch((const char *)(c1 + p->pf), _MM_HINT_T1);
        __m512i a = chunk_u8(_mm512_loadu_si512(c0), xh0, xl0); /* 128-bit chunks: columns 0-15, 16-31, 32-47, 48-63 */
        __m512i b = chunk_u8(_mm512_loadu_si512(c1), xh1, xl1);
        /* chunk j: four partial sums of columns 32j..32j+31 */
        v[k] = _mm512_add_epi32(_mm512_shuffle_i32x4(a, b, _MM_SHUFFLE(2, 0, 2, 0)), _mm512_shuffle_i32x4(a, b, _MM_SHUFFLE(3, 1, 3, 1)));
    }
    __m512i a = _mm512_add_epi32(_mm512_unpacklo_epi32(v[0], v[1]), _mm512_unpackhi_epi32(v[0], v[1]));
    __m512i b = _mm512_add_epi32(_mm512_unpacklo_epi32(v[2], v[3]), _mm512_unpackhi_epi32(v[2], v[3]));
    return _mm512_add_epi32(_mm512_unpacklo_epi64(a, b), _mm512_unpackhi_epi64(a, b));
}

/* zero * sum(xq) of one 4-row block's step in q's lanes (4j + k: group 4s + j, row k): from the
 * precomputed shared row (zsv) or the block's own zero points. */
QI_AVX512 static inline __attribute__((always_inline)) __m512i g32_zs(const qk_rows4 *p, const int32_t *sx,
                                                                      const int32_t *zsv, int s) {
    if (zsv) return _mm512_load_si512(zsv + 16 * s);
    const __m512i lane_j = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
    const __m512i transpose = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    int g0 = 4 * s; /* dword k: row k's zeros of the step's four groups */
    __m128i z01 = _mm_unpacklo_epi32(_mm_loadu_si32(p->zero[0] + g0), _mm_loadu_si32(p->zero[1] + g0));
    __m128i z23 = _mm_unpacklo_epi32(_mm_loadu_si32(p->zero[2] + g0), _mm_loadu_si32(p->zero[3] + g0));
    __m512i z = _mm512_permutexvar_epi32(transpose, _mm512_cvtepu8_epi32(_mm_unpacklo_epi64(z01, z23)));
    return _mm512_mullo_epi32(z, _mm512_permutexvar_epi32(lane_j, _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)(sx + g0)))));
}

/* The pair's layout, as _mm512_permutex2var indices over two blocks a and b in q's lanes
 * (4j + k): groups 4s and 4s + 1 (PAIR01) or 4s + 2 and 4s + 3 (PAIR23), each [group][8 rows],
 * the rows a's four then b's. */
#define G32_PAIR01 _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23)
#define G32_PAIR23 _mm512_setr_epi32(8, 9, 10, 11, 24, 25, 26, 27, 12, 13, 14, 15, 28, 29, 30, 31)

/* The two blocks' scales of the step's groups in the pair's layout (sc01, sc23): f16 and bf16
 * converted in registers (exact); scales in 4-row blocks are one 32-byte load per block, their
 * 8-byte rows of four scales interleaved a, b group by group. */
QI_AVX512 static inline __attribute__((always_inline)) void scales_pair(const pdq_qmatrix *w, const int *rk, int g0,
                                                                       __m512 *sc01, __m512 *sc23) {
    if (w->scales_rows4) {
        __m256i ha = _mm256_loadu_si256((const __m256i *)(w->scales16 + pdq_qmatrix_scale_index(w, rk[0], g0)));
        __m256i hb = _mm256_loadu_si256((const __m256i *)(w->scales16 + pdq_qmatrix_scale_index(w, rk[4], g0)));
        __m512i h = _mm512_permutexvar_epi64(_mm512_setr_epi64(0, 4, 1, 5, 2, 6, 3, 7),
                                             _mm512_inserti64x4(_mm512_castsi256_si512(ha), hb, 1));
        __m256i h01 = _mm512_castsi512_si256(h), h23 = _mm512_extracti64x4_epi64(h, 1);
        if (w->scale_type == PDQ_QSCALE_F16) {
            *sc01 = _mm512_cvtph_ps(h01);
            *sc23 = _mm512_cvtph_ps(h23);
        } else {
            *sc01 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h01), 16));
            *sc23 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h23), 16));
        }
        return;
    }
    __m512 a = scales_4x4(w, rk, g0), b = scales_4x4(w, rk + 4, g0);
    *sc01 = _mm512_permutex2var_ps(a, G32_PAIR01, b);
    *sc23 = _mm512_permutex2var_ps(a, G32_PAIR23, b);
}

/* One step of gemv_groups32 for two 4-row blocks at once (y: a's four rows, then b's): per
 * row S = q - zero * sum(xq), t = fmaf(xs, S, 0), then y = fmaf(scale, t, y) for the step's
 * four groups in order. The groups' lanes for all eight rows are one half of a register
 * (xsv: xs of group 4s + j in lanes 8 (j & 1).. of its pair of groups), so the chain is four
 * eight-lane fmas a step for both blocks. */
QI_AVX512 static inline __attribute__((always_inline)) __m256 g32_pair_step(const pdq_qmatrix *w, const qk_rows4 *pa,
                                                                           const qk_rows4 *pb, const int *rk,
                                                                           const int32_t *sx, const float *xsv,
                                                                           const int32_t *zsv, int s, __m512i qa,
                                                                           __m512i qb, __m256 y) {
    __m512i sa = _mm512_sub_epi32(qa, g32_zs(pa, sx, zsv, s)), sb = _mm512_sub_epi32(qb, g32_zs(pb, sx, zsv, s));
    __m512 t01 = _mm512_fmadd_ps(_mm512_load_ps(xsv + 32 * s), _mm512_cvtepi32_ps(_mm512_permutex2var_epi32(sa, G32_PAIR01, sb)),
                                 _mm512_setzero_ps());
    __m512 t23 = _mm512_fmadd_ps(_mm512_load_ps(xsv + 32 * s + 16),
                                 _mm512_cvtepi32_ps(_mm512_permutex2var_epi32(sa, G32_PAIR23, sb)), _mm512_setzero_ps());
    __m512 sc01, sc23;
    scales_pair(w, rk, 4 * s, &sc01, &sc23);
    y = _mm256_fmadd_ps(_mm512_castps512_ps256(sc01), _mm512_castps512_ps256(t01), y);
    y = _mm256_fmadd_ps(_mm512_extractf32x8_ps(sc01, 1), _mm512_extractf32x8_ps(t01, 1), y);
    y = _mm256_fmadd_ps(_mm512_castps512_ps256(sc23), _mm512_castps512_ps256(t23), y);
    return _mm256_fmadd_ps(_mm512_extractf32x8_ps(sc23, 1), _mm512_extractf32x8_ps(t23, 1), y);
}

QI_AVX512 static void gemv_groups32(const pdq_qmatrix *w, const qi_plan *pl, const uint8_t *xt, int r0, int r1,
                                    int rend, float *y) {
    const __m512i lane_j = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
    const int8_t *planes = qi_planes(pl, xt);
    const float *xs = qi_xs(pl, xt);
    const int32_t *sx = qi_sx(pl, xt);
    size_t rb = w->row_bytes, pf = qi_prefetch_bytes_pair(rb);
    int ns = pl->nsteps, u8 = w->type == PDQ_QT_U8;
    _Alignas(64) float xsv[G32_GROUPS * 8]; /* per step: g32_pair_step's xs, two registers */
    _Alignas(64) int32_t zsv[G32_GROUPS * 4];
    _Alignas(64) int32_t xlv[G32_GROUPS * 4]; /* uint8: step4_u8_vnni's missing share, in its lanes */
    if (u8)
        for (int s = 0; s < ns; s++)
            _mm512_store_si512(xlv + 16 * s, _mm512_permutexvar_epi32(lane_j, _mm512_castsi128_si512(
                                                                           vnni_xl128((const uint8_t *)planes + (size_t)s * 256))));
    /* per step: xs of group 4s + j in the pair's lanes 8j.. of two registers and, with one shared
     * row of zero points, zero * sum(xq) in q's lanes 4j + k */
    const __m512i lane_8j = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
    for (int s = 0; s < ns; s++) {
        _mm512_store_ps(xsv + 32 * s, _mm512_permutexvar_ps(lane_8j, _mm512_castps128_ps512(_mm_loadu_ps(xs + 4 * s))));
        __m128 x23 = _mm_castsi128_ps(_mm_loadl_epi64((const __m128i *)(xs + 4 * s + 2))); /* the step's last two */
        _mm512_store_ps(xsv + 32 * s + 16, _mm512_permutexvar_ps(lane_8j, _mm512_castps128_ps512(x23)));
        if (w->zero_stride) continue;
        __m512i z = _mm512_cvtepu8_epi32(_mm_loadu_si32(w->zeros + 4 * s));
        __m512i zs = _mm512_mullo_epi32(z, _mm512_zextsi128_si512(_mm_loadu_si128((const __m128i *)(sx + 4 * s))));
        _mm512_store_si512(zsv + 16 * s, _mm512_permutexvar_epi32(lane_j, zs));
    }
    const int32_t *zp = w->zero_stride ? NULL : zsv;
    for (int r = r0; r < r1; r += 8) { /* two blocks at once: two streams, one chain of eight lanes */
        qk_rows4 pa, pb;
        int rk[8], na = qi_rows4_begin_codes(w, r, r1, rend, pf, &pa);
        int nb = r + 4 < r1 ? qi_rows4_begin_codes(w, r + 4, r1, rend, pf, &pb) : 0;
        if (!nb) pb = pa; /* a last lone block: computed twice, stored once */
        for (int k = 0; k < 4; k++) {
            rk[k] = r + (k < na ? k : na - 1);
            rk[4 + k] = nb ? r + 4 + (k < nb ? k : nb - 1) : rk[k];
        }
        __m256 yab = _mm256_setzero_ps();
        for (int s = 0; s < ns; s++) {
            const int8_t *xs8 = planes + (size_t)s * 256;
            __m512i qa, qb;
            if (u8) {
                __m512i xl = _mm512_load_si512(xlv + 16 * s);
                qa = _mm512_add_epi32(step4_u8_vnni(&pa, s, (const uint8_t *)xs8), xl);
                qb = _mm512_add_epi32(step4_u8_vnni(&pb, s, (const uint8_t *)xs8), xl);
            } else {
                qa = step4(&pa, (size_t)s * 64, rb, xs8);
                qb = step4(&pb, (size_t)s * 64, rb, xs8);
            }
            yab = g32_pair_step(w, &pa, &pb, rk, sx, xsv, zp, s, qa, qb, yab);
        }
        float out[8];
        _mm256_storeu_ps(out, yab);
        for (int k = 0; k < na + nb; k++) y[r + k] = out[k];
    }
}

/* Row k's 128 columns of the step at off, for a whole block: both chunks into the same lanes
 * (only the lanes' total counts), so one shift and add for the two byte products. */
QI_AVX512 static inline __m512i step_row_u8(const qk_rows4 *p, int k, size_t off, __m512i xh0, __m512i xh1, __m512i xl0,
                                            __m512i xl1) {
    const __m512i s80 = _mm512_set1_epi8((char)0x80);
    __m512i c0 = _mm512_loadu_si512(qk_rows4_at(p, k, off)), c1 = _mm512_loadu_si512(qk_rows4_at(p, k, off + 64));
    __m512i h = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), c0, xh0), c1, xh1);
    __m512i l = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), xl0, _mm512_xor_si512(c0, s80)), xl1,
                                    _mm512_xor_si512(c1, s80));
    return _mm512_add_epi32(_mm512_slli_epi32(h, 8), l); /* a lane: 8 columns, |.| <= 8 * 255 * 128 * 257 < 2^27 */
}

/* uint8, blocks of 128 columns (per channel, or groups of whole steps), cols a multiple of 128:
 * a step's 4 x 16 lanes from step_row_u8, reduced to each row's block sum, the xl share added,
 * then epi4_block (the AVX2 uint8 GEMV's epilogue, lane for lane). From L2 this computes 1.5x
 * the AVX2 kernel's bytes/s (76 / 50 GB/s, 256 x 2048); from DRAM on a loaded machine the two
 * are within 5-15 % (the AVX2 one ahead), both bound by the stream. The 4-row block is one
 * sequential stream that the hardware prefetcher follows: no software prefetch of codes (as the
 * AVX2 uint8 GEMV). */
QI_AVX512 static void gemv_u8_steps(const pdq_qmatrix *w, const qi_plan *pl, const uint8_t *xt, int r0, int r1,
                                    int rend, float *y) {
    const uint8_t *planes = (const uint8_t *)qi_planes(pl, xt);
    const float *xs = qi_xs(pl, xt);
    const int32_t *sx = qi_sx(pl, xt);
    size_t pf = qi_prefetch_bytes(w->row_bytes);
    int32_t xl[G32_GROUPS]; /* per step: the xl share, the same for every row */
    for (int s = 0; s < pl->nsteps; s++) {
        __m128i v = vnni_xl128(planes + (size_t)s * 256);
        v = _mm_add_epi32(v, _mm_shuffle_epi32(v, _MM_SHUFFLE(1, 0, 3, 2)));
        xl[s] = _mm_cvtsi128_si32(_mm_add_epi32(v, _mm_shuffle_epi32(v, _MM_SHUFFLE(2, 3, 0, 1))));
    }
    for (int r = r0; r < r1; r += 4) {
        qk_rows4 p;
        int nr = qi_rows4_begin(w, r, r1, rend, pf, &p); /* grids prefetched */
        epi4 e = {_mm_setzero_ps(), _mm_setzero_ps(), _mm_setzero_si128(), -1, 0};
        for (int s = 0; s < pl->nsteps; s++) {
            const uint8_t *x8 = planes + (size_t)s * 256;
            size_t off = (size_t)s * 128;
            __m512i xh0 = _mm512_loadu_si512(x8), xh1 = _mm512_loadu_si512(x8 + 64);
            __m512i xl0 = _mm512_loadu_si512(x8 + 128), xl1 = _mm512_loadu_si512(x8 + 192);
            __m512i v0 = step_row_u8(&p, 0, off, xh0, xh1, xl0, xl1), v1 = step_row_u8(&p, 1, off, xh0, xh1, xl0, xl1);
            __m512i v2 = step_row_u8(&p, 2, off, xh0, xh1, xl0, xl1), v3 = step_row_u8(&p, 3, off, xh0, xh1, xl0, xl1);
            __m512i a = _mm512_add_epi32(_mm512_unpacklo_epi32(v0, v1), _mm512_unpackhi_epi32(v0, v1));
            __m512i b = _mm512_add_epi32(_mm512_unpacklo_epi32(v2, v3), _mm512_unpackhi_epi32(v2, v3));
            __m512i q = _mm512_add_epi32(_mm512_unpacklo_epi64(a, b), _mm512_unpackhi_epi64(a, b)); /* lane 4j + k: row k */
            __m256i h = _mm256_add_epi32(_mm512_castsi512_si256(q), _mm512_extracti64x4_epi64(q, 1));
            __m128i q4 = _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
            epi4_block(&e, &p, pl, xs, sx, s, _mm_add_epi32(q4, _mm_set1_epi32(xl[s])));
        }
        float out[4];
        _mm_storeu_ps(out, e.y);
        for (int k = 0; k < nr; k++) y[r + k] = out[k];
    }
}

/* uint8 at the AVX-512 level, on the byte planes (vpdpbusd, step4_u8_vnni): groups of 32 and
 * blocks of 128 over whole 128-column steps here, the rest on the AVX2 uint8 GEMV (whose
 * per-32-column epilogue, four rows in an __m128, halved grouped bytes/s). */
QI_AVX512 void qi_gemv_u8_avx512(const pdq_qmatrix *w, const qi_plan *pl, const uint8_t *xt, int r0, int r1,
                                 int rend, float *y) {
    if (pl->B == 32 && w->cols % 128 == 0 && w->ngroups <= G32_GROUPS) gemv_groups32(w, pl, xt, r0, r1, rend, y);
    else if (pl->B == QI_STEP && w->cols % 128 == 0 && pl->nsteps <= G32_GROUPS)
        gemv_u8_steps(w, pl, xt, r0, r1, rend, y);
    else qi_gemv_u8_avx2(w, pl, xt, r0, r1, rend, y);
}

QI_AVX512 void qi_gemv_avx512(const pdq_qmatrix *w, const qi_plan *pl, const uint8_t *xt, int r0, int r1, int rend,
                              float *y) {
    if (pl->B == 32 && pl->nblocks == 4 * pl->nsteps && w->ngroups <= G32_GROUPS) {
        gemv_groups32(w, pl, xt, r0, r1, rend, y);
        return;
    }
    const int8_t *planes = qi_planes(pl, xt);
    const float *xs = qi_xs(pl, xt);
    const int32_t *sx = qi_sx(pl, xt);
    size_t rb = w->row_bytes, pf = qi_prefetch_bytes(rb);
    for (int r = r0; r < r1; r += 4) {
        qk_rows4 p;
        int nr = qi_rows4_begin(w, r, r1, rend, pf, &p);
        epi4 e = {_mm_setzero_ps(), _mm_setzero_ps(), _mm_setzero_si128(), -1, 0};
        for (int s = 0; s < pl->nsteps; s++) {
            __m512i q = step4(&p, (size_t)s * 64, rb, planes + (size_t)s * 256);
            if (pl->B == 128) {
                __m256i h = _mm256_add_epi32(_mm512_castsi512_si256(q), _mm512_extracti64x4_epi64(q, 1));
                epi4_block(&e, &p, pl, xs, sx, s,
                           _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1)));
            } else if (pl->B == 64) {
                __m512i h = _mm512_add_epi32(_mm512_shuffle_i32x4(q, q, _MM_SHUFFLE(2, 0, 2, 0)),
                                             _mm512_shuffle_i32x4(q, q, _MM_SHUFFLE(3, 1, 3, 1)));
                int b0 = 2 * s;
                epi4_block(&e, &p, pl, xs, sx, b0, _mm512_castsi512_si128(h));
                if (b0 + 1 < pl->nblocks) epi4_block(&e, &p, pl, xs, sx, b0 + 1, _mm512_extracti32x4_epi32(h, 1));
            } else if (4 * s + 4 <= pl->nblocks) {
                epi16_groups32(&e, &p, xs, sx, 4 * s, q);
                e.g = 4 * s + 3; /* one block per group */
            } else {
                int b0 = 4 * s;
                epi4_block(&e, &p, pl, xs, sx, b0, _mm512_castsi512_si128(q));
                if (b0 + 1 < pl->nblocks) epi4_block(&e, &p, pl, xs, sx, b0 + 1, _mm512_extracti32x4_epi32(q, 1));
                if (b0 + 2 < pl->nblocks) epi4_block(&e, &p, pl, xs, sx, b0 + 2, _mm512_extracti32x4_epi32(q, 2));
                if (b0 + 3 < pl->nblocks) epi4_block(&e, &p, pl, xs, sx, b0 + 3, _mm512_extracti32x4_epi32(q, 3));
            }
        }
        float out[4];
        _mm_storeu_ps(out, e.y);
        for (int k = 0; k < nr; k++) y[r + k] = out[k];
    }
}

/* pdq_qexact_rows of a uint4 matrix (per-channel): a step's 16 lanes (a row's sum over 32
 * columns, |.| <= 32 * 15 * 32768 < 2^24) add in int32 for at most 32 steps (< 2^29), then go
 * into each row's int64. rend >= r1: how far the task's prefetch may reach. */
QI_AVX512 void qi_exact_avx512(const pdq_qmatrix *w, const qi_plan *pl, const uint8_t *xt, int r0, int r1, int rend,
                               int64_t *sums) {
    const int8_t *planes = qi_planes(pl, xt);
    size_t rb = w->row_bytes, pf = qi_prefetch_bytes(rb);
    for (int r = r0; r < r1; r += 4) {
        qk_rows4 p;
        int nr = qi_rows4_begin(w, r, r1, rend, pf, &p);
        __m512i acc = _mm512_setzero_si512();
        int64_t tot[4] = {0, 0, 0, 0};
        for (int s = 0; s < pl->nsteps; s++) {
            acc = _mm512_add_epi32(acc, step4(&p, (size_t)s * 64, rb, planes + (size_t)s * 256));
            if ((s + 1) % 32 == 0 || s + 1 == pl->nsteps) {
                int32_t a[16];
                _mm512_storeu_si512(a, acc);
                for (int i = 0; i < 16; i++) tot[i & 3] += a[i];
                acc = _mm512_setzero_si512();
            }
        }
        for (int k = 0; k < nr; k++) sums[r + k - r0] = tot[k];
    }
}

/* pdq_qexact_groups of a uint4 matrix, G a multiple of 32. Groups of whole steps (G a multiple of
 * 128) add a group's steps in int32 lanes, flushed to int64 every 32 steps as above; other groups
 * take each step's quarters (lane 4j + k: row k, columns 32j.. of the step) one by one. */
QI_AVX512 void qi_exact_groups_avx512(const pdq_qmatrix *w, const qi_plan *pl, const uint8_t *xt, int G, int r0, int r1,
                                      int rend, int64_t *sums) {
    const int8_t *planes = qi_planes(pl, xt);
    size_t rb = w->row_bytes, pf = qi_prefetch_bytes(rb);
    int ng = (w->cols + G - 1) / G;
    for (int r = r0; r < r1; r += 4) {
        qk_rows4 p;
        int nr = qi_rows4_begin(w, r, r1, rend, pf, &p);
        int64_t *o = sums + (size_t)(r - r0) * ng;
        if (G % 128 == 0) {
            int spg = G / 128;
            for (int g = 0; g < ng; g++) {
                int s0 = g * spg, s1 = s0 + spg < pl->nsteps ? s0 + spg : pl->nsteps;
                __m512i acc = _mm512_setzero_si512();
                __m256i tot = _mm256_setzero_si256(); /* row k's int64 sum in lane k */
                for (int s = s0; s < s1; s++) {
                    acc = _mm512_add_epi32(acc, step4(&p, (size_t)s * 64, rb, planes + (size_t)s * 256));
                    if ((s - s0 + 1) % 32 == 0 || s + 1 == s1) { /* the four quarters of each row, in int32 */
                        __m256i h = _mm256_add_epi32(_mm512_castsi512_si256(acc), _mm512_extracti64x4_epi64(acc, 1));
                        __m128i q4 = _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
                        tot = _mm256_add_epi64(tot, _mm256_cvtepi32_epi64(q4));
                        acc = _mm512_setzero_si512();
                    }
                }
                int64_t t[4];
                _mm256_storeu_si256((__m256i *)t, tot);
                for (int k = 0; k < nr; k++) o[(size_t)k * ng + g] = t[k];
            }
            continue;
        }
        for (int k = 0; k < nr; k++)
            for (int g = 0; g < ng; g++) o[(size_t)k * ng + g] = 0;
        for (int s = 0; s < pl->nsteps; s++) {
            int32_t a[16];
            _mm512_storeu_si512(a, step4(&p, (size_t)s * 64, rb, planes + (size_t)s * 256));
            for (int j = 0; j < 4 && 128 * s + 32 * j < w->cols; j++) {
                int g = (128 * s + 32 * j) / G;
                for (int k = 0; k < nr; k++) o[(size_t)k * ng + g] += a[4 * j + k];
            }
        }
    }
}

/* Up to QI_TILE_X (4) rows of x against up to QI_TILE_P (4) panels: 16 accumulators of 16 rows,
 * named so that they stay in registers; per block t += xs * S and per group y += scale * t go
 * through memory (once per block, against 16 * B / 2 dot products). Missing x rows and panels
 * repeat the last one and are not stored. */
/* qi_tile_avx512 for groups of one block (B == group: 32 or 64), two panels at a time: t of a
 * block is final at once, so y += scale * fmaf(xs, S, 0) follows each block and the tile's state
 * (8 sums, 8 y) stays in registers; the four-panel tile kept 16 t and 16 y on the stack and
 * went through them every block. Panels p0, p1 for rows of x x0..x3 (repeats are not stored). */
QI_AVX512 static void tile_groups1_2p(const qi_plan *pl, const int32_t *const *x, const float *const *xs, int ni,
                                      const int32_t *p0, const int32_t *p1, const float *s0, const float *s1,
                                      int np, int left0, float *y, size_t ystride) {
    const int32_t *x0 = x[0], *x1 = x[1], *x2 = x[2], *x3 = x[3];
    __m512 y00 = _mm512_setzero_ps(), y01 = y00, y10 = y00, y11 = y00, y20 = y00, y21 = y00, y30 = y00, y31 = y00;
    int half = pl->B / 2;
    for (int b = 0; b < pl->nblocks; b++) {
        __m512i a00 = _mm512_setzero_si512(), a01 = a00, a10 = a00, a11 = a00, a20 = a00, a21 = a00, a30 = a00, a31 = a00;
        for (int j = b * half; j < (b + 1) * half; j++) {
            size_t o = (size_t)j * QI_PANEL;
            __m512i w0 = _mm512_load_si512(p0 + o), w1 = _mm512_load_si512(p1 + o), xb;
#define QI_X(i)                                \
    xb = _mm512_set1_epi32(x##i[j]);           \
    a##i##0 = pdq_dpwssd512(a##i##0, w0, xb);  \
    a##i##1 = pdq_dpwssd512(a##i##1, w1, xb);
            QI_X(0) QI_X(1) QI_X(2) QI_X(3)
#undef QI_X
        }
        __m512 c0 = _mm512_load_ps(s0 + (size_t)b * QI_PANEL), c1 = _mm512_load_ps(s1 + (size_t)b * QI_PANEL);
#define QI_Y(i)                                                                                                  \
    do {                                                                                                         \
        __m512 xsb = _mm512_set1_ps(xs[i][b]);                                                                   \
        y##i##0 = _mm512_fmadd_ps(c0, _mm512_fmadd_ps(xsb, _mm512_cvtepi32_ps(a##i##0), _mm512_setzero_ps()), y##i##0); \
        y##i##1 = _mm512_fmadd_ps(c1, _mm512_fmadd_ps(xsb, _mm512_cvtepi32_ps(a##i##1), _mm512_setzero_ps()), y##i##1); \
    } while (0)
        QI_Y(0);
        QI_Y(1);
        QI_Y(2);
        QI_Y(3);
#undef QI_Y
    }
    __m512 out[4][2] = {{y00, y01}, {y10, y11}, {y20, y21}, {y30, y31}};
    for (int k = 0; k < np; k++) {
        int left = left0 - k * QI_PANEL;
        __mmask16 m = (__mmask16)(left >= QI_PANEL ? 0xFFFF : (1u << left) - 1);
        for (int i = 0; i < ni; i++) _mm512_mask_storeu_ps(y + (size_t)i * ystride + (size_t)k * QI_PANEL, m, out[i][k]);
    }
}

QI_AVX512 void qi_tile_avx512(const pdq_qmatrix *w, const qi_plan *pl, const uint8_t *const *xr, int ni,
                              const int32_t *const *panels, const float *const *pscales, int np, int nrows, float *y,
                              size_t ystride) {
    (void)w;
    if (pl->bpg == 1) { /* groups of one block: two panels at a time */
        const int32_t *x[4];
        const float *xs[4];
        for (int i = 0; i < 4; i++) {
            const uint8_t *xi = xr[i < ni ? i : ni - 1];
            x[i] = (const int32_t *)qi_xq(pl, xi);
            xs[i] = qi_xs(pl, xi);
        }
        for (int k = 0; k < np; k += 2) {
            int k1 = k + 1 < np ? k + 1 : k;
            tile_groups1_2p(pl, x, xs, ni, panels[k], panels[k1], pscales[k], pscales[k1], k1 - k + 1,
                            nrows - k * QI_PANEL, y + (size_t)k * QI_PANEL, ystride);
        }
        return;
    }
    const int32_t *x0, *x1, *x2, *x3;
    const float *xs[4];
    {
        const uint8_t *x[4];
        for (int i = 0; i < 4; i++) {
            x[i] = xr[i < ni ? i : ni - 1];
            xs[i] = qi_xs(pl, x[i]);
        }
        x0 = (const int32_t *)qi_xq(pl, x[0]);
        x1 = (const int32_t *)qi_xq(pl, x[1]);
        x2 = (const int32_t *)qi_xq(pl, x[2]);
        x3 = (const int32_t *)qi_xq(pl, x[3]);
    }
    const int32_t *p0 = panels[0], *p1 = panels[np > 1 ? 1 : 0], *p2 = panels[np > 2 ? 2 : np - 1],
                  *p3 = panels[np > 3 ? 3 : np - 1];
    const float *sc[4];
    for (int k = 0; k < 4; k++) sc[k] = pscales[k < np ? k : np - 1];
    __m512 t[4][4], yv[4][4];
    for (int i = 0; i < 4; i++)
        for (int k = 0; k < 4; k++) t[i][k] = yv[i][k] = _mm512_setzero_ps();
    int half = pl->B / 2;
    for (int b = 0; b < pl->nblocks; b++) {
        __m512i a00 = _mm512_setzero_si512(), a01 = a00, a02 = a00, a03 = a00, a10 = a00, a11 = a00, a12 = a00,
                a13 = a00, a20 = a00, a21 = a00, a22 = a00, a23 = a00, a30 = a00, a31 = a00, a32 = a00, a33 = a00;
        for (int j = b * half; j < (b + 1) * half; j++) {
            size_t o = (size_t)j * QI_PANEL;
            __m512i w0 = _mm512_load_si512(p0 + o), w1 = _mm512_load_si512(p1 + o);
            __m512i w2 = _mm512_load_si512(p2 + o), w3 = _mm512_load_si512(p3 + o), xb;
#define QI_X(i)                                          \
    xb = _mm512_set1_epi32(x##i[j]);                     \
    a##i##0 = pdq_dpwssd512(a##i##0, w0, xb);                   \
    a##i##1 = pdq_dpwssd512(a##i##1, w1, xb);                   \
    a##i##2 = pdq_dpwssd512(a##i##2, w2, xb);                   \
    a##i##3 = pdq_dpwssd512(a##i##3, w3, xb);
            QI_X(0) QI_X(1) QI_X(2) QI_X(3)
#undef QI_X
        }
#define QI_T(i)                                                                           \
    do {                                                                                  \
        __m512 xsb = _mm512_set1_ps(xs[i][b]);                                            \
        t[i][0] = _mm512_fmadd_ps(xsb, _mm512_cvtepi32_ps(a##i##0), t[i][0]);             \
        t[i][1] = _mm512_fmadd_ps(xsb, _mm512_cvtepi32_ps(a##i##1), t[i][1]);             \
        t[i][2] = _mm512_fmadd_ps(xsb, _mm512_cvtepi32_ps(a##i##2), t[i][2]);             \
        t[i][3] = _mm512_fmadd_ps(xsb, _mm512_cvtepi32_ps(a##i##3), t[i][3]);             \
    } while (0)
        QI_T(0);
        QI_T(1);
        QI_T(2);
        QI_T(3);
#undef QI_T
        if (qi_last_in_group(pl, b)) {
            int g = b / pl->bpg;
            for (int k = 0; k < 4; k++) {
                __m512 c = _mm512_load_ps(sc[k] + (size_t)g * QI_PANEL);
                for (int i = 0; i < 4; i++) {
                    yv[i][k] = _mm512_fmadd_ps(c, t[i][k], yv[i][k]);
                    t[i][k] = _mm512_setzero_ps();
                }
            }
        }
    }
    for (int k = 0; k < np; k++) {
        int left = nrows - k * QI_PANEL;
        __mmask16 m = (__mmask16)(left >= QI_PANEL ? 0xFFFF : (1u << left) - 1);
        for (int i = 0; i < ni; i++) _mm512_mask_storeu_ps(y + (size_t)i * ystride + (size_t)k * QI_PANEL, m, yv[i][k]);
    }
}

/* qi_panel_decode's panel, with one gather of 4 code bytes from each of the 16 rows per 4 column
 * pairs; the last bytes of each row (where 4 bytes would reach past it) and missing rows take
 * the portable decoder's values. */
QI_AVX512 void qi_panel_decode_avx512(const pdq_qmatrix *w, const qi_plan *pl, int r, int nr, int32_t *panel,
                                      float *pscale, int32_t *zt) {
    int full = w->cols / 2 / 4, rb = (int)w->row_bytes; /* whole 4-byte words of two valid columns each */
    qi_panel_decode_tail(w, pl, r, nr, panel, pscale, zt, 4 * full);
    __mmask16 rows = (__mmask16)(nr >= QI_PANEL ? 0xFFFF : (1u << nr) - 1);
    /* row l's offset from row r (a multiple of 16) in either layout: (l / 4) 4-row blocks and l % 4 rows */
    __m512i lv = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    __m512i idx = _mm512_add_epi32(_mm512_mullo_epi32(_mm512_srli_epi32(lv, 2), _mm512_set1_epi32(4 * rb)),
                                   _mm512_mullo_epi32(_mm512_and_si512(lv, _mm512_set1_epi32(3)),
                                                      _mm512_set1_epi32((int)w->row_step)));
    const uint8_t *base = pdq_qmatrix_row(w, r);
    const __m512i m0 = _mm512_set1_epi32(0x0F), m1 = _mm512_set1_epi32(0xF0000);
    int cpg = w->group; /* columns per zero-point group */
    for (int q = 0; q < full; q++) {
        __m512i v = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), rows, idx, pdq_qmatrix_at(w, base, 4 * (size_t)q), 1);
        __m512i z = _mm512_load_si512(zt + (size_t)(8 * q / cpg) * QI_PANEL);
        for (int jj = 0; jj < 4; jj++) {
            __m512i u = _mm512_srli_epi32(v, 8 * jj);
            __m512i word = _mm512_or_si512(_mm512_and_si512(u, m0), _mm512_and_si512(_mm512_slli_epi32(u, 12), m1));
            _mm512_store_si512(panel + (size_t)(4 * q + jj) * QI_PANEL, _mm512_sub_epi16(word, z));
        }
    }
}
/* qi_prepare_x, vectorized: the same max, the same float division and half-to-even rounding
 * (IEEE operations, so the same xq), the same clamping and sums. */
QI_AVX512 void qi_prepare_x_avx512(const pdq_qmatrix *w, const qi_plan *pl, const float *x, uint8_t *out, int planes) {
    int16_t *xq = (int16_t *)out;
    float *xs = (float *)(out + pl->off_xs);
    int32_t *sx = (int32_t *)(out + pl->off_sx);
    const __m512 big = _mm512_set1_ps(FLT_MAX), qmax = _mm512_set1_ps(32767.0f), qmin = _mm512_set1_ps(-32767.0f);
    const __m512 sign = _mm512_set1_ps(-0.0f);
    for (int b = 0; b < pl->nblocks; b++) {
        int c0 = b * pl->B, c1 = c0 + pl->B < w->cols ? c0 + pl->B : w->cols, nv = (c1 - c0 + 15) / 16;
        __m512 v[8];
        __m512 m = _mm512_setzero_ps();
        __mmask16 bad = 0;
        for (int k = 0; k < nv; k++) {
            int c = c0 + 16 * k, left = c1 - c;
            __mmask16 lm = (__mmask16)(left >= 16 ? 0xFFFF : (1u << left) - 1);
            v[k] = w->perm ? _mm512_mask_i32gather_ps(_mm512_setzero_ps(), lm, _mm512_maskz_loadu_epi32(lm, w->perm + c), x, 4)
                           : _mm512_maskz_loadu_ps(lm, x + c);
            __m512 a = _mm512_andnot_ps(sign, v[k]);
            bad |= _mm512_cmp_ps_mask(a, big, _CMP_NLE_UQ); /* Inf or NaN */
            m = _mm512_max_ps(m, a);
        }
        float mx = _mm512_reduce_max_ps(m);
        float sc = bad ? NAN : mx / 32767.0f;
        __m512i sum = _mm512_setzero_si512();
        for (int k = 0; k < nv; k++) {
            __m512i q = _mm512_setzero_si512();
            if (!bad && sc > 0.0f) {
                __m512 r = _mm512_roundscale_ps(_mm512_div_ps(v[k], _mm512_set1_ps(sc)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
                q = _mm512_cvttps_epi32(_mm512_min_ps(_mm512_max_ps(r, qmin), qmax));
            }
            sum = _mm512_add_epi32(sum, q);
            _mm256_storeu_si256((__m256i *)(xq + c0 + 16 * k), _mm512_cvtepi32_epi16(q));
        }
        xs[b] = sc;
        sx[b] = _mm512_reduce_add_epi32(sum);
    }
    for (int c = w->cols; c < pl->ncolp; c++) xq[c] = 0; /* past the last block's vectors too */
    if (!planes) return;
    if (w->type == PDQ_QT_U8) { /* column order: xh of the step's 128 columns, then their xl */
        uint8_t *d8 = out + pl->off_planes;
        for (int s = 0; s < pl->nsteps; s++, d8 += 256)
            for (int k = 0; k < 4; k++) {
                __m512i q = _mm512_loadu_si512(xq + s * QI_STEP + 32 * k);
                _mm256_storeu_si256((__m256i *)(d8 + 32 * k), _mm512_cvtepi16_epi8(_mm512_srai_epi16(q, 8)));
                _mm256_storeu_si256((__m256i *)(d8 + QI_STEP + 32 * k),
                                    _mm512_cvtepi16_epi8(_mm512_and_si512(q, _mm512_set1_epi16(0xFF))));
            }
        return;
    }
    int8_t *dst = (int8_t *)(out + pl->off_planes);
    for (int s = 0; s < pl->nsteps; s++, dst += 256)
        for (int k = 0; k < 4; k++) { /* 16 column pairs: one int32 per pair, even column low */
            __m512i pr = _mm512_loadu_si512(xq + s * QI_STEP + 32 * k);
            __m512i ev = _mm512_srai_epi32(_mm512_slli_epi32(pr, 16), 16), od = _mm512_srai_epi32(pr, 16);
            __m512i m8 = _mm512_set1_epi32(0xFF);
            _mm_storeu_si128((__m128i *)(dst + 16 * k), _mm512_cvtepi32_epi8(_mm512_srai_epi32(ev, 8)));
            _mm_storeu_si128((__m128i *)(dst + 64 + 16 * k), _mm512_cvtepi32_epi8(_mm512_srai_epi32(od, 8)));
            _mm_storeu_si128((__m128i *)(dst + 128 + 16 * k), _mm512_cvtepi32_epi8(_mm512_and_si512(ev, m8)));
            _mm_storeu_si128((__m128i *)(dst + 192 + 16 * k), _mm512_cvtepi32_epi8(_mm512_and_si512(od, m8)));
        }
}
#endif
