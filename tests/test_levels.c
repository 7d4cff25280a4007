/* The one notion of SIMD level (src/kernels/cpu_features.h): every level's fallbacks end at
 * SCALAR; the switches that force a level give a level the CPU has and none they exclude; each
 * kernel table, filled from the fallbacks, has what its callers rely on at every level. (That
 * every level gives the scalar bits is test_qexec's, test_kernels's and test_kernels_int's.) */
#include "testutil.h"

#include "kernels/cpu_features.h"
#include "kernels/hadamard.h"
#include "kernels/qmatmul.h"
#include "kernels/qx_kernels.h"

static int is_avx512(pdq_level l) { return l == PDQ_LEVEL_AVX512 || l == PDQ_LEVEL_AVX512_VNNI; }
static int is_vnni(pdq_level l) { return l == PDQ_LEVEL_AVX2_VNNI || l == PDQ_LEVEL_AVX512_VNNI; }

static void test_fallbacks_end_at_scalar(void **state) {
    (void)state;
    for (int l = 0; l < PDQ_LEVEL_COUNT; l++) {
        pdq_level v = (pdq_level)l;
        int steps = 0;
        while (v != PDQ_LEVEL_SCALAR && steps++ < PDQ_LEVEL_COUNT) {
            pdq_level f = pdq_level_fallback(v);
            assert_true(f < v); /* down the enum: no cycle */
            assert_true(!is_avx512(f) || is_avx512(v));
            assert_true(!is_vnni(f) || is_vnni(v));
            v = f;
        }
        assert_int_equal(v, PDQ_LEVEL_SCALAR);
        assert_string_not_equal(pdq_level_name((pdq_level)l), "?");
        /* pick: the level itself when the family has it, SCALAR when it has nothing else */
        assert_int_equal(pdq_level_pick((pdq_level)l, 1u << l), l);
        assert_int_equal(pdq_level_pick((pdq_level)l, 0), PDQ_LEVEL_SCALAR);
    }
    assert_int_equal(pdq_level_pick(PDQ_LEVEL_AVX512_VNNI, 1u << PDQ_LEVEL_AVX2), PDQ_LEVEL_AVX2);
    assert_int_equal(pdq_level_pick(PDQ_LEVEL_AVX512, 1u << PDQ_LEVEL_AVX2_VNNI), PDQ_LEVEL_SCALAR);
    assert_true(pdq_cpu_has_level(PDQ_LEVEL_SCALAR));
}

static void test_switches(void **state) {
    (void)state;
    pdq_level top = pdq_level_allowed(0, 0, 0);
    print_message("levels: this CPU's %s\n", pdq_level_name(top));
    for (int l = top + 1; l < PDQ_LEVEL_COUNT; l++) assert_false(pdq_cpu_has_level((pdq_level)l));
    for (int s = 0; s < 8; s++) {
        int force_scalar = s & 1, no_avx512 = s >> 1 & 1, no_vnni = s >> 2 & 1;
        pdq_level l = pdq_level_allowed(force_scalar, no_avx512, no_vnni);
        assert_true(pdq_cpu_has_level(l));
        assert_true(l <= top);
        if (force_scalar) assert_int_equal(l, PDQ_LEVEL_SCALAR);
        if (no_avx512) assert_false(is_avx512(l));
        if (no_vnni) assert_false(is_vnni(l));
        pdq_qctx ctx = {.force_scalar = force_scalar, .no_avx512 = no_avx512, .no_vnni = no_vnni};
        assert_int_equal(pdq_qctx_level(&ctx), l);
    }
    assert_int_equal(pdq_qctx_level(NULL), top);
}

static void test_executor_table(void **state) {
    (void)state;
    for (int l = 0; l < PDQ_LEVEL_COUNT; l++) {
        pdq_qx_traits k;
        pdq_level at = pdq_qx_traits_at((pdq_level)l, &k);
        assert_true(at <= (pdq_level)l);
        assert_non_null(k.dot); /* SCALAR's, at worst */
        assert_non_null(k.axpy_i16);
        if (k.tile4x4) assert_non_null(k.tile4x4_groups);
        if (k.tile4x2) assert_non_null(k.tile4x2_groups);
        if (k.bmm_acc_i16) assert_non_null(k.sums_i16);
        if (l == PDQ_LEVEL_SCALAR) assert_null(k.tile4x2);
        pdq_had_kernels h = pdq_had_kernels_at((pdq_level)l);
        assert_true((h.rows == NULL) == (h.cols == NULL));
    }
    pdq_qx_traits s;
    pdq_qx_traits_at(PDQ_LEVEL_SCALAR, &s);
    assert_ptr_equal(s.dot, pdq_qx_dot_u8_scalar);
    /* the SCALAR table's dot against a plain loop */
    int16_t x[600];
    uint8_t w[600];
    int64_t ref = 0;
    for (int i = 0; i < 600; i++) {
        x[i] = (int16_t)(i % 2 ? -32768 : 32767);
        w[i] = (uint8_t)(255 - i % 7);
        ref += (int64_t)x[i] * w[i];
    }
    for (int l = 0; l < PDQ_LEVEL_COUNT; l++) {
        pdq_qx_traits k;
        pdq_qx_traits_at((pdq_level)l, &k);
        if (pdq_cpu_has_level((pdq_level)l)) assert_true(k.dot(x, w, 600) == ref);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fallbacks_end_at_scalar),
        cmocka_unit_test(test_switches),
        cmocka_unit_test(test_executor_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
