/* Graph IR and float32 interpreter: every op against brute-force loops written here, shape
 * validation errors, arena reuse and the per-edge hook. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/arena_plan.h"
#include "circle/op_circle.h"
#include "ops/op_def.h"
#include "pdq/graph.h"
#include "testutil.h"

static void fill_rand(float *x, size_t n, uint64_t *rs) {
    for (size_t i = 0; i < n; i++) x[i] = (float)(tu_randu(rs) * 2.0 - 1.0);
}

static void assert_close(const float *a, const float *b, size_t n, float tol) {
    for (size_t i = 0; i < n; i++)
        if (fabsf(a[i] - b[i]) > tol) {
            print_error("element %zu: %g vs %g\n", i, (double)a[i], (double)b[i]);
            fail();
        }
}

/* Runs g with the given input buffers bound in order; returns the output pointer. */
static float *run(pdq_graph *g, float **inputs, pdq_interp **ipo) {
    pdq_status st = {0};
    pdq_interp *ip;
    assert_int_equal(pdq_interp_create(g, &ip, &st), PDQ_OK);
    for (int i = 0; i < g->n_inputs; i++) assert_int_equal(pdq_interp_bind(ip, g->inputs[i], inputs[i], &st), PDQ_OK);
    assert_int_equal(pdq_interp_run(ip, &st), PDQ_OK);
    *ipo = ip;
    return pdq_interp_data(ip, g->outputs[0]);
}

static void test_fc_and_bmm(void **state) {
    (void)state;
    uint64_t rs = 11;
    pdq_status st = {0};
    pdq_graph *g;
    assert_int_equal(pdq_graph_new("fc", &g, &st), PDQ_OK);
    int xs[3] = {2, 3, 5}, ws[2] = {4, 5}, bs[1] = {4};
    float x[30], w[20], bias[4];
    fill_rand(x, 30, &rs);
    fill_rand(w, 20, &rs);
    fill_rand(bias, 4, &rs);
    int xi = pdq_graph_input(g, "x", PDQ_TF32, 3, xs, &st);
    int wi = pdq_graph_const(g, "w", PDQ_TF32, 2, ws, w, 1, &st);
    int bi = pdq_graph_const(g, "b", PDQ_TF32, 1, bs, bias, 0, &st);
    int in[3] = {xi, wi, bi};
    int y = pdq_graph_op(g, PDQ_OP_FULLY_CONNECTED, in, 3, NULL, "y", &st);
    assert_true(y >= 0);
    assert_int_equal(g->tensors[y].ndim, 3);
    assert_int_equal(g->tensors[y].shape[2], 4);
    assert_int_equal(pdq_graph_mark_output(g, y, &st), PDQ_OK);
    float *inputs[1] = {x};
    pdq_interp *ip;
    float *out = run(g, inputs, &ip);
    float ref[24];
    for (int r = 0; r < 6; r++)
        for (int o = 0; o < 4; o++) {
            double s = bias[o];
            for (int i = 0; i < 5; i++) s += (double)x[r * 5 + i] * w[o * 5 + i];
            ref[r * 4 + o] = (float)s;
        }
    assert_close(out, ref, 24, 1e-5f);
    pdq_interp_free(ip);
    pdq_graph_free(g);

    /* BATCH_MATMUL with broadcast batch dims and every adjoint combination. */
    for (int adj = 0; adj < 4; adj++) {
        int ax = adj & 1, ay = adj >> 1;
        assert_int_equal(pdq_graph_new("bmm", &g, &st), PDQ_OK);
        int as[4] = {2, 1, ax ? 4 : 3, ax ? 3 : 4}, bsh[3] = {3, ay ? 5 : 4, ay ? 4 : 5};
        float a[24], b[60];
        fill_rand(a, 24, &rs);
        fill_rand(b, 60, &rs);
        int ai = pdq_graph_input(g, "a", PDQ_TF32, 4, as, &st);
        int bi2 = pdq_graph_input(g, "b", PDQ_TF32, 3, bsh, &st);
        pdq_op opt;
        memset(&opt, 0, sizeof opt);
        opt.opt.bmm.adj_x = ax;
        opt.opt.bmm.adj_y = ay;
        int in2[2] = {ai, bi2};
        int o = pdq_graph_op(g, PDQ_OP_BATCH_MATMUL, in2, 2, &opt, "o", &st);
        assert_true(o >= 0);
        int es[4] = {2, 3, 3, 5};
        for (int d = 0; d < 4; d++) assert_int_equal(g->tensors[o].shape[d], es[d]);
        pdq_graph_mark_output(g, o, &st);
        float *ins[2] = {a, b};
        float *od = run(g, ins, &ip);
        float r2[90];
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 3; j++)
                for (int m = 0; m < 3; m++)
                    for (int n = 0; n < 5; n++) {
                        double s = 0;
                        for (int k = 0; k < 4; k++) {
                            float av = ax ? a[i * 12 + k * 3 + m] : a[i * 12 + m * 4 + k];
                            float bv = ay ? b[j * 20 + n * 4 + k] : b[j * 20 + k * 5 + n];
                            s += (double)av * bv;
                        }
                        r2[((i * 3 + j) * 3 + m) * 5 + n] = (float)s;
                    }
        assert_close(od, r2, 90, 1e-5f);
        pdq_interp_free(ip);
        pdq_graph_free(g);
    }
}

static void test_elementwise(void **state) {
    (void)state;
    uint64_t rs = 7;
    pdq_status st = {0};
    pdq_op_type bins[4] = {PDQ_OP_ADD, PDQ_OP_SUB, PDQ_OP_MUL, PDQ_OP_DIV};
    for (int k = 0; k < 4; k++) {
        pdq_graph *g;
        pdq_graph_new("bin", &g, &st);
        int as[3] = {2, 3, 4}, bs[2] = {3, 1};
        float a[24], b[3];
        fill_rand(a, 24, &rs);
        for (int i = 0; i < 3; i++) b[i] = 0.5f + (float)i;
        int ai = pdq_graph_input(g, "a", PDQ_TF32, 3, as, &st);
        int bi = pdq_graph_input(g, "b", PDQ_TF32, 2, bs, &st);
        int in[2] = {bi, ai}; /* broadcast on the left operand too */
        int o = pdq_graph_op(g, bins[k], in, 2, NULL, "o", &st);
        assert_true(o >= 0);
        pdq_graph_mark_output(g, o, &st);
        float *ins[2] = {a, b};
        pdq_interp *ip;
        float *od = run(g, ins, &ip);
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 3; j++)
                for (int l = 0; l < 4; l++) {
                    float x = b[j], y = a[i * 12 + j * 4 + l], r = k == 0 ? x + y : k == 1 ? x - y : k == 2 ? x * y : x / y;
                    assert_true(fabsf(od[i * 12 + j * 4 + l] - r) <= 1e-5f * (1 + fabsf(r)));
                }
        pdq_interp_free(ip);
        pdq_graph_free(g);
    }
    /* Unary ops, RMS_NORM, SOFTMAX, MEAN. */
    pdq_graph *g;
    pdq_graph_new("unary", &g, &st);
    int xs[2] = {3, 8};
    float x[24], gam[8];
    fill_rand(x, 24, &rs);
    fill_rand(gam, 8, &rs);
    for (int i = 0; i < 24; i++) x[i] += 1.5f; /* positive for RSQRT */
    int xi = pdq_graph_input(g, "x", PDQ_TF32, 2, xs, &st);
    int gs[1] = {8};
    int gi = pdq_graph_const(g, "gamma", PDQ_TF32, 1, gs, gam, 1, &st);
    int axes[1] = {1};
    int ai = pdq_graph_const_i32(g, "axes", 1, axes, &st);
    pdq_op o;
    memset(&o, 0, sizeof o);
    o.opt.rms.epsilon = 1e-5f;
    int in2[2] = {xi, gi};
    int t_rms = pdq_graph_op(g, PDQ_OP_RMS_NORM, in2, 2, &o, "rms", &st);
    memset(&o, 0, sizeof o);
    o.opt.softmax.beta = 0.5f;
    int t_sm = pdq_graph_op(g, PDQ_OP_SOFTMAX, &xi, 1, &o, "softmax", &st);
    memset(&o, 0, sizeof o);
    o.opt.mean.keep_dims = 1;
    int in3[2] = {xi, ai};
    int t_mean = pdq_graph_op(g, PDQ_OP_MEAN, in3, 2, &o, "mean", &st);
    int t_rs = pdq_graph_op(g, PDQ_OP_RSQRT, &xi, 1, NULL, "rsqrt", &st);
    int t_neg = pdq_graph_op(g, PDQ_OP_NEG, &xi, 1, NULL, "neg", &st);
    int t_lg = pdq_graph_op(g, PDQ_OP_LOGISTIC, &xi, 1, NULL, "logistic", &st);
    int t_th = pdq_graph_op(g, PDQ_OP_TANH, &xi, 1, NULL, "tanh", &st);
    memset(&o, 0, sizeof o);
    o.opt.gelu.approximate = 1;
    int t_ga = pdq_graph_op(g, PDQ_OP_GELU, &xi, 1, &o, "gelu_tanh", &st);
    int t_ge = pdq_graph_op(g, PDQ_OP_GELU, &xi, 1, NULL, "gelu_erf", &st);
    int outs[9] = {t_rms, t_sm, t_mean, t_rs, t_neg, t_lg, t_th, t_ga, t_ge};
    for (int i = 0; i < 9; i++) { assert_true(outs[i] >= 0); pdq_graph_mark_output(g, outs[i], &st); }
    assert_int_equal(g->tensors[t_mean].shape[1], 1);
    float *ins[1] = {x};
    pdq_interp *ip;
    run(g, ins, &ip);
    float *rms = pdq_interp_data(ip, t_rms), *sm = pdq_interp_data(ip, t_sm), *mn = pdq_interp_data(ip, t_mean);
    float *rsq = pdq_interp_data(ip, t_rs), *ng = pdq_interp_data(ip, t_neg), *lg = pdq_interp_data(ip, t_lg);
    float *th = pdq_interp_data(ip, t_th), *ga = pdq_interp_data(ip, t_ga), *ge = pdq_interp_data(ip, t_ge);
    for (int r = 0; r < 3; r++) {
        double ss = 0, mx = -1e30, se = 0, sum = 0;
        for (int i = 0; i < 8; i++) { ss += x[r * 8 + i] * x[r * 8 + i]; mx = fmax(mx, x[r * 8 + i]); sum += x[r * 8 + i]; }
        for (int i = 0; i < 8; i++) se += exp(0.5 * (x[r * 8 + i] - mx));
        assert_true(fabs(mn[r] - sum / 8) < 1e-5);
        for (int i = 0; i < 8; i++) {
            int k = r * 8 + i;
            assert_true(fabs(rms[k] - gam[i] * x[k] / sqrt(ss / 8 + 1e-5)) < 1e-5);
            assert_true(fabs(sm[k] - exp(0.5 * (x[k] - mx)) / se) < 1e-6);
            assert_true(fabs(rsq[k] - 1 / sqrt(x[k])) < 1e-5);
            assert_true(ng[k] == -x[k]);
            assert_true(fabs(lg[k] - 1 / (1 + exp(-x[k]))) < 1e-6);
            assert_true(fabs(th[k] - tanh(x[k])) < 1e-6);
            /* GELU: the tanh form (PyTorch's approximate="tanh") and the exact erf form */
            double v = x[k];
            assert_true(fabs(ga[k] - 0.5 * v * (1 + tanh(sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)))) < 1e-6);
            assert_true(fabs(ge[k] - 0.5 * v * (1 + erf(v / sqrt(2.0)))) < 1e-6);
        }
    }
    pdq_interp_free(ip);
    pdq_graph_free(g);
}

static void test_data_movement(void **state) {
    (void)state;
    pdq_status st = {0};
    pdq_graph *g;
    pdq_graph_new("move", &g, &st);
    int xs[3] = {2, 3, 4};
    float x[24];
    for (int i = 0; i < 24; i++) x[i] = (float)i;
    int xi = pdq_graph_input(g, "x", PDQ_TF32, 3, xs, &st);
    int perm[3] = {2, 0, 1};
    int in[4] = {xi, pdq_graph_const_i32(g, "perm", 3, perm, &st)};
    int t_tr = pdq_graph_op(g, PDQ_OP_TRANSPOSE, in, 2, NULL, "transpose", &st);
    int shp[2] = {6, 4};
    in[1] = pdq_graph_const_i32(g, "shape", 2, shp, &st);
    int t_rs = pdq_graph_op(g, PDQ_OP_RESHAPE, in, 2, NULL, "reshape", &st);
    int b[3] = {1, 0, 1}, e[3] = {2, 3, 4}, s[3] = {1, 2, 2};
    in[1] = pdq_graph_const_i32(g, "b", 3, b, &st);
    in[2] = pdq_graph_const_i32(g, "e", 3, e, &st);
    in[3] = pdq_graph_const_i32(g, "s", 3, s, &st);
    int t_ss = pdq_graph_op(g, PDQ_OP_STRIDED_SLICE, in, 4, NULL, "sslice", &st);
    int sb[3] = {0, 1, 2}, sz[3] = {2, 2, 2};
    in[1] = pdq_graph_const_i32(g, "sb", 3, sb, &st);
    in[2] = pdq_graph_const_i32(g, "sz", 3, sz, &st);
    int t_sl = pdq_graph_op(g, PDQ_OP_SLICE, in, 3, NULL, "slice", &st);
    pdq_op o;
    memset(&o, 0, sizeof o);
    o.opt.concat.axis = 1;
    int cin[3] = {xi, t_sl, xi};
    int t_cat = pdq_graph_op(g, PDQ_OP_CONCATENATION, cin, 3, &o, "concat", &st);
    assert_true(t_cat < 0); /* t_sl is (2,2,2): dim 2 differs */
    assert_int_equal(st.code, PDQ_ERR_SHAPE);
    o.opt.concat.axis = -1;
    cin[1] = pdq_graph_op(g, PDQ_OP_NEG, &xi, 1, NULL, "negx", &st);
    t_cat = pdq_graph_op(g, PDQ_OP_CONCATENATION, cin, 3, &o, "concat", &st);
    int idx[3] = {3, 0, 3};
    int ish[1] = {3};
    memset(&o, 0, sizeof o);
    o.opt.gather.axis = 2;
    int gin[2] = {xi, pdq_graph_const(g, "idx", PDQ_TI32, 1, ish, idx, 1, &st)};
    int t_g = pdq_graph_op(g, PDQ_OP_GATHER, gin, 2, &o, "gather", &st);
    int outs[6] = {t_tr, t_rs, t_ss, t_sl, t_cat, t_g};
    for (int i = 0; i < 6; i++) { assert_true(outs[i] >= 0); pdq_graph_mark_output(g, outs[i], &st); }
    pdq_interp *ip;
    float *ins[1] = {x};
    run(g, ins, &ip);
#define X(i, j, k) x[(i) * 12 + (j) * 4 + (k)]
    float *tr = pdq_interp_data(ip, t_tr); /* (4,2,3) */
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 3; j++) assert_true(tr[k * 6 + i * 3 + j] == X(i, j, k));
    float *rsd = pdq_interp_data(ip, t_rs);
    for (int i = 0; i < 24; i++) assert_true(rsd[i] == x[i]);
    float *ss = pdq_interp_data(ip, t_ss); /* (1,2,2) */
    assert_int_equal(g->tensors[t_ss].shape[1], 2);
    for (int j = 0; j < 2; j++)
        for (int k = 0; k < 2; k++) assert_true(ss[j * 2 + k] == X(1, j * 2, 1 + k * 2));
    float *sl = pdq_interp_data(ip, t_sl);
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++)
            for (int k = 0; k < 2; k++) assert_true(sl[i * 4 + j * 2 + k] == X(i, 1 + j, 2 + k));
    float *cat = pdq_interp_data(ip, t_cat); /* (2,3,12) */
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 4; k++) {
                assert_true(cat[(i * 3 + j) * 12 + k] == X(i, j, k));
                assert_true(cat[(i * 3 + j) * 12 + 4 + k] == -X(i, j, k));
                assert_true(cat[(i * 3 + j) * 12 + 8 + k] == X(i, j, k));
            }
    float *ga = pdq_interp_data(ip, t_g); /* (2,3,3) */
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 3; k++) assert_true(ga[(i * 3 + j) * 3 + k] == X(i, j, idx[k]));
#undef X
    pdq_interp_free(ip);
    pdq_graph_free(g);
}

static void test_shape_errors(void **state) {
    (void)state;
    pdq_status st = {0};
    pdq_graph *g;
    pdq_graph_new("errors", &g, &st);
    int xs[2] = {2, 3}, ws[2] = {4, 5}, ys[2] = {4, 3};
    float w[20] = {0};
    int xi = pdq_graph_input(g, "x", PDQ_TF32, 2, xs, &st);
    assert_true(pdq_graph_input(g, "x", PDQ_TF32, 2, xs, &st) < 0); /* duplicate name */
    assert_int_equal(st.code, PDQ_ERR_ARG);
    int bad[2] = {2, 0};
    assert_true(pdq_graph_input(g, "zero", PDQ_TF32, 2, bad, &st) < 0);
    int big[7] = {1, 1, 1, 1, 1, 1, 1};
    assert_true(pdq_graph_input(g, "rank7", PDQ_TF32, 7, big, &st) < 0);
    int wi = pdq_graph_const(g, "w", PDQ_TF32, 2, ws, w, 1, &st);
    int in[2] = {xi, wi};
    assert_true(pdq_graph_op(g, PDQ_OP_FULLY_CONNECTED, in, 2, NULL, "fc", &st) < 0);
    assert_int_equal(st.code, PDQ_ERR_SHAPE);
    int yi = pdq_graph_input(g, "y", PDQ_TF32, 2, ys, &st);
    in[1] = yi;
    assert_true(pdq_graph_op(g, PDQ_OP_ADD, in, 2, NULL, "add", &st) < 0);
    assert_int_equal(st.code, PDQ_ERR_SHAPE);
    int shp[2] = {5, 1};
    in[1] = pdq_graph_const_i32(g, "shape", 2, shp, &st);
    assert_true(pdq_graph_op(g, PDQ_OP_RESHAPE, in, 2, NULL, "reshape", &st) < 0);
    int p[2] = {0, 0};
    in[1] = pdq_graph_const_i32(g, "perm", 2, p, &st);
    assert_true(pdq_graph_op(g, PDQ_OP_TRANSPOSE, in, 2, NULL, "transpose", &st) < 0);
    in[1] = yi; /* BMM (2,3)x(4,3): inner mismatch */
    assert_true(pdq_graph_op(g, PDQ_OP_BATCH_MATMUL, in, 2, NULL, "bmm", &st) < 0);
    /* GATHER with runtime indices out of range is an error value at run time. */
    int is[1] = {2};
    int ii = pdq_graph_input(g, "ids", PDQ_TI32, 1, is, &st);
    pdq_op o;
    memset(&o, 0, sizeof o);
    int gin[2] = {xi, ii};
    int t = pdq_graph_op(g, PDQ_OP_GATHER, gin, 2, &o, "gather", &st);
    assert_true(t >= 0);
    pdq_graph_mark_output(g, t, &st);
    pdq_interp *ip;
    assert_int_equal(pdq_interp_create(g, &ip, &st), PDQ_OK);
    int32_t ids[2] = {1, 2};
    pdq_interp_bind(ip, ii, ids, &st);
    assert_int_equal(pdq_interp_run(ip, &st), PDQ_ERR_ARG);
    assert_non_null(strstr(st.msg, "out of range"));
    pdq_interp_free(ip);
    pdq_graph_free(g);
}

typedef struct { int calls, input_calls; int zero_tid; } hook_ctx;

static pdq_code hook(void *ctx, const pdq_graph *g, int op, int tid, float *data, pdq_status *st) {
    (void)st;
    hook_ctx *h = ctx;
    if (op < 0) { /* graph inputs come first, with op_index -1 */
        assert_int_equal(g->tensors[tid].kind, PDQ_TK_INPUT);
        assert_int_equal(h->calls, 0);
        h->input_calls++;
        return PDQ_OK;
    }
    assert_int_equal(g->ops[op].out[0], tid);
    h->calls++;
    if (tid == h->zero_tid) memset(data, 0, pdq_tensor_count(&g->tensors[tid]) * sizeof(float));
    return PDQ_OK;
}

static void test_arena_and_hook(void **state) {
    (void)state;
    pdq_status st = {0};
    pdq_graph *g;
    pdq_graph_new("chain", &g, &st);
    int xs[2] = {16, 16};
    int x = pdq_graph_input(g, "x", PDQ_TF32, 2, xs, &st);
    int cur = x, mid = -1;
    char name[32];
    for (int i = 0; i < 10; i++) {
        snprintf(name, sizeof name, "t%d", i);
        cur = pdq_graph_op(g, PDQ_OP_ADD, (int[]){cur, x}, 2, NULL, name, &st);
        if (i == 4) mid = cur;
    }
    pdq_graph_mark_output(g, cur, &st);
    pdq_interp *ip;
    assert_int_equal(pdq_interp_create(g, &ip, &st), PDQ_OK);
    /* input + output + at most two live intermediates, not ten */
    assert_true(pdq_interp_arena_bytes(ip) <= 4 * 256 * sizeof(float));
    float in[256];
    for (int i = 0; i < 256; i++) in[i] = (float)i;
    pdq_interp_bind(ip, x, in, &st);
    hook_ctx h = {0, 0, -1};
    pdq_interp_set_hook(ip, hook, &h);
    assert_int_equal(pdq_interp_run(ip, &st), PDQ_OK);
    assert_int_equal(h.calls, 10);
    assert_int_equal(h.input_calls, 1);
    float *out = pdq_interp_data(ip, cur);
    for (int i = 0; i < 256; i++) assert_true(out[i] == 11.0f * i);
    /* A hook that rewrites an edge changes everything downstream (fake-quant use). */
    h.zero_tid = mid;
    h.calls = 0;
    assert_int_equal(pdq_interp_run(ip, &st), PDQ_OK);
    for (int i = 0; i < 256; i++) assert_true(out[i] == 5.0f * i);
    pdq_interp_free(ip);
    pdq_graph_free(g);
}

/* The stepped arena plan against brute force, on random DAGs of element-wise ops and reshapes run
 * by dependency level: any two intermediates alive in a common step (producer's step to last
 * reader's) have disjoint blocks, unless one is a RESHAPE aliasing the other; in graph order,
 * one op a step, the same holds by op index. */
static void test_arena_steps(void **state) {
    (void)state;
    uint64_t rs = 5;
    for (int trial = 0; trial < 41; trial++) {
        pdq_status st = {0};
        pdq_graph *g;
        pdq_graph_new("dag", &g, &st);
        if (trial == 40) { /* by hand: level 1 holds A (the last reader of T) and then B */
            int xs[1] = {16};
            int x = pdq_graph_input(g, "x", PDQ_TF32, 1, xs, &st);
            int t = pdq_graph_op(g, PDQ_OP_NEG, (int[]){x}, 1, NULL, "T", &st);
            int u = pdq_graph_op(g, PDQ_OP_NEG, (int[]){x}, 1, NULL, "U", &st);
            int a = pdq_graph_op(g, PDQ_OP_NEG, (int[]){t}, 1, NULL, "A", &st);
            int b = pdq_graph_op(g, PDQ_OP_NEG, (int[]){u}, 1, NULL, "B", &st);
            int y = pdq_graph_op(g, PDQ_OP_ADD, (int[]){a, b}, 2, NULL, "y", &st);
            pdq_graph_mark_output(g, y, &st);
            goto check;
        }
        int xs[1] = {8 + (int)(tu_rand(&rs) % 40)};
        int pool[64], np = 0;
        pool[np++] = pdq_graph_input(g, "x", PDQ_TF32, 1, xs, &st);
        int n_ops = 10 + (int)(tu_rand(&rs) % 30);
        char name[32];
        for (int i = 0; i < n_ops && np < 64; i++) {
            snprintf(name, sizeof name, "t%d", i);
            /* half the inputs from the first few tensors: wide levels, as the per-head ops make */
            int wa = tu_rand(&rs) % 2 && np > 4 ? 4 : np, wb = tu_rand(&rs) % 2 && np > 4 ? 4 : np;
            int a = pool[tu_rand(&rs) % (uint64_t)wa], b = pool[tu_rand(&rs) % (uint64_t)wb], t;
            int kind = (int)(tu_rand(&rs) % 4);
            if (kind == 0) {
                int shp[1] = {xs[0]};
                char sname[32];
                snprintf(sname, sizeof sname, "shape%d", i);
                t = pdq_graph_op(g, PDQ_OP_RESHAPE, (int[]){a, pdq_graph_const_i32(g, sname, 1, shp, &st)}, 2, NULL, name, &st);
            } else if (kind == 1) {
                t = pdq_graph_op(g, PDQ_OP_NEG, (int[]){a}, 1, NULL, name, &st);
            } else {
                t = pdq_graph_op(g, PDQ_OP_ADD, (int[]){a, b}, 2, NULL, name, &st);
            }
            if (t < 0) fprintf(stderr, "%s\n", st.msg);
            assert_true(t >= 0);
            pool[np++] = t;
        }
        pdq_graph_mark_output(g, pool[np - 1], &st);
    check:;
        int n = g->n_tensors, no = g->n_ops;
        int *prod = malloc(sizeof(int) * (size_t)n), *level = malloc(sizeof(int) * (size_t)no);
        int *order = malloc(sizeof(int) * (size_t)no);
        for (int t = 0; t < n; t++) prod[t] = -1;
        int top = 0;
        for (int o = 0; o < no; o++) {
            level[o] = 0;
            for (int i = 0; i < g->ops[o].n_in; i++) {
                int p = prod[g->ops[o].in[i]];
                if (p >= 0 && level[p] + 1 > level[o]) level[o] = level[p] + 1;
            }
            top = level[o] > top ? level[o] : top;
            prod[g->ops[o].out[0]] = o;
        }
        int k = 0;
        for (int l = 0; l <= top; l++)
            for (int o = 0; o < no; o++)
                if (level[o] == l) order[k++] = o;
        for (int stepped = 0; stepped < 2; stepped++) {
            size_t *off = malloc(sizeof(size_t) * (size_t)n), bytes = 0;
            assert_int_equal(pdq_arena_plan_steps(g, 1, stepped ? order : NULL, stepped ? level : NULL, off, &bytes, &st),
                             PDQ_OK);
            /* live interval of each intermediate in steps */
            int *from = malloc(sizeof(int) * (size_t)n), *to = malloc(sizeof(int) * (size_t)n);
            for (int t = 0; t < n; t++) from[t] = to[t] = -1;
            for (int o = 0; o < no; o++) {
                int s = stepped ? level[o] : o;
                from[g->ops[o].out[0]] = s;
                if (to[g->ops[o].out[0]] < s) to[g->ops[o].out[0]] = s;
                for (int i = 0; i < g->ops[o].n_in; i++)
                    if (to[g->ops[o].in[i]] < s) to[g->ops[o].in[i]] = s;
            }
            /* a RESHAPE's output on its input's block shares it on purpose (chains of them too) */
            int *root = malloc(sizeof(int) * (size_t)n);
            for (int t = 0; t < n; t++) root[t] = t;
            for (int o = 0; o < no; o++)
                if (g->ops[o].type == PDQ_OP_RESHAPE && off[g->ops[o].out[0]] == off[g->ops[o].in[0]])
                    root[g->ops[o].out[0]] = root[g->ops[o].in[0]];
            for (int t = 0; t < n; t++)
                for (int u = t + 1; u < n; u++) {
                    const pdq_tensor *a = &g->tensors[t], *b = &g->tensors[u];
                    if (a->kind == PDQ_TK_CONST || b->kind == PDQ_TK_CONST) continue;
                    if (root[t] == root[u]) continue;
                    int fa = a->kind == PDQ_TK_INTER ? from[t] : -1, ta = a->kind == PDQ_TK_INTER ? to[t] : 1 << 30;
                    int fb = b->kind == PDQ_TK_INTER ? from[u] : -1, tb = b->kind == PDQ_TK_INTER ? to[u] : 1 << 30;
                    if (fa > tb || fb > ta) continue; /* never alive together */
                    size_t ea = off[t] + pdq_tensor_count(a) * 4, eb = off[u] + pdq_tensor_count(b) * 4;
                    assert_true(ea <= off[u] || eb <= off[t]);
                }
            free(root);
            free(from);
            free(to);
            free(off);
        }
        free(prod);
        free(level);
        free(order);
        pdq_graph_free(g);
    }
}

/* Ops added without options take their own defaults (each op's row), not another op's: the
 * options are a union, and a BATCH_MATMUL, CONCATENATION or GATHER must not read FC's
 * keep_num_dims 1 as adj_x or axis 1. */
static void test_default_options(void **state) {
    (void)state;
    pdq_status st = {0};
    pdq_graph *g;
    assert_int_equal(pdq_graph_new("defaults", &g, &st), PDQ_OK);
    int as[2] = {2, 3}, bs[2] = {3, 4}, ts[2] = {5, 3};
    int a = pdq_graph_input(g, "a", PDQ_TF32, 2, as, &st), b = pdq_graph_input(g, "b", PDQ_TF32, 2, bs, &st);
    int in[2] = {a, b};
    int bmm = pdq_graph_op(g, PDQ_OP_BATCH_MATMUL, in, 2, NULL, "bmm", &st);
    assert_true(bmm >= 0);
    assert_int_equal(g->tensors[bmm].shape[0], 2);
    assert_int_equal(g->tensors[bmm].shape[1], 4);
    in[1] = a;
    int cat = pdq_graph_op(g, PDQ_OP_CONCATENATION, in, 2, NULL, "cat", &st);
    assert_true(cat >= 0);
    assert_int_equal(g->tensors[cat].shape[0], 4); /* axis 0 */
    assert_int_equal(g->tensors[cat].shape[1], 3);
    int32_t ids[1] = {4};
    int table = pdq_graph_input(g, "table", PDQ_TF32, 2, ts, &st);
    int gin[2] = {table, pdq_graph_const_i32(g, "ids", 1, ids, &st)};
    int gat = pdq_graph_op(g, PDQ_OP_GATHER, gin, 2, NULL, "gather", &st);
    assert_true(gat >= 0); /* axis 0: row 4 of 5 */
    assert_int_equal(g->tensors[gat].shape[0], 1);
    assert_int_equal(g->tensors[gat].shape[1], 3);
    int32_t ax[1] = {1};
    int min[2] = {a, pdq_graph_const_i32(g, "axes", 1, ax, &st)};
    int mean = pdq_graph_op(g, PDQ_OP_MEAN, min, 2, NULL, "mean", &st);
    assert_true(mean >= 0);
    assert_int_equal(g->tensors[mean].ndim, 1); /* keep_dims 0 */
    int fc_in[2] = {a, pdq_graph_input(g, "w", PDQ_TF32, 2, (int[]){7, 3}, &st)};
    assert_true(pdq_graph_op(g, PDQ_OP_FULLY_CONNECTED, fc_in, 2, NULL, "fc", &st) >= 0);
    int sm = pdq_graph_op(g, PDQ_OP_SOFTMAX, &a, 1, NULL, "softmax", &st);
    assert_true(sm >= 0);
    for (int o = 0; o < g->n_ops; o++) {
        const pdq_op *op = &g->ops[o];
        if (op->type == PDQ_OP_BATCH_MATMUL) assert_true(!op->opt.bmm.adj_x && !op->opt.bmm.adj_y);
        if (op->type == PDQ_OP_FULLY_CONNECTED) assert_int_equal(op->opt.fc.keep_num_dims, 1);
        if (op->type == PDQ_OP_SOFTMAX) assert_true(op->opt.softmax.beta == 1.0f);
    }
    pdq_graph_free(g);
}

/* Every op type has its row: a unique name, a shape rule, a float kernel, an integer kernel, a
 * Circle operator that maps back to it (the names against the schema: test_circle_fb); outside the
 * enum there is none. */
static void test_op_table(void **state) {
    (void)state;
    for (int t = 0; t < PDQ_OP_COUNT; t++) {
        const pdq_op_def *d = pdq_op_def_of((pdq_op_type)t);
        assert_non_null(d);
        assert_non_null(d->f32);
        assert_non_null(d->infer);
        /* integer mode runs every op the graphs pdq builds use; MEAN only in float */
        assert_int_equal(d->qx.prepare != NULL, t != PDQ_OP_MEAN);
        assert_int_equal(d->qx.run != NULL, t != PDQ_OP_MEAN);
        /* the one-copy layout ops plan their copy once */
        assert_int_equal(d->box != NULL, t == PDQ_OP_TRANSPOSE || t == PDQ_OP_SLICE || t == PDQ_OP_STRIDED_SLICE);
        /* options: compared by the ops that have some, written to and read from Circle likewise */
        const pdq_circle_spelling *c = pdq_circle_spelling_of((pdq_op_type)t);
        assert_non_null(c);
        assert_true(!d->opt_same || (c->put && c->get));
        assert_int_equal(c->optional_in, t == PDQ_OP_FULLY_CONNECTED ? 2 : 0);
        assert_int_equal(d->params_at, t == PDQ_OP_MEAN ? 1 : 0);
        assert_string_equal(pdq_op_name((pdq_op_type)t), d->name);
        assert_int_equal(pdq_op_of_circle(c->code), t);
        for (int u = 0; u < t; u++) assert_string_not_equal(pdq_op_def_of((pdq_op_type)u)->name, d->name);
        int move = t == PDQ_OP_RESHAPE || t == PDQ_OP_TRANSPOSE || t == PDQ_OP_CONCATENATION ||
                   t == PDQ_OP_STRIDED_SLICE || t == PDQ_OP_SLICE || t == PDQ_OP_GATHER;
        assert_int_equal(pdq_op_is_data_move((pdq_op_type)t), move);
        /* a data move keeps its codes, so its output is on its input's grid (all of them for a
         * concatenation); everything else computes new values on a grid of its own */
        int grid = !move ? PDQ_GRID_OWN : t == PDQ_OP_CONCATENATION ? PDQ_GRID_OF_ALL : PDQ_GRID_OF_DATA;
        assert_int_equal(d->grid, grid);
    }
    assert_null(pdq_op_def_of(PDQ_OP_COUNT));
    assert_null(pdq_op_def_of((pdq_op_type)-1));
    assert_null(pdq_circle_spelling_of(PDQ_OP_COUNT));
    assert_string_equal(pdq_op_name(PDQ_OP_COUNT), "?");
    assert_int_equal(pdq_op_of_circle(-12345), -1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fc_and_bmm),     cmocka_unit_test(test_elementwise),
        cmocka_unit_test(test_data_movement),  cmocka_unit_test(test_shape_errors),
        cmocka_unit_test(test_arena_and_hook), cmocka_unit_test(test_arena_steps), cmocka_unit_test(test_op_table), cmocka_unit_test(test_default_options),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
