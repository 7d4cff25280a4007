/* llama-perplexity --hellaswag's choice of tasks, reproduced: std::mt19937 against the
 * standard's check value and a brute-force generator written here from the standard's
 * recurrence, libstdc++'s uniform_int_distribution against a rejection rule written here and
 * draws printed by a C++ program built with GCC 12's libstdc++, the task order against a naive
 * re-derivation and against that program, and pdq_task_pick on a small 6-line file. */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#include "pdq/tasks.h"

/* std::mt19937 from [rand.eng.mers] as written: x[i+n] = x[i+m] ^ ((x[i]^u | x[i+1]^l) A), with
 * the whole sequence kept (no in-place twist), then tempered. */
typedef struct {
    uint32_t *x;
    long len, next;
} brute_mt;

static void brute_seed(brute_mt *b, uint32_t s, long outputs) {
    b->len = 624 + outputs;
    b->x = malloc((size_t)b->len * sizeof *b->x);
    assert_non_null(b->x);
    b->x[0] = s;
    for (long i = 1; i < 624; i++) b->x[i] = 1812433253u * (b->x[i - 1] ^ (b->x[i - 1] >> 30)) + (uint32_t)i;
    for (long i = 624; i < b->len; i++) {
        uint32_t y = (b->x[i - 624] & 0x80000000u) | (b->x[i - 623] & 0x7fffffffu);
        b->x[i] = b->x[i - 227] ^ (y >> 1) ^ ((y & 1u) ? 0x9908b0dfu : 0u);
    }
    b->next = 624;
}

static uint32_t brute_next(brute_mt *b) {
    assert_true(b->next < b->len);
    uint32_t z = b->x[b->next++];
    z ^= z >> 11;
    z ^= (z << 7) & 0x9d2c5680u;
    z ^= (z << 15) & 0xefc60000u;
    return z ^ (z >> 18);
}

static void test_mt19937(void **state) {
    (void)state;
    pdq_pyrandom r;
    pdq_mt19937_seed(&r, 5489u); /* the default seed: the 10000th output is 4123659995 ([rand.predef]) */
    uint32_t v = 0;
    for (int i = 0; i < 10000; i++) v = pdq_mt19937_next(&r);
    assert_int_equal(v, 4123659995u);
    brute_mt b;
    for (uint32_t seed = 0; seed < 3; seed++) {
        brute_seed(&b, seed == 2 ? 5489u : seed, 3000);
        pdq_mt19937_seed(&r, seed == 2 ? 5489u : seed);
        for (int i = 0; i < 3000; i++) assert_int_equal(pdq_mt19937_next(&r), brute_next(&b));
        free(b.x);
    }
    /* std::mt19937(1)'s first outputs (printed by g++ 12) */
    static const uint32_t first[5] = {1791095845u, 4282876139u, 3093770124u, 4005303368u, 491263u};
    pdq_mt19937_seed(&r, 1);
    for (int i = 0; i < 5; i++) assert_int_equal(pdq_mt19937_next(&r), first[i]);
}

/* uniform on [0, n): a 32-bit draw g maps to floor(g n / 2^32), rejected while g n mod 2^32
 * < 2^32 mod n (the draws that would over-represent some values) */
static uint32_t brute_uniform(brute_mt *b, uint32_t n) {
    uint64_t reject = (1ull << 32) % n;
    for (;;) {
        uint64_t p = (uint64_t)brute_next(b) * n;
        if ((p & 0xffffffffu) >= reject) return (uint32_t)(p >> 32);
    }
}

static void test_uniform(void **state) {
    (void)state;
    /* std::uniform_int_distribution<size_t>(0, n - 1) over one std::mt19937(1), three rounds of
     * these n, as g++ 12 (libstdc++) prints them */
    static const uint32_t ns[8] = {1, 2, 3, 7, 1000, 10042, 4294967295u, 3000000000u};
    static const uint32_t gold[24] = {0, 1, 2, 6, 0, 1286, 1298508490u, 440267677u, 0, 0, 1, 1, 387, 3470,
                                      2876537339u, 1190302405u, 0, 1, 2, 2, 313, 6880, 2252917203u, 613356746u};
    pdq_pyrandom r;
    pdq_mt19937_seed(&r, 1);
    for (int i = 0; i < 24; i++) assert_int_equal(pdq_libstdcxx_uniform(&r, ns[i % 8]), gold[i]);
    /* and the rejection rule over many draws, with n that reject often (3e9: 2^32 mod n is large) */
    brute_mt b;
    brute_seed(&b, 7, 40000);
    pdq_mt19937_seed(&r, 7);
    uint64_t s = 1;
    for (int i = 0; i < 10000; i++) {
        uint32_t n = i % 3 == 0 ? 3000000000u : (uint32_t)(tu_rand(&s) % 20000 + 1);
        assert_int_equal(pdq_libstdcxx_uniform(&r, n), brute_uniform(&b, n));
    }
    free(b.x);
}

/* the hash the C++ program printed: h = h * 1000003 + index (mod 2^64) */
static uint64_t order_hash(const long *o, long n) {
    uint64_t h = 0;
    for (long i = 0; i < n; i++) h = h * 1000003ull + (uint64_t)o[i];
    return h;
}

static void test_order(void **state) {
    (void)state;
    long n_file = 10042;
    long *o = malloc((size_t)n_file * sizeof *o);
    assert_non_null(o);
    /* llama.cpp's loop with a std::vector erase, run by g++ 12: the first picks and hashes */
    static const long first[12] = {4187, 10013, 7233, 9363, 1, 1286, 3036, 10032, 1474, 2371, 927, 3984};
    assert_int_equal(pdq_llamacpp_hellaswag_order(n_file, 400, o), 400);
    for (int i = 0; i < 12; i++) assert_int_equal(o[i], first[i]);
    assert_true(order_hash(o, 400) == 10437151991330087155ull);
    assert_int_equal(pdq_llamacpp_hellaswag_order(n_file, 1L << 40, o), n_file); /* all: a permutation */
    assert_true(order_hash(o, n_file) == 9846155987143283877ull);
    char *seen = calloc((size_t)n_file, 1);
    assert_non_null(seen);
    for (long i = 0; i < n_file; i++) {
        assert_false(seen[o[i]]);
        seen[o[i]] = 1;
    }
    /* naive: the k-th task not yet taken, with the brute-force generator */
    brute_mt b;
    brute_seed(&b, 1, 4000);
    memset(seen, 0, (size_t)n_file);
    for (long i = 0; i < 1000; i++) {
        uint32_t k = brute_uniform(&b, (uint32_t)(n_file - i));
        long t = -1;
        for (uint32_t c = 0; c <= k; t++) c += !seen[t + 1];
        seen[t] = 1;
        assert_int_equal(o[i], t);
    }
    free(b.x);
    free(seen);
    assert_int_equal(pdq_llamacpp_hellaswag_order(1000, 1000, o), 1000);
    static const long first1000[12] = {417, 997, 719, 931, 0, 128, 302, 999, 147, 236, 92, 398};
    for (int i = 0; i < 12; i++) assert_int_equal(o[i], first1000[i]);
    assert_true(order_hash(o, 400) == 6355192938264633395ull);
    assert_true(order_hash(o, 1000) == 10828705032222373176ull);
    free(o);
}

/* pdq_task_pick keeps the picked tasks in the picked order (a 6-line file of 10 tasks) */
static void test_pick(void **state) {
    (void)state;
    char *d = tu_mkdtemp();
    char path[512], text[4096] = "";
    snprintf(path, sizeof path, "%s/hs.txt", d);
    for (int i = 0; i < 10; i++) {
        char task[256];
        snprintf(task, sizeof task, "Task %d: context\n%d\nend a%d\nend b%d\nend c%d\nend d%d\n", i, i % 4, i, i, i, i);
        strcat(text, task);
    }
    assert_int_equal(tu_write_file(path, text, strlen(text)), 0);
    pdq_task *t;
    pdq_status st = {0};
    assert_int_equal(pdq_task_load("hellaswag", path, 0, 0, &t, &st), PDQ_OK);
    assert_int_equal(t->n_items, 10);
    long o[10];
    assert_int_equal(pdq_llamacpp_hellaswag_order(10, 4, o), 4);
    assert_int_equal(pdq_task_pick(t, o, 4, &st), PDQ_OK);
    assert_int_equal(t->n_items, 4);
    for (int i = 0; i < 4; i++) {
        char want[64];
        snprintf(want, sizeof want, "Task %ld: context", o[i]);
        assert_string_equal(t->items[i].ctx[0], want);
        assert_int_equal(t->items[i].line, 6 * o[i] + 1);
        assert_int_equal(t->items[i].gold, (int)(o[i] % 4));
    }
    long twice[2] = {1, 1};
    assert_int_equal(pdq_task_pick(t, twice, 2, &st), PDQ_ERR_ARG);
    pdq_task_free(t);
    tu_rmtree(d);
    free(d);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mt19937),
        cmocka_unit_test(test_uniform),
        cmocka_unit_test(test_order),
        cmocka_unit_test(test_pick),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
