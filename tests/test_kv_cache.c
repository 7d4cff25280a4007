/* The external KV cache both runtimes share (src/contract/kv_cache.c), against index arithmetic
 * written out here: which slots a store writes, what a past input reads, the codes of a
 * quantized cache against the requantization rule computed by hand. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "contract/kv_cache.h"
#include "contract/rt_contract.h"
#include "testutil.h"

enum { L = 2, B = 2, KV = 3, C = 7, HD = 5 };

/* value of element (b, h, t, d) of a delta of T positions, distinct per (layer, which) */
static float delta_val(int l, int w, int b, int h, int t, int d) {
    return (float)(1000 * l + 500 * w + 100 * b + 10 * h + t) + 0.125f * (float)d;
}

static void fill_delta(int l, int w, int T, float *x) {
    for (int b = 0; b < B; b++)
        for (int h = 0; h < KV; h++)
            for (int t = 0; t < T; t++)
                for (int d = 0; d < HD; d++) x[(((size_t)b * KV + h) * T + t) * HD + d] = delta_val(l, w, b, h, t, d);
}

/* Float cache: a store writes exactly the slots given (padding -1 and slots >= C skipped), past
 * inputs read slots [0, P) of every row and head, and what was never written stays 0. */
static void test_float_store_and_past(void **state) {
    (void)state;
    pdq_status st = {0};
    pdq_kv_cache c;
    assert_int_equal(pdq_kv_init(&c, L, B, KV, C, HD, NULL, NULL, &st), PDQ_OK);
    enum { T = 4 };
    /* row 0: positions 2..5 -> slots 2..5; row 1: padding, slot 6, past the cache (7), padding */
    int slot[B * T] = {2, 3, 4, 5, -1, 6, C, -1};
    float k[B * KV * T * HD], v[B * KV * T * HD];
    for (int l = 0; l < L; l++) {
        fill_delta(l, 0, T, k);
        fill_delta(l, 1, T, v);
        pdq_kv_store(&c, l, k, v, T, slot);
    }
    for (int l = 0; l < L; l++)
        for (int w = 0; w < 2; w++) {
            const float *d = pdq_kv_data(&c, l, w);
            for (int b = 0; b < B; b++)
                for (int h = 0; h < KV; h++)
                    for (int s = 0; s < C; s++) {
                        int t = -1;
                        for (int i = 0; i < T; i++)
                            if (slot[b * T + i] == s) t = i;
                        for (int e = 0; e < HD; e++) {
                            float want = t < 0 ? 0.0f : delta_val(l, w, b, h, t, e);
                            assert_true(d[(((size_t)b * KV + h) * C + s) * HD + e] == want);
                        }
                    }
            for (int P = 1; P <= C; P++) {
                float past[B * KV * C * HD];
                memset(past, 0xff, sizeof past);
                pdq_kv_past(&c, l, w, P, past);
                for (int bh = 0; bh < B * KV; bh++)
                    for (int s = 0; s < P; s++)
                        for (int e = 0; e < HD; e++)
                            assert_true(past[((size_t)bh * P + s) * HD + e] == d[((size_t)bh * C + s) * HD + e]);
                unsigned char *rest = (unsigned char *)(past + (size_t)B * KV * P * HD);
                for (size_t i = 0; i < sizeof past - sizeof(float) * (size_t)B * KV * P * HD; i++) assert_int_equal(rest[i], 0xff);
            }
        }
    pdq_kv_free(&c);
    pdq_kv_free(&c); /* freed twice: a no-op */
}

/* A quantized cache: int16 codes for K, uint8 for V, per layer grids; codes are
 * clamp(round_half_even(x / s) + zp) written out here, the float past is (q - zp) * s, and codes
 * go to an input on the same grid unchanged. */
static void test_codes(void **state) {
    (void)state;
    pdq_status st = {0};
    pdq_kv_grid g[2 * L] = {{PDQ_TI16, 0.25f, 0}, {PDQ_TU8, 0.5f, 128}, {PDQ_TI16, 3.0f, 0}, {PDQ_TU8, 2.0f, 3}};
    pdq_kv_cache c;
    assert_int_equal(pdq_kv_init(&c, L, 1, KV, C, HD, g, NULL, &st), PDQ_OK);
    enum { T = 3 };
    int slot[T];
    for (int t = 0; t < T; t++) slot[t] = pdq_ctr_slot(4 + t, C); /* 4, 5, 6 */
    float k[KV * T * HD], v[KV * T * HD];
    uint64_t rs = 3;
    for (int l = 0; l < L; l++) {
        for (int i = 0; i < KV * T * HD; i++) {
            /* ties (x / s = n + 0.5), values past both ends, ordinary values */
            int kind = (int)(tu_rand(&rs) % 4);
            k[i] = kind == 0 ? g[2 * l].scale * (float)((int)(tu_rand(&rs) % 64) - 32 + 0.5f)
                   : kind == 1 ? (tu_rand(&rs) % 2 ? 1e9f : -1e9f)
                               : (float)(tu_randn(&rs) * 40.0);
            v[i] = kind == 0 ? g[2 * l + 1].scale * (float)((int)(tu_rand(&rs) % 64) - 32 + 0.5f)
                   : kind == 1 ? (tu_rand(&rs) % 2 ? 1e9f : -1e9f)
                               : (float)(tu_randn(&rs) * 40.0);
        }
        pdq_kv_store(&c, l, k, v, T, slot);
        for (int w = 0; w < 2; w++) {
            const pdq_kv_grid *gw = &g[2 * l + w];
            const float *x = w ? v : k;
            for (int h = 0; h < KV; h++)
                for (int t = 0; t < T; t++)
                    for (int e = 0; e < HD; e++) {
                        double r = (double)x[(h * T + t) * HD + e] / (double)gw->scale, f = floor(r);
                        double n = r - f > 0.5 || (r - f == 0.5 && fmod(f, 2.0) != 0.0) ? f + 1 : f;
                        double lo = gw->dt == PDQ_TI16 ? -32768 : 0, hi = gw->dt == PDQ_TI16 ? 32767 : 255;
                        double want = fmin(fmax(n + (double)gw->zero_point, lo), hi);
                        size_t at = ((size_t)h * C + slot[t]) * HD + e;
                        double got = gw->dt == PDQ_TI16 ? ((const int16_t *)pdq_kv_data(&c, l, w))[at]
                                                        : ((const uint8_t *)pdq_kv_data(&c, l, w))[at];
                        assert_true(got == want);
                    }
            /* past of a decode (P = C): floats are the grid values, codes are the cache's own */
            float past[KV * C * HD];
            unsigned char codes[KV * C * HD * 2];
            pdq_kv_past(&c, l, w, C, past);
            pdq_kv_past_codes(&c, l, w, C, codes);
            size_t es = gw->dt == PDQ_TI16 ? 2 : 1;
            assert_memory_equal(codes, pdq_kv_data(&c, l, w), KV * C * HD * es);
            for (int i = 0; i < KV * C * HD; i++) {
                double q = es == 2 ? ((const int16_t *)(void *)codes)[i] : codes[i];
                assert_true(past[i] == (float)((q - (double)gw->zero_point) * (double)gw->scale));
            }
            /* an append's past (P = 5): the first 5 slots of each head */
            unsigned char part[KV * 5 * HD * 2];
            pdq_kv_past_codes(&c, l, w, 5, part);
            for (int h = 0; h < KV; h++)
                assert_memory_equal(part + (size_t)h * 5 * HD * es, codes + (size_t)h * C * HD * es, 5 * HD * es);
        }
    }
    /* pdq_kv_same_grid / pdq_kv_grid_of on tensors */
    float s1 = 0.25f;
    int64_t z0 = 0;
    pdq_qparams q = {1, &s1, &z0, 0, 0};
    pdq_tensor t;
    memset(&t, 0, sizeof t);
    t.dtype = PDQ_TI16;
    t.q = &q;
    assert_true(pdq_kv_same_grid(&c, 0, 0, &t));
    assert_false(pdq_kv_same_grid(&c, 0, 1, &t)); /* uint8 cache */
    s1 = 0.5f;
    assert_false(pdq_kv_same_grid(&c, 0, 0, &t)); /* another scale */
    pdq_kv_grid gt = pdq_kv_grid_of(&t);
    assert_int_equal(gt.dt, PDQ_TI16);
    assert_true(gt.scale == 0.5f);
    t.q = NULL;
    assert_false(pdq_kv_same_grid(&c, 0, 0, &t));
    assert_int_equal(pdq_kv_grid_of(&t).dt, PDQ_TF32);
    assert_int_equal(pdq_kv_grid_of(NULL).dt, PDQ_TF32);
    pdq_kv_free(&c);
}

/* A ring layer beside a full one: layer 1 keeps R = 3 slots, position p in slot p mod 3; a step
 * of T positions writes in order (the last 3 stay), padding is skipped, the past is the whole
 * ring; the byte count adds up the two geometries. Replayed here position by position. */
static void test_ring_layer(void **state) {
    (void)state;
    enum { RS = 3, T = 5 };
    pdq_status st = {0};
    pdq_kv_cache c;
    int ring[L] = {0, RS};
    assert_int_equal(pdq_kv_init(&c, L, B, KV, C, HD, NULL, ring, &st), PDQ_OK);
    assert_int_equal(pdq_kv_slots(&c, 0), C);
    assert_int_equal(pdq_kv_slots(&c, 1), RS);
    assert_int_equal(pdq_kv_bytes(&c), (size_t)2 * B * KV * (C + RS) * HD * sizeof(float));
    int holds[B][RS]; /* the step index t and step number whose value each slot should hold */
    int step_of[B][RS];
    memset(holds, 0xff, sizeof holds);
    float k[B * KV * T * HD], v[B * KV * T * HD];
    for (int step = 0; step < 3; step++) {
        /* row 0: positions 5*step .. 5*step+4; row 1: padding first, then 2 real positions */
        int pos[B * T];
        for (int t = 0; t < T; t++) {
            pos[t] = 5 * step + t;
            pos[T + t] = t < 3 ? -1 : 2 * step + t - 3;
        }
        fill_delta(step, 0, T, k);
        fill_delta(step, 1, T, v);
        pdq_kv_store(&c, 1, k, v, T, pos);
        for (int b = 0; b < B; b++)
            for (int t = 0; t < T; t++)
                if (pos[b * T + t] >= 0) {
                    holds[b][pos[b * T + t] % RS] = t;
                    step_of[b][pos[b * T + t] % RS] = step;
                }
        const float *d = pdq_kv_data(&c, 1, 0);
        for (int b = 0; b < B; b++)
            for (int h = 0; h < KV; h++)
                for (int j = 0; j < RS; j++)
                    for (int e = 0; e < HD; e++) {
                        float want = holds[b][j] < 0 ? 0.0f : delta_val(step_of[b][j], 0, b, h, holds[b][j], e);
                        assert_true(d[(((size_t)b * KV + h) * RS + j) * HD + e] == want);
                    }
        float past[B * KV * RS * HD];
        pdq_kv_past(&c, 1, 1, RS, past);
        assert_memory_equal(past, pdq_kv_data(&c, 1, 1), sizeof past);
    }
    /* zeroing (pdq_rt_clear) covers each buffer at its own size: the ring's 3 slots, not C
     * (it once wrote C slots into the ring: a heap overflow under ASan) */
    pdq_kv_zero(&c);
    for (int l = 0; l < L; l++)
        for (int kv = 0; kv < 2; kv++) {
            const float *d = pdq_kv_data(&c, l, kv);
            for (size_t i = 0; i < (size_t)B * KV * pdq_kv_slots(&c, l) * HD; i++) assert_true(d[i] == 0.0f);
        }
    pdq_kv_free(&c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_float_store_and_past),
        cmocka_unit_test(test_codes),
        cmocka_unit_test(test_ring_layer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
