/* Run-time CPU detection for the SIMD kernels. */
#include "kernels/qmatmul.h"

int pdq_cpu_has_avx2_fma(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    return 0;
#endif
}

int pdq_cpu_has_avx512(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    return pdq_cpu_has_avx2_fma() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw");
#else
    return 0;
#endif
}

int pdq_cpu_has_avx512_vnni(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    return pdq_cpu_has_avx512() && __builtin_cpu_supports("avx512vnni");
#else
    return 0;
#endif
}

int pdq_cpu_has_avx_vnni(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    return pdq_cpu_has_avx2_fma() && __builtin_cpu_supports("avxvnni");
#else
    return 0;
#endif
}
