/* Weight quantizer: grids, RTN, MSE search, groups, packing and overrides against brute force. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pdq/quant.h"
#include "testutil.h"

static float *rand_mat(uint64_t *s, int rows, int cols, double sd) {
    float *w = malloc(sizeof(float) * (size_t)rows * cols);
    for (int i = 0; i < rows * cols; i++) w[i] = (float)(tu_randn(s) * sd);
    return w;
}

/* Every value lands on its nearest grid point: brute force over all 2^bits codes. */
static void test_rtn_nearest_grid_point(void **state) {
    (void)state;
    uint64_t s = 11;
    for (int bits = 2; bits <= 8; bits++)
        for (int sym = 0; sym <= 1; sym++) {
            int rows = 7, cols = 40, maxq = (1 << bits) - 1;
            float *w = rand_mat(&s, rows, cols, 0.3);
            if (sym == 0) for (int c = 0; c < cols; c++) w[c] = fabsf(w[c]) + 0.01f; /* a one-signed row */
            uint8_t *codes = malloc((size_t)rows * cols);
            float *deq = malloc(sizeof(float) * rows * cols), sc[7], ze[7];
            pdq_qscheme q;
            pdq_qscheme_default(&q, bits);
            q.sym = sym;
            assert_int_equal(pdq_quant_rtn(&q, w, rows, cols, codes, deq, sc, ze, "w", NULL), PDQ_OK);
            for (int r = 0; r < rows; r++) {
                /* the range always contains 0; scale spans it */
                float mn = 0, mx = 0;
                for (int c = 0; c < cols; c++) { mn = fminf(mn, w[r * cols + c]); mx = fmaxf(mx, w[r * cols + c]); }
                if (sym) {
                    float am = fmaxf(-mn, mx);
                    assert_float_equal(sc[r], 2 * am / maxq, 1e-6 * am);
                    assert_float_equal(ze[r], (float)(1 << (bits - 1)), 0);
                } else {
                    assert_float_equal(sc[r], (mx - mn) / maxq, 1e-6 * (mx - mn));
                    assert_true(ze[r] >= 0 && ze[r] <= maxq && ze[r] == floorf(ze[r]));
                }
                for (int c = 0; c < cols; c++) {
                    int i = r * cols + c;
                    assert_true(codes[i] <= maxq);
                    assert_float_equal(deq[i], sc[r] * ((float)codes[i] - ze[r]), 1e-7);
                    double best = INFINITY;
                    for (int k = 0; k <= maxq; k++) best = fmin(best, fabs(w[i] - sc[r] * ((double)k - ze[r])));
                    assert_true(fabs(w[i] - deq[i]) <= best + 1e-6 * (fabs(w[i]) + sc[r])); /* float rounding */
                }
            }
            free(w); free(codes); free(deq);
        }
}

/* Asym: a row spanning both signs maps its min to code 0 and its max to maxq; a dense ramp
 * reaches every code. */
static void test_grid_ends_and_every_code(void **state) {
    (void)state;
    for (int bits = 2; bits <= 8; bits++) {
        int maxq = (1 << bits) - 1, cols = 4 * (maxq + 1) + 1;
        float *w = malloc(sizeof(float) * cols), sc, ze;
        uint8_t *codes = malloc(cols);
        for (int c = 0; c < cols; c++) w[c] = -0.7f + 2.0f * (float)c / (float)(cols - 1); /* [-0.7, 1.3] */
        pdq_qscheme q;
        pdq_qscheme_default(&q, bits);
        assert_int_equal(pdq_quant_rtn(&q, w, 1, cols, codes, NULL, &sc, &ze, "ramp", NULL), PDQ_OK);
        assert_int_equal(codes[0], 0);
        assert_int_equal(codes[cols - 1], maxq);
        int seen[256] = {0};
        for (int c = 0; c < cols; c++) seen[codes[c]] = 1;
        for (int k = 0; k <= maxq; k++) assert_true(seen[k]);
        free(w); free(codes);
    }
}

/* Groups: the same as per-channel on each column slice; per-tensor: one grid for all. */
static void test_groups_and_per_tensor(void **state) {
    (void)state;
    uint64_t s = 5;
    int rows = 6, cols = 64, g = 16, ng = cols / g;
    float *w = rand_mat(&s, rows, cols, 1.0);
    uint8_t codes[6 * 64], c2[6 * 16];
    float deq[6 * 64], sc[6 * 4], ze[6 * 4], sub[6 * 16], d2[6 * 16], s2[6], z2[6];
    pdq_qscheme q;
    pdq_qscheme_default(&q, 3);
    q.group = g;
    assert_int_equal(pdq_quant_rtn(&q, w, rows, cols, codes, deq, sc, ze, "w", NULL), PDQ_OK);
    pdq_qscheme pc;
    pdq_qscheme_default(&pc, 3);
    for (int k = 0; k < ng; k++) {
        for (int r = 0; r < rows; r++) memcpy(sub + r * g, w + r * cols + k * g, sizeof(float) * g);
        assert_int_equal(pdq_quant_rtn(&pc, sub, rows, g, c2, d2, s2, z2, "sub", NULL), PDQ_OK);
        for (int r = 0; r < rows; r++) {
            assert_float_equal(sc[r * ng + k], s2[r], 0);
            assert_float_equal(ze[r * ng + k], z2[r], 0);
            for (int c = 0; c < g; c++) {
                assert_int_equal(codes[r * cols + k * g + c], c2[r * g + c]);
                assert_float_equal(deq[r * cols + k * g + c], d2[r * g + c], 0);
            }
        }
    }
    /* per-tensor equals treating the tensor as one row */
    pdq_qscheme pt;
    pdq_qscheme_default(&pt, 4);
    pt.per_tensor = 1;
    float one_s, one_z;
    uint8_t *c1 = malloc((size_t)rows * cols);
    assert_int_equal(pdq_quant_rtn(&pt, w, rows, cols, codes, deq, sc, ze, "w", NULL), PDQ_OK);
    pdq_qscheme_default(&pc, 4);
    assert_int_equal(pdq_quant_rtn(&pc, w, 1, rows * cols, c1, NULL, &one_s, &one_z, "flat", NULL), PDQ_OK);
    for (int r = 0; r < rows; r++) { assert_float_equal(sc[r], one_s, 0); assert_float_equal(ze[r], one_z, 0); }
    assert_memory_equal(codes, c1, (size_t)rows * cols);
    free(c1);
    free(w);
}

static double err_norm(const float *w, const float *d, int n, double p) {
    double e = 0;
    for (int i = 0; i < n; i++) e += pow(fabs((double)w[i] - d[i]), p);
    return e;
}

/* MSE search: never worse than min/max in its norm (and in squared error with norm 2), and the
 * chosen shrink is the best of the explicit grid, found by brute force here. */
static void test_mse_search(void **state) {
    (void)state;
    uint64_t s = 9;
    int rows = 12, cols = 96;
    float *w = rand_mat(&s, rows, cols, 1.0);
    for (int r = 0; r < rows; r++) w[r * cols + r] *= 8.0f; /* outliers make shrinking pay off */
    float *d0 = malloc(sizeof(float) * rows * cols), *d1 = malloc(sizeof(float) * rows * cols);
    float sc[12], ze[12];
    for (int bits = 2; bits <= 4; bits++)
        for (int sym = 0; sym <= 1; sym++)
            for (int normi = 0; normi < 2; normi++) {
                double norm = normi ? 2.4 : 2.0;
                pdq_qscheme q;
                pdq_qscheme_default(&q, bits);
                q.sym = sym;
                assert_int_equal(pdq_quant_rtn(&q, w, rows, cols, NULL, d0, sc, ze, "w", NULL), PDQ_OK);
                q.mse = 1;
                q.norm = (float)norm;
                assert_int_equal(pdq_quant_rtn(&q, w, rows, cols, NULL, d1, sc, ze, "w", NULL), PDQ_OK);
                int improved = 0, maxq = (1 << bits) - 1;
                for (int r = 0; r < rows; r++) {
                    const float *wr = w + r * cols;
                    double e0 = err_norm(wr, d0 + r * cols, cols, norm), e1 = err_norm(wr, d1 + r * cols, cols, norm);
                    assert_true(e1 <= e0 * (1 + 1e-5));
                    if (e1 < e0 * 0.999) improved++;
                    /* brute force over p = 1 - i/100, i < 80 */
                    double mn = 0, mx = 0, best = INFINITY;
                    for (int c = 0; c < cols; c++) { mn = fmin(mn, wr[c]); mx = fmax(mx, wr[c]); }
                    if (sym) { mx = fmax(-mn, mx); mn = -mx; }
                    for (int i = 0; i < 80; i++) {
                        double p = 1 - i / 100.0, a = p * mn, b = p * mx, sc1 = (b - a) / maxq;
                        double z1 = sym ? (maxq + 1) / 2 : nearbyint(-a / sc1), e = 0;
                        for (int c = 0; c < cols; c++) {
                            double qq = fmin(fmax(nearbyint(wr[c] / sc1) + z1, 0), maxq);
                            e += pow(fabs(sc1 * (qq - z1) - wr[c]), norm);
                        }
                        best = fmin(best, e);
                    }
                    assert_true(fabs(e1 - best) <= 1e-3 * best);
                }
                assert_true(improved > 0);
            }
    free(w); free(d0); free(d1);
}

static void test_pack4(void **state) {
    (void)state;
    uint8_t c[2] = {1, 2}, p[1];
    pdq_pack4(c, 2, p);
    assert_int_equal(p[0], 0x21); /* low nibble first */
    uint64_t s = 3;
    for (size_t n = 1; n < 40; n++) {
        uint8_t codes[40], packed[20], back[40];
        for (size_t i = 0; i < n; i++) codes[i] = (uint8_t)(tu_rand(&s) & 15);
        pdq_pack4(codes, n, packed);
        pdq_unpack4(packed, n, back);
        assert_memory_equal(codes, back, n);
        if (n & 1) assert_int_equal(packed[n / 2] >> 4, 0);
    }
    /* any run of codes from any start (rows of an odd-width matrix), across the 32-code SIMD
     * steps, against the element-wise accessor */
    uint8_t codes[200], packed[100], out[200];
    for (size_t i = 0; i < 200; i++) codes[i] = (uint8_t)(tu_rand(&s) & 15);
    pdq_pack4(codes, 200, packed);
    for (size_t i0 = 0; i0 < 7; i0++)
        for (size_t n = 0; i0 + n <= 200; n += 1 + n / 8) {
            memset(out, 0xee, sizeof out);
            pdq_unpack4_at(packed, i0, n, out);
            assert_memory_equal(out, codes + i0, n);
            if (n < 200) assert_int_equal(out[n], 0xee); /* nothing written past n */
            for (size_t i = 0; i < n; i++) assert_int_equal(pdq_u4_at(packed, i0 + i), codes[i0 + i]);
        }
    /* rows of every width written in order with pdq_pack4_at over garbage: pdq_pack4's bytes */
    for (size_t width = 1; width <= 9; width++)
        for (size_t nrows = 1; width * nrows <= 200; nrows += 3) {
            size_t n = width * nrows;
            uint8_t want[100], got[101];
            memset(got, 0xff, sizeof got);
            pdq_pack4(codes, n, want);
            for (size_t r = 0; r < nrows; r++) pdq_pack4_at(codes + r * width, width, got, r * width);
            assert_memory_equal(got, want, (n + 1) / 2);
            assert_int_equal(got[(n + 1) / 2], 0xff); /* nothing past the last byte */
        }
}

static void test_overrides(void **state) {
    (void)state;
    pdq_qoverride ov[4];
    assert_int_equal(pdq_qoverride_parse("down_proj=8", &ov[0], NULL), PDQ_OK);
    assert_int_equal(pdq_qoverride_parse("mlp.down_proj=6", &ov[1], NULL), PDQ_OK);
    assert_int_equal(pdq_qoverride_parse("model.layers.3.mlp.down_proj=5", &ov[2], NULL), PDQ_OK);
    assert_int_equal(pdq_qoverride_parse("q_proj=3", &ov[3], NULL), PDQ_OK);
    assert_int_equal(pdq_qoverride_bits(ov, 1, "model.layers.0.mlp.down_proj", 4), 8);
    assert_int_equal(pdq_qoverride_bits(ov, 2, "model.layers.0.mlp.down_proj", 4), 6);
    assert_int_equal(pdq_qoverride_bits(ov, 3, "model.layers.0.mlp.down_proj", 4), 6);
    assert_int_equal(pdq_qoverride_bits(ov, 3, "model.layers.3.mlp.down_proj", 4), 5);
    assert_int_equal(pdq_qoverride_bits(ov, 4, "model.layers.3.self_attn.q_proj", 4), 3);
    assert_int_equal(pdq_qoverride_bits(ov, 4, "model.layers.3.self_attn.k_proj", 4), 4);
    assert_int_equal(pdq_qoverride_bits(ov, 4, "model.layers.13.mlp.down_proj", 4), 6);
    pdq_status st = {0};
    pdq_qoverride bad;
    assert_int_equal(pdq_qoverride_parse("down_proj", &bad, &st), PDQ_ERR_ARG);
    assert_int_equal(pdq_qoverride_parse("down_proj=9", &bad, &st), PDQ_ERR_ARG);
    assert_int_equal(pdq_qoverride_parse("down_proj=4x", &bad, &st), PDQ_ERR_ARG);
    assert_int_equal(pdq_qoverride_parse("=4", &bad, &st), PDQ_ERR_ARG);
}

static void test_bad_input(void **state) {
    (void)state;
    float w[2 * 10] = {0}, deq[20], sc[4], ze[4];
    pdq_status st = {0};
    pdq_qscheme q;
    pdq_qscheme_default(&q, 1);
    assert_int_equal(pdq_quant_rtn(&q, w, 2, 10, NULL, deq, sc, ze, "w", &st), PDQ_ERR_ARG);
    q.bits = 9;
    assert_int_equal(pdq_quant_rtn(&q, w, 2, 10, NULL, deq, sc, ze, "w", &st), PDQ_ERR_ARG);
    q.bits = 4;
    q.group = 4;
    assert_int_equal(pdq_quant_rtn(&q, w, 2, 10, NULL, deq, sc, ze, "w", &st), PDQ_ERR_ARG);
    assert_non_null(strstr(st.msg, "does not divide"));
    q.partial_groups = 1; /* 10 = 4 + 4 + 2 */
    uint8_t codes[20];
    assert_int_equal(pdq_qscheme_ngroups(&q, 10), 3);
    w[0] = 1.0f; w[9] = -2.0f;
    float s3[6], z3[6];
    assert_int_equal(pdq_quant_rtn(&q, w, 2, 10, codes, deq, s3, z3, "w", &st), PDQ_OK);
    assert_float_equal(s3[2], 2.0f / 15, 1e-7); /* the last group: columns 8..9 only */
    assert_float_equal(s3[0], 1.0f / 15, 1e-7);
    w[0] = 0; w[9] = 0;
    q.partial_groups = 0;
    q.group = 5;
    w[3] = NAN;
    assert_int_equal(pdq_quant_rtn(&q, w, 2, 10, NULL, deq, sc, ze, "w", &st), PDQ_ERR_NUMERIC);
    w[3] = 0;
    /* an all-zero row quantizes to exact zeros */
    assert_int_equal(pdq_quant_rtn(&q, w, 2, 10, NULL, deq, sc, ze, "w", &st), PDQ_OK);
    for (int i = 0; i < 20; i++) assert_float_equal(deq[i], 0, 0);
}


/* Calibration windows: BOS then a contiguous slice of the text, seeded and reproducible;
 * a text shorter than one window is an error naming the counts. */
static void test_calib_windows(void **state) {
    (void)state;
    long n = 1000;
    int32_t *ids = malloc(sizeof(int32_t) * n);
    for (long i = 0; i < n; i++) ids[i] = (int32_t)(i + 10);
    int32_t *a, *b, *c;
    assert_int_equal(pdq_calib_windows(ids, n, 16, 64, 1, 42, &a, NULL), PDQ_OK);
    assert_int_equal(pdq_calib_windows(ids, n, 16, 64, 1, 42, &b, NULL), PDQ_OK);
    assert_int_equal(pdq_calib_windows(ids, n, 16, 64, 1, 43, &c, NULL), PDQ_OK);
    assert_memory_equal(a, b, sizeof(int32_t) * 16 * 64);
    assert_true(memcmp(a, c, sizeof(int32_t) * 16 * 64) != 0);
    for (int s = 0; s < 16; s++) {
        const int32_t *w = a + s * 64;
        assert_int_equal(w[0], 1);
        assert_true(w[1] >= 10 && w[63] <= 1009);
        for (int k = 2; k < 64; k++) assert_int_equal(w[k], w[k - 1] + 1);
    }
    free(a); free(b); free(c);
    /* exactly long enough: one possible window, the whole text */
    assert_int_equal(pdq_calib_windows(ids, 63, 2, 64, 1, 1, &a, NULL), PDQ_OK);
    assert_int_equal(a[1], 10);
    assert_int_equal(a[64 + 63], 72);
    free(a);
    pdq_status st = {0};
    assert_int_equal(pdq_calib_windows(ids, 62, 2, 64, 1, 1, &a, &st), PDQ_ERR_ARG);
    assert_non_null(strstr(st.msg, "too short"));
    assert_null(a);
    free(ids);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rtn_nearest_grid_point), cmocka_unit_test(test_grid_ends_and_every_code),
        cmocka_unit_test(test_groups_and_per_tensor),  cmocka_unit_test(test_mse_search),
        cmocka_unit_test(test_pack4),                  cmocka_unit_test(test_overrides),
        cmocka_unit_test(test_bad_input),              cmocka_unit_test(test_calib_windows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
