/* The strided-window bookkeeping against brute force: every token after the first is scored
 * exactly once, each with the context HF's method gives it. */
#include "testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pdq/eval.h"

/* A fake model: logits put all mass on nothing in particular, but record what was asked. */
typedef struct {
    long n;
    const int32_t *base;
    int *context_of;   /* per token: how many tokens preceded it in the window that scored it */
    int calls;
} fake;

static pdq_code fake_window(void *ctx, const int32_t *ids, int T, float *logits, pdq_status *st) {
    (void)st;
    fake *f = ctx;
    f->calls++;
    long begin = ids - f->base;
    for (int t = 0; t < T; t++) {
        /* Logit row t: uniform except a bump encoding the window start, so the NLL of each
         * scored token tells which window scored it. */
        for (int v = 0; v < 4; v++) logits[t * 4 + v] = 0.0f;
        logits[t * 4 + (begin % 4)] = 1.0f;
    }
    return PDQ_OK;
}

static void check(long n, int max_len, int stride) {
    int32_t *ids = calloc((size_t)n, sizeof *ids);
    for (long i = 0; i < n; i++) ids[i] = (int32_t)(i % 4);
    fake f = {n, ids, NULL, 0};
    pdq_ppl_result r;
    pdq_status st = {0};
    assert_int_equal(pdq_ppl_windows(fake_window, &f, 4, ids, n, max_len, stride, NULL, &r, &st), PDQ_OK);
    /* Brute force: HF loop. */
    long prev_end = 0, tokens = 0;
    double nll = 0;
    int windows = 0;
    for (long begin = 0; begin < n; begin += stride) {
        long end = begin + max_len < n ? begin + max_len : n;
        long trg = end - prev_end;
        for (long i = end - trg; i < end; i++) {
            if (i == begin) continue; /* first token of a window has no prediction */
            double lse = log(3.0 + exp(1.0));
            double logit = (ids[i] == (int32_t)(begin % 4)) ? 1.0 : 0.0;
            nll += lse - logit;
            tokens++;
        }
        windows++;
        prev_end = end;
        if (end == n) break;
    }
    assert_int_equal(r.tokens, tokens);
    assert_int_equal(r.windows, windows);
    assert_true(fabs(r.nll - nll) < 1e-9 * (1 + nll));
    free(ids);
}

static void test_windows(void **state) {
    (void)state;
    check(1000, 256, 256);
    check(1000, 256, 128);
    check(1000, 100, 7);
    check(257, 256, 256);
    check(2, 256, 256);
    check(63832, 256, 256);
}

static void test_bad_args(void **state) {
    (void)state;
    int32_t ids[4] = {0, 1, 2, 3};
    fake f = {4, ids, NULL, 0};
    pdq_ppl_result r;
    pdq_status st = {0};
    assert_int_equal(pdq_ppl_windows(fake_window, &f, 4, ids, 4, 8, 16, NULL, &r, &st), PDQ_ERR_ARG);
    assert_int_equal(pdq_ppl_windows(fake_window, &f, 4, ids, 1, 8, 8, NULL, &r, &st), PDQ_ERR_ARG);
    ids[2] = 9;
    assert_int_equal(pdq_ppl_windows(fake_window, &f, 4, ids, 4, 8, 8, NULL, &r, &st), PDQ_ERR_ARG);
    assert_non_null(strstr(st.msg, "9"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_windows),
        cmocka_unit_test(test_bad_args),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
