/* GPTQ's rank-1 update of one column's rows (rank1_fma.h). */
#include "kernels/rank1_fma.h"

#include <math.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

/* Rows [0, fe) in chunks of 64 then 8, each chunk's rows in registers through all n updates
 * (eight independent chains hide the fma latency); returns the first row left. */
__attribute__((target("avx2,fma"))) static int seq_avx2(float *w, const float *e, size_t es, const float *a, int n,
                                                        int fe) {
    int r = 0;
    for (; r + 64 <= fe; r += 64) {
        __m256 v[8];
        for (int i = 0; i < 8; i++) v[i] = _mm256_loadu_ps(w + r + 8 * i);
        const float *et = e + r;
        for (int t = 0; t < n; t++, et += es) {
            __m256 va = _mm256_broadcast_ss(a + t);
            for (int i = 0; i < 8; i++) v[i] = _mm256_fmadd_ps(va, _mm256_loadu_ps(et + 8 * i), v[i]);
        }
        for (int i = 0; i < 8; i++) _mm256_storeu_ps(w + r + 8 * i, v[i]);
    }
    for (; r + 8 <= fe; r += 8) {
        __m256 v = _mm256_loadu_ps(w + r);
        const float *et = e + r;
        for (int t = 0; t < n; t++, et += es) v = _mm256_fmadd_ps(_mm256_broadcast_ss(a + t), _mm256_loadu_ps(et), v);
        _mm256_storeu_ps(w + r, v);
    }
    return r;
}
#endif

void pdq_rank1_fma_seq(pdq_level level, float *w, const float *e, size_t es, const float *a, int n, int rows,
                       int fused) {
    if (n <= 0) return;
    int fe = fused < rows ? (fused > 0 ? fused : 0) : rows, r = 0;
#if defined(__x86_64__) || defined(__i386__)
    if (level != PDQ_LEVEL_SCALAR && fe > 0) r = seq_avx2(w, e, es, a, n, fe);
#else
    (void)level;
#endif
    for (; r < fe; r++) {
        float v = w[r];
        for (int t = 0; t < n; t++) v = fmaf(a[t], e[(size_t)t * es + r], v);
        w[r] = v;
    }
    for (; r < rows; r++) { /* ISO C: no contraction of the product into the sum */
        float v = w[r];
        for (int t = 0; t < n; t++) {
            float p = a[t] * e[(size_t)t * es + r];
            v += p;
        }
        w[r] = v;
    }
}
