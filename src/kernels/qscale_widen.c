/* Compact (f16 / bf16) scales of a row widened to float32 for the 4-row kernels (rows4.h):
 * sixteen at a time with AVX-512F, eight with F16C, else one at a time. Every path gives the
 * exact float32 of each scale, so results do not depend on which one ran. */
#include <string.h>

#include "kernels/qkernel_internal.h"
#include "kernels/rows4.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

/* The tails are masked (AVX-512) or go through a zero-padded copy (F16C): rows of few groups
 * (8 for 256 columns in groups of 32) must not fall back to one conversion at a time. */
__attribute__((target("avx512f,avx512bw,avx512vl"))) static void widen_f16_avx512(const uint16_t *h, int n, float *out) {
    int i = 0;
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(out + i, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(h + i))));
    if (i < n) {
        __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
        _mm512_mask_storeu_ps(out + i, m, _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, h + i)));
    }
}

__attribute__((target("avx,f16c"))) static void widen_f16_f16c(const uint16_t *h, int n, float *out) {
    int i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(h + i))));
    if (i < n) {
        uint16_t t[8] = {0};
        float f[8];
        memcpy(t, h + i, sizeof(uint16_t) * (size_t)(n - i));
        _mm256_storeu_ps(f, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)t)));
        memcpy(out + i, f, sizeof(float) * (size_t)(n - i));
    }
}

/* bf16 is the top half of a float32: a shift */
__attribute__((target("avx2"))) static void widen_bf16_avx2(const uint16_t *h, int n, float *out) {
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(h + i)));
        _mm256_storeu_ps(out + i, _mm256_castsi256_ps(_mm256_slli_epi32(v, 16)));
    }
    for (; i < n; i++) out[i] = pdq_bf16_to_f32(h[i]);
}
#endif

/* The levels with a widening of their own: F16C (+ AVX2 for bf16); AVX-512F. */
#if defined(__x86_64__) || defined(__i386__)
#define WIDEN_HAVE (1u << PDQ_LEVEL_AVX2 | 1u << PDQ_LEVEL_AVX512)
#else
#define WIDEN_HAVE 0u
#endif

int qk_widen_level(void) { return (int)pdq_level_pick(pdq_level_allowed(0, 0, 0), WIDEN_HAVE); }

/* n compact scales h of type t widened at a level (at most the CPU's); 0 when that level has no
 * vector form for t (the caller converts one at a time). */
static int widen_run(const uint16_t *h, pdq_qscale_type t, int n, float *out, pdq_level level) {
    level = pdq_level_pick(level, WIDEN_HAVE);
#if defined(__x86_64__) || defined(__i386__)
    if (t == PDQ_QSCALE_F16 && level == PDQ_LEVEL_AVX512) { widen_f16_avx512(h, n, out); return 1; }
    if (t == PDQ_QSCALE_F16 && level == PDQ_LEVEL_AVX2) { widen_f16_f16c(h, n, out); return 1; }
    if (t == PDQ_QSCALE_BF16 && level != PDQ_LEVEL_SCALAR) { widen_bf16_avx2(h, n, out); return 1; }
#else
    (void)h, (void)t, (void)n, (void)out, (void)level;
#endif
    return 0;
}

void pdq_qscale_widen(const uint16_t *h, pdq_qscale_type t, size_t n, float *out) {
    size_t i = 0;
    for (; n - i >= 65536; i += 65536) /* runs an int counts */
        if (!widen_run(h + i, t, 65536, out + i, qk_widen_level())) break;
    if (i < n && widen_run(h + i, t, (int)(n - i), out + i, qk_widen_level())) return;
    for (; i < n; i++) out[i] = t == PDQ_QSCALE_F16 ? pdq_f16_to_f32(h[i]) : pdq_bf16_to_f32(h[i]);
}

void qk_widen_scales_at(const pdq_qmatrix *w, int r, int nrows, float *out, pdq_level level) {
    const uint16_t *h = w->scales16 + (size_t)r * w->ngroups;
    int n = nrows * w->ngroups;
    if (w->scales_rows4 && r % 4 == 0 && level != PDQ_LEVEL_SCALAR) { /* a block's [group][4 rows], widened, then transposed */
        float blk[4 * PDQ_QMATRIX_MAX_COMPACT_GROUPS];
        pdq_qmatrix row_major = *w;
        row_major.scales_rows4 = 0; /* the block read as one run of 4 * ngroups scales */
        qk_widen_scales_at(&row_major, r, 4, blk, level);
        for (int k = 0; k < nrows; k++)
            for (int g = 0; g < w->ngroups; g++) out[(size_t)k * w->ngroups + g] = blk[4 * g + k];
        return;
    }
    if (w->scales_rows4) level = PDQ_LEVEL_SCALAR; /* qk_scale finds each one */
    if (widen_run(h, w->scale_type, n, out, level)) return;
    for (int k = 0; k < nrows; k++)
        for (int g = 0; g < w->ngroups; g++) out[(size_t)k * w->ngroups + g] = qk_scale(w, r + k, g);
}

void qk_widen_scales(const pdq_qmatrix *w, int r, int nrows, float *out) {
    qk_widen_scales_at(w, r, nrows, out, qk_widen_level());
}
