/* Run-time CPU detection for the SIMD kernels: the features, and the levels (cpu_features.h)
 * they make, probed once. */
#include "kernels/cpu_features.h"

#include "kernels/qmatmul.h"

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

/* What each level falls back to (cpu_features.h has the order written out). */
static const pdq_level k_fallback[PDQ_LEVEL_COUNT] = {
    [PDQ_LEVEL_SCALAR] = PDQ_LEVEL_SCALAR,
    [PDQ_LEVEL_AVX2] = PDQ_LEVEL_SCALAR,
    [PDQ_LEVEL_AVX2_VNNI] = PDQ_LEVEL_AVX2,
    [PDQ_LEVEL_AVX512] = PDQ_LEVEL_AVX2,
    [PDQ_LEVEL_AVX512_VNNI] = PDQ_LEVEL_AVX512,
};

pdq_level pdq_level_fallback(pdq_level l) { return (unsigned)l < PDQ_LEVEL_COUNT ? k_fallback[l] : PDQ_LEVEL_SCALAR; }

/* The levels this CPU runs, bit 1u << level. Probed once: a fact of the machine, and CPUID traps
 * to the hypervisor in a VM. */
static unsigned cpu_levels(void) {
    static atomic_int known = -1;
    int v = atomic_load_explicit(&known, memory_order_relaxed);
    if (v >= 0) return (unsigned)v;
    unsigned m = 1u << PDQ_LEVEL_SCALAR;
    if (pdq_cpu_has_avx2_fma() && pdq_cpu_has_f16c()) { /* each level has its fallback's features */
        m |= 1u << PDQ_LEVEL_AVX2;
        if (pdq_cpu_has_avx_vnni()) m |= 1u << PDQ_LEVEL_AVX2_VNNI;
        if (pdq_cpu_has_avx512()) m |= 1u << PDQ_LEVEL_AVX512;
        if (pdq_cpu_has_avx512() && pdq_cpu_has_avx512_vnni()) m |= 1u << PDQ_LEVEL_AVX512_VNNI;
    }
    atomic_store_explicit(&known, (int)m, memory_order_relaxed);
    return m;
}

int pdq_cpu_has_level(pdq_level l) { return (unsigned)l < PDQ_LEVEL_COUNT && (cpu_levels() >> l & 1u); }

pdq_level pdq_level_pick(pdq_level l, unsigned have) {
    while (l != PDQ_LEVEL_SCALAR && !(have >> l & 1u)) l = pdq_level_fallback(l);
    return l;
}

pdq_level pdq_level_allowed(int force_scalar, int no_avx512, int no_vnni) {
    unsigned m = force_scalar ? 1u << PDQ_LEVEL_SCALAR : cpu_levels();
    if (no_avx512) m &= ~(1u << PDQ_LEVEL_AVX512 | 1u << PDQ_LEVEL_AVX512_VNNI);
    if (no_vnni) m &= ~(1u << PDQ_LEVEL_AVX2_VNNI | 1u << PDQ_LEVEL_AVX512_VNNI);
    for (int l = PDQ_LEVEL_COUNT - 1; l > PDQ_LEVEL_SCALAR; l--)
        if (m >> l & 1u) return (pdq_level)l;
    return PDQ_LEVEL_SCALAR;
}

pdq_level pdq_qctx_level(const pdq_qctx *ctx) {
    return ctx ? pdq_level_allowed(ctx->force_scalar, ctx->no_avx512, ctx->no_vnni) : pdq_level_allowed(0, 0, 0);
}

const char *pdq_level_name(pdq_level l) {
    static const char *const names[PDQ_LEVEL_COUNT] = {"scalar", "avx2", "avx2-vnni", "avx512", "avx512-vnni"};
    return (unsigned)l < PDQ_LEVEL_COUNT ? names[l] : "?";
}
