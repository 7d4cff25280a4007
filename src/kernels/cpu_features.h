/* The one notion of SIMD level: what the CPU has, probed once (cpu_features.c), and the order in
 * which a kernel family falls back when a level has no kernel of its own.
 *
 * Every kernel family keeps its kernels in a table indexed by pdq_level (in the manner of ggml's
 * type_traits_cpu): qx_traits.c (the integer executor), kernel_table.c (the f32 packed GEMV),
 * f32mm.c (the reference forward's float32 matmul),
 * qint_driver.c / qint_exact.c (the integer packed path). A level without an entry of its own uses
 * its fallback's, and so on down to PDQ_LEVEL_SCALAR, which every family has:
 *
 *   AVX512_VNNI -> AVX512 -> AVX2 -> SCALAR
 *   AVX2_VNNI   -> AVX2
 *
 * A CPU runs at the last level in the enum that it has (pdq_level_allowed). Every level gives the
 * scalar path's bits. A new level (an ARM NEON one, say) is a member at the end here, its
 * fallback, name and CPU test in cpu_features.c, and the entries it has in the families' tables
 * (docs/architecture.md, "Where to change: a SIMD level"). */
#ifndef PDQ_KERNELS_CPU_FEATURES_H
#define PDQ_KERNELS_CPU_FEATURES_H

typedef enum {
    PDQ_LEVEL_SCALAR = 0,
    PDQ_LEVEL_AVX2,        /* AVX2, FMA and F16C */
    PDQ_LEVEL_AVX2_VNNI,   /* the above and AVX-VNNI (VEX-coded 256-bit dot products) */
    PDQ_LEVEL_AVX512,      /* the AVX2 level's and AVX-512 F/DQ/VL/BW */
    PDQ_LEVEL_AVX512_VNNI, /* the above and AVX512_VNNI */
    PDQ_LEVEL_COUNT
} pdq_level;

/* The level whose kernels l uses where it has none (SCALAR: itself). */
pdq_level pdq_level_fallback(pdq_level l);
/* 1 when this CPU runs level l's kernels. */
int pdq_cpu_has_level(pdq_level l);
/* The highest (last in the enum) level this CPU has within the switches tests and the CLI force
 * a level by (force_scalar: SCALAR; no_avx512: none of the AVX-512 levels; no_vnni: none of the
 * VNNI levels). */
pdq_level pdq_level_allowed(int force_scalar, int no_avx512, int no_vnni);
/* The level a family whose table has kernels at the levels in `have` (bit 1u << level; SCALAR
 * always) runs at l: l, or its first fallback in `have`. */
pdq_level pdq_level_pick(pdq_level l, unsigned have);
/* "scalar", "avx2", "avx2-vnni", "avx512", "avx512-vnni". */
const char *pdq_level_name(pdq_level l);

/* The CPU's features, for the checks above and the kernels that ask one feature. */
/* 1 when this CPU has AVX2 and FMA (what the SIMD kernels need). */
int pdq_cpu_has_avx2_fma(void);
/* 1 when it also has AVX-512 F/DQ/VL/BW (the two-rows-per-register kernels). */
int pdq_cpu_has_avx512(void);
/* 1 when it has AVX512_VNNI (the AVX-512 integer kernels need it with the above). */
int pdq_cpu_has_avx512_vnni(void);
/* 1 when it has F16C (and AVX): the compact-scale widening uses it. */
int pdq_cpu_has_f16c(void);
/* 1 when it has AVX-VNNI (VEX-coded 256-bit dot products, the AVX2 integer kernels use them). */
int pdq_cpu_has_avx_vnni(void);

#endif
