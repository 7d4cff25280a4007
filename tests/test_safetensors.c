/* safetensors: round trips, half-precision conversions vs brute force, and every corruption. */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pdq/safetensors.h"

/* ---------- conversions vs brute force ---------- */

static float u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static uint32_t f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }

/* Value of an f16 code from the IEEE definition. */
static double f16_value(uint16_t h) {
    int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(1024 + m, e - 25);
    return s ? -v : v;
}

/* Positive code magnitude used for rounding: the code one past the max finite stands for 2^16
 * (f16) / 2^128 (bf16) as if the exponent were unbounded, which is how IEEE rounds to inf. */
static double mag16(uint16_t c) { return c == 0x7c00 ? 65536.0 : f16_value(c); }
static double magbf(uint16_t c) { return c == 0x7f80 ? ldexp(1, 128) : (double)u2f((uint32_t)c << 16); }

/* Nearest code by binary search over monotonic positive codes [0, top], ties to even. */
static uint16_t nearest(double x, uint16_t top, double (*mag)(uint16_t)) {
    if (x >= mag(top)) return top;
    uint16_t lo = 0, hi = top; /* mag(lo) <= x < mag(hi) */
    while (hi - lo > 1) {
        uint16_t mid = (uint16_t)((lo + hi) / 2);
        if (mag(mid) <= x) lo = mid; else hi = mid;
    }
    double dl = x - mag(lo), dh = mag(hi) - x;
    if (dl < dh) return lo;
    if (dh < dl) return hi;
    return (lo & 1) ? hi : lo;
}

static uint16_t ref_f16(float f) {
    if (isnan(f)) return 0x7e00;
    uint16_t s = signbit(f) ? 0x8000 : 0;
    return s | nearest(fabs((double)f), 0x7c00, mag16);
}

static uint16_t ref_bf16(float f) {
    uint16_t s = signbit(f) ? 0x8000 : 0;
    return s | nearest(fabs((double)f), 0x7f80, magbf);
}

static void check_f32_to_half(float f) {
    uint16_t h = pdq_f32_to_f16(f), b = pdq_f32_to_bf16(f);
    if (isnan(f)) {
        assert_true(isnan(pdq_f16_to_f32(h)));
        assert_true(isnan(pdq_bf16_to_f32(b)));
        return;
    }
    if (h != ref_f16(f) || b != ref_bf16(f))
        fail_msg("x=%a (0x%08x): f16 0x%04x want 0x%04x, bf16 0x%04x want 0x%04x", (double)f, f2u(f), h, ref_f16(f),
                 b, ref_bf16(f));
}

static void test_half_to_f32_all(void **state) {
    (void)state;
    for (uint32_t c = 0; c < 65536; c++) {
        double want = f16_value((uint16_t)c);
        float got = pdq_f16_to_f32((uint16_t)c);
        if (isnan(want)) assert_true(isnan(got));
        else if ((double)got != want || !signbit(got) != !signbit(want)) fail_msg("f16 0x%04x -> %a want %a", c, (double)got, want);
        /* bf16 is the top half of an f32 */
        float b = pdq_bf16_to_f32((uint16_t)c);
        if (!isnan(b)) assert_int_equal(f2u(b), c << 16);
        /* every non-NaN code converts back to itself */
        if (!isnan(want)) assert_int_equal(pdq_f32_to_f16(got), c);
        if (!isnan(b)) assert_int_equal(pdq_f32_to_bf16(b), c);
    }
}

static void test_f32_to_half_rounding(void **state) {
    (void)state;
    /* Exact midpoints between neighbouring codes (ties -> even) and one f32 ulp either side. */
    for (uint32_t c = 0; c < 0x7bff; c += 1) {
        float mid = (float)((f16_value((uint16_t)c) + f16_value((uint16_t)(c + 1))) / 2);
        check_f32_to_half(mid);
        check_f32_to_half(-mid);
        check_f32_to_half(nextafterf(mid, 0));
        check_f32_to_half(nextafterf(mid, INFINITY));
    }
    for (uint32_t c = 0; c < 0x7f7f; c += 7) {
        float mid = u2f((c << 16) | 0x8000); /* bf16 midpoint, exact in f32 */
        check_f32_to_half(mid);
        check_f32_to_half(nextafterf(mid, 0));
        check_f32_to_half(nextafterf(mid, INFINITY));
    }
    float specials[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, 65504.0f, 65519.99f, 65520.0f, 65536.0f,
                        1e-8f, 2.98023224e-8f /* 2^-25 */, 2.98023259e-8f, 5.96046448e-8f, 6.1035156e-05f,
                        6.0975552e-05f, 3.4028235e38f, 3.3961776e38f, 1.17549435e-38f, 1e-45f, 1.0f, 1.00390625f,
                        1.01171875f};
    for (size_t i = 0; i < sizeof specials / sizeof specials[0]; i++) check_f32_to_half(specials[i]);
    assert_int_equal(pdq_f32_to_bf16(1.00390625f), 0x3f80);  /* 1 + 2^-8: tie -> even (1.0) */
    assert_int_equal(pdq_f32_to_bf16(1.01171875f), 0x3f82);  /* 1 + 3*2^-8: tie -> even (up) */
    assert_int_equal(pdq_f32_to_f16(65520.0f), 0x7c00);      /* tie between 65504 and 2^16 -> inf */
    assert_int_equal(pdq_f32_to_bf16(INFINITY), 0x7f80);
    assert_int_equal(pdq_f32_to_f16(-INFINITY), 0xfc00);
    uint64_t rs = 7;
    for (int i = 0; i < 200000; i++) {
        float f = u2f((uint32_t)tu_rand(&rs));
        check_f32_to_half(f);
        float g = (float)(tu_randn(&rs) * ldexp(1, (int)(tu_randu(&rs) * 40) - 30)); /* f16 range incl. subnormals */
        check_f32_to_half(g);
    }
}

/* ---------- round trip ---------- */

static char *path_in(const char *dir, const char *name) {
    char *p = malloc(strlen(dir) + strlen(name) + 2);
    sprintf(p, "%s/%s", dir, name);
    return p;
}

static void test_roundtrip_all_dtypes(void **state) {
    (void)state;
    char *dir = tu_mkdtemp();
    char *path = path_in(dir, "x.safetensors");
    static const pdq_dtype dts[] = {PDQ_DT_F32, PDQ_DT_F16, PDQ_DT_BF16, PDQ_DT_F64, PDQ_DT_I8, PDQ_DT_U8,
                                    PDQ_DT_I16, PDQ_DT_U16, PDQ_DT_I32, PDQ_DT_I64, PDQ_DT_BOOL};
    const int n = (int)(sizeof dts / sizeof dts[0]);
    static const char *const names[] = {"F32", "F16", "BF16", "F64", "I8", "U8", "I16", "U16", "I32", "I64", "BOOL"};
    pdq_st_tensor t[16];
    uint8_t *bufs[16];
    char tname[16][32];
    uint64_t rs = 3;
    for (int i = 0; i < n; i++) {
        assert_string_equal(pdq_dtype_name(dts[i]), names[i]);
        memset(&t[i], 0, sizeof t[i]);
        snprintf(tname[i], sizeof tname[i], "t.%s", names[i]);
        t[i].name = tname[i];
        t[i].dtype = dts[i];
        t[i].ndim = 1 + i % 3;
        for (int d = 0; d < t[i].ndim; d++) t[i].shape[d] = 1 + (i + d) % 4;
        size_t cnt = 1;
        for (int d = 0; d < t[i].ndim; d++) cnt *= (size_t)t[i].shape[d];
        t[i].nbytes = cnt * pdq_dtype_size(dts[i]);
        bufs[i] = malloc(t[i].nbytes);
        for (size_t k = 0; k < t[i].nbytes; k++) bufs[i][k] = (uint8_t)tu_rand(&rs);
        t[i].data = bufs[i];
    }
    /* plus a 0-dim scalar and an empty tensor */
    float scalar = 2.5f;
    t[n] = (pdq_st_tensor){.name = "scalar", .dtype = PDQ_DT_F32, .ndim = 0, .data = &scalar, .nbytes = 4};
    t[n + 1] = (pdq_st_tensor){.name = "empty", .dtype = PDQ_DT_F32, .ndim = 2, .shape = {0, 5}, .data = NULL};
    pdq_status st = {0};
    assert_int_equal(pdq_st_write(path, t, n + 2, "{\"format\":\"pt\",\"note\":\"hi\"}", &st), PDQ_OK);

    /* Layout as HF writes it: header length a multiple of 8, padded with spaces. */
    size_t len;
    char *raw = tu_read_file(path, &len);
    uint64_t hl = 0;
    for (int i = 7; i >= 0; i--) hl = (hl << 8) | (uint8_t)raw[i];
    assert_int_equal(hl % 8, 0);
    assert_int_equal(raw[8], '{');
    size_t last = 8 + hl - 1;
    while (raw[last] == ' ') last--;
    assert_int_equal(raw[last], '}');
    free(raw);

    pdq_safetensors *s;
    assert_int_equal(pdq_st_open(path, &s, &st), PDQ_OK);
    assert_int_equal(pdq_st_count(s), n + 2);
    assert_int_equal(pdq_st_file_count(s), 1);
    assert_non_null(strstr(pdq_st_metadata(s), "\"note\":\"hi\""));
    for (int i = 0; i < n + 1; i++) {
        const pdq_st_tensor *r = pdq_st_find(s, t[i].name);
        assert_non_null(r);
        assert_int_equal(r->dtype, t[i].dtype);
        assert_int_equal(r->ndim, t[i].ndim);
        for (int d = 0; d < r->ndim; d++) assert_int_equal(r->shape[d], t[i].shape[d]);
        assert_int_equal(r->nbytes, t[i].nbytes);
        assert_memory_equal(r->data, t[i].data, t[i].nbytes);
        assert_string_equal(pdq_st_file_of(s, r), path);
    }
    assert_int_equal(pdq_st_find(s, "empty")->nbytes, 0);
    assert_null(pdq_st_find(s, "nope"));

    /* read_f32 converts each float dtype exactly as the element helpers do */
    const pdq_dtype fl[] = {PDQ_DT_F32, PDQ_DT_F16, PDQ_DT_BF16, PDQ_DT_F64};
    for (int k = 0; k < 4; k++) {
        const pdq_st_tensor *r = pdq_st_find(s, t[k].name);
        assert_int_equal(r->dtype, fl[k]);
        size_t cnt = r->nbytes / pdq_dtype_size(r->dtype);
        float out[64];
        assert_int_equal(pdq_st_read_f32(s, r->name, r->ndim, r->shape, out, &st), PDQ_OK);
        for (size_t e = 0; e < cnt; e++) {
            float want;
            if (fl[k] == PDQ_DT_F32) memcpy(&want, bufs[k] + 4 * e, 4);
            else if (fl[k] == PDQ_DT_F64) { double d; memcpy(&d, bufs[k] + 8 * e, 8); want = (float)d; }
            else {
                uint16_t h = (uint16_t)(bufs[k][2 * e] | bufs[k][2 * e + 1] << 8);
                want = fl[k] == PDQ_DT_F16 ? (float)f16_value(h) : u2f((uint32_t)h << 16);
            }
            if (isnan(want)) assert_true(isnan(out[e]));
            else assert_memory_equal(&out[e], &want, 4);
        }
    }
    int64_t shp[1] = {0};
    float dummy;
    const pdq_st_tensor *i32 = pdq_st_find(s, "t.I32");
    assert_int_equal(pdq_st_read_f32(s, "t.I32", i32->ndim, i32->shape, &dummy, &st), PDQ_ERR_UNSUPPORTED);
    assert_non_null(strstr(st.msg, "t.I32"));
    assert_int_equal(pdq_st_read_f32(s, "nope", 1, shp, &dummy, &st), PDQ_ERR_MISSING);
    assert_non_null(strstr(st.msg, "nope"));
    assert_non_null(strstr(st.msg, "x.safetensors"));
    pdq_st_close(s);
    for (int i = 0; i < n; i++) free(bufs[i]);
    free(path);
    tu_rmtree(dir);
    free(dir);
}

/* ---------- corruptions ---------- */

/* 8-byte length + header + data_len bytes of data. */
static void write_raw(const char *path, const char *header, size_t data_len, int64_t len_override) {
    size_t hl = strlen(header);
    uint64_t L = len_override >= 0 ? (uint64_t)len_override : hl;
    size_t total = 8 + hl + data_len;
    uint8_t *b = calloc(total, 1);
    for (int i = 0; i < 8; i++) b[i] = (uint8_t)(L >> (8 * i));
    memcpy(b + 8, header, hl);
    assert_int_equal(tu_write_file(path, b, total), 0);
    free(b);
}

static void expect_open(const char *path, pdq_code code, const char *m1, const char *m2) {
    pdq_safetensors *s = NULL;
    pdq_status st = {0};
    pdq_code c = pdq_st_open(path, &s, &st);
    if (c != code) fail_msg("%s: got %s (%s), want %s", path, pdq_code_name(c), st.msg, pdq_code_name(code));
    assert_null(s);
    if (m1 && !strstr(st.msg, m1)) fail_msg("message '%s' lacks '%s'", st.msg, m1);
    if (m2 && !strstr(st.msg, m2)) fail_msg("message '%s' lacks '%s'", st.msg, m2);
}

#define A "\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]}"

static void test_corrupt_headers(void **state) {
    (void)state;
    char *dir = tu_mkdtemp();
    char *p = path_in(dir, "bad.safetensors");
    /* sanity: the good one opens */
    write_raw(p, "{" A ",\"b\":{\"dtype\":\"BF16\",\"shape\":[4],\"data_offsets\":[24,32]}}", 32, -1);
    pdq_safetensors *s;
    pdq_status st = {0};
    assert_int_equal(pdq_st_open(p, &s, &st), PDQ_OK);
    pdq_st_close(s);
    int64_t wrong[2] = {3, 2};
    float out[6];
    assert_int_equal(pdq_st_open(p, &s, &st), PDQ_OK);
    assert_int_equal(pdq_st_read_f32(s, "a", 2, wrong, out, &st), PDQ_ERR_SHAPE);
    char want[256];
    snprintf(want, sizeof want, "%s: tensor a has shape [2, 3], expected [3, 2]", p);
    assert_string_equal(st.msg, want);
    pdq_st_close(s);

    /* truncated: the data area ends inside tensor b */
    write_raw(p, "{" A ",\"b\":{\"dtype\":\"BF16\",\"shape\":[4],\"data_offsets\":[24,32]}}", 28, -1);
    expect_open(p, PDQ_ERR_FORMAT, "bad.safetensors", "tensor b");
    /* shorter than the length prefix */
    assert_int_equal(tu_write_file(p, "\x10\0\0", 3), 0);
    expect_open(p, PDQ_ERR_FORMAT, "bad.safetensors", "too short");
    /* header length past EOF, and absurdly large */
    write_raw(p, "{" A "}", 24, 4096);
    expect_open(p, PDQ_ERR_FORMAT, "bad.safetensors", "header length");
    write_raw(p, "{" A "}", 24, (int64_t)1 << 62);
    expect_open(p, PDQ_ERR_FORMAT, "bad.safetensors", "header length");
    /* bad JSON, not an object, trailing garbage */
    write_raw(p, "{\"a\":{\"dtype\":\"F32\",", 24, -1);
    expect_open(p, PDQ_ERR_FORMAT, "bad.safetensors", "JSON");
    write_raw(p, "[1,2]", 0, -1);
    expect_open(p, PDQ_ERR_FORMAT, "bad.safetensors", "JSON object");
    write_raw(p, "{" A "}xx", 24, -1);
    expect_open(p, PDQ_ERR_FORMAT, "bad.safetensors", "trailing");
    /* unknown dtype */
    write_raw(p, "{\"w\":{\"dtype\":\"F8_E9M9\",\"shape\":[2],\"data_offsets\":[0,2]}}", 2, -1);
    expect_open(p, PDQ_ERR_UNSUPPORTED, "bad.safetensors", "tensor w");
    /* shape vs offsets mismatch */
    write_raw(p, "{\"w\":{\"dtype\":\"F32\",\"shape\":[2,4],\"data_offsets\":[0,24]}}", 24, -1);
    expect_open(p, PDQ_ERR_FORMAT, "tensor w", "need 32");
    /* shape overflow */
    write_raw(p, "{\"w\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,24]}}", 24, -1);
    expect_open(p, PDQ_ERR_FORMAT, "tensor w", "large");
    write_raw(p, "{\"w\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", 4, -1);
    expect_open(p, PDQ_ERR_FORMAT, "tensor w", "shape");
    /* overlapping */
    write_raw(p, "{" A ",\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[16,24]}}", 24, -1);
    expect_open(p, PDQ_ERR_FORMAT, "overlaps", "tensor");
    /* offsets past end */
    write_raw(p, "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[100,108]}}", 24, -1);
    expect_open(p, PDQ_ERR_FORMAT, "tensor w", "past the data area");
    /* end before begin */
    write_raw(p, "{\"w\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[8,0]}}", 8, -1);
    expect_open(p, PDQ_ERR_FORMAT, "tensor w", "data_offsets");
    /* gap / uncovered data */
    write_raw(p, "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}", 16, -1);
    expect_open(p, PDQ_ERR_FORMAT, "bad.safetensors", "unused bytes");
    write_raw(p, "{" A "}", 40, -1);
    expect_open(p, PDQ_ERR_FORMAT, "bad.safetensors", "cover");
    /* missing fields, bad metadata, duplicate names */
    write_raw(p, "{\"w\":{\"dtype\":\"F32\",\"data_offsets\":[0,8]}}", 8, -1);
    expect_open(p, PDQ_ERR_FORMAT, "tensor w", "shape");
    write_raw(p, "{\"w\":{\"dtype\":\"F32\",\"shape\":[2]}}", 8, -1);
    expect_open(p, PDQ_ERR_FORMAT, "tensor w", "data_offsets");
    write_raw(p, "{\"__metadata__\":{\"k\":1}," A "}", 24, -1);
    expect_open(p, PDQ_ERR_FORMAT, "bad.safetensors", "__metadata__");
    write_raw(p, "{" A "," A "}", 24, -1);
    expect_open(p, PDQ_ERR_FORMAT, "tensor a", "twice");
    /* not there at all */
    expect_open("/nonexistent/x.safetensors", PDQ_ERR_IO, "/nonexistent/x.safetensors", NULL);
    expect_open(dir, PDQ_ERR_MISSING, dir, "model.safetensors");
    free(p);
    tu_rmtree(dir);
    free(dir);
}

static void write_index(const char *dir, const char *weight_map) {
    char *p = path_in(dir, "model.safetensors.index.json");
    char buf[2048];
    snprintf(buf, sizeof buf, "{\"metadata\":{\"total_size\":40},\"weight_map\":{%s}}", weight_map);
    assert_int_equal(tu_write_file(p, buf, strlen(buf)), 0);
    free(p);
}

static void test_shards(void **state) {
    (void)state;
    char *dir = tu_mkdtemp();
    char *s1 = path_in(dir, "model-00001-of-00002.safetensors");
    char *s2 = path_in(dir, "model-00002-of-00002.safetensors");
    char *idx = path_in(dir, "model.safetensors.index.json");
    float a[6] = {1, 2, 3, 4, 5, 6}, b[2] = {7, 8};
    pdq_st_tensor ta = {.name = "a", .dtype = PDQ_DT_F32, .ndim = 2, .shape = {2, 3}, .data = a};
    pdq_st_tensor tb = {.name = "b", .dtype = PDQ_DT_F32, .ndim = 1, .shape = {2}, .data = b};
    pdq_status st = {0};
    assert_int_equal(pdq_st_write(s1, &ta, 1, NULL, &st), PDQ_OK);
    assert_int_equal(pdq_st_write(s2, &tb, 1, NULL, &st), PDQ_OK);
    write_index(dir, "\"a\":\"model-00001-of-00002.safetensors\",\"b\":\"model-00002-of-00002.safetensors\"");
    pdq_safetensors *s;
    /* the directory and the index path both open it */
    for (int k = 0; k < 2; k++) {
        assert_int_equal(pdq_st_open(k ? idx : dir, &s, &st), PDQ_OK);
        assert_int_equal(pdq_st_count(s), 2);
        assert_int_equal(pdq_st_file_count(s), 2);
        float out[6];
        assert_int_equal(pdq_st_read_f32(s, "b", 1, tb.shape, out, &st), PDQ_OK);
        assert_memory_equal(out, b, sizeof b);
        assert_string_equal(pdq_st_file_of(s, pdq_st_find(s, "b")), s2);
        assert_int_equal(pdq_st_read_f32(s, "a", 1, tb.shape, out, &st), PDQ_ERR_SHAPE);
        assert_non_null(strstr(st.msg, "model-00001-of-00002.safetensors: tensor a has shape [2, 3], expected [2]"));
        pdq_st_close(s);
    }
    /* index points to a tensor its shard lacks */
    write_index(dir, "\"a\":\"model-00001-of-00002.safetensors\",\"c\":\"model-00002-of-00002.safetensors\"");
    expect_open(dir, PDQ_ERR_MISSING, "tensor c", "model-00002-of-00002.safetensors");
    /* ... or to a missing shard file */
    write_index(dir, "\"a\":\"model-00001-of-00002.safetensors\",\"b\":\"model-00003-of-00002.safetensors\"");
    expect_open(dir, PDQ_ERR_IO, "model-00003-of-00002.safetensors", "index.json");
    /* ... or outside the directory */
    write_index(dir, "\"a\":\"../model-00001-of-00002.safetensors\"");
    expect_open(dir, PDQ_ERR_FORMAT, "entry a", "../model");
    /* a tensor stored in two shards */
    assert_int_equal(pdq_st_write(s2, &ta, 1, NULL, &st), PDQ_OK);
    write_index(dir, "\"a\":\"model-00001-of-00002.safetensors\",\"b\":\"model-00002-of-00002.safetensors\"");
    expect_open(dir, PDQ_ERR_FORMAT, "tensor a", "model-00002-of-00002.safetensors");
    /* a corrupt shard: the error names the shard */
    write_raw(s2, "{\"b\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", 8, -1);
    expect_open(dir, PDQ_ERR_FORMAT, "model-00002-of-00002.safetensors", "tensor b");
    /* index not JSON */
    assert_int_equal(tu_write_file(idx, "{nope", 5), 0);
    expect_open(dir, PDQ_ERR_FORMAT, "index.json", NULL);
    free(s1);
    free(s2);
    free(idx);
    tu_rmtree(dir);
    free(dir);
}

static void test_writer_errors(void **state) {
    (void)state;
    char *dir = tu_mkdtemp();
    char *p = path_in(dir, "w.safetensors");
    float a[2] = {1, 2};
    pdq_st_tensor t[2] = {{.name = "a", .dtype = PDQ_DT_F32, .ndim = 1, .shape = {2}, .data = a},
                          {.name = "a", .dtype = PDQ_DT_F32, .ndim = 1, .shape = {2}, .data = a}};
    pdq_status st = {0};
    assert_int_equal(pdq_st_write(p, t, 2, NULL, &st), PDQ_ERR_ARG);
    assert_non_null(strstr(st.msg, "twice"));
    assert_int_equal(pdq_st_write(p, t, 1, "{\"k\":3}", &st), PDQ_ERR_ARG);
    /* streaming: short writes are caught and nothing appears under the name */
    pdq_st_writer *w;
    assert_int_equal(pdq_st_writer_open(p, t, 1, NULL, &w, &st), PDQ_OK);
    assert_int_equal(pdq_st_writer_put(w, a, 4, &st), PDQ_OK);
    assert_int_equal(pdq_st_writer_put(w, a, 8, &st), PDQ_ERR_ARG);
    assert_int_equal(pdq_st_writer_close(w, &st), PDQ_ERR_ARG);
    assert_null(tu_read_file(p, NULL));
    char *out = NULL;
    char cmd[512];
    snprintf(cmd, sizeof cmd, "ls -A '%s'", dir);
    assert_int_equal(tu_run(cmd, &out), 0);
    assert_string_equal(out, ""); /* no temp file left behind */
    free(out);
    assert_int_equal(pdq_st_write("/nonexistent/dir/x.safetensors", t, 1, NULL, &st), PDQ_ERR_IO);
    free(p);
    tu_rmtree(dir);
    free(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_half_to_f32_all),
        cmocka_unit_test(test_f32_to_half_rounding),
        cmocka_unit_test(test_roundtrip_all_dtypes),
        cmocka_unit_test(test_corrupt_headers),
        cmocka_unit_test(test_shards),
        cmocka_unit_test(test_writer_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
