/* Run-time CPU detection for the SIMD kernels. */
#include "kernels/qmatmul.h"
#include "kernels/qx_kernels.h"

#include <stdatomic.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

int pdq_cpu_has_avx2_fma(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    return 0;
#endif
}

int pdq_cpu_has_f16c(void) {
#if defined(__x86_64__) || defined(__i386__)
    /* clang's __builtin_cpu_supports knows no "f16c": CPUID leaf 1, ECX bit 29 (AVX's check
     * covers the OS saving the YMM state) */
    __builtin_cpu_init();
    unsigned a, b, c, d;
    return __builtin_cpu_supports("avx") && __get_cpuid(1, &a, &b, &c, &d) && (c >> 29 & 1u);
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
    /* CPUID leaf 7 subleaf 1, EAX bit 4 (clang 14's __builtin_cpu_supports lacks "avxvnni"); the
     * AVX2 check above already covers the OS saving YMM state. Read once: a fact of the machine,
     * and CPUID traps to the hypervisor in a VM (0.5 % of decode when asked per matmul). */
    static atomic_int known = -1;
    int v = atomic_load_explicit(&known, memory_order_relaxed);
    if (v >= 0) return v;
    unsigned a = 0, b = 0, c = 0, d = 0;
    v = pdq_cpu_has_avx2_fma() && __get_cpuid_count(7, 1, &a, &b, &c, &d) ? (int)((a >> 4) & 1) : 0;
    atomic_store_explicit(&known, v, memory_order_relaxed);
    return v;
#else
    return 0;
#endif
}

int pdq_qx_cpu_avx2(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") ? 1 : 0;
#else
    return 0;
#endif
}

int pdq_qx_cpu_vnni(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vnni");
#else
    return 0;
#endif
}
