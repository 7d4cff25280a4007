/* qi_prepare_x on AVX2: the same max, the same float division and half-to-even rounding (IEEE
 * operations, so the same xq), the same clamping and sums as the portable one; 6 % of a uint8
 * prefill went to the scalar loop. Compiled per function for the target, called only after
 * run-time detection. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "kernels/qint_internal.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#define QI_P2 __attribute__((target("avx2,fma")))

QI_P2 void qi_prepare_x_avx2(const pdq_qmatrix *w, const qi_plan *pl, const float *x, uint8_t *out, int planes) {
    int16_t *xq = (int16_t *)out;
    float *xs = (float *)(out + pl->off_xs);
    int32_t *sx = (int32_t *)(out + pl->off_sx);
    const __m256 big = _mm256_set1_ps(FLT_MAX), qmax = _mm256_set1_ps(32767.0f), qmin = _mm256_set1_ps(-32767.0f);
    const __m256 sign = _mm256_set1_ps(-0.0f);
    float v[QI_STEP] __attribute__((aligned(32)));
    for (int b = 0; b < pl->nblocks; b++) {
        /* the block in 16s (B is a multiple of 32, so 16s never pass the prepared row), zeros past c1 */
        int c0 = b * pl->B, c1 = c0 + pl->B < w->cols ? c0 + pl->B : w->cols, n = c1 - c0, n16 = (n + 15) / 16 * 16;
        if (w->perm)
            for (int c = 0; c < n; c++) v[c] = x[w->perm[c0 + c]];
        else memcpy(v, x + c0, sizeof(float) * (size_t)n);
        for (int c = n; c < n16; c++) v[c] = 0.0f;
        __m256 m = _mm256_setzero_ps(), bad = _mm256_setzero_ps();
        for (int c = 0; c < n16; c += 8) {
            __m256 a = _mm256_andnot_ps(sign, _mm256_load_ps(v + c));
            bad = _mm256_or_ps(bad, _mm256_cmp_ps(a, big, _CMP_NLE_UQ)); /* Inf or NaN */
            m = _mm256_max_ps(m, a);
        }
        __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
        m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
        m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
        float sc = _mm256_movemask_ps(bad) ? NAN : _mm_cvtss_f32(m4) / 32767.0f;
        __m256i sum = _mm256_setzero_si256();
        for (int c = 0; c < n16; c += 16) {
            __m256i q0 = _mm256_setzero_si256(), q1 = q0;
            if (!_mm256_movemask_ps(bad) && sc > 0.0f) {
                __m256 d = _mm256_set1_ps(sc);
                __m256 r0 = _mm256_round_ps(_mm256_div_ps(_mm256_load_ps(v + c), d), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
                __m256 r1 = _mm256_round_ps(_mm256_div_ps(_mm256_load_ps(v + c + 8), d), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
                q0 = _mm256_cvttps_epi32(_mm256_min_ps(_mm256_max_ps(r0, qmin), qmax));
                q1 = _mm256_cvttps_epi32(_mm256_min_ps(_mm256_max_ps(r1, qmin), qmax));
            }
            sum = _mm256_add_epi32(sum, _mm256_add_epi32(q0, q1));
            /* packs interleaves the 128-bit halves; the permute puts columns back in order */
            __m256i p16 = _mm256_permute4x64_epi64(_mm256_packs_epi32(q0, q1), _MM_SHUFFLE(3, 1, 2, 0));
            _mm256_storeu_si256((__m256i *)(xq + c0 + c), p16);
        }
        __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(sum), _mm256_extracti128_si256(sum, 1));
        s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, _MM_SHUFFLE(1, 0, 3, 2)));
        s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, _MM_SHUFFLE(2, 3, 0, 1)));
        xs[b] = sc;
        sx[b] = _mm_cvtsi128_si32(s4);
    }
    for (int c = w->cols; c < pl->ncolp; c++) xq[c] = 0;
    if (planes) (w->type == PDQ_QT_U4 ? qi_prepare_planes : qi_prepare_planes_u8)(pl, out);
}
#endif
