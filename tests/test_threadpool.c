/* The worker pool: every task runs exactly once, on a thread index in range, for many
 * back-to-back runs (decode issues hundreds per token) and any pool size; NULL and 1-thread
 * pools run inline in order. */
#include "testutil.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "pdq/threadpool.h"

typedef struct {
    atomic_int *hits;
    int threads;
    atomic_int bad_thread;
    int *order, n_order;
} ctx_t;

static void task(void *vctx, int t, int thread) {
    ctx_t *c = vctx;
    atomic_fetch_add(&c->hits[t], 1);
    if (thread < 0 || thread >= c->threads) atomic_store(&c->bad_thread, 1);
    if (c->order) c->order[c->n_order++] = t;
}

static void run_checked(pdq_pool *p, int n_tasks, int threads) {
    atomic_int *hits = calloc((size_t)n_tasks, sizeof *hits);
    ctx_t c = {.hits = hits, .threads = threads};
    atomic_init(&c.bad_thread, 0);
    pdq_pool_run(p, n_tasks, task, &c);
    for (int t = 0; t < n_tasks; t++) assert_int_equal(atomic_load(&hits[t]), 1);
    assert_int_equal(atomic_load(&c.bad_thread), 0);
    free(hits);
}

static void test_every_task_once(void **state) {
    (void)state;
    pdq_status st = {0};
    for (int n = 1; n <= 4; n++) {
        pdq_pool *p = pdq_pool_create(n, &st);
        assert_non_null(p);
        assert_int_equal(pdq_pool_threads(p), n);
        for (int rep = 0; rep < 3000; rep++) run_checked(p, 1 + rep % 37, n);
        run_checked(p, 0, n);
        pdq_pool_free(p);
    }
}

static void test_inline_in_order(void **state) {
    (void)state;
    pdq_status st = {0};
    pdq_pool *one = pdq_pool_create(1, &st);
    assert_non_null(one);
    pdq_pool *pools[2] = {NULL, one};
    for (int i = 0; i < 2; i++) {
        atomic_int hits[9] = {0};
        int order[9];
        ctx_t c = {.hits = hits, .threads = 1, .order = order};
        atomic_init(&c.bad_thread, 0);
        pdq_pool_run(pools[i], 9, task, &c);
        assert_int_equal(c.n_order, 9);
        for (int t = 0; t < 9; t++) assert_int_equal(order[t], t);
    }
    assert_int_equal(pdq_pool_threads(NULL), 1);
    pdq_pool_free(one);
    pdq_pool_free(NULL);
}

static void test_limits(void **state) {
    (void)state;
    pdq_status st = {0};
    assert_null(pdq_pool_create(100000, &st));
    assert_int_equal(st.code, PDQ_ERR_LIMIT);
    assert_non_null(strstr(st.msg, "100000"));
    pdq_pool *all = pdq_pool_create(0, &st);
    assert_non_null(all);
    assert_true(pdq_pool_threads(all) >= 1);
    pdq_pool_free(all);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_task_once),
        cmocka_unit_test(test_inline_in_order),
        cmocka_unit_test(test_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
