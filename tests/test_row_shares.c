/* The GEMV's row shares (kernels/row_shares.h): whatever order owners and thieves claim in, every
 * row is claimed exactly once, each claim starts on an 8-row boundary, a theft is at most
 * QK_SHARE_STEAL rows, and an owner's prefetch bound covers its claim and stays in its share;
 * the same under real threads, many back-to-back runs. */
#include "testutil.h"

#include <stdatomic.h>
#include <stdlib.h>

#include "kernels/row_shares.h"
#include "pdq/threadpool.h"

static const int k_rows[] = {1, 4, 8, 12, 60, 64, 100, 256, 260, 2048, 5632, 32000};

static void claim_ok(int rows, int r0, int r1, int *seen) {
    assert_true(r0 >= 0 && r0 < r1 && r1 <= rows);
    assert_int_equal(r0 % 8, 0);
    for (int r = r0; r < r1; r++) seen[r]++;
}

/* One thread plays every role in a random order: owner t takes its front, or a thief the
 * fullest share's back. */
static void test_any_order(void **state) {
    (void)state;
    unsigned seed = 12345;
    for (size_t i = 0; i < sizeof k_rows / sizeof *k_rows; i++) {
        int rows = k_rows[i];
        for (int n = 1; n <= 4; n++) {
            for (int rep = 0; rep < 20; rep++) {
                qk_share s[4];
                int *seen = calloc((size_t)rows, sizeof *seen), bounds[5];
                qk_shares_init(s, n, rows);
                for (int t = 0; t < n; t++) bounds[t] = qk_span_first(atomic_load(&s[t].span));
                bounds[n] = rows;
                for (int t = 0; t < n; t++) assert_int_equal(qk_span_end(atomic_load(&s[t].span)), bounds[t + 1]);
                for (;;) {
                    seed = seed * 1103515245u + 12345u;
                    int t = (int)(seed >> 16) % n, r0 = 0, r1 = 0, rend = 0;
                    if ((seed >> 8) & 1) {
                        if (qk_share_front(&s[t], &r0, &r1, &rend)) {
                            claim_ok(rows, r0, r1, seen);
                            assert_true(rend >= r1 && rend <= bounds[t + 1] && r0 >= bounds[t]);
                        }
                    } else {
                        int v = qk_share_fullest(s, n);
                        if (v < 0) break;
                        assert_true(qk_share_back(&s[v], &r0, &r1));
                        claim_ok(rows, r0, r1, seen);
                        assert_true(r1 - r0 <= QK_SHARE_STEAL && r0 >= bounds[v] && r1 <= bounds[v + 1]);
                    }
                }
                for (int r = 0; r < rows; r++) assert_int_equal(seen[r], 1);
                free(seen);
            }
        }
    }
}

typedef struct {
    qk_share *s;
    int n, rows;
    atomic_int *seen;
    atomic_int bad;
} run_ctx;

static void mark(run_ctx *c, int r0, int r1) {
    if (r0 < 0 || r0 >= r1 || r1 > c->rows || r0 % 8) atomic_store(&c->bad, 1);
    for (int r = r0; r < r1 && r < c->rows; r++) atomic_fetch_add(&c->seen[r], 1);
}

/* What the driver's GEMV task does (qint_driver.c), with the rows counted instead of computed. */
static void share_task(void *arg, int task, int thread) {
    (void)thread;
    run_ctx *c = arg;
    int r0, r1, rend, v;
    while (qk_share_front(&c->s[task], &r0, &r1, &rend)) mark(c, r0, r1);
    while ((v = qk_share_fullest(c->s, c->n)) >= 0)
        if (qk_share_back(&c->s[v], &r0, &r1)) mark(c, r0, r1);
}

static void test_threads(void **state) {
    (void)state;
    pdq_status st = {0};
    for (int n = 2; n <= 3; n++) {
        pdq_pool *p = pdq_pool_create(n, &st);
        assert_non_null(p);
        qk_share s[3];
        for (size_t i = 0; i < sizeof k_rows / sizeof *k_rows; i++) {
            int rows = k_rows[i];
            atomic_int *seen = calloc((size_t)rows, sizeof *seen);
            for (int rep = 0; rep < 200; rep++) {
                for (int r = 0; r < rows; r++) atomic_init(&seen[r], 0);
                run_ctx c = {.s = s, .n = n, .rows = rows, .seen = seen};
                atomic_init(&c.bad, 0);
                qk_shares_init(s, n, rows);
                pdq_pool_run(p, n, share_task, &c);
                assert_int_equal(atomic_load(&c.bad), 0);
                for (int r = 0; r < rows; r++) assert_int_equal(atomic_load(&seen[r]), 1);
            }
            free(seen);
        }
        pdq_pool_free(p);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_any_order),
        cmocka_unit_test(test_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
