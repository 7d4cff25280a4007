/* The JSON field checker every side file goes through: integral integers in range (no
 * out-of-range double->int cast, even at 2^63), finite floats in range, enums, booleans,
 * required vs optional, and messages naming file, field path, value and limit. */
#include <stdlib.h>
#include <string.h>

#include "io/json_field.h"
#include "testutil.h"

static cJSON *obj(const char *text) {
    cJSON *j = cJSON_Parse(text);
    assert_non_null(j);
    return j;
}

/* Parses {"k": VALUE} and checks it as an integer in [lo, hi]. */
static pdq_code int_of(const char *value, int64_t lo, int64_t hi, int64_t *out, pdq_status *st) {
    char text[128];
    snprintf(text, sizeof text, "{\"k\": %s}", value);
    cJSON *j = obj(text);
    pdq_jctx c = {"dir/ptq.json", "groups[3]"};
    pdq_code rc = pdq_jf_int(&c, j, "k", PDQ_JF_REQUIRED, lo, hi, out, st);
    cJSON_Delete(j);
    return rc;
}

static void test_integers(void **state) {
    (void)state;
    pdq_status st = {0};
    int64_t v = -7;
    assert_int_equal(int_of("8", 2, 8, &v, &st), PDQ_OK);
    assert_int_equal(v, 8);
    assert_int_equal(int_of("2", 2, 8, &v, &st), PDQ_OK);
    assert_int_equal(v, 2);
    assert_int_equal(int_of("-32768", -32768, 32767, &v, &st), PDQ_OK);
    assert_int_equal(v, -32768);
    static const struct { const char *value, *msg; int64_t lo, hi; } bad[] = {
        {"4.5", "dir/ptq.json: groups[3].k = 4.5: must be an integer in [2, 8]", 2, 8},
        {"9", "groups[3].k = 9: must be an integer in [2, 8]", 2, 8},
        {"1", "groups[3].k = 1: must be an integer in [2, 8]", 2, 8},
        {"-1", "groups[3].k = -1: must be an integer in [0, 100]", 0, 100},
        {"1e30", "groups[3].k = 1e+30: must be an integer in [0, 100]", 0, 100},
        {"\"8\"", "groups[3].k = \"8\": must be an integer", 0, 100},
        {"true", "groups[3].k = true: must be an integer", 0, 100},
        {"[8]", "groups[3].k = [8]: must be an integer", 0, 100},
        /* 2^63 as a double: inside [lo, INT64_MAX] when compared as doubles, but not castable */
        {"9223372036854775807", "must be an integer in [0, 9223372036854775807]", 0, INT64_MAX},
        {"-9223372036854775809", "must be an integer in [-9223372036854775807", -INT64_MAX, 0},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        pdq_status_clear(&st);
        v = 42;
        pdq_code rc = int_of(bad[i].value, bad[i].lo, bad[i].hi, &v, &st);
        if (rc != PDQ_ERR_FORMAT || !strstr(st.msg, bad[i].msg))
            fail_msg("%s: got %s '%s', want '%s'", bad[i].value, pdq_code_name(rc), st.msg, bad[i].msg);
        assert_int_equal(v, 42); /* untouched on failure */
    }
    /* 2^53 is exact and inside a wide range */
    assert_int_equal(int_of("9007199254740992", 0, (int64_t)1 << 60, &v, &st), PDQ_OK);
    assert_true(v == (int64_t)1 << 53);
    /* int destination */
    cJSON *j = obj("{\"max_seq\": 100000000}");
    pdq_jctx c = {"q/ptq.json", ""};
    int s = 5;
    assert_int_equal(pdq_jf_i32(&c, j, "max_seq", PDQ_JF_REQUIRED, 2, 65536, &s, &st), PDQ_ERR_FORMAT);
    assert_non_null(strstr(st.msg, "q/ptq.json: max_seq = 100000000: must be an integer in [2, 65536]"));
    assert_int_equal(s, 5);
    cJSON_Delete(j);
}

static void test_numbers_enums_presence(void **state) {
    (void)state;
    pdq_status st = {0};
    cJSON *j = obj("{\"scale\": 1e-60, \"big\": 1e60, \"ok\": 0.5, \"dt\": \"uint9\", \"b\": 1, \"n\": null,"
                   " \"so\": {\"rope\": \"hf\"}}");
    pdq_jctx c = {"ptq.json", "groups[12]"};
    double d = -1;
    assert_int_equal(pdq_jf_num(&c, j, "scale", PDQ_JF_REQUIRED, 1e-30, 1e30, &d, &st), PDQ_ERR_FORMAT);
    assert_non_null(strstr(st.msg, "ptq.json: groups[12].scale = 1e-60: must be a finite number in [1e-30, 1e+30]"));
    assert_int_equal(pdq_jf_num(&c, j, "big", PDQ_JF_REQUIRED, 1e-30, 1e30, &d, &st), PDQ_ERR_FORMAT);
    assert_non_null(strstr(st.msg, "groups[12].big = 1e+60"));
    assert_true(d == -1);
    assert_int_equal(pdq_jf_num(&c, j, "ok", PDQ_JF_REQUIRED, 0, 1, &d, &st), PDQ_OK);
    assert_true(d == 0.5);
    static const char *const names[] = {"float", "int16", "uint8", "int32"};
    int e = -1;
    assert_int_equal(pdq_jf_enum(&c, j, "dt", PDQ_JF_REQUIRED, names, 4, &e, &st), PDQ_ERR_FORMAT);
    assert_non_null(strstr(st.msg, "groups[12].dt = \"uint9\": must be one of float, int16, uint8, int32"));
    assert_int_equal(e, -1);
    int b = 7;
    assert_int_equal(pdq_jf_bool(&c, j, "b", PDQ_JF_REQUIRED, &b, &st), PDQ_ERR_FORMAT);
    assert_non_null(strstr(st.msg, "groups[12].b = 1: must be true or false"));
    /* absent and null: missing when required, the caller's default kept when optional */
    assert_int_equal(pdq_jf_num(&c, j, "absent", PDQ_JF_REQUIRED, 0, 1, &d, &st), PDQ_ERR_MISSING);
    assert_non_null(strstr(st.msg, "ptq.json: required field groups[12].absent is missing"));
    assert_int_equal(pdq_jf_num(&c, j, "n", PDQ_JF_REQUIRED, 0, 1, &d, &st), PDQ_ERR_MISSING);
    d = 0.25;
    assert_int_equal(pdq_jf_num(&c, j, "n", PDQ_JF_OPTIONAL, 0, 1, &d, &st), PDQ_OK);
    assert_true(d == 0.25);
    /* nested objects name their path */
    const cJSON *so;
    pdq_jctx top = {"ptq.json", ""};
    assert_int_equal(pdq_jf_object(&top, j, "so", PDQ_JF_REQUIRED, &so, &st), PDQ_OK);
    pdq_jctx cs = {"ptq.json", "so"};
    static const char *const ropes[] = {"pre_negated_sin"};
    assert_int_equal(pdq_jf_enum(&cs, so, "rope", PDQ_JF_REQUIRED, ropes, 1, &e, &st), PDQ_ERR_FORMAT);
    assert_non_null(strstr(st.msg, "ptq.json: so.rope = \"hf\": must be one of pre_negated_sin"));
    assert_int_equal(pdq_jf_array(&top, j, "so", PDQ_JF_REQUIRED, 10, &so, &st), PDQ_ERR_FORMAT);
    assert_non_null(strstr(st.msg, "so = {\"rope\":\"hf\"}: must be an array"));
    cJSON_Delete(j);
    j = obj("{\"a\": [1, 2, 3]}");
    assert_int_equal(pdq_jf_array(&top, j, "a", PDQ_JF_REQUIRED, 2, &so, &st), PDQ_ERR_LIMIT);
    assert_non_null(strstr(st.msg, "ptq.json: a has 3 entries: the limit is 2"));
    cJSON_Delete(j);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_integers),
        cmocka_unit_test(test_numbers_enums_presence),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
