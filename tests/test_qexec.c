/* Integer executor kernels against brute force: FULLY_CONNECTED (uint4 / uint8 weights with
 * per-row or per-group zero points and scales, int16 and uint8 activations, a 5632-long row of extreme codes whose sum
 * does not fit int32), BATCH_MATMUL (int16 x int16, broadcast, adj_y), and the non-linear /
 * element-wise rule (RMS_NORM, SOFTMAX, LOGISTIC, MUL with broadcasting) recomputed here from the
 * dequantized values in long double; element-wise ops and SOFTMAX code for code against their
 * rule; layout moves against index arithmetic. Every case runs scalar and AVX2, inline and on 2 threads,
 * and all four must give the same bits. Plus the shared requantization rule itself. */
#include "testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pdq/qexec.h"
#include "pdq/qscale.h"
#include "pdq/requant.h"

static void set_q(pdq_tensor *t, int n, const float *s, const int64_t *z) {
    pdq_qparams *q = calloc(1, sizeof *q);
    q->n = n;
    q->scale = malloc(sizeof(float) * (size_t)n);
    q->zero_point = calloc((size_t)n, sizeof(int64_t));
    for (int i = 0; i < n; i++) {
        q->scale[i] = s[i];
        if (z) q->zero_point[i] = z[i];
    }
    t->q = q;
}

static void set_q1(pdq_tensor *t, pdq_tdtype dt, float s, int64_t z) {
    t->dtype = dt;
    set_q(t, 1, &s, &z);
}

/* Runs g (inputs as codes) scalar / AVX2 / best SIMD (AVX-512 VNNI where the CPU has it), each
 * inline and on 2 threads; returns the output bytes of the first and checks the others are
 * identical. */
static void *run4(const pdq_graph *g, void *const *inputs, size_t out_bytes) {
    pdq_status st = {0};
    pdq_pool *pool = pdq_pool_create(2, &st);
    assert_non_null(pool);
    void *first = NULL;
    for (int cfg = 0; cfg < 6; cfg++) {
        pdq_exec_opts o;
        pdq_exec_opts_default(&o);
        o.mode = PDQ_EXEC_INT;
        o.force_scalar = cfg % 3 == 0;
        o.no_avx512 = cfg % 3 == 1;
        o.pool = cfg >= 3 ? pool : NULL;
        pdq_qexec *x = NULL;
        if (pdq_qexec_create(g, &o, &x, &st) != PDQ_OK) fprintf(stderr, "%s\n", st.msg);
        assert_non_null(x);
        for (int i = 0; i < g->n_inputs; i++) {
            const pdq_tensor *t = &g->tensors[g->inputs[i]];
            memcpy(pdq_qexec_codes(x, g->inputs[i]), inputs[i], pdq_tensor_count(t) * pdq_tdtype_size(t->dtype));
        }
        assert_int_equal(pdq_qexec_run(x, &st), PDQ_OK);
        const void *y = pdq_qexec_codes(x, g->outputs[0]);
        if (!first) {
            first = malloc(out_bytes);
            memcpy(first, y, out_bytes);
        } else {
            assert_memory_equal(first, y, out_bytes);
        }
        pdq_qexec_free(x);
    }
    pdq_pool_free(pool);
    return first;
}

static void test_rule(void **state) {
    (void)state;
    assert_int_equal(pdq_rq_code(2.5, 1.0, 0, -32768, 32767), 2);    /* half to even */
    assert_int_equal(pdq_rq_code(3.5, 1.0, 0, -32768, 32767), 4);
    assert_int_equal(pdq_rq_code(-2.5, 1.0, 0, -32768, 32767), -2);
    assert_int_equal(pdq_rq_code(1e12, 0.5, 0, -32768, 32767), 32767); /* saturation */
    assert_int_equal(pdq_rq_code(-1e12, 0.5, 0, -32768, 32767), -32768);
    assert_int_equal(pdq_rq_code(NAN, 0.5, 7, 0, 255), 7);
    assert_int_equal(pdq_rq_code(-1.0, 0.5, 10, 0, 255), 8);
    assert_true(pdq_rq_value(8, 0.5, 10) == -1.0);
    /* the inline rounding is nearbyint's (ties to even) over a sweep of halves and random values */
    uint64_t rs = 1;
    for (int i = -100000; i <= 100000; i++) {
        double v = i * 0.5, r = tu_randn(&rs) * 1e6;
        assert_true(pdq_rq_rint(v) == nearbyint(v));
        assert_true(pdq_rq_rint(r) == nearbyint(r));
    }
    assert_true(pdq_rq_rint(4503599627370497.0) == 4503599627370497.0);
    assert_true(pdq_rq_rint(-2251799813685247.5) == nearbyint(-2251799813685247.5));
}

/* Grouped weights' grids as pdq's compact ones allow the executor to keep them: every scale an
 * f16 value, one row of zero points shared by every row (fc_case, while set). */
static int compact_grids;

/* FC: x (rows, in) codes, w (out, in) codes, per-row zero points (group 0) or per row and group
 * of `group` columns (the last group may be shorter); output float (exact sums) or int16. */
static void fc_case(pdq_tdtype xdt, pdq_tdtype wdt, int rows, int in, int out, int extreme, int float_out, uint64_t seed,
                    int group) {
    pdq_status st = {0};
    pdq_graph *g;
    assert_int_equal(pdq_graph_new("fc", &g, &st), PDQ_OK);
    int xs[2] = {rows, in}, ws[2] = {out, in};
    int x = pdq_graph_input(g, "x", xdt, 2, xs, &st);
    uint64_t rs = seed;
    int whi = wdt == PDQ_TU4 ? 15 : 255;
    uint8_t *w = malloc((size_t)out * in);
    /* extreme: even rows all at the top code, odd rows random top/0 */
    for (int i = 0; i < out * in; i++)
        w[i] = (uint8_t)(extreme ? ((i / in) % 2 == 0 || tu_rand(&rs) % 2 ? whi : 0) : (int)(tu_rand(&rs) % (uint64_t)(whi + 1)));
    uint8_t *w4 = malloc((size_t)out * in / 2 + 1); /* the graph's uint4: packed, rows mid-byte at odd widths */
    pdq_pack4(w, (size_t)out * in, w4);
    int wt = pdq_graph_const(g, "w", wdt, 2, ws, wdt == PDQ_TU4 ? w4 : w, 1, &st);
    free(w4);
    int fin[2] = {x, wt};
    int y = pdq_graph_op(g, PDQ_OP_FULLY_CONNECTED, fin, 2, NULL, "y", &st);
    assert_true(y >= 0);
    assert_int_equal(pdq_graph_mark_output(g, y, &st), PDQ_OK);
    float sx = xdt == PDQ_TI16 ? 0.0013f : 0.02f, sy = 0.37f;
    int64_t zx = xdt == PDQ_TI16 ? 0 : 117;
    set_q1(&g->tensors[x], xdt, sx, zx);
    int G = group ? group : in, ng = (in + G - 1) / G;
    float *sw = malloc(sizeof(float) * (size_t)out * ng);
    int64_t *zw = malloc(sizeof(int64_t) * (size_t)out * ng);
    for (int i = 0; i < out * ng; i++) {
        sw[i] = (float)(0.001 + 0.01 * tu_randu(&rs));
        zw[i] = extreme ? 0 : (int64_t)(tu_rand(&rs) % (uint64_t)(whi + 1));
        if (compact_grids) {
            sw[i] = pdq_qscale_round(sw[i], PDQ_QSCALE_F16);
            if (i >= ng) zw[i] = zw[i % ng];
        }
    }
    set_q(&g->tensors[wt], out * ng, sw, zw);
    g->tensors[wt].q->block = group;
    if (!float_out) set_q1(&g->tensors[y], PDQ_TI16, sy, 0);
    else g->tensors[y].dtype = PDQ_TF32;
    size_t xb = (size_t)rows * in * pdq_tdtype_size(xdt);
    void *xd = malloc(xb);
    for (int i = 0; i < rows * in; i++) {
        if (xdt == PDQ_TI16)
            ((int16_t *)xd)[i] = (int16_t)(extreme ? (i / in == 0 ? -32768 : 32767) : (int)(tu_rand(&rs) % 65536) - 32768);
        else
            ((uint8_t *)xd)[i] = (uint8_t)(tu_rand(&rs) % 256);
    }
    void *ins[1] = {xd};
    void *yd = run4(g, ins, (size_t)rows * out * (float_out ? 4 : 2));
    for (int m = 0; m < rows; m++)
        for (int r = 0; r < out; r++) {
            double v = 0.0; /* brute force: int64 products, no blocks; groups in order from 0.0 */
            for (int gi = 0; gi < ng; gi++) {
                int64_t acc = 0;
                for (int k = gi * G; k < in && k < (gi + 1) * G; k++) {
                    int64_t xv = xdt == PDQ_TI16 ? ((int16_t *)xd)[m * in + k] : (int64_t)((uint8_t *)xd)[m * in + k] - zx;
                    acc += xv * ((int64_t)w[r * in + k] - zw[r * ng + gi]);
                }
                v += (double)acc * ((double)sx * (double)sw[r * ng + gi]);
            }
            if (float_out) {
                assert_true(((float *)yd)[m * out + r] == (float)v);
            } else {
                assert_int_equal(((int16_t *)yd)[m * out + r], pdq_rq_code(v, (double)sy, 0, -32768, 32767));
            }
        }
    free(yd);
    free(xd);
    free(w);
    free(sw);
    free(zw);
    pdq_graph_free(g);
}

static void test_fc(void **state) {
    (void)state;
    fc_case(PDQ_TI16, PDQ_TU4, 3, 37, 19, 0, 0, 1, 0);     /* decode-like, odd lengths */
    fc_case(PDQ_TI16, PDQ_TU4, 1, 2048 + 37, 21, 0, 0, 7, 0); /* decode on packed nibbles (VNNI): 64-column chunks + tail */
    fc_case(PDQ_TI16, PDQ_TU4, 3, 128, 8, 0, 1, 8, 0);     /* packed, no tail, exact sums out */
    fc_case(PDQ_TI16, PDQ_TU4, 1, 40000, 4, 1, 1, 9, 0);   /* packed past the int32 lane flush (32768 columns) */
    fc_case(PDQ_TI16, PDQ_TU4, 42, 256, 35, 0, 0, 2, 0);   /* prefill-like, tails of 2 rows and 3 channels */
    fc_case(PDQ_TI16, PDQ_TU4, 9, 173, 13, 0, 0, 10, 0);   /* prefill, odd width: rows unpacked from mid-byte */
    fc_case(PDQ_TI16, PDQ_TU4, 8, 172, 7, 1, 1, 11, 0);    /* prefill, stories260K's ffn width, extreme codes */
    fc_case(PDQ_TI16, PDQ_TU8, 5, 300, 17, 0, 1, 3, 0);    /* uint8 weights, float output: the exact sums */
    fc_case(PDQ_TU8, PDQ_TU8, 4, 70, 9, 0, 0, 4, 0);       /* uint8 activations with a zero point */
    /* 32767 x 15 x 5632 does not fit int32: extreme codes, exact sums */
    fc_case(PDQ_TI16, PDQ_TU4, 2, 5632, 8, 1, 1, 5, 0);
    fc_case(PDQ_TI16, PDQ_TU8, 2, 5632, 8, 1, 1, 6, 0);
    /* group-wise weights (per row and group of columns), the last group shorter where it is */
    fc_case(PDQ_TI16, PDQ_TU4, 1, 172, 19, 0, 0, 12, 32);  /* decode, stories260K's ffn width: 5 x 32 + 12 */
    fc_case(PDQ_TI16, PDQ_TU4, 3, 688, 9, 0, 1, 13, 128);  /* decode, 3 rows, 5 x 128 + 48, exact sums out */
    fc_case(PDQ_TI16, PDQ_TU4, 9, 173, 13, 0, 0, 14, 64);  /* prefill, odd width */
    fc_case(PDQ_TI16, PDQ_TU8, 42, 256, 35, 0, 0, 15, 32); /* prefill tiles, tails of 2 rows and 3 channels */
    fc_case(PDQ_TU8, PDQ_TU8, 4, 70, 9, 0, 0, 16, 32);     /* uint8 activations with a zero point */
    fc_case(PDQ_TI16, PDQ_TU4, 5, 64, 8, 0, 0, 18, 8);     /* groups of head_dim 8 */
    fc_case(PDQ_TI16, PDQ_TU4, 2, 5632, 8, 1, 1, 17, 128); /* extreme codes */
    /* grouped decode on the packed exact sums (AVX-512 VNNI: groups of 32k columns) */
    fc_case(PDQ_TI16, PDQ_TU4, 2, 2048 + 37, 13, 0, 0, 19, 64); /* step quarters in pairs, a short last group */
    fc_case(PDQ_TI16, PDQ_TU4, 1, 300, 5, 0, 1, 20, 96);        /* groups across steps' quarters */
    fc_case(PDQ_TI16, PDQ_TU4, 1, 9000, 6, 1, 1, 21, 8192);     /* int32 lanes flushed inside a group */
    fc_case(PDQ_TI16, PDQ_TU8, 1, 256, 9, 0, 0, 22, 32);        /* uint8: the tiles group by group */
    fc_case(PDQ_TI16, PDQ_TU4, 1, 1024 + 64, 21, 0, 0, 23, 32); /* the rule 8 rows x 8 groups a block, tails of both */
    fc_case(PDQ_TI16, PDQ_TU4, 1, 4096, 16, 1, 1, 24, 128);     /* extreme codes, whole blocks, exact sums out */
}

/* The grouped cases with f16 scales and a shared row of zero points (random per group, or 0 for
 * the extreme codes): the executor holds 2 bytes a group and widens them for its kernels, and
 * every path and thread count still gives the brute-force values. */
static void test_fc_compact_groups(void **state) {
    (void)state;
    compact_grids = 1;
    fc_case(PDQ_TI16, PDQ_TU4, 1, 172, 19, 0, 0, 12, 32);
    fc_case(PDQ_TI16, PDQ_TU4, 3, 688, 9, 0, 1, 13, 128);
    fc_case(PDQ_TI16, PDQ_TU4, 9, 173, 13, 0, 0, 14, 64);
    fc_case(PDQ_TI16, PDQ_TU8, 42, 256, 35, 0, 0, 15, 32);
    fc_case(PDQ_TU8, PDQ_TU8, 4, 70, 9, 0, 0, 16, 32);
    fc_case(PDQ_TI16, PDQ_TU4, 2, 2048 + 37, 70, 0, 0, 19, 64); /* decode: 64-row calls of the exact sums, a tail */
    fc_case(PDQ_TI16, PDQ_TU4, 1, 1024 + 64, 21, 0, 0, 23, 32);
    fc_case(PDQ_TI16, PDQ_TU4, 1, 4096, 16, 1, 1, 24, 128);
    fc_case(PDQ_TI16, PDQ_TU4, 8, 512, 67, 0, 0, 25, 32); /* prefill tiles over 4-row grids */
    compact_grids = 0;
}

/* a (H, M, K) x b broadcast over H: adj_y (b is (1, N, K)) or not (b is (1, K, N)); M >= 8 takes
 * the dgemm path, smaller M the int64 rows (AVX2 or scalar). */
/* sy: 0.05 saturates nearly every output (the clamp); 20 keeps sums of K random products on the
 * grid, where an int32 overflow (2^32 off) moves a code by thousands. */
static void bmm_case(int M, int N, int adj_y, float sy, uint64_t seed) {
    pdq_status st = {0};
    enum { H = 3, K = 37 };
    pdq_graph *g;
    assert_int_equal(pdq_graph_new("bmm", &g, &st), PDQ_OK);
    int as[3] = {H, M, K}, bs[3] = {1, adj_y ? N : K, adj_y ? K : N};
    int a = pdq_graph_input(g, "a", PDQ_TI16, 3, as, &st);
    int b = pdq_graph_input(g, "b", PDQ_TI16, 3, bs, &st);
    pdq_op op;
    memset(&op, 0, sizeof op);
    op.opt.bmm.adj_y = adj_y;
    int in[2] = {a, b};
    int y = pdq_graph_op(g, PDQ_OP_BATCH_MATMUL, in, 2, &op, "y", &st);
    assert_true(y >= 0);
    assert_int_equal(pdq_graph_mark_output(g, y, &st), PDQ_OK);
    float sa = 0.01f, sb = 0.003f;
    set_q1(&g->tensors[a], PDQ_TI16, sa, 0);
    set_q1(&g->tensors[b], PDQ_TI16, sb, 0);
    set_q1(&g->tensors[y], PDQ_TI16, sy, 0);
    int16_t *ad = malloc(sizeof(int16_t) * H * M * K), *bd = malloc(sizeof(int16_t) * N * K);
    uint64_t rs = seed;
    for (int i = 0; i < H * M * K; i++) ad[i] = (int16_t)((int)(tu_rand(&rs) % 65536) - 32768);
    for (int i = 0; i < N * K; i++) bd[i] = (int16_t)((int)(tu_rand(&rs) % 65536) - 32768);
    ad[0] = ad[1] = -32768; /* (-32768)^2 twice would overflow an int32 pair sum */
    bd[0] = -32768;
    bd[adj_y ? 1 : N] = -32768;
    void *ins[2] = {ad, bd};
    int16_t *yd = run4(g, ins, sizeof(int16_t) * H * M * N);
    for (int h = 0; h < H; h++)
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) {
                int64_t acc = 0;
                for (int k = 0; k < K; k++) acc += (int64_t)ad[(h * M + i) * K + k] * bd[adj_y ? j * K + k : k * N + j];
                double v = (double)acc * ((double)sa * (double)sb);
                assert_int_equal(yd[(h * M + i) * N + j], pdq_rq_code(v, (double)sy, 0, -32768, 32767));
            }
    free(yd);
    free(ad);
    free(bd);
    pdq_graph_free(g);
}

static void test_bmm(void **state) {
    (void)state;
    bmm_case(5, 19, 1, 0.05f, 9);
    bmm_case(3, 19, 0, 0.05f, 10);
    bmm_case(3, 19, 0, 20.0f, 14);
    bmm_case(2, 83, 0, 20.0f, 13); /* decode rows: two 64-column blocks, a 16-column one, a tail of 3 */
    bmm_case(9, 19, 0, 20.0f, 11);
    bmm_case(12, 19, 1, 0.05f, 12);
}

/* Non-linear / element-wise ops: within one code of the rule recomputed in long double, and
 * exactly equal for nearly all elements (the two differ only where a value sits on a rounding
 * boundary to within double precision). */
static void check_close(const int16_t *got, const long double *want, double sy, int n) {
    int off = 0;
    for (int i = 0; i < n; i++) {
        long double q = nearbyintl(want[i] / (long double)sy);
        if (q > 32767) q = 32767;
        if (q < -32768) q = -32768;
        long long d = llabs((long long)got[i] - (long long)q);
        assert_true(d <= 1);
        off += d != 0;
    }
    assert_true(off * 100 <= n);
}

static void test_nonlinear(void **state) {
    (void)state;
    pdq_status st = {0};
    enum { R = 6, C = 40 };
    float sx = 0.0009f;
    uint64_t rs = 11;
    int16_t xd[R * C];
    for (int i = 0; i < R * C; i++) xd[i] = (int16_t)((int)(tu_rand(&rs) % 20000) - 10000);
    for (int kind = 0; kind < 6; kind++) {
        pdq_graph *g;
        assert_int_equal(pdq_graph_new("nl", &g, &st), PDQ_OK);
        int xs[2] = {R, C}, bs[2] = {1, C};
        int x = pdq_graph_input(g, "x", PDQ_TI16, 2, xs, &st), b = -1, y;
        int16_t gam[C], bcodes[C];
        for (int i = 0; i < C; i++) { gam[i] = (int16_t)(i % 2 ? 32767 : -32767); bcodes[i] = (int16_t)(i * 500 - 9000); }
        float gs[C];
        for (int i = 0; i < C; i++) gs[i] = (float)(0.5 + 0.01 * i) / 32767.0f;
        pdq_op op;
        memset(&op, 0, sizeof op);
        if (kind == 0) { /* RMS_NORM with an int16 per-channel gamma */
            int gd[1] = {C};
            int gt = pdq_graph_const(g, "gamma", PDQ_TI16, 1, gd, gam, 1, &st);
            set_q(&g->tensors[gt], C, gs, NULL);
            op.opt.rms.epsilon = 1e-5f;
            int in[2] = {x, gt};
            y = pdq_graph_op(g, PDQ_OP_RMS_NORM, in, 2, &op, "y", &st);
        } else if (kind == 1) {
            op.opt.softmax.beta = 1.0f;
            y = pdq_graph_op(g, PDQ_OP_SOFTMAX, &x, 1, &op, "y", &st);
        } else if (kind == 2) {
            y = pdq_graph_op(g, PDQ_OP_LOGISTIC, &x, 1, NULL, "y", &st);
        } else if (kind == 4) {
            y = pdq_graph_op(g, PDQ_OP_TANH, &x, 1, NULL, "y", &st);
        } else if (kind == 5) { /* Gemma's GELU-tanh */
            op.opt.gelu.approximate = 1;
            y = pdq_graph_op(g, PDQ_OP_GELU, &x, 1, &op, "y", &st);
        } else {
            b = pdq_graph_input(g, "b", PDQ_TI16, 2, bs, &st);
            int in[2] = {x, b};
            y = pdq_graph_op(g, PDQ_OP_MUL, in, 2, NULL, "y", &st);
        }
        assert_true(y >= 0);
        assert_int_equal(pdq_graph_mark_output(g, y, &st), PDQ_OK);
        double sy = kind == 0 ? 0.0004 : kind == 1 ? 1.0 / 32767 : kind == 2 || kind == 4 ? 1.0 / 32767
                  : kind == 5 ? 9.0 / 32767 : 0.00002;
        set_q1(&g->tensors[x], PDQ_TI16, sx, 0);
        if (b >= 0) set_q1(&g->tensors[b], PDQ_TI16, 0.0007f, 0);
        set_q1(&g->tensors[y], PDQ_TI16, (float)sy, 0);
        sy = (double)(float)sy;
        void *ins[2] = {xd, bcodes};
        int16_t *yd = run4(g, ins, sizeof(int16_t) * R * C);
        long double want[R * C];
        for (int r = 0; r < R; r++) {
            long double v[C], ss = 0, mx = -1e30L, sum = 0;
            for (int i = 0; i < C; i++) {
                v[i] = (long double)xd[r * C + i] * sx;
                ss += v[i] * v[i];
                if (v[i] > mx) mx = v[i];
            }
            for (int i = 0; i < C; i++) sum += expl(v[i] - mx);
            for (int i = 0; i < C; i++) {
                long double o;
                if (kind == 0) o = v[i] / sqrtl(ss / C + 1e-5L) * ((long double)gam[i] * gs[i]);
                else if (kind == 1) o = expl(v[i] - mx) / sum;
                else if (kind == 2) o = 1.0L / (1.0L + expl(-v[i]));
                else if (kind == 4) o = tanhl(v[i]);
                else if (kind == 5)
                    o = 0.5L * v[i] * (1.0L + tanhl(sqrtl(2.0L / 3.14159265358979323846L) * (v[i] + 0.044715L * v[i] * v[i] * v[i])));
                else o = v[i] * ((long double)bcodes[i] * 0.0007f);
                want[r * C + i] = o;
            }
        }
        check_close(yd, want, sy, R * C);
        free(yd);
        pdq_graph_free(g);
    }
}

/* ADD / SUB / MUL / DIV of int16 codes with zero points, same shape and broadcast either way
 * (odd row lengths: SIMD bodies and scalar tails), against the rule computed here element by
 * element: every code equal, saturation and division by zero included. */
static void test_binary_rule(void **state) {
    (void)state;
    pdq_status st = {0};
    enum { R = 3, C = 37 };
    const pdq_op_type ops[4] = {PDQ_OP_ADD, PDQ_OP_SUB, PDQ_OP_MUL, PDQ_OP_DIV};
    const int bshapes[3][2] = {{R, C}, {1, C}, {R, 1}};
    uint64_t rs = 21;
    int16_t ad[R * C], bd[R * C];
    for (int i = 0; i < R * C; i++) {
        ad[i] = (int16_t)((int)(tu_rand(&rs) % 65536) - 32768);
        bd[i] = (int16_t)((int)(tu_rand(&rs) % 65536) - 32768);
    }
    ad[0] = -32768; /* extremes, and b's zero point (a zero divisor) */
    bd[1] = 5;
    bd[2] = 5;
    const float sa = 0.0013f, sb = 0.0009f, sy[4] = {0.002f, 0.002f, 0.04f, 0.01f}; /* on the grid, few saturated */
    const int64_t za = -3, zb = 5, zy = 2;
    for (int oi = 0; oi < 4; oi++)
        for (int bi = 0; bi < 3; bi++) {
            pdq_graph *g;
            assert_int_equal(pdq_graph_new("bin", &g, &st), PDQ_OK);
            int as[2] = {R, C};
            int a = pdq_graph_input(g, "a", PDQ_TI16, 2, as, &st);
            int b = pdq_graph_input(g, "b", PDQ_TI16, 2, bshapes[bi], &st);
            int in[2] = {a, b};
            int y = pdq_graph_op(g, ops[oi], in, 2, NULL, "y", &st);
            assert_true(y >= 0);
            assert_int_equal(pdq_graph_mark_output(g, y, &st), PDQ_OK);
            set_q1(&g->tensors[a], PDQ_TI16, sa, za);
            set_q1(&g->tensors[b], PDQ_TI16, sb, zb);
            set_q1(&g->tensors[y], PDQ_TI16, sy[oi], zy);
            void *ins[2] = {ad, bd};
            int16_t *yd = run4(g, ins, sizeof(int16_t) * R * C);
            for (int r = 0; r < R; r++)
                for (int c = 0; c < C; c++) {
                    int bj = bi == 0 ? r * C + c : bi == 1 ? c : r;
                    double u = ((double)ad[r * C + c] - (double)za) * (double)sa;
                    double v = ((double)bd[bj] - (double)zb) * (double)sb;
                    double w = oi == 0 ? u + v : oi == 1 ? u - v : oi == 2 ? u * v : u / v;
                    assert_int_equal(yd[r * C + c], pdq_rq_code(w, (double)sy[oi], zy, -32768, 32767));
                }
            free(yd);
            pdq_graph_free(g);
        }
}

/* SOFTMAX of int16 codes, rows of 70 (past one SIMD body) with masked positions at the lowest
 * code, against its rule: terms exp(-(max - code) * scale * beta) summed in order, each over the
 * sum. */
static void test_softmax_rule(void **state) {
    (void)state;
    pdq_status st = {0};
    enum { R = 4, C = 70 };
    uint64_t rs = 23;
    int16_t xd[R * C];
    for (int i = 0; i < R * C; i++) xd[i] = (int16_t)(i % C > 50 + i / C ? -32768 : (int)(tu_rand(&rs) % 4000) - 2000);
    const float sx = 0.004f, sy = 1.0f / 32767;
    pdq_graph *g;
    assert_int_equal(pdq_graph_new("sm", &g, &st), PDQ_OK);
    int xs[2] = {R, C};
    int x = pdq_graph_input(g, "x", PDQ_TI16, 2, xs, &st);
    pdq_op op;
    memset(&op, 0, sizeof op);
    op.opt.softmax.beta = 0.8f;
    int y = pdq_graph_op(g, PDQ_OP_SOFTMAX, &x, 1, &op, "y", &st);
    assert_int_equal(pdq_graph_mark_output(g, y, &st), PDQ_OK);
    set_q1(&g->tensors[x], PDQ_TI16, sx, 0);
    set_q1(&g->tensors[y], PDQ_TI16, sy, 0);
    void *ins[1] = {xd};
    int16_t *yd = run4(g, ins, sizeof(int16_t) * R * C);
    for (int r = 0; r < R; r++) {
        const int16_t *xr = xd + r * C;
        int mx = xr[0];
        for (int i = 1; i < C; i++) mx = xr[i] > mx ? xr[i] : mx;
        double sum = 0;
        for (int i = 0; i < C; i++) sum += exp(-((double)(mx - xr[i]) * (double)sx) * (double)0.8f);
        for (int i = 0; i < C; i++) {
            double t = exp(-((double)(mx - xr[i]) * (double)sx) * (double)0.8f);
            assert_int_equal(yd[r * C + i], pdq_rq_code(t / sum, (double)sy, 0, -32768, 32767));
        }
    }
    free(yd);
    pdq_graph_free(g);
}

/* Layout ops on int16 and uint8 codes against index arithmetic: transposes that swap the last two
 * dims (8 x 8 tiles and their edges), others that do not, and slices whose rows merge. */
static void test_layout_moves(void **state) {
    (void)state;
    pdq_status st = {0};
    const struct {
        int nd, shape[4], perm[4];
    } cases[] = {
        {3, {2, 19, 21}, {0, 2, 1}}, {3, {3, 64, 64}, {0, 2, 1}}, {3, {4, 9, 16}, {1, 2, 0}},
        {4, {2, 3, 8, 8}, {0, 1, 3, 2}}, {3, {2, 5, 7}, {2, 0, 1}}, {2, {17, 8}, {1, 0}},
    };
    for (int dt = 0; dt < 2; dt++)
        for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
            int nd = cases[ci].nd;
            const int *sh = cases[ci].shape, *pm = cases[ci].perm;
            int n = 1;
            for (int d = 0; d < nd; d++) n *= sh[d];
            pdq_tdtype t = dt ? PDQ_TU8 : PDQ_TI16;
            size_t esz = dt ? 1 : 2;
            char *xd = malloc((size_t)n * esz);
            for (int i = 0; i < n; i++) {
                if (dt) ((uint8_t *)xd)[i] = (uint8_t)(i * 7 + 3);
                else ((int16_t *)xd)[i] = (int16_t)(i * 37 - 20000);
            }
            pdq_graph *g;
            assert_int_equal(pdq_graph_new("mv", &g, &st), PDQ_OK);
            int x = pdq_graph_input(g, "x", t, nd, sh, &st);
            int in[4] = {x, pdq_graph_const_i32(g, "perm", nd, pm, &st)};
            int tr = pdq_graph_op(g, PDQ_OP_TRANSPOSE, in, 2, NULL, "tr", &st);
            /* a slice of whole inner rows out of the transpose's input: b = (0, 1, ...), the rest full */
            int b[4] = {0}, e[4], s[4];
            for (int d = 0; d < nd; d++) { e[d] = sh[d]; s[d] = 1; }
            b[1] = 1;
            in[1] = pdq_graph_const_i32(g, "b", nd, b, &st);
            in[2] = pdq_graph_const_i32(g, "e", nd, e, &st);
            in[3] = pdq_graph_const_i32(g, "s", nd, s, &st);
            int sl = pdq_graph_op(g, PDQ_OP_STRIDED_SLICE, in, 4, NULL, "sl", &st);
            assert_true(tr >= 0 && sl >= 0);
            assert_int_equal(pdq_graph_mark_output(g, tr, &st), PDQ_OK);
            assert_int_equal(pdq_graph_mark_output(g, sl, &st), PDQ_OK);
            set_q1(&g->tensors[x], t, 0.5f, dt ? 7 : 0);
            set_q1(&g->tensors[tr], t, 0.5f, dt ? 7 : 0);
            set_q1(&g->tensors[sl], t, 0.5f, dt ? 7 : 0);
            void *ins[1] = {xd};
            char *yd = run4(g, ins, (size_t)n * esz); /* the transpose (output 0) */
            int ost[4], xst[4];
            for (int d = nd - 1, a = 1; d >= 0; d--) { xst[d] = a; a *= sh[d]; }
            for (int d = nd - 1, a = 1; d >= 0; d--) { ost[d] = a; a *= sh[pm[d]]; }
            for (int o = 0; o < n; o++) {
                int rem = o, src = 0;
                for (int d = 0; d < nd; d++) { src += (rem / ost[d]) * xst[pm[d]]; rem %= ost[d]; }
                assert_memory_equal(yd + (size_t)o * esz, xd + (size_t)src * esz, esz);
            }
            free(yd);
            /* the slice through one executor (run4 compared output 0 only) */
            pdq_exec_opts o;
            pdq_exec_opts_default(&o);
            o.mode = PDQ_EXEC_INT;
            pdq_qexec *q = NULL;
            assert_int_equal(pdq_qexec_create(g, &o, &q, &st), PDQ_OK);
            memcpy(pdq_qexec_codes(q, x), xd, (size_t)n * esz);
            assert_int_equal(pdq_qexec_run(q, &st), PDQ_OK);
            const char *sd = pdq_qexec_codes(q, sl);
            size_t skip = (size_t)xst[1] * esz, part = (size_t)(sh[1] - 1) * xst[1] * esz;
            for (int i0 = 0; i0 < sh[0]; i0++)
                assert_memory_equal(sd + (size_t)i0 * part, xd + (size_t)i0 * xst[0] * esz + skip, part);
            pdq_qexec_free(q);
            free(xd);
            pdq_graph_free(g);
        }
}

/* Bad input: an unsupported op and a weight without qparams are errors, not crashes. */
static void test_errors(void **state) {
    (void)state;
    pdq_status st = {0};
    pdq_graph *g;
    assert_int_equal(pdq_graph_new("bad", &g, &st), PDQ_OK);
    int xs[2] = {2, 4}, ws[2] = {3, 4};
    int x = pdq_graph_input(g, "x", PDQ_TI16, 2, xs, &st);
    uint8_t w[12] = {0};
    int wt = pdq_graph_const(g, "w", PDQ_TU8, 2, ws, w, 1, &st);
    int in[2] = {x, wt};
    int y = pdq_graph_op(g, PDQ_OP_FULLY_CONNECTED, in, 2, NULL, "y", &st);
    assert_int_equal(pdq_graph_mark_output(g, y, &st), PDQ_OK);
    set_q1(&g->tensors[x], PDQ_TI16, 0.1f, 0);
    set_q1(&g->tensors[y], PDQ_TI16, 0.1f, 0);
    pdq_exec_opts o;
    pdq_exec_opts_default(&o);
    pdq_qexec *q = NULL;
    assert_int_not_equal(pdq_qexec_create(g, &o, &q, &st), PDQ_OK);
    assert_non_null(strstr(st.msg, "w is uint8 without quantization parameters"));
    assert_null(q);
    pdq_graph_free(g);
    assert_int_equal(pdq_exec_mode_parse("int"), PDQ_EXEC_INT);
    assert_int_equal(pdq_exec_mode_parse("fake"), PDQ_EXEC_FAKE);
    assert_int_equal(pdq_exec_mode_parse("float"), PDQ_EXEC_FLOAT);
    assert_int_equal(pdq_exec_mode_parse("int8"), -1);
    /* which SIMD level the kernel comparisons exercised on this machine */
    assert_int_equal(pdq_graph_new("lvl", &g, &st), PDQ_OK);
    int ls[1] = {4};
    int lx = pdq_graph_input(g, "x", PDQ_TI16, 1, ls, &st);
    int ly = pdq_graph_op(g, PDQ_OP_NEG, &lx, 1, NULL, "y", &st);
    assert_int_equal(pdq_graph_mark_output(g, ly, &st), PDQ_OK);
    set_q1(&g->tensors[lx], PDQ_TI16, 0.1f, 0);
    set_q1(&g->tensors[ly], PDQ_TI16, 0.1f, 0);
    o.mode = PDQ_EXEC_INT;
    assert_int_equal(pdq_qexec_create(g, &o, &q, &st), PDQ_OK);
    fprintf(stderr, "SIMD level on this CPU: %d (0 scalar, 1 AVX2, 2 AVX-512 VNNI)\n", pdq_qexec_simd(q));
    pdq_qexec_free(q);
    pdq_graph_free(g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rule), cmocka_unit_test(test_fc), cmocka_unit_test(test_fc_compact_groups),
        cmocka_unit_test(test_bmm),
        cmocka_unit_test(test_nonlinear), cmocka_unit_test(test_binary_rule), cmocka_unit_test(test_softmax_rule),
        cmocka_unit_test(test_layout_moves), cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
