/* Compact group parameters (issue 27): scales rounded to f16 / bf16 before codes are chosen,
 * symmetric grouped tensors without zero points.
 *   - the rounding is the nearest representable value (brute force over every f16), with the
 *     underflow / overflow rules;
 *   - RTN's codes and grids are the quant.h rule re-computed here with the rounded scale; GPTQ's
 *     scales are representable and its dequantized weights are scale * (code - zero);
 *   - the packed kernels on compact grids (two-byte scales, one shared row of zero points) give
 *     the bits of the same values held as float32 scales and per-row zero points, on every path
 *     (integer and float kernels, scalar / AVX2 / AVX-512, 1-3 threads, both code layouts, the
 *     4-row one with its scales in 4-row blocks too), and
 *     the F16C / AVX-512 widening equals the portable one;
 *   - a w4 g32 sym checkpoint of the bundled model stores F16 scales and nothing else per group
 *     (4.5 bits a weight where 32 divides the columns), its version-1 twin (float32 scales, zero
 *     bytes, g_idx) loads to the same weights, and a newer version is refused with a re-quantize
 *     message. */
#include "testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "kernels/qmatmul.h"
#include "kernels/rows4.h"
#include "pdq/model.h"
#include "pdq/quant.h"
#include "pdq/safetensors.h"

/* --- rounding --- */

static float f16_value(uint16_t h) { return pdq_f16_to_f32(h); }

static void test_round_nearest(void **state) {
    (void)state;
    uint64_t rng = 99;
    for (int i = 0; i < 400; i++) {
        float s = (float)exp(tu_randu(&rng) * 30.0 - 20.0); /* 2e-9 .. 2e4: subnormal halves included */
        float r = pdq_qscale_round(s, PDQ_QSCALE_F16);
        /* brute force: the finite positive half nearest to s (ties: the even mantissa) */
        double best = INFINITY;
        float want = 0;
        for (uint32_t h = 1; h < 0x7C00; h++) {
            double d = fabs((double)f16_value((uint16_t)h) - (double)s);
            if (d < best || (d == best && (h & 1) == 0)) { best = d; want = f16_value((uint16_t)h); }
        }
        if (r != want) fail_msg("f16 round of %.9g: %.9g, nearest %.9g", (double)s, (double)r, (double)want);
        /* bf16: the value keeps the top 16 bits and is within half a unit of the 8-bit mantissa */
        float b = pdq_qscale_round(s, PDQ_QSCALE_BF16);
        uint32_t bits;
        memcpy(&bits, &b, 4);
        assert_int_equal(bits & 0xFFFF, 0);
        assert_true(fabs((double)b - s) <= ldexp(fabs((double)s), -8) * 1.0000001);
        assert_true(pdq_qscale_round(s, PDQ_QSCALE_F32) == s);
    }
    /* below the smallest half: the smallest half, not 0 (x / scale stays finite) */
    assert_true(pdq_qscale_round(1e-12f, PDQ_QSCALE_F16) == ldexpf(1.0f, -24));
    assert_true(isinf(pdq_qscale_round(70000.0f, PDQ_QSCALE_F16)));
    assert_true(pdq_qscale_round(70000.0f, PDQ_QSCALE_BF16) == 70144.0f);
    pdq_qscheme s;
    pdq_qscheme_default(&s, 4);
    s.group = 32;
    s.group_scale = PDQ_QSCALE_F16;
    float bad[2] = {1.0f, INFINITY};
    pdq_status st = {0};
    assert_int_equal(pdq_qscale_check(&s, bad, 2, "w", &st), PDQ_ERR_NUMERIC);
    assert_non_null(strstr(st.msg, "--group-scale bf16"));
}

/* RTN: the rule of quant.h with the scale rounded first, re-computed here group by group. */
static void test_rtn_rule(void **state) {
    (void)state;
    uint64_t rng = 5;
    int rows = 9, cols = 200;
    float *w = malloc(sizeof(float) * rows * cols);
    for (int i = 0; i < rows * cols; i++) w[i] = (float)(tu_randn(&rng) * (i % 7 == 0 ? 0.3 : 0.02));
    for (int c = 0; c < 32; c++) w[3 * cols + c] = 1e-9f * (float)(c - 16); /* a group that underflows f16 */
    static const pdq_qscale_type types[] = {PDQ_QSCALE_F16, PDQ_QSCALE_BF16};
    for (int t = 0; t < 2; t++)
        for (int sym = 0; sym < 2; sym++)
            for (int bits = 3; bits <= 8; bits += 5) {
                pdq_qscheme s;
                pdq_qscheme_default(&s, bits);
                s.group = 32;
                s.partial_groups = 1;
                s.sym = sym;
                s.group_scale = types[t];
                int ng = (cols + 31) / 32, maxq = (1 << bits) - 1;
                uint8_t *codes = malloc((size_t)rows * cols);
                float *deq = malloc(sizeof(float) * rows * cols), *sc = malloc(sizeof(float) * rows * ng),
                      *ze = malloc(sizeof(float) * rows * ng);
                assert_int_equal(pdq_quant_rtn(&s, w, rows, cols, codes, deq, sc, ze, "w", NULL), PDQ_OK);
                for (int r = 0; r < rows; r++)
                    for (int g = 0; g < ng; g++) {
                        int c0 = 32 * g, c1 = c0 + 32 < cols ? c0 + 32 : cols;
                        float mn = 0, mx = 0;
                        for (int c = c0; c < c1; c++) mn = fminf(mn, w[r * cols + c]), mx = fmaxf(mx, w[r * cols + c]);
                        if (sym) mx = fmaxf(-mn, mx), mn = -mx;
                        float scale = (mx - mn) / (float)maxq;
                        uint16_t h = types[t] == PDQ_QSCALE_F16 ? pdq_f32_to_f16(scale) : pdq_f32_to_bf16(scale);
                        float want = types[t] == PDQ_QSCALE_F16 ? pdq_f16_to_f32(h) : pdq_bf16_to_f32(h);
                        if (want == 0.0f) want = types[t] == PDQ_QSCALE_F16 ? ldexpf(1.0f, -24) : pdq_bf16_to_f32(1);
                        float zero = sym ? (float)((maxq + 1) / 2) : rintf(-mn / want);
                        assert_true(sc[r * ng + g] == want);
                        assert_true(ze[r * ng + g] == zero);
                        for (int c = c0; c < c1; c++) {
                            float q = rintf(w[r * cols + c] / want) + zero;
                            int code = q < 0 ? 0 : q > (float)maxq ? maxq : (int)q;
                            assert_int_equal(codes[r * cols + c], code);
                            assert_true(deq[r * cols + c] == want * ((float)code - zero));
                        }
                    }
                free(codes); free(deq); free(sc); free(ze);
            }
    /* per-channel grids are float32 whatever group_scale says */
    pdq_qscheme a, b;
    pdq_qscheme_default(&a, 4);
    b = a;
    b.group_scale = PDQ_QSCALE_F16;
    float sa[9], sb[9], za[9], zb[9];
    assert_int_equal(pdq_quant_rtn(&a, w, rows, cols, NULL, NULL, sa, za, "w", NULL), PDQ_OK);
    assert_int_equal(pdq_quant_rtn(&b, w, rows, cols, NULL, NULL, sb, zb, "w", NULL), PDQ_OK);
    assert_memory_equal(sa, sb, sizeof sa);
    free(w);
}

/* GPTQ on grouped f16 grids: every scale representable, deq = scale * (code - zero), and the loss
 * within a few percent of float32 grids'. */
static void test_gptq_grid(void **state) {
    (void)state;
    uint64_t rng = 21;
    int rows = 24, cols = 128, N = 300;
    float *w = malloc(sizeof(float) * rows * cols), *x = malloc(sizeof(float) * N * cols), *H = malloc(sizeof(float) * cols * cols);
    for (int i = 0; i < rows * cols; i++) w[i] = (float)(0.05 * tu_randn(&rng));
    for (int i = 0; i < N * cols; i++) x[i] = (float)tu_randn(&rng) * (1.0f + (float)(i % cols) / 32.0f);
    pdq_hessian h;
    assert_int_equal(pdq_hessian_init(&h, cols, NULL), PDQ_OK);
    assert_int_equal(pdq_hessian_add(&h, x, N, NULL), PDQ_OK);
    pdq_hessian_get(&h, H);
    pdq_hessian_free(&h);
    double loss[2];
    for (int t = 0; t < 2; t++) {
        pdq_gptq_opts o;
        pdq_gptq_opts_default(&o, 4);
        o.scheme.group = 32;
        o.scheme.sym = 1;
        o.scheme.group_scale = t ? PDQ_QSCALE_F16 : PDQ_QSCALE_F32;
        pdq_qresult r;
        assert_int_equal(pdq_gptq(&o, w, rows, cols, H, "w", &r, NULL), PDQ_OK);
        for (int i = 0; t && i < rows * r.ngroups; i++)
            assert_true(pdq_f16_to_f32(pdq_f32_to_f16(r.scale[i])) == r.scale[i]);
        for (int rr = 0; rr < rows; rr++)
            for (int c = 0; c < cols; c++) {
                size_t g = (size_t)rr * r.ngroups + (size_t)r.g_idx[c];
                assert_true(r.deq[rr * cols + c] == r.scale[g] * ((float)r.codes[rr * cols + c] - r.zero[g]));
            }
        loss[t] = r.loss;
        pdq_qresult_free(&r);
    }
    printf("GPTQ w4 g32 sym loss: f32 scales %.6g, f16 scales %.6g\n", loss[0], loss[1]);
    assert_true(fabs(loss[1] - loss[0]) <= 0.05 * loss[0]);
    free(w); free(x); free(H);
}

/* --- kernels --- */

/* y of W on one path: isa 0 best, 1 scalar, 2 AVX2, 3 AVX2 without VNNI; f32: the float kernels. */
static void run(const pdq_qmatrix *w, pdq_pool *pool, int isa, int f32, const float *x, int n, float *y) {
    pdq_qctx ctx = {.pool = pool, .force_scalar = isa == 1, .no_avx512 = isa >= 2, .no_vnni = isa == 3, .no_int = f32};
    pdq_status st = {0};
    assert_int_equal(pdq_qmatmul(&ctx, w, x, n, y, &st), PDQ_OK);
}

static void compact_case(pdq_qtype type, int rows, int cols, int group, pdq_qscale_type stype, pdq_pool *pools[3],
                         uint64_t *rng) {
    int maxq = type == PDQ_QT_U4 ? 15 : 255, ng = (cols + group - 1) / group;
    size_t rb = type == PDQ_QT_U4 ? (size_t)(cols + 1) / 2 : (size_t)cols;
    uint8_t *codes = malloc((size_t)rows * rb), *zeros = malloc((size_t)rows * ng), zrow[512];
    float *sf = malloc(sizeof(float) * (size_t)rows * ng);
    uint16_t *sh = malloc(sizeof(uint16_t) * (size_t)rows * ng);
    for (size_t i = 0; i < (size_t)rows * rb; i++) codes[i] = (uint8_t)tu_rand(rng);
    for (int i = 0; i < rows * ng; i++) {
        sf[i] = pdq_qscale_round((float)(0.001 + 0.05 * tu_randu(rng)), stype);
        pdq_qscale_put(sh, stype, (size_t)i, sf[i]);
        zeros[i] = (uint8_t)((maxq + 1) / 2);
    }
    memset(zrow, (maxq + 1) / 2, sizeof zrow);
    pdq_qmatrix a, b;
    pdq_status st = {0};
    assert_int_equal(pdq_qmatrix_init(&a, type, rows, cols, group, codes, sf, zeros, NULL, "f32", &st), PDQ_OK);
    assert_int_equal(pdq_qmatrix_init_grids(&b, type, rows, cols, group, codes, sh, stype, zrow, 0, NULL, "compact", &st),
                     PDQ_OK);
    /* two bytes a group and one shared row of zero points */
    assert_int_equal(pdq_qmatrix_bytes(&b), (size_t)rows * rb + (size_t)rows * ng * 2 + (size_t)ng);
    /* the widening at every level the CPU has equals the portable conversion */
    float *wa = malloc(sizeof(float) * 4 * (size_t)ng), *wb = malloc(sizeof(float) * 4 * (size_t)ng);
    int nr = rows < 4 ? rows : 4;
    qk_widen_scales_at(&b, 0, nr, wa, 0);
    assert_memory_equal(wa, sf, sizeof(float) * (size_t)nr * ng);
    for (int lv = 1; lv <= qk_widen_level(); lv++) {
        qk_widen_scales_at(&b, rows - nr, nr, wb, lv);
        assert_memory_equal(wb, sf + (size_t)(rows - nr) * ng, sizeof(float) * (size_t)nr * ng);
    }
    pdq_qmatrix b4 = b; /* the 4-row layout where it applies */
    assert_int_equal(pdq_qmatrix_pack_rows4(&b4, &st), PDQ_OK);
    /* rows a multiple of 4: the scales in 4-row blocks too, each one where the index says, and
     * a block widened at every level is the rows' float32 scales */
    assert_int_equal(b4.scales_rows4, group == 32 && cols % 128 == 0 && b4.layout == PDQ_QL_ROWS4 && rows % 4 == 0);
    if (b4.scales_rows4) {
        for (int r = 0; r < rows; r++)
            for (int g = 0; g < ng; g++)
                assert_int_equal(b4.scales16[pdq_qmatrix_scale_index(&b4, r, g)], sh[(size_t)r * ng + g]);
        for (int lv = 0; lv <= qk_widen_level(); lv++) {
            qk_widen_scales_at(&b4, rows - 4, 4, wb, lv);
            assert_memory_equal(wb, sf + (size_t)(rows - 4) * ng, sizeof(float) * 4 * (size_t)ng);
        }
    }
    static const int ns[] = {1, 7};
    for (int t = 0; t < 2; t++) {
        int n = ns[t];
        size_t ny = (size_t)n * rows;
        float *x = malloc(sizeof(float) * (size_t)n * cols), *ya = malloc(sizeof(float) * ny), *yb = malloc(sizeof(float) * ny);
        for (size_t i = 0; i < (size_t)n * cols; i++) x[i] = (float)tu_randn(rng);
        for (int f32 = 0; f32 < 2; f32++) {
            run(&a, pools[0], 1, f32, x, n, ya); /* the scalar path on float32 grids: the reference */
            for (int p = 0; p < 3; p++)
                for (int isa = 0; isa <= 3; isa++)
                    for (int lay = 0; lay < 2; lay++) {
                        memset(yb, 0xA5, sizeof(float) * ny);
                        run(lay ? &b4 : &b, pools[p], isa, f32, x, n, yb);
                        if (memcmp(ya, yb, sizeof(float) * ny) != 0)
                            fail_msg("%s [%d x %d] group %d %s n %d: compact grids differ (path %d, %d threads, %s, %s)",
                                     type ? "u8" : "u4", rows, cols, group, pdq_qscale_name(stype), n, isa, p + 1,
                                     lay ? "rows4" : "rows", f32 ? "float kernels" : "integer path");
                    }
        }
        free(x); free(ya); free(yb);
    }
    /* a dequantized row is the same expression */
    float *ra = malloc(sizeof(float) * (size_t)cols), *rbw = malloc(sizeof(float) * (size_t)cols);
    for (int r = 0; r < rows; r += 3) {
        pdq_qmatrix_dequant_row(&a, r, ra);
        pdq_qmatrix_dequant_row(&b4, r, rbw);
        assert_memory_equal(ra, rbw, sizeof(float) * (size_t)cols);
    }
    free(ra); free(rbw); free(wa); free(wb);
    free(b4.owned_codes);
    free(codes); free(zeros); free(sf); free(sh);
}

static void test_kernels_compact(void **state) {
    (void)state;
    pdq_pool *pools[3];
    tu_pools_create(pools);
    uint64_t rng = 4242;
    static const int dims[][2] = {{37, 256}, {8, 640}, {5, 200}, {64, 1024}, {3, 96}, {12, 384}}; /* 12: a lone last 4-row block */
    static const int groups[] = {32, 64, 128, 48};
    for (int t = 0; t < PDQ_QT_COUNT; t++)
        for (size_t d = 0; d < sizeof dims / sizeof dims[0]; d++)
            for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++)
                for (int s = 1; s <= 2; s++)
                    compact_case((pdq_qtype)t, dims[d][0], dims[d][1], groups[g], (pdq_qscale_type)s, pools, &rng);
    /* more groups than the kernels widen on the stack: refused (the loader widens those) */
    uint8_t codes[4 * 600] = {0}, z[600] = {0};
    uint16_t sh[600] = {0};
    pdq_qmatrix w;
    pdq_status st = {0};
    assert_int_equal(pdq_qmatrix_init_grids(&w, PDQ_QT_U8, 1, 600 * 4, 4, codes, sh, PDQ_QSCALE_F16, z, 0, NULL, "w", &st),
                     PDQ_ERR_LIMIT);
    assert_int_equal(pdq_qmatrix_init_grids(&w, PDQ_QT_U8, 2, 8, 4, codes, sh, PDQ_QSCALE_F16, z, 1, NULL, "w", &st),
                     PDQ_ERR_ARG);
    tu_pools_free(pools);
}

/* --- the checkpoint --- */

static char *quantize_bundled(void) {
    pdq_status st = {0};
    pdq_model *m = NULL;
    assert_int_equal(pdq_model_load(PDQ_TEST_MODEL, &m, &st), PDQ_OK);
    pdq_set_threads(m, 1);
    pdq_quant_opts o;
    pdq_quant_opts_default(&o, 4);
    o.method = PDQ_QM_RTN;
    o.gptq.scheme.group = 32;
    o.gptq.scheme.partial_groups = 1;
    o.gptq.scheme.sym = 1;
    o.gptq.scheme.group_scale = PDQ_QSCALE_F16;
    o.quiet = 1;
    pdq_qmodel q;
    if (pdq_quantize_model(m, &o, NULL, 0, 0, &q, &st)) fail_msg("quantize: %s", st.msg);
    char *dir = tu_mkdtemp();
    if (pdq_quant_save(dir, PDQ_TEST_MODEL, m, &q, &st)) fail_msg("save: %s", st.msg);
    pdq_qmodel_free(&q);
    pdq_model_free(m);
    return dir;
}

static cJSON *read_json(const char *dir) {
    char path[1024];
    snprintf(path, sizeof path, "%s/pdq_quant.json", dir);
    return tu_load_json(path);
}

static void write_json(const char *dir, cJSON *j) {
    char path[1024], *txt = cJSON_Print(j);
    snprintf(path, sizeof path, "%s/pdq_quant.json", dir);
    assert_int_equal(tu_write_file(path, txt, strlen(txt)), 0);
    free(txt);
}

/* Writes OUT as format version 1 would have it: float32 scales, a zero byte per grid, g_idx for
 * every grouped tensor, no scale_dtype / zeros entries. */
static void write_v1(const char *dir, const char *out) {
    char path[1024], cmd[2200];
    snprintf(cmd, sizeof cmd, "cp '%s'/*.json '%s'/", dir, out);
    assert_int_equal(tu_run(cmd, NULL), 0);
    pdq_safetensors *s;
    snprintf(path, sizeof path, "%s/model.q.safetensors", dir);
    assert_int_equal(pdq_st_open(path, &s, NULL), PDQ_OK);
    cJSON *j = read_json(dir), *e;
    cJSON_ReplaceItemInObject(j, "version", cJSON_CreateNumber(1));
    cJSON_DeleteItemFromObject(j, "group_scale");
    int n = pdq_st_count(s), cap = 4 * n, k = 0;
    pdq_st_tensor *t = calloc((size_t)cap, sizeof *t);
    void **owned = calloc((size_t)cap, sizeof *owned);
    char **names = calloc((size_t)cap, sizeof *names);
    for (int i = 0; i < n; i++) {
        const pdq_st_tensor *a = pdq_st_at(s, i);
        size_t len = strlen(a->name);
        t[k] = *a;
        if (len > 7 && !strcmp(a->name + len - 7, ".scales")) {
            char base[256];
            snprintf(base, sizeof base, "%.*s", (int)len - 7, a->name);
            e = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "tensors"), base);
            assert_non_null(e);
            int rows = (int)a->shape[0], ng = (int)a->shape[1], cols = cJSON_GetArrayItem(cJSON_GetObjectItem(e, "shape"), 1)->valueint;
            int group = cJSON_GetObjectItem(e, "group")->valueint, bits = cJSON_GetObjectItem(e, "bits")->valueint;
            float *f = malloc(sizeof(float) * (size_t)rows * ng);
            pdq_qscale_type ty = a->dtype == PDQ_DT_F16 ? PDQ_QSCALE_F16 : a->dtype == PDQ_DT_BF16 ? PDQ_QSCALE_BF16 : PDQ_QSCALE_F32;
            for (size_t q = 0; q < (size_t)rows * ng; q++) f[q] = pdq_qscale_at(a->data, ty, q);
            t[k].dtype = PDQ_DT_F32;
            t[k].data = owned[k] = f;
            t[k].nbytes = sizeof(float) * (size_t)rows * ng;
            k++;
            char nm[300];
            if (!pdq_st_find(s, (snprintf(nm, sizeof nm, "%s.zeros", base), nm))) {
                uint8_t *z = malloc((size_t)rows * ng);
                memset(z, 1 << (bits - 1), (size_t)rows * ng);
                t[k] = (pdq_st_tensor){.name = names[k] = strdup(nm), .dtype = PDQ_DT_U8, .ndim = 2,
                                       .shape = {rows, ng}, .data = owned[k] = z, .nbytes = (size_t)rows * ng};
                k++;
            }
            if (ng > 1 && !pdq_st_find(s, (snprintf(nm, sizeof nm, "%s.g_idx", base), nm))) {
                int32_t *g = malloc(sizeof(int32_t) * (size_t)cols);
                for (int c = 0; c < cols; c++) g[c] = c / group;
                t[k] = (pdq_st_tensor){.name = names[k] = strdup(nm), .dtype = PDQ_DT_I32, .ndim = 1, .shape = {cols},
                                       .data = owned[k] = g, .nbytes = sizeof(int32_t) * (size_t)cols};
                k++;
            }
            cJSON_DeleteItemFromObject(e, "scale_dtype");
            cJSON_DeleteItemFromObject(e, "zeros");
            cJSON_ReplaceItemInObject(e, "g_idx", cJSON_CreateBool(ng > 1));
            continue;
        }
        k++;
    }
    snprintf(path, sizeof path, "%s/model.q.safetensors", out);
    assert_int_equal(pdq_st_write(path, t, k, "{\"format\": \"pdq-quant\"}", NULL), PDQ_OK);
    write_json(out, j);
    cJSON_Delete(j);
    for (int i = 0; i < k; i++) { free(owned[i]); free(names[i]); }
    free(owned); free(names); free(t);
    pdq_st_close(s);
}

static void expect_same_weights(const char *a, const char *b) {
    pdq_status st = {0};
    pdq_model *ma = NULL, *mb = NULL, *pa = NULL, *pb = NULL;
    if (pdq_model_load(a, &ma, &st)) fail_msg("%s: %s", a, st.msg);
    if (pdq_model_load(b, &mb, &st)) fail_msg("%s: %s", b, st.msg);
    if (pdq_model_load_packed(a, &pa, &st)) fail_msg("%s: %s", a, st.msg);
    if (pdq_model_load_packed(b, &pb, &st)) fail_msg("%s: %s", b, st.msg);
    const pdq_config *c = &ma->cfg;
    float *ra = malloc(sizeof(float) * (size_t)c->intermediate_size * 4), *rb = malloc(sizeof(float) * (size_t)c->intermediate_size * 4);
    for (int l = 0; l < c->n_layers; l++)
        for (int i = 0; i < PDQ_LIN_COUNT; i++) {
            int o, in;
            pdq_linear_shape(c, (pdq_linear_id)i, &o, &in);
            assert_memory_equal(ma->layers[l].w[i], mb->layers[l].w[i], sizeof(float) * (size_t)o * in);
            for (int r = 0; r < o; r += 17) {
                pdq_qmatrix_dequant_row(pa->layers[l].pw[i], r, ra);
                pdq_qmatrix_dequant_row(pb->layers[l].pw[i], r, rb);
                assert_memory_equal(ra, rb, sizeof(float) * (size_t)in);
                assert_memory_equal(ra, ma->layers[l].w[i] + (size_t)r * in, sizeof(float) * (size_t)in);
            }
        }
    free(ra); free(rb);
    pdq_model_free(ma); pdq_model_free(mb); pdq_model_free(pa); pdq_model_free(pb);
}

static void test_checkpoint(void **state) {
    (void)state;
    char *dir = quantize_bundled(), path[1024];
    snprintf(path, sizeof path, "%s/model.q.safetensors", dir);
    pdq_safetensors *s;
    assert_int_equal(pdq_st_open(path, &s, NULL), PDQ_OK);
    cJSON *j = read_json(dir), *e;
    assert_int_equal(cJSON_GetObjectItem(j, "version")->valueint, 2);
    double bytes = 0, weights = 0;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(j, "tensors")) {
        if (strncmp(e->string, "model.layers.", 13) != 0) continue;
        int rows = cJSON_GetArrayItem(cJSON_GetObjectItem(e, "shape"), 0)->valueint;
        int cols = cJSON_GetArrayItem(cJSON_GetObjectItem(e, "shape"), 1)->valueint;
        char nm[300];
        snprintf(nm, sizeof nm, "%s.scales", e->string);
        const pdq_st_tensor *ts = pdq_st_find(s, nm), *tq;
        assert_non_null(ts);
        assert_int_equal(ts->dtype, PDQ_DT_F16);
        assert_true(cJSON_IsFalse(cJSON_GetObjectItem(e, "zeros")));
        assert_true(cJSON_IsFalse(cJSON_GetObjectItem(e, "g_idx")));
        assert_string_equal(cJSON_GetObjectItem(e, "scale_dtype")->valuestring, "F16");
        snprintf(nm, sizeof nm, "%s.zeros", e->string);
        assert_null(pdq_st_find(s, nm));
        snprintf(nm, sizeof nm, "%s.g_idx", e->string);
        assert_null(pdq_st_find(s, nm));
        snprintf(nm, sizeof nm, "%s.qweight", e->string);
        assert_non_null(tq = pdq_st_find(s, nm));
        double b = (double)(tq->nbytes + ts->nbytes) * 8;
        if (cols % 32 == 0) assert_true(b == 4.5 * rows * cols); /* exactly q4_0's size */
        bytes += b;
        weights += (double)rows * cols;
    }
    printf("w4 g32 sym f16: %.4f bits per decoder weight (down_proj's last group has 16 columns)\n", bytes / weights);
    assert_true(bytes / weights <= 4.51);
    pdq_st_close(s);

    /* the same checkpoint as version 1 wrote it loads to the same weights */
    char *v1 = tu_mkdtemp();
    write_v1(dir, v1);
    expect_same_weights(dir, v1);

    /* a newer format is refused with what to do */
    cJSON_ReplaceItemInObject(j, "version", cJSON_CreateNumber(3));
    write_json(dir, j);
    pdq_status st = {0};
    pdq_model *m = NULL;
    assert_int_not_equal(pdq_model_load_packed(dir, &m, &st), PDQ_OK);
    assert_null(m);
    assert_non_null(strstr(st.msg, "re-quantize"));
    assert_int_not_equal(pdq_model_load(dir, &m, &st), PDQ_OK);
    assert_non_null(strstr(st.msg, "re-quantize"));
    /* zeros: false on an asymmetric entry is refused */
    cJSON_ReplaceItemInObject(j, "version", cJSON_CreateNumber(2));
    e = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "tensors"), "model.layers.0.self_attn.q_proj");
    cJSON_ReplaceItemInObject(e, "sym", cJSON_CreateFalse());
    write_json(dir, j);
    assert_int_not_equal(pdq_model_load_packed(dir, &m, &st), PDQ_OK);
    assert_non_null(strstr(st.msg, "zeros = false needs sym"));
    cJSON_Delete(j);
    tu_rmtree(dir);
    tu_rmtree(v1);
    free(dir);
    free(v1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_nearest),
        cmocka_unit_test(test_rtn_rule),
        cmocka_unit_test(test_gptq_grid),
        cmocka_unit_test(test_kernels_compact),
        cmocka_unit_test(test_checkpoint),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
