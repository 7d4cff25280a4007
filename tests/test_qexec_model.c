/* Integer mode on the bundled model (RTN w4 weights, uint8 embedding / lm_head, int16 activations
 * calibrated on one window, TICO graph options): the in-memory static runtime lowered to the
 * integer executor and the Circle runtime in integer mode on the exported files give identical
 * int16 logits and K/V cache codes for prefill + 32 greedy decode steps, whole-model and
 * per-layer; the in-memory integer run is identical with 1 and 2 threads and with the scalar
 * kernels; integer mode stays close to fake-quant (the difference is printed). The same with
 * group-wise weights (groups of 32, the last one of the 688-wide down_proj shorter; Circle
 * BlockwiseQuantization in the files), also symmetric with f16 scales and no stored zero points
 * (the files' float32 scales are the f16 values). */
#include "circle/cinterp_share.h"
#include "testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pdq/circle_export.h"
#include "pdq/model.h"
#include "pdq/ptq.h"
#include "pdq/lower.h"
#include "pdq/qexec.h"
#include "pdq/quant.h"
#include "pdq/runtime.h"

enum { S = 48, STEPS = 32 };

static int argmax(const float *x, int n) {
    int b = 0;
    for (int i = 1; i < n; i++) if (x[i] > x[b]) b = i;
    return b;
}

/* The quantized checkpoint + ptq.json + exported files, as test_circle_export sets them up;
 * group > 0: weights in groups of that many columns; compact: symmetric, f16 group scales. */
static void make_quantized(char *qdir, char *out, int group, int compact) {
    pdq_status st = {0};
    pdq_model *m = NULL;
    assert_int_equal(pdq_model_load(PDQ_TEST_MODEL, &m, &st), PDQ_OK);
    pdq_set_threads(m, 1);
    pdq_quant_opts qo;
    pdq_quant_opts_default(&qo, 4);
    qo.method = PDQ_QM_RTN;
    qo.quiet = 1;
    qo.gptq.scheme.group = group;
    qo.gptq.scheme.partial_groups = group > 0;
    qo.gptq.scheme.sym = compact;
    qo.gptq.scheme.group_scale = compact ? PDQ_QSCALE_F16 : PDQ_QSCALE_F32;
    pdq_qmodel qm;
    memset(&qm, 0, sizeof qm);
    assert_int_equal(pdq_quantize_model(m, &qo, NULL, 0, 0, &qm, &st), PDQ_OK);
    assert_int_equal(pdq_quant_save(qdir, PDQ_TEST_MODEL, m, &qm, &st), PDQ_OK);
    pdq_qmodel_free(&qm);
    pdq_export_opts eo;
    pdq_export_opts_default(&eo);
    pdq_ptq_opts po;
    pdq_ptq_opts_default(&po);
    pdq_ptq *cal;
    pdq_ptq_quantize_norms(m);
    assert_int_equal(pdq_ptq_create(m, S, &eo.so, &po, &cal, &st), PDQ_OK);
    pdq_rt *rt;
    assert_int_equal(pdq_rt_create(m, 1, S, &eo.so, &rt, &st), PDQ_OK);
    int32_t win[S];
    uint64_t rs = 3;
    win[0] = 1;
    for (int i = 1; i < S; i++) win[i] = 300 + (int32_t)(tu_rand(&rs) % 2000);
    for (int i = 1; i < S; i += 3) win[i] = 278;
    pdq_ptq_calib_opts co = {.decode_steps = 2, .pad = PDQ_PAD_RIGHT};
    assert_int_equal(pdq_ptq_calibrate(cal, rt, win, 1, &co, &st), PDQ_OK);
    char path[1024];
    snprintf(path, sizeof path, "%s/ptq.json", qdir);
    assert_int_equal(pdq_ptq_save(cal, path, NULL, &st), PDQ_OK);
    pdq_rt_free(rt);
    pdq_ptq_free(cal);
    pdq_model_free(m);
    assert_int_equal(pdq_model_load(qdir, &m, &st), PDQ_OK);
    pdq_set_threads(m, 1);
    pdq_ptq *ptq = NULL;
    assert_int_equal(pdq_ptq_open_runtime(m, qdir, 1, S, NULL, &rt, &ptq, &st), PDQ_OK); /* norms fake-quantized */
    eo.max_seq = S;
    eo.quiet = 1;
    eo.quant_dir = qdir;
    if (pdq_export_model(m, out, &eo, &st) != PDQ_OK) fprintf(stderr, "%s\n", st.msg);
    assert_int_equal(st.code, PDQ_OK);
    pdq_rt_free(rt);
    pdq_ptq_free(ptq);
    pdq_model_free(m);
}

/* One in-memory run: logits of the prefill's last token and each decode step, and every layer's
 * K/V cache after the last step (float values on the cache grids). */
typedef struct {
    float *logits;   /* (STEPS + 1, V) */
    float *kv;       /* L * 2 * (KV * C * hd) */
    int32_t seq[S];
} run_rec;

/* isa: 0 scalar kernels, 1 AVX2 at most, 2 the best the CPU has */
static void run_memory(const char *qdir, pdq_exec_mode mode, int threads, int isa, run_rec *r) {
    pdq_status st = {0};
    pdq_model *m = NULL;
    assert_int_equal(pdq_model_load(qdir, &m, &st), PDQ_OK);
    pdq_set_threads(m, 1);
    pdq_rt *rt = NULL;
    pdq_ptq *ptq = NULL;
    assert_int_equal(pdq_ptq_open_runtime(m, qdir, 1, S, NULL, &rt, &ptq, &st), PDQ_OK);
    pdq_pool *pool = pdq_pool_create(threads, &st);
    assert_non_null(pool);
    pdq_lowering *lw = NULL;
    if (mode == PDQ_EXEC_INT) {
        assert_int_equal(pdq_lowering_open(qdir, ptq, &lw, &st), PDQ_OK);
        pdq_exec_opts eo;
        pdq_exec_opts_default(&eo);
        eo.mode = PDQ_EXEC_INT;
        eo.pool = pool;
        eo.force_scalar = isa == 0;
        eo.no_avx512 = isa == 1;
        if (pdq_rt_set_lowering(rt, pdq_lowering_lower, lw, &eo, &st) != PDQ_OK) fprintf(stderr, "%s\n", st.msg);
        assert_int_equal(st.code, PDQ_OK);
    }
    int V = m->cfg.vocab_size, L = m->cfg.n_layers;
    size_t cn = (size_t)m->cfg.n_kv_heads * (S - 1) * m->cfg.head_dim;
    r->logits = malloc(sizeof(float) * (size_t)V * (STEPS + 1));
    r->kv = malloc(sizeof(float) * cn * 2 * (size_t)L);
    int32_t seq[S] = {1, 450, 3186, 310, 278, 6171, 471, 2000};
    int n = 8;
    assert_int_equal(pdq_rt_prefill(rt, 1, n, seq, NULL, PDQ_PAD_RIGHT, r->logits, NULL, &st), PDQ_OK);
    for (int step = 0; step < STEPS; step++) {
        seq[n] = argmax(r->logits + (size_t)step * V, V);
        n++;
        assert_int_equal(pdq_rt_decode(rt, 1, &seq[n - 1], r->logits + (size_t)(step + 1) * V, &st), PDQ_OK);
    }
    memcpy(r->seq, seq, sizeof seq);
    for (int l = 0; l < L; l++)
        for (int w = 0; w < 2; w++) memcpy(r->kv + (2 * (size_t)l + w) * cn, pdq_rt_cache(rt, l, w), cn * sizeof(float));
    pdq_lowering_free(lw);
    pdq_pool_free(pool);
    pdq_rt_free(rt);
    pdq_ptq_free(ptq);
    pdq_model_free(m);
}

static void rec_free(run_rec *r) { free(r->logits); free(r->kv); }

static void expect_identical(const run_rec *a, const run_rec *b, size_t nl, size_t nkv, const char *what) {
    assert_memory_equal(a->seq, b->seq, sizeof a->seq);
    for (size_t i = 0; i < nl; i++)
        if (a->logits[i] != b->logits[i]) { fprintf(stderr, "%s: logit %zu %.9g vs %.9g\n", what, i, a->logits[i], b->logits[i]); fail(); }
    for (size_t i = 0; i < nkv; i++)
        if (a->kv[i] != b->kv[i]) { fprintf(stderr, "%s: kv %zu %.9g vs %.9g\n", what, i, a->kv[i], b->kv[i]); fail(); }
}

/* The prefill and decode graphs of a layer, lowered, hold one copy of each weight's codes (the
 * checkpoint's, packed as Circle stores them), and keep it when the lowering is freed first. */
static void expect_shared_codes(const char *qdir) {
    pdq_status st = {0};
    pdq_model *m = NULL;
    assert_int_equal(pdq_model_load(qdir, &m, &st), PDQ_OK);
    pdq_rt *rt = NULL;
    pdq_ptq *ptq = NULL;
    assert_int_equal(pdq_ptq_open_runtime(m, qdir, 1, S, NULL, &rt, &ptq, &st), PDQ_OK);
    pdq_lowering *lw = NULL;
    assert_int_equal(pdq_lowering_open(qdir, ptq, &lw, &st), PDQ_OK);
    const pdq_graph *gp, *gd;
    assert_int_equal(pdq_rt_layer_graph(rt, PDQ_MODE_PREFILL, 0, 1, &gp, &st), PDQ_OK);
    assert_int_equal(pdq_rt_layer_graph(rt, PDQ_MODE_APPEND, 1, 1, &gd, &st), PDQ_OK);
    pdq_graph *qp = NULL, *qd = NULL;
    assert_int_equal(pdq_lowering_lower(lw, gp, &qp, &st), PDQ_OK);
    assert_int_equal(pdq_lowering_lower(lw, gd, &qd, &st), PDQ_OK);
    const char *names[] = {"model.layers.1.mlp.down_proj.weight", "model.layers.1.self_attn.q_proj.weight"};
    const pdq_tensor *tp[2], *td[2];
    for (int i = 0; i < 2; i++) {
        int a = pdq_graph_find(qp, names[i]), b = pdq_graph_find(qd, names[i]);
        assert_true(a >= 0 && b >= 0);
        tp[i] = &qp->tensors[a];
        td[i] = &qd->tensors[b];
        assert_int_equal(tp[i]->dtype, PDQ_TU4);
        assert_true(tp[i]->data == td[i]->data); /* one copy */
        assert_false(tp[i]->owned);
        assert_false(td[i]->owned);
        assert_memory_equal(tp[i]->q->scale, td[i]->q->scale, sizeof(float) * (size_t)tp[i]->q->n);
    }
    uint64_t before = 0, after = 0;
    for (size_t k = 0; k < pdq_tensor_bytes(tp[0]); k++) before = before * 31 + ((const uint8_t *)tp[0]->data)[k];
    pdq_lowering_free(lw); /* the graphs keep their codes */
    pdq_graph_free(qd);
    for (size_t k = 0; k < pdq_tensor_bytes(tp[0]); k++) after = after * 31 + ((const uint8_t *)tp[0]->data)[k];
    assert_true(before == after);
    pdq_graph_free(qp);
    pdq_rt_free(rt);
    pdq_ptq_free(ptq);
    pdq_model_free(m);
}

/* Fake-quant Circle files of one export: the decode file opened like the prefill file borrows
 * its float copies of the weights (equal constants), one opened on its own makes its own, equal. */
static void expect_shared_float_copies(const char *out) {
    char pp[1024], pd[1024];
    snprintf(pp, sizeof pp, "%s/model_prefill.q.circle", out);
    snprintf(pd, sizeof pd, "%s/model_decode.q.circle", out);
    pdq_status st = {0};
    pdq_exec_opts eo;
    pdq_exec_opts_default(&eo);
    eo.mode = PDQ_EXEC_FAKE;
    pdq_cgraph *p = NULL, *d = NULL, *d2 = NULL;
    assert_int_equal(pdq_cg_open_opts(pp, &eo, &p, &st), PDQ_OK);
    assert_int_equal(pdq_cg_open_like(pd, &eo, p, &d, &st), PDQ_OK);
    assert_int_equal(pdq_cg_open_opts(pd, &eo, &d2, &st), PDQ_OK);
    const char *names[] = {"model.layers.0.mlp.down_proj.weight", "model.layers.3.self_attn.k_proj.weight", "lm_head.weight"};
    for (int i = 0; i < 3; i++) {
        const float *a = pdq_cg_const_data(p, names[i]), *b = pdq_cg_const_data(d, names[i]), *c = pdq_cg_const_data(d2, names[i]);
        assert_non_null(a);
        assert_true(a == b);
        assert_true(c != a);
        const pdq_graph *g = pdq_cg_graph(d2);
        size_t n = pdq_tensor_count(&g->tensors[pdq_graph_find(g, names[i])]);
        assert_memory_equal(a, c, n * sizeof(float));
    }
    pdq_cg_free(d);
    pdq_cg_free(d2);
    pdq_cg_free(p);
}

static void expect_close_to_fake(const char *qdir, const run_rec *i1, int V, size_t nl);

/* The Circle runtime in integer mode on the exported files, both layouts: the in-memory run's
 * logits and K/V cache codes, bit for bit. */
static void expect_circle_equal(const char *out, const run_rec *r, int V, int L, int KV, int hd) {
    pdq_status st = {0};
    size_t cn = (size_t)KV * (S - 1) * hd;
    const run_rec i1 = *r;
    pdq_pool *pool = pdq_pool_create(2, &st);
    assert_non_null(pool);
    pdq_exec_opts eo;
    pdq_exec_opts_default(&eo);
    eo.mode = PDQ_EXEC_INT;
    eo.pool = pool;
    float *a = malloc(sizeof(float) * (size_t)V);
    for (int whole = 1; whole >= 0; whole--) {
        pdq_crt *crt = NULL;
        if (pdq_crt_open_opts(out, whole, &eo, &crt, &st) != PDQ_OK) fprintf(stderr, "%s\n", st.msg);
        assert_non_null(crt);
        int n = 8 + STEPS; /* tokens in the cache at the end */
        assert_int_equal(pdq_crt_prefill(crt, i1.seq, 8, a, &st), PDQ_OK);
        for (int step = 0; step <= STEPS; step++) {
            if (step) assert_int_equal(pdq_crt_decode(crt, i1.seq[7 + step], a, &st), PDQ_OK);
            const float *want = i1.logits + (size_t)step * V;
            for (int k = 0; k < V; k++)
                if (a[k] != want[k]) {
                    fprintf(stderr, "%s step %d logit %d: circle %.9g in-memory %.9g\n", whole ? "whole" : "per-layer", step, k,
                            a[k], want[k]);
                    fail();
                }
            if (step < STEPS) assert_int_equal(argmax(a, V), i1.seq[8 + step]);
        }
        for (int l = 0; l < L; l++)
            for (int w = 0; w < 2; w++) {
                const pdq_tensor *t;
                const int16_t *c = pdq_crt_cache(crt, l, w, &t);
                assert_non_null(c);
                assert_true(t->dtype == PDQ_TI16 && t->q);
                const float *mem = i1.kv + (2 * (size_t)l + w) * cn;
                for (size_t i = 0; i < (size_t)KV * (S - 1) * hd; i++) {
                    size_t slot = (i / hd) % (S - 1);
                    if ((int)slot >= n) continue; /* unused slots */
                    assert_int_equal(c[i], pdq_cg_quantize_value(t, mem[i]));
                }
            }
        fprintf(stderr, "integer %s: Circle == in-memory, logits and K/V codes, prefill + %d decode steps\n",
                whole ? "whole-model" : "per-layer", STEPS);
        pdq_crt_free(crt);
    }
    free(a);
    pdq_pool_free(pool);
}

/* One quantized model (group 0: per channel), in memory and through its exported files. */
static void integer_case(int group, int compact) {
    char *qdir = tu_mkdtemp(), *out = tu_mkdtemp();
    make_quantized(qdir, out, group, compact);
    if (!group) {
        expect_shared_codes(qdir);
        expect_shared_float_copies(out);
    }
    pdq_status st = {0};
    pdq_model *m = NULL;
    assert_int_equal(pdq_model_load(qdir, &m, &st), PDQ_OK);
    int V = m->cfg.vocab_size, L = m->cfg.n_layers, KV = m->cfg.n_kv_heads, hd = m->cfg.head_dim;
    pdq_model_free(m);
    size_t nl = (size_t)V * (STEPS + 1), nkv = (size_t)KV * (S - 1) * hd * 2 * (size_t)L;
    run_rec i1, i2, is, ia;
    run_memory(qdir, PDQ_EXEC_INT, 1, 2, &i1);
    run_memory(qdir, PDQ_EXEC_INT, 2, 2, &i2);
    run_memory(qdir, PDQ_EXEC_INT, 2, 0, &is);
    run_memory(qdir, PDQ_EXEC_INT, 1, 1, &ia);
    expect_identical(&i1, &i2, nl, nkv, "1 vs 2 threads");
    expect_identical(&i1, &is, nl, nkv, "SIMD vs scalar");
    expect_identical(&i1, &ia, nl, nkv, "best SIMD vs AVX2");
    fprintf(stderr, "%s in-memory integer: 1 thread == 2 threads == scalar kernels == AVX2 (prefill + %d steps)\n",
            group ? "grouped" : "per-channel", STEPS);
    expect_circle_equal(out, &i1, V, L, KV, hd);
    expect_close_to_fake(qdir, &i1, V, nl);
    rec_free(&i1);
    rec_free(&i2);
    rec_free(&is);
    rec_free(&ia);
    tu_rmtree(qdir);
    tu_rmtree(out);
    free(qdir);
    free(out);
}

static void test_integer_exact(void **state) {
    (void)state;
    integer_case(0, 0);
}

/* Weights in groups of 32 columns (Circle BlockwiseQuantization in the files). */
static void test_integer_grouped(void **state) {
    (void)state;
    integer_case(32, 0);
}

/* Symmetric groups of 32 with f16 scales and no zero points in the checkpoint. */
static void test_integer_grouped_f16_sym(void **state) {
    (void)state;
    integer_case(32, 1);
}

/* integer vs fake-quant: a measurement, bounded loosely (a few grid steps of the logits) */
static void expect_close_to_fake(const char *qdir, const run_rec *i1, int V, size_t nl) {
    run_rec fk;
    run_memory(qdir, PDQ_EXEC_FAKE, 1, 2, &fk);
    double mx = 0, sum = 0;
    int top1 = 0;
    for (int s = 0; s <= STEPS; s++) {
        const float *x = i1->logits + (size_t)s * V, *y = fk.logits + (size_t)s * V;
        top1 += argmax(x, V) == argmax(y, V);
        for (int k = 0; k < V; k++) {
            double d = fabs((double)x[k] - (double)y[k]);
            sum += d;
            if (d > mx) mx = d;
        }
    }
    fprintf(stderr, "integer vs fake-quant (same tokens until they part): mean |dlogit| %.3g, max %.3g, top-1 %d/%d\n",
            sum / (double)nl, mx, top1, STEPS + 1);
    /* fake-quant is the oracle: a few grid steps of the logits apart at most */
    assert_true(top1 >= STEPS / 2);
    assert_true(mx < 0.05 && sum / (double)nl < 1e-3);
    rec_free(&fk);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_integer_exact),
        cmocka_unit_test(test_integer_grouped),
        cmocka_unit_test(test_integer_grouped_f16_sym),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
