/* The command-line parser (src/cli/args.c, compiled into this test: the CLI is not part of the
 * library) at its edges: range bounds inclusive/exclusive, int and long overflow, whole-string
 * numbers, non-finite floats, duplicates, missing values, unknown and stray arguments, the
 * argument-count limit. The messages themselves are checked by tests/cli/bad_inputs.sh. */
#include "testutil.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli/args.c"

/* Parses argv (NULL-terminated) with a fresh parser. */
static void parse(pdq_args *a, char **argv) {
    int n = 0;
    while (argv[n]) n++;
    args_init(a, "test", n, argv);
}

/* One integer option with value v against [lo, hi]: 1 if accepted (then *out), 0 if rejected. */
static int int_ok(const char *v, long lo, long hi, long *out) {
    char f[] = "--n", *val = (char *)v;
    char *argv[] = {f, val, NULL};
    pdq_args a;
    parse(&a, argv);
    long r = args_int_range(&a, "--n", -7, lo, hi);
    int ok = !args_finish(&a);
    if (ok) *out = r;
    else assert_int_equal(r, -7); /* a rejected value leaves the default */
    return ok;
}

static int real_ok(const char *v, double lo, double hi, int open, double *out) {
    char f[] = "--x", *val = (char *)v;
    char *argv[] = {f, val, NULL};
    pdq_args a;
    parse(&a, argv);
    double r = args_real(&a, "--x", -7, lo, hi, open);
    int ok = !args_finish(&a);
    if (ok) *out = r;
    else assert_true(r == -7);
    return ok;
}

static void test_integers(void **state) {
    (void)state;
    long v = 0;
    assert_true(int_ok("2", 2, 32768, &v) && v == 2);           /* both bounds inclusive */
    assert_true(int_ok("32768", 2, 32768, &v) && v == 32768);
    assert_false(int_ok("1", 2, 32768, &v));
    assert_false(int_ok("32769", 2, 32768, &v));
    assert_false(int_ok("4294967312", 2, 32768, &v));           /* 2^32 + 16: no wrap to 16 */
    assert_true(int_ok("-1", -5, 5, &v) && v == -1);
    const char *bads[] = {"", "16abc", "1e3", "0x10", " 16", "16 ", "1.0", "nan", "- 1"};
    for (size_t i = 0; i < sizeof bads / sizeof bads[0]; i++) assert_false(int_ok(bads[i], -100, 100, &v));
    /* args_int: anything that fits in int, nothing beyond */
    char f[] = "--n", big[] = "2147483648", max[] = "2147483647";
    char *a1[] = {f, max, NULL}, *a2[] = {f, big, NULL};
    pdq_args a;
    parse(&a, a1);
    assert_int_equal(args_int(&a, "--n", 0), INT_MAX);
    assert_int_equal(args_finish(&a), 0);
    parse(&a, a2);
    assert_int_equal(args_int(&a, "--n", 5), 5);
    assert_int_not_equal(args_finish(&a), 0);
    /* long overflow is an error, not LONG_MAX */
    assert_false(int_ok("9223372036854775808", 0, LONG_MAX, &v));
    assert_true(int_ok("9223372036854775807", 0, LONG_MAX, &v) && v == LONG_MAX);
}

static void test_reals(void **state) {
    (void)state;
    double v = 0;
    assert_true(real_ok("1", 0, 1, ARGS_LO_OPEN, &v) && v == 1); /* (0, 1] */
    assert_false(real_ok("0", 0, 1, ARGS_LO_OPEN, &v));
    assert_true(real_ok("1e-300", 0, 1, ARGS_LO_OPEN, &v) && v == 1e-300);
    assert_false(real_ok("1.0000001", 0, 1, ARGS_LO_OPEN, &v));
    assert_true(real_ok("0", 0, 1, ARGS_HI_OPEN, &v) && v == 0); /* [0, 1) */
    assert_false(real_ok("1", 0, 1, ARGS_HI_OPEN, &v));
    const char *bads[] = {"nan", "NaN", "-nan", "inf", "-inf", "infinity", "1e999", "-1e999", "", "0.5x", " 0.5", "1,5"};
    for (size_t i = 0; i < sizeof bads / sizeof bads[0]; i++)
        assert_false(real_ok(bads[i], -HUGE_VAL, HUGE_VAL, ARGS_CLOSED, &v));
    /* a tiny value that underflows is still a number, and within [0, inf) */
    assert_true(real_ok("1e-400", 0, HUGE_VAL, ARGS_CLOSED, &v) && v >= 0 && v < DBL_MIN);
    assert_true(real_ok("-120", -HUGE_VAL, 0, ARGS_HI_OPEN, &v) && v == -120); /* a negative value, not an option */
}

static void test_flags(void **state) {
    (void)state;
    pdq_args a;
    char m[] = "--model", d[] = "dir", s[] = "--max-seq", v8[] = "8", v9[] = "9", j[] = "--json", p[] = "--prompt",
         eq[] = "--prompt=--x", stray[] = "stray", typo[] = "--max_seq";
    /* duplicates are an error (the value of the first is kept for messages only) */
    char *dup[] = {m, d, s, v8, s, v9, NULL};
    parse(&a, dup);
    assert_string_equal(args_str(&a, "--model"), "dir");
    (void)args_str(&a, "--max-seq");
    assert_int_not_equal(args_finish(&a), 0);
    /* a missing value at the end, and a value that is the next option */
    char *miss[] = {m, d, s, NULL};
    parse(&a, miss);
    (void)args_str(&a, "--model");
    assert_null(args_str(&a, "--max-seq"));
    assert_int_not_equal(args_finish(&a), 0);
    char *opt[] = {m, p, d, NULL};
    parse(&a, opt);
    assert_null(args_str(&a, "--model"));
    (void)args_str(&a, "--prompt");
    assert_int_not_equal(args_finish(&a), 0);
    /* a value may start with dashes when no option name follows them */
    char dd[] = "-- and then", dash[] = "--";
    char *dv[] = {p, dd, m, dash, NULL};
    parse(&a, dv);
    assert_string_equal(args_str(&a, "--prompt"), "-- and then");
    assert_string_equal(args_str(&a, "--model"), "--");
    assert_int_equal(args_finish(&a), 0);
    /* --flag=--x gives a value that starts with dashes */
    char *eqv[] = {eq, NULL};
    parse(&a, eqv);
    assert_string_equal(args_str(&a, "--prompt"), "--x");
    assert_int_equal(args_finish(&a), 0);
    /* unknown options and stray words fail; booleans do not eat the next word */
    char *unk[] = {m, d, typo, v8, NULL};
    parse(&a, unk);
    (void)args_str(&a, "--model");
    (void)args_str(&a, "--max-seq");
    assert_int_not_equal(args_finish(&a), 0);
    assert_string_equal(nearest(&a, "--max_seq"), "--max-seq");
    assert_null(nearest(&a, "--completely-different"));
    char *st[] = {j, stray, NULL};
    parse(&a, st);
    assert_int_equal(args_flag(&a, "--json"), 1);
    assert_int_not_equal(args_finish(&a), 0);
    /* positionals are what no flag consumed */
    char *pos[] = {m, d, stray, NULL};
    parse(&a, pos);
    (void)args_str(&a, "--model");
    assert_string_equal(args_pos(&a, 0), "stray");
    assert_null(args_pos(&a, 1));
    assert_int_equal(args_finish(&a), 0);
    /* required flags and alternatives */
    char *none[] = {NULL};
    parse(&a, none);
    assert_null(args_required(&a, "--model"));
    assert_int_not_equal(args_finish(&a), 0);
    parse(&a, none);
    args_one_of(&a, "--prompt", NULL, "--ids", NULL);
    assert_int_not_equal(args_finish(&a), 0);
    parse(&a, none);
    args_one_of(&a, "--prompt", "a", "--ids", "1");
    assert_int_not_equal(args_finish(&a), 0);
    parse(&a, none);
    args_one_of(&a, "--prompt", "a", "--ids", NULL);
    assert_int_equal(args_finish(&a), 0);
}

static void test_repeatable_and_limits(void **state) {
    (void)state;
    pdq_args a;
    char i[] = "--ids", one[] = "1";
    char *argv[] = {i, one, i, one, i, one, NULL};
    const char *out[2];
    parse(&a, argv);
    assert_int_equal(args_all(&a, "--ids", out, 2), 2); /* 3 given, at most 2: an error */
    assert_int_not_equal(args_finish(&a), 0);
    const char *out3[3];
    parse(&a, argv);
    assert_int_equal(args_all(&a, "--ids", out3, 3), 3);
    assert_int_equal(args_finish(&a), 0);
    /* more arguments than ARGS_MAX: an error, not a silent truncation */
    static char *many[ARGS_MAX + 2];
    static char flag[] = "--json";
    for (int k = 0; k < ARGS_MAX + 1; k++) many[k] = flag;
    args_init(&a, "test", ARGS_MAX + 1, many);
    (void)args_flag(&a, "--json");
    assert_int_not_equal(args_finish(&a), 0);
    args_init(&a, "test", ARGS_MAX, many);
    (void)args_flag(&a, "--json");
    assert_int_equal(args_finish(&a), 0);
}

/* The messages: option, value and range named; the pointer to --help once. */
static char *messages_of(char **argv, void (*read)(pdq_args *)) {
    static char text[4096];
    pdq_args a;
    parse(&a, argv);
    FILE *f = tmpfile();
    assert_non_null(f);
    a.err = f;
    read(&a);
    (void)args_finish(&a);
    rewind(f);
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    return text;
}

static void read_some(pdq_args *a) {
    (void)args_int_range(a, "--max-seq", 0, 2, 32768);
    (void)args_real(a, "--top-p", 1, 0, 1, ARGS_LO_OPEN);
    (void)args_real(a, "--tol", 0, 0, HUGE_VAL, ARGS_CLOSED);
    (void)args_real(a, "--mask-fill", -120, -HUGE_VAL, 0, ARGS_HI_OPEN);
    (void)args_double(a, "--x", 0);
    (void)args_required(a, "--model");
}

static void test_messages(void **state) {
    (void)state;
    char s[] = "--max-seq", big[] = "4294967312", p[] = "--top-p", nan_[] = "nan", t[] = "--tol", neg[] = "-1",
         mf[] = "--mask-fill", five[] = "5", x[] = "--x", inf_[] = "inf", typo[] = "--max_seq";
    char *argv[] = {s, big, p, nan_, t, neg, mf, five, x, inf_, NULL};
    const char *m = messages_of(argv, read_some);
    assert_non_null(strstr(m, "pdq test: --max-seq must be an integer in [2, 32768], got '4294967312'\n"));
    assert_non_null(strstr(m, "pdq test: --top-p must be a number in (0, 1], got 'nan'\n"));
    assert_non_null(strstr(m, "pdq test: --tol must be a number >= 0, got '-1'\n"));
    assert_non_null(strstr(m, "pdq test: --mask-fill must be a number < 0, got '5'\n"));
    assert_non_null(strstr(m, "pdq test: --x must be a finite number, got 'inf'\n"));
    assert_non_null(strstr(m, "pdq test: --model is required\n"));
    const char *help = strstr(m, "see 'pdq test --help' for the options");
    assert_non_null(help);
    assert_null(strstr(help + 1, "see 'pdq test --help'"));
    char *argv2[] = {typo, five, NULL};
    m = messages_of(argv2, read_some);
    assert_non_null(strstr(m, "unknown option '--max_seq' (did you mean --max-seq?)\n"));
    assert_null(strstr(m, "unexpected argument '5'")); /* the typo's value is part of the same mistake */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_integers),
        cmocka_unit_test(test_reals),
        cmocka_unit_test(test_flags),
        cmocka_unit_test(test_repeatable_and_limits),
        cmocka_unit_test(test_messages),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
