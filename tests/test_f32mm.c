/* The f32 matmul (kernels/f32mm.h) against brute force in double, and its contract: the
 * AVX-512, AVX2 and scalar paths agree bit for bit, as do 1, 2 and 3 threads and a row computed
 * by the GEMV (n = 1) or inside the GEMM; the scalar path is the documented order itself. Shapes
 * cover every tile remainder, short last blocks (in not a multiple of 16) and in < 16. */
#include "testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/f32mm.h"

static float frand(uint64_t *rng) { return (float)((double)(tu_rand(rng) % 2000001) / 1000000.0 - 1.0); }

/* f32mm.h's order written out once more, independently of the kernel files. */
static float documented(const float *x, const float *w, int in) {
    float a[16];
    for (int j = 0; j < 16; j++) a[j] = 0.0f;
    for (int b = 0; 16 * b < in; b++)
        for (int j = 0; j < 16; j++) {
            int k = 16 * b + j;
            float xv = k < in ? x[k] : 0.0f, wv = k < in ? w[k] : 0.0f;
            a[j] = fmaf(xv, wv, a[j]);
        }
    for (int h = 8; h >= 1; h /= 2)
        for (int l = 0; l < h; l++) a[l] += a[l + h];
    return a[0];
}

static void check_shape(int n, int out, int in, uint64_t *rng, pdq_pool *const pools[3]) {
    float *x = malloc(sizeof(float) * (size_t)n * in), *w = malloc(sizeof(float) * (size_t)out * in);
    float *ref = malloc(sizeof(float) * (size_t)n * out), *y = malloc(sizeof(float) * (size_t)n * out);
    float *row = malloc(sizeof(float) * (size_t)out);
    for (size_t i = 0; i < (size_t)n * in; i++) x[i] = frand(rng);
    for (size_t i = 0; i < (size_t)out * in; i++) w[i] = frand(rng);
    pdq_f32mm(NULL, PDQ_LEVEL_SCALAR, ref, x, w, n, out, in);
    for (int i = 0; i < n; i++)
        for (int o = 0; o < out; o++) {
            double s = 0, mag = 0;
            for (int k = 0; k < in; k++) {
                s += (double)x[(size_t)i * in + k] * w[(size_t)o * in + k];
                mag += fabs((double)x[(size_t)i * in + k] * w[(size_t)o * in + k]);
            }
            float r = ref[(size_t)i * out + o];
            assert_true(fabs(r - s) <= 1e-6 * mag + 1e-30);
            float d = documented(x + (size_t)i * in, w + (size_t)o * in, in);
            assert_memory_equal(&r, &d, sizeof r);
        }
    const pdq_level levels[] = {PDQ_LEVEL_SCALAR, PDQ_LEVEL_AVX2, PDQ_LEVEL_AVX512};
    for (int l = 0; l < 3; l++) {
        if (!pdq_cpu_has_level(levels[l])) continue;
        for (int t = 0; t < 3; t++) {
            memset(y, 0xff, sizeof(float) * (size_t)n * out);
            pdq_f32mm(pools[t], levels[l], y, x, w, n, out, in);
            assert_memory_equal(y, ref, sizeof(float) * (size_t)n * out);
        }
        for (int i = 0; i < n; i += n > 3 ? n / 3 : 1) { /* rows through the GEMV */
            pdq_f32mm(pools[l % 3], levels[l], row, x + (size_t)i * in, w, 1, out, in);
            assert_memory_equal(row, ref + (size_t)i * out, sizeof(float) * (size_t)out);
        }
    }
    free(x); free(w); free(ref); free(y); free(row);
}

static void test_shapes(void **state) {
    (void)state;
    pdq_status st = {0};
    pdq_pool *pools[3] = {NULL, pdq_pool_create(2, &st), pdq_pool_create(3, &st)};
    assert_non_null(pools[1]);
    assert_non_null(pools[2]);
    uint64_t rng = 7;
    static const int shapes[][3] = {
        {1, 1, 1},    {1, 7, 5},    {1, 13, 16},  {1, 37, 100},  {1, 130, 64},  {2, 3, 17},   {3, 9, 31},
        {5, 6, 48},   {6, 4, 15},   {7, 11, 33},  {12, 8, 64},   {13, 21, 79},  {17, 70, 130}, {33, 41, 896},
        {128, 24, 64}, {4, 200, 300},
    };
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        check_shape(shapes[s][0], shapes[s][1], shapes[s][2], &rng, pools);
    pdq_pool_free(pools[1]);
    pdq_pool_free(pools[2]);
}

/* Non-finite inputs propagate as in the scalar order (no lane drops them). */
static void test_nonfinite(void **state) {
    (void)state;
    float x[2 * 20], w[3 * 20], y[6], ref[6];
    for (int i = 0; i < 40; i++) x[i] = 0.5f;
    for (int i = 0; i < 60; i++) w[i] = 0.25f;
    x[3] = INFINITY;
    w[20 + 18] = NAN;
    pdq_f32mm(NULL, PDQ_LEVEL_SCALAR, ref, x, w, 2, 3, 20);
    assert_true(isinf(ref[0]) && isnan(ref[1]) && isnan(ref[4]) && ref[3] == 20 * 0.125f);
    const pdq_level levels[] = {PDQ_LEVEL_AVX2, PDQ_LEVEL_AVX512};
    for (int l = 0; l < 2; l++) {
        if (!pdq_cpu_has_level(levels[l])) continue;
        pdq_f32mm(NULL, levels[l], y, x, w, 2, 3, 20);
        assert_memory_equal(y, ref, sizeof y);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shapes),
        cmocka_unit_test(test_nonfinite),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
