/* .npy round trip and reading the HF reference fixtures. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pdq/npy.h"

static void test_roundtrip(void **state) {
    (void)state;
    char *dir = tu_mkdtemp();
    char path[512];
    snprintf(path, sizeof path, "%s/a.npy", dir);
    float data[6] = {1, -2, 3.5f, 0, 1e-7f, 42};
    int64_t shape[2] = {2, 3};
    pdq_status st = {0};
    assert_int_equal(pdq_npy_write(path, PDQ_NPY_F32, 2, shape, data, &st), PDQ_OK);
    pdq_npy a;
    assert_int_equal(pdq_npy_read(path, &a, &st), PDQ_OK);
    assert_int_equal(a.ndim, 2);
    assert_int_equal(a.shape[0], 2);
    assert_int_equal(a.shape[1], 3);
    assert_memory_equal(a.data, data, sizeof data);
    pdq_npy_free(&a);
    int64_t s1[1] = {4};
    int32_t ids[4] = {1, 2, 3, -4};
    assert_int_equal(pdq_npy_write(path, PDQ_NPY_I32, 1, s1, ids, &st), PDQ_OK);
    assert_int_equal(pdq_npy_read(path, &a, &st), PDQ_OK);
    assert_int_equal(a.dtype, PDQ_NPY_I32);
    assert_int_equal(a.count, 4);
    assert_memory_equal(a.data, ids, sizeof ids);
    pdq_npy_free(&a);
    tu_rmtree(dir);
    free(dir);
}

static void test_reads_reference(void **state) {
    (void)state;
    pdq_npy a;
    pdq_status st = {0};
    assert_int_equal(pdq_npy_read_f32(PDQ_TEST_REF "/prompt0/prefill_logits.npy", &a, &st), PDQ_OK);
    assert_int_equal(a.ndim, 3);
    assert_int_equal(a.shape[0], 1);
    assert_int_equal(a.shape[1], 7);
    assert_int_equal(a.shape[2], 32000);
    pdq_npy_free(&a);
}

static void test_bad_files(void **state) {
    (void)state;
    char *dir = tu_mkdtemp();
    char path[512];
    snprintf(path, sizeof path, "%s/bad.npy", dir);
    pdq_status st = {0};
    pdq_npy a;
    assert_int_equal(pdq_npy_read("/nonexistent.npy", &a, &st), PDQ_ERR_IO);
    assert_non_null(strstr(st.msg, "/nonexistent.npy"));
    tu_write_file(path, "hello", 5);
    assert_int_equal(pdq_npy_read(path, &a, &st), PDQ_ERR_FORMAT);
    /* truncated data */
    float data[4] = {0};
    int64_t shape[1] = {4};
    assert_int_equal(pdq_npy_write(path, PDQ_NPY_F32, 1, shape, data, &st), PDQ_OK);
    size_t len;
    char *buf = tu_read_file(path, &len);
    tu_write_file(path, buf, len - 3);
    free(buf);
    assert_int_equal(pdq_npy_read(path, &a, &st), PDQ_ERR_FORMAT);
    assert_non_null(strstr(st.msg, "4 elements of 4 bytes need 16 bytes, the file holds 13"));
    /* a 128-byte file whose header claims 2^40 elements: refused from the file size, before any
     * allocation (the process would otherwise ask for 4 TiB) */
    char hdr[128];
    memset(hdr, ' ', sizeof hdr);
    const char *dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (1048576, 1048576), }";
    memcpy(hdr, "\x93NUMPY\x01\x00\x76\x00", 10);
    memcpy(hdr + 10, dict, strlen(dict));
    hdr[127] = '\n';
    tu_write_file(path, hdr, sizeof hdr);
    assert_int_equal(pdq_npy_read(path, &a, &st), PDQ_ERR_FORMAT);
    assert_non_null(strstr(st.msg, path));
    assert_non_null(strstr(st.msg, "1099511627776 elements of 4 bytes need 4398046511104 bytes, the file holds 0"));
    tu_rmtree(dir);
    free(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip),
        cmocka_unit_test(test_reads_reference),
        cmocka_unit_test(test_bad_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
