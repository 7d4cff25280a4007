/* The integer executor's kernel table: one row per level (cpu_features.h), the entries each level
 * has of its own; the rest come from its fallbacks (pdq_qx_traits_at). A new level is a row here
 * with the kernels it brings. */
#include "kernels/qx_kernels.h"

static const pdq_qx_traits k_qx[PDQ_LEVEL_COUNT] = {
    [PDQ_LEVEL_SCALAR] = {.dot = pdq_qx_dot_u8_scalar, .axpy_i16 = pdq_qx_axpy_i16_scalar},
#if defined(__x86_64__) || defined(__i386__)
    [PDQ_LEVEL_AVX2] = {.dot = pdq_qx_dot_u8_avx2, .dot4 = pdq_qx_dot4_u8_avx2, .tile4x2 = pdq_qx_tile4x2_u8_avx2,
                        .tile4x2_groups = pdq_qx_tile4x2_groups_avx2, .group_rows = pdq_qx_group_rows_avx2,
                        .axpy_i16 = pdq_qx_axpy_i16_avx2, .bmm_acc_i16 = pdq_qx_bmm_acc_i16_avx2,
                        .bin_i16 = pdq_qx_bin_i16_avx2, .sums_i16 = pdq_qx_sums_i16_avx2,
                        .codes_i16 = pdq_qx_codes_i16_avx2, .div_i16 = pdq_qx_div_i16_avx2,
                        .scale_i16 = pdq_qx_scale_i16_avx2},
    /* AVX2_VNNI and AVX512: AVX2's */
    [PDQ_LEVEL_AVX512_VNNI] = {.dot4 = pdq_qx_dot4_u8_vnni, .tile4x2 = pdq_qx_tile4x2_u8_vnni,
                               .tile4x4 = pdq_qx_tile4x4_u8_vnni, .tile4x4_groups = pdq_qx_tile4x4_groups_vnni,
                               .group_rows = pdq_qx_group_rows_vnni},
#endif
};

/* Each entry of the table, once (X(name) per member of pdq_qx_traits). */
#define QX_ENTRIES(X)                                                                                                  \
    X(dot) X(dot4) X(tile4x2) X(tile4x4) X(tile4x2_groups) X(tile4x4_groups) X(group_rows) X(axpy_i16) X(bmm_acc_i16) \
        X(bin_i16) X(sums_i16) X(codes_i16) X(div_i16) X(scale_i16)

_Static_assert(sizeof(pdq_qx_traits) == 14 * sizeof(void (*)(void)), "QX_ENTRIES names every member");

static int has_any(const pdq_qx_traits *t) {
    int n = 0;
#define X(name) n |= t->name != NULL;
    QX_ENTRIES(X)
#undef X
    return n;
}

pdq_level pdq_qx_traits_at(pdq_level level, pdq_qx_traits *k) {
    unsigned have = 0;
    for (int l = 0; l < PDQ_LEVEL_COUNT; l++) have |= (unsigned)has_any(&k_qx[l]) << l;
    level = pdq_level_pick(level, have);
    *k = k_qx[level];
    for (pdq_level l = level; l != PDQ_LEVEL_SCALAR;) {
        l = pdq_level_fallback(l);
#define X(name) if (!k->name) k->name = k_qx[l].name;
        QX_ENTRIES(X)
#undef X
    }
    return level;
}
