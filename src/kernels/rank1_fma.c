/* GPTQ's rank-1 update of one column's rows (rank1_fma.h). */
#include "kernels/rank1_fma.h"

#include <math.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

__attribute__((target("avx2,fma"))) static int rank1_avx2(float *w, const float *e, float a, int r0, int r1) {
    __m256 va = _mm256_set1_ps(a);
    int r = r0;
    for (; r + 8 <= r1; r += 8)
        _mm256_storeu_ps(w + r, _mm256_fmadd_ps(va, _mm256_loadu_ps(e + r), _mm256_loadu_ps(w + r)));
    return r;
}
#endif

void pdq_rank1_fma(pdq_level level, float *w, const float *e, float a, int r0, int r1, int fma_end) {
    int fe = r1 < fma_end ? r1 : fma_end, r = r0;
#if defined(__x86_64__) || defined(__i386__)
    if (level != PDQ_LEVEL_SCALAR && r < fe) r = rank1_avx2(w, e, a, r, fe);
#else
    (void)level;
#endif
    for (; r < fe; r++) w[r] = fmaf(a, e[r], w[r]);
    for (; r < r1; r++) { /* ISO C: no contraction of the product into the sum */
        float p = a * e[r];
        w[r] += p;
    }
}
