/* PTQ of activations: grids (rounding, saturation) against brute-force nearest-grid search,
 * observers against hand-computed ranges, the edge table's sharing rules, the identity fake-quant
 * run against the FP32 static runtime and the reference model, the KV cache grid shared by
 * prefill and decode, and the ptq.json round trip. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "pdq/eval.h"
#include "pdq/ptq.h"
#include "pdq/runtime.h"

#define MAXSEQ 24

/* Brute force: the grid value nearest to x among codes [lo, hi] (ties: even code). */
static int64_t nearest_code(const pdq_agrid *g, double x, int64_t lo, int64_t hi) {
    int64_t best = lo;
    double bd = INFINITY;
    for (int64_t q = lo; q <= hi; q++) {
        double v = (double)(q - g->zero_point) * g->scale, d = fabs(v - x);
        if (d < bd || (d == bd && (q % 2 == 0))) { bd = d; best = q; }
    }
    return best;
}

/* Scales are the smallest float32 at or above the exact range / qmax (Circle stores float32). */
static int f32_ceil(double got, double exact) {
    return (double)(float)got == got && got >= exact && (double)nextafterf((float)got, 0.0f) < exact;
}

static void test_int16_rounding(void **state) {
    (void)state;
    pdq_agrid g;
    pdq_agrid_from_range(PDQ_ADT_INT16, -1.0, 32767.0 / 256.0, &g);
    assert_true(g.scale == 1.0 / 256.0); /* absmax / 32767, exactly a power of two here */
    assert_int_equal(g.zero_point, 0);
    assert_int_equal(g.qmax, 32767);
    assert_int_equal(g.qmin, -32768);
    /* Ties go to the even code, in the middle and at both ends. */
    int64_t ks[] = {0, 1, 2, 3, -1, -2, 100, 32765, 32766, -32767, -32768};
    for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) {
        double x = ((double)ks[i] + 0.5) / 256.0;
        int64_t want = nearest_code(&g, x, ks[i] - 2 < -32768 ? -32768 : ks[i] - 2, ks[i] + 2 > 32767 ? 32767 : ks[i] + 2);
        assert_int_equal(pdq_agrid_code(&g, (float)x), want);
        assert_int_equal(want % 2, 0);
    }
    /* Saturation at the edges of the range. */
    assert_int_equal(pdq_agrid_code(&g, 32767.5f / 256.0f), 32767);   /* tie rounds to 32768: clamped */
    assert_int_equal(pdq_agrid_code(&g, 40000.0f / 256.0f), 32767);
    assert_int_equal(pdq_agrid_code(&g, -32768.5f / 256.0f), -32768); /* tie to even, in range */
    assert_int_equal(pdq_agrid_code(&g, -32769.0f / 256.0f), -32768);
    assert_int_equal(pdq_agrid_code(&g, INFINITY), 32767);
    assert_int_equal(pdq_agrid_code(&g, -INFINITY), -32768);
    assert_int_equal(pdq_agrid_code(&g, NAN), 0);
    float v[3] = {40000.0f / 256.0f, -1e9f, 3.0f / 256.0f};
    assert_int_equal(pdq_agrid_clipped(&g, v, 3), 2);
    pdq_agrid_fq(&g, v, 3);
    assert_true(v[0] == 32767.0f / 256.0f && v[1] == -32768.0f / 256.0f && v[2] == 3.0f / 256.0f);
    /* A generic scale: every value lands on the nearest grid point (brute force). */
    uint64_t s = 7;
    pdq_agrid_from_range(PDQ_ADT_INT16, -3.3, 1.7, &g);
    assert_true(f32_ceil(g.scale, 3.3 / 32767));
    for (int i = 0; i < 2000; i++) {
        double x = (tu_randu(&s) * 2 - 1) * 3.6;
        int64_t c = pdq_agrid_code(&g, (float)x);
        int64_t ref = nearest_code(&g, (float)x, -32768, 32767);
        assert_int_equal(c, ref);
        float y = (float)x;
        pdq_agrid_fq(&g, &y, 1);
        assert_true(y == pdq_agrid_dequant(&g, c));
    }
}

static void test_uint8_rounding(void **state) {
    (void)state;
    pdq_agrid g;
    pdq_agrid_from_range(PDQ_ADT_UINT8, -1.0, 3.0, &g);
    assert_true(f32_ceil(g.scale, 4.0 / 255.0));
    assert_int_equal(g.zero_point, 64); /* round(255/4 = 63.75) */
    uint64_t s = 11;
    for (int i = 0; i < 3000; i++) {
        double x = (tu_randu(&s) * 2 - 1) * 5;
        assert_int_equal(pdq_agrid_code(&g, (float)x), nearest_code(&g, (float)x, 0, 255));
    }
    /* The range edges: min and max map to the end codes (after zero-point rounding). */
    assert_int_equal(pdq_agrid_code(&g, -1.0f), 0);
    assert_int_equal(pdq_agrid_code(&g, 100.0f), 255);
    assert_int_equal(pdq_agrid_code(&g, -100.0f), 0);
    assert_int_equal(pdq_agrid_code(&g, 0.0f), 64); /* zero is exact */
    float z = 0;
    pdq_agrid_fq(&g, &z, 1);
    assert_true(z == 0.0f);
    /* All-positive range: widened to include 0, zero point 0. */
    pdq_agrid_from_range(PDQ_ADT_UINT8, 2.0, 5.1, &g);
    assert_int_equal(g.zero_point, 0);
    assert_true(f32_ceil(g.scale, 5.1 / 255));
    /* Ties at a power-of-two scale go to the even code. */
    pdq_agrid_from_range(PDQ_ADT_UINT8, 0, 255.0 / 64.0, &g);
    assert_true(g.scale == 1.0 / 64.0);
    for (int k = 0; k < 254; k++) assert_int_equal(pdq_agrid_code(&g, (k + 0.5f) / 64.0f), k % 2 ? k + 1 : k);
    /* An all-zero range still has a usable grid. */
    pdq_agrid_from_range(PDQ_ADT_INT16, 0, 0, &g);
    assert_true(g.scale == 1.0);
}

static void test_observers(void **state) {
    (void)state;
    pdq_observer mm, ema;
    pdq_observer_init(&mm, PDQ_OBS_MINMAX, 0);
    pdq_observer_init(&ema, PDQ_OBS_EMA, 0.75);
    float b1[] = {1, -2, 3, NAN}, b2[] = {0.5f, 7, INFINITY}, b3[] = {-10, 0};
    double want_min = -2, want_max = 3;
    pdq_observer_see(&mm, b1, 4); pdq_observer_see(&ema, b1, 4);
    pdq_observer_step(&mm); pdq_observer_step(&ema);
    assert_true(mm.min == -2 && mm.max == 3 && ema.min == -2 && ema.max == 3);
    /* Two batches in one step: one range (min 0.5, max 7) for the EMA. */
    pdq_observer_see(&mm, b2, 3); pdq_observer_see(&ema, b2, 3);
    pdq_observer_see(&mm, b2, 2); pdq_observer_see(&ema, b2, 2);
    pdq_observer_step(&mm); pdq_observer_step(&ema);
    want_min = 0.75 * want_min + 0.25 * 0.5;
    want_max = 0.75 * want_max + 0.25 * 7;
    assert_true(mm.min == -2 && mm.max == 7);
    assert_true(fabs(ema.min - want_min) < 1e-12 && fabs(ema.max - want_max) < 1e-12);
    pdq_observer_see(&mm, b3, 2); pdq_observer_see(&ema, b3, 2);
    pdq_observer_step(&mm); pdq_observer_step(&ema);
    want_min = 0.75 * want_min + 0.25 * -10;
    want_max = 0.75 * want_max + 0.25 * 0;
    assert_true(mm.min == -10 && mm.max == 7);
    assert_true(fabs(ema.min - want_min) < 1e-12 && fabs(ema.max - want_max) < 1e-12);
    /* A step with nothing seen changes nothing. */
    pdq_observer_step(&ema);
    assert_int_equal(ema.steps, 3);
}

/* ---------------- on the bundled model ---------------- */

typedef struct {
    pdq_model *m;
    int32_t *train;
    long n_train;
} fixture;

static int32_t *read_u16(const char *path, long *n) {
    size_t len;
    char *buf = tu_read_file(path, &len);
    if (!buf) return NULL;
    *n = (long)(len / 2);
    int32_t *ids = malloc(sizeof(int32_t) * (size_t)*n);
    for (long i = 0; i < *n; i++)
        ids[i] = (int32_t)((unsigned char)buf[2 * i] | ((unsigned char)buf[2 * i + 1] << 8));
    free(buf);
    return ids;
}

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    pdq_status st = {0};
    if (pdq_model_load(PDQ_TEST_MODEL, &f->m, &st) != PDQ_OK) { fprintf(stderr, "%s\n", st.msg); return -1; }
    pdq_set_threads(f->m, 1);
    f->train = read_u16("data/web-bible/tokens-llama2/train.u16.bin", &f->n_train);
    if (!f->train) return -1;
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    pdq_model_free(f->m);
    free(f->train);
    free(f);
    return 0;
}

/* n windows of MAXSEQ ids, BOS first, at spread offsets of the train split. */
static int32_t *windows(const fixture *f, int n) {
    int32_t *w = malloc(sizeof(int32_t) * (size_t)n * MAXSEQ);
    for (int i = 0; i < n; i++) {
        long off = 1000 + (long)i * 7919;
        w[(size_t)i * MAXSEQ] = 1;
        memcpy(w + (size_t)i * MAXSEQ + 1, f->train + off, sizeof(int32_t) * (MAXSEQ - 1));
    }
    return w;
}

/* Min/max ranges are a maximum over samples, so calibrating the same samples in another order
 * must give the same bits -- decode steps included: each sample's decode starts from a cleared
 * cache, so the masked slots (which enter the mask sums) never hold another sample's keys. The
 * split calibration of pdq-mpi relies on this (tests/cli/mpi.sh checks the whole run). */
static void test_order_free(void **state) {
    fixture *f = *state;
    pdq_status st = {0};
    int32_t *w = windows(f, 3), *r = malloc(sizeof(int32_t) * 3 * MAXSEQ);
    for (int i = 0; i < 3; i++) memcpy(r + (size_t)i * MAXSEQ, w + (size_t)(2 - i) * MAXSEQ, sizeof(int32_t) * MAXSEQ);
    pdq_ptq *p[2];
    for (int k = 0; k < 2; k++) {
        pdq_rt *rt;
        assert_int_equal(pdq_rt_create(f->m, 1, MAXSEQ, NULL, &rt, &st), PDQ_OK);
        pdq_ptq_opts po;
        pdq_ptq_opts_default(&po);
        assert_int_equal(pdq_ptq_create(f->m, MAXSEQ, NULL, &po, &p[k], &st), PDQ_OK);
        pdq_ptq_calib_opts co = {.decode_steps = 3, .pad = PDQ_PAD_RIGHT};
        assert_int_equal(pdq_ptq_calibrate(p[k], rt, k ? r : w, 3, &co, &st), PDQ_OK);
        pdq_rt_free(rt);
    }
    assert_int_equal(pdq_ptq_n_groups(p[0]), pdq_ptq_n_groups(p[1]));
    for (int i = 0; i < pdq_ptq_n_groups(p[0]); i++) {
        pdq_ptq_group *a = pdq_ptq_group_at(p[0], i), *b = pdq_ptq_group_at(p[1], i);
        if (a->obs.min != b->obs.min || a->obs.max != b->obs.max) printf("%s: [%.9g %.9g] vs [%.9g %.9g]\n", a->name, a->obs.min, a->obs.max, b->obs.min, b->obs.max);
        assert_true(a->obs.min == b->obs.min && a->obs.max == b->obs.max);
        assert_true(a->obs.steps == b->obs.steps && a->obs.values == b->obs.values);
        assert_true(a->clipped == b->clipped && a->counted == b->counted);
    }
    pdq_ptq_free(p[0]);
    pdq_ptq_free(p[1]);
    free(w);
    free(r);
}

static void test_edge_table(void **state) {
    fixture *f = *state;
    pdq_status st = {0};
    for (int layout = 0; layout < 2; layout++) {
        pdq_static_opts so;
        pdq_static_opts_default(&so);
        so.layout = (pdq_attn_layout)layout;
        pdq_ptq *p;
        assert_int_equal(pdq_ptq_create(f->m, MAXSEQ, &so, NULL, &p, &st), PDQ_OK);
        char a[128], b[128];
        for (int l = 0; l < f->m->cfg.n_layers; l++) {
            snprintf(a, sizeof a, "model.layers.%d.past_key", l);
            snprintf(b, sizeof b, "model.layers.%d.self_attn.new_k", l);
            assert_true(pdq_ptq_find(p, a) >= 0);
            assert_int_equal(pdq_ptq_find(p, a), pdq_ptq_find(p, b));
            snprintf(a, sizeof a, "model.layers.%d.past_value", l);
            snprintf(b, sizeof b, "model.layers.%d.self_attn.new_v", l);
            assert_int_equal(pdq_ptq_find(p, a), pdq_ptq_find(p, b));
            snprintf(a, sizeof a, "model.layers.%d.hidden_states", l);
            if (l) snprintf(b, sizeof b, "model.layers.%d.out", l - 1);
            else snprintf(b, sizeof b, "model.embed_tokens.out");
            assert_int_equal(pdq_ptq_find(p, a), pdq_ptq_find(p, b));
            /* K and V keep separate grids; the projections their own. */
            snprintf(a, sizeof a, "model.layers.%d.past_key", l);
            snprintf(b, sizeof b, "model.layers.%d.past_value", l);
            assert_int_not_equal(pdq_ptq_find(p, a), pdq_ptq_find(p, b));
            snprintf(b, sizeof b, "model.layers.%d.self_attn.q_proj.out", l);
            assert_int_not_equal(pdq_ptq_find(p, a), pdq_ptq_find(p, b));
            snprintf(a, sizeof a, "model.layers.%d.attention_mask", l);
            pdq_ptq_group *G = pdq_ptq_group_at(p, pdq_ptq_find(p, a));
            assert_true(G->fixed && G->obs.min == -120 && G->obs.max == 0);
        }
        assert_int_equal(pdq_ptq_find(p, "model.norm.input"), pdq_ptq_find(p, "model.layers.3.out"));
        assert_true(pdq_ptq_find(p, "lm_head.out") >= 0);
        assert_int_equal(pdq_ptq_find(p, "no.such.edge"), -1);
        /* Every non-constant float tensor of a decode graph built independently is an edge. */
        pdq_graph *g;
        assert_int_equal(pdq_build_layer(f->m, 2, NULL, PDQ_MODE_APPEND, 2, MAXSEQ, 3, &so, &g, &st), PDQ_OK);
        for (int t = 0; t < g->n_tensors; t++)
            if (g->tensors[t].kind != PDQ_TK_CONST && g->tensors[t].dtype == PDQ_TF32)
                assert_true(pdq_ptq_find(p, g->tensors[t].name) >= 0);
        pdq_graph_free(g);
        /* Uncalibrated groups are refused by name. */
        assert_int_equal(pdq_ptq_finalize(p, PDQ_ADT_INT16, &st), PDQ_ERR_ARG);
        assert_non_null(strstr(st.msg, "never observed"));
        pdq_ptq_free(p);
    }
}

/* Prefill (all logits) + decode steps through rt; logits of every step into out. */
static void run_seq(pdq_rt *rt, const int32_t *ids, int P, int K, float *all, float *steps, int32_t *toks, int V) {
    pdq_status st = {0};
    pdq_rt_reset(rt);
    float *last = malloc(sizeof(float) * (size_t)V);
    assert_int_equal(pdq_rt_prefill(rt, 1, P, ids, NULL, PDQ_PAD_RIGHT, last, all, &st), PDQ_OK);
    for (int k = 0; k < K; k++) {
        int32_t t = toks ? toks[k] : pdq_argmax(last, V);
        assert_int_equal(pdq_rt_decode(rt, 1, &t, last, &st), PDQ_OK);
        memcpy(steps + (size_t)k * V, last, sizeof(float) * (size_t)V);
    }
    free(last);
}

static double maxdiff(const float *a, const float *b, size_t n) {
    double d = 0;
    for (size_t i = 0; i < n; i++) d = fmax(d, fabs((double)a[i] - b[i]));
    return d;
}

/* A 32-bit fake-quant run (grids from the very inputs evaluated: nothing clips) reproduces the
 * FP32 static runtime and the reference model: the quantization points are the only error. */
static void test_identity(void **state) {
    fixture *f = *state;
    pdq_status st = {0};
    int V = f->m->cfg.vocab_size, K = 4, P = MAXSEQ - 1 - K;
    int32_t *w = windows(f, 2);
    pdq_rt *rt;
    assert_int_equal(pdq_rt_create(f->m, 1, MAXSEQ, NULL, &rt, &st), PDQ_OK);
    pdq_ptq_opts po;
    pdq_ptq_opts_default(&po);
    po.adtype = PDQ_ADT_INT32;
    pdq_ptq *p;
    assert_int_equal(pdq_ptq_create(f->m, MAXSEQ, NULL, &po, &p, &st), PDQ_OK);
    pdq_ptq_calib_opts co = {.decode_steps = K, .pad = PDQ_PAD_RIGHT};
    assert_int_equal(pdq_ptq_calibrate(p, rt, w, 2, &co, &st), PDQ_OK);
    for (int i = 0; i < pdq_ptq_n_groups(p); i++) {
        pdq_ptq_group *G = pdq_ptq_group_at(p, i);
        assert_int_equal(G->grid.dt, PDQ_ADT_INT32);
        assert_true(G->clipped == 0); /* minmax on the same data */
        if (!G->fixed) assert_true(G->counted > 0);
    }
    float *a_fp = malloc(sizeof(float) * (size_t)P * V), *a_q = malloc(sizeof(float) * (size_t)P * V);
    float *s_fp = malloc(sizeof(float) * (size_t)K * V), *s_q = malloc(sizeof(float) * (size_t)K * V);
    int32_t toks[4];
    /* FP32 static greedy, as calibration decoded; the fake-quant run replays the same tokens. */
    run_seq(rt, w, P, K, a_fp, s_fp, NULL, V);
    for (int k = 0; k < K; k++) toks[k] = pdq_argmax(k ? s_fp + (size_t)(k - 1) * V : a_fp + (size_t)(P - 1) * V, V);
    pdq_ptq_attach(p, rt);
    pdq_ptq_set_mode(p, PDQ_PTQ_FAKEQUANT);
    run_seq(rt, w, P, K, a_q, s_q, toks, V);
    double d1 = maxdiff(a_fp, a_q, (size_t)P * V), d2 = maxdiff(s_fp, s_q, (size_t)K * V);
    printf("identity fake-quant vs FP32 static: prefill %.3g, decode %.3g\n", d1, d2);
    if (getenv("PTQ_DEBUG")) {
        pdq_ptq_set_mode(p, PDQ_PTQ_COUNT_CLIP);
        run_seq(rt, w, P, K, a_q, s_q, toks, V);
        for (int i = 0; i < pdq_ptq_n_groups(p); i++) {
            pdq_ptq_group *G = pdq_ptq_group_at(p, i);
            if (G->clipped > 0) printf("clip %s %g [%g %g]\n", G->name, G->clipped, G->obs.min, G->obs.max);
        }
        pdq_ptq_set_mode(p, PDQ_PTQ_FAKEQUANT);
    }
    assert_true(d1 <= 1e-4 && d2 <= 1e-4);
    /* And against the reference model on the whole sequence. */
    int32_t seq[MAXSEQ];
    memcpy(seq, w, sizeof(int32_t) * (size_t)P);
    memcpy(seq + P, toks, sizeof(int32_t) * (size_t)K);
    float *ref = malloc(sizeof(float) * (size_t)(P + K) * V);
    assert_int_equal(pdq_model_forward(f->m, NULL, 1, P + K, seq, NULL, NULL, ref, 0, &st), PDQ_OK);
    double d3 = maxdiff(ref, a_q, (size_t)P * V);
    for (int k = 0; k < K; k++) /* decode step k consumed toks[k] at position P + k */
        d3 = fmax(d3, maxdiff(ref + (size_t)(P + k) * V, s_q + (size_t)k * V, (size_t)V));
    printf("identity fake-quant vs reference: %.3g\n", d3);
    assert_true(d3 <= 1e-4);
    /* int16 on the same data is close but not identical: the grids do something. */
    assert_int_equal(pdq_ptq_finalize(p, PDQ_ADT_INT16, &st), PDQ_OK);
    run_seq(rt, w, P, K, a_q, s_q, toks, V);
    double d4 = maxdiff(a_fp, a_q, (size_t)P * V);
    printf("int16 fake-quant vs FP32 static: %.3g\n", d4);
    assert_true(d4 > 1e-6 && d4 < 0.5);
    pdq_rt_free(rt);
    pdq_ptq_free(p);
    free(ref); free(a_fp); free(a_q); free(s_fp); free(s_q); free(w);
}

/* Captures what the K cache carries across graphs. */
typedef struct {
    pdq_ptq *p;
    float *prefill_k;   /* copy of layer 1's prefill new_k output (1, KV, S, hd) */
    float *decode_past; /* copy of layer 1's decode past_key input (1, KV, S-1, hd) */
    size_t nk, np;
    int gk, gp;         /* their groups */
} capture;

static pdq_code cap_hook(void *ctx, const pdq_graph *g, int op, int t, float *data, pdq_status *st) {
    capture *c = ctx;
    pdq_code rc = pdq_ptq_hook(c->p, g, op, t, data, st); /* fake-quantize first */
    const char *n = g->tensors[t].name;
    size_t cnt = pdq_tensor_count(&g->tensors[t]);
    if (!strcmp(n, "model.layers.1.self_attn.new_k") && strstr(g->name, "prefill") && g->tensors[t].kind == PDQ_TK_OUTPUT) {
        c->prefill_k = realloc(c->prefill_k, cnt * sizeof(float));
        memcpy(c->prefill_k, data, cnt * sizeof(float));
        c->nk = cnt;
        c->gk = pdq_ptq_find(c->p, n);
    }
    if (!strcmp(n, "model.layers.1.past_key") && op == -1) {
        c->decode_past = realloc(c->decode_past, cnt * sizeof(float));
        memcpy(c->decode_past, data, cnt * sizeof(float));
        c->np = cnt;
        c->gp = pdq_ptq_find(c->p, n);
    }
    return rc;
}

static void test_shared_cache(void **state) {
    fixture *f = *state;
    pdq_status st = {0};
    int V = f->m->cfg.vocab_size, KV = f->m->cfg.n_kv_heads, hd = f->m->cfg.head_dim, S = MAXSEQ, P = 10;
    int32_t *w = windows(f, 3);
    pdq_rt *rt;
    assert_int_equal(pdq_rt_create(f->m, 1, S, NULL, &rt, &st), PDQ_OK);
    pdq_ptq *p;
    assert_int_equal(pdq_ptq_create(f->m, S, NULL, NULL, &p, &st), PDQ_OK);
    pdq_ptq_calib_opts co = {.decode_steps = 2};
    assert_int_equal(pdq_ptq_calibrate(p, rt, w, 3, &co, &st), PDQ_OK);
    capture c = {.p = p};
    pdq_ptq_set_mode(p, PDQ_PTQ_FAKEQUANT);
    pdq_rt_set_hook(rt, cap_hook, &c);
    float *logits = malloc(sizeof(float) * (size_t)V);
    pdq_rt_reset(rt);
    assert_int_equal(pdq_rt_prefill(rt, 1, P, w + S, NULL, PDQ_PAD_RIGHT, logits, NULL, &st), PDQ_OK);
    int32_t t = pdq_argmax(logits, V);
    assert_int_equal(pdq_rt_decode(rt, 1, &t, logits, &st), PDQ_OK);
    assert_non_null(c.prefill_k);
    assert_non_null(c.decode_past);
    assert_int_equal(c.gk, c.gp); /* one grid for K across prefill and decode */
    pdq_ptq_group *G = pdq_ptq_group_at(p, c.gk);
    assert_int_equal(G->grid.dt, PDQ_ADT_INT16);
    for (int h = 0; h < KV; h++)
        for (int j = 0; j < P; j++)
            for (int d = 0; d < hd; d++) {
                float wrote = c.prefill_k[((size_t)h * S + j) * hd + d];
                float read = c.decode_past[((size_t)h * (S - 1) + j) * hd + d];
                /* The cache copies grid values: the same code and value on both sides. */
                assert_true(wrote == read);
                assert_int_equal(pdq_agrid_code(&G->grid, wrote), pdq_agrid_code(&G->grid, read));
                assert_true(pdq_agrid_dequant(&G->grid, pdq_agrid_code(&G->grid, read)) == read);
            }
    pdq_rt_free(rt);
    pdq_ptq_free(p);
    free(c.prefill_k); free(c.decode_past); free(logits); free(w);
}

static void test_save_load(void **state) {
    fixture *f = *state;
    pdq_status st = {0};
    int32_t *w = windows(f, 2);
    pdq_static_opts so;
    pdq_static_opts_default(&so);
    so.layout = PDQ_RT_LAYOUT_UNROLLED;
    so.rope = PDQ_RT_ROPE_PRE_NEGATED_SIN;
    so.scale = PDQ_RT_SCALE_K_PROJ;
    pdq_rt *rt;
    assert_int_equal(pdq_rt_create(f->m, 1, MAXSEQ, &so, &rt, &st), PDQ_OK);
    pdq_ptq_opts po;
    pdq_ptq_opts_default(&po);
    po.adtype = PDQ_ADT_UINT8;
    po.observer = PDQ_OBS_EMA;
    po.ema_momentum = 0.8;
    pdq_ptq *p;
    assert_int_equal(pdq_ptq_create(f->m, MAXSEQ, &so, &po, &p, &st), PDQ_OK);
    pdq_ptq_calib_opts co = {.decode_steps = 0};
    assert_int_equal(pdq_ptq_calibrate(p, rt, w, 2, &co, &st), PDQ_OK);
    char *dir = tu_mkdtemp(), path[512];
    snprintf(path, sizeof path, "%s/ptq.json", dir);
    assert_int_equal(pdq_ptq_save(p, path, NULL, &st), PDQ_OK);
    assert_true(pdq_ptq_in_dir(dir));
    pdq_ptq *q;
    assert_int_equal(pdq_ptq_load(f->m, path, &q, &st), PDQ_OK);
    assert_int_equal(pdq_ptq_n_groups(q), pdq_ptq_n_groups(p));
    assert_int_equal(pdq_ptq_n_edges(q), pdq_ptq_n_edges(p));
    assert_int_equal(pdq_ptq_static_opts(q)->layout, PDQ_RT_LAYOUT_UNROLLED);
    assert_int_equal(pdq_ptq_get_opts(q)->observer, PDQ_OBS_EMA);
    int clipped_somewhere = 0;
    for (int i = 0; i < pdq_ptq_n_groups(p); i++) {
        pdq_ptq_group *a = pdq_ptq_group_at(p, i), *b = pdq_ptq_group_at(q, pdq_ptq_find(q, a->name));
        assert_true(a->grid.scale == b->grid.scale);
        assert_int_equal(a->grid.zero_point, b->grid.zero_point);
        assert_int_equal(a->grid.dt, PDQ_ADT_UINT8);
        assert_true(a->obs.min == b->obs.min && a->obs.max == b->obs.max && a->clipped == b->clipped);
        clipped_somewhere |= a->clipped > 0;
    }
    assert_true(clipped_somewhere); /* an EMA range does not cover every step */
    pdq_ptq_free(q);
    /* A table for other graph options does not load onto these names. */
    tu_write_file(path, "{\"format\": \"pdq-ptq\"}", 21);
    assert_int_equal(pdq_ptq_load(f->m, path, &q, &st), PDQ_ERR_MISSING);
    assert_non_null(strstr(st.msg, "activation_dtype"));
    tu_rmtree(dir);
    free(dir);
    pdq_rt_free(rt);
    pdq_ptq_free(p);
    free(w);
}

static void test_norm_weights(void **state) {
    fixture *f = *state;
    pdq_status st = {0};
    pdq_model *m;
    assert_int_equal(pdq_model_load(PDQ_TEST_MODEL, &m, &st), PDQ_OK);
    pdq_ptq_quantize_norms(m);
    int D = m->cfg.hidden_size;
    for (int i = 0; i < D; i++) {
        float a = f->m->layers[1].attn_norm[i], b = m->layers[1].attn_norm[i];
        /* per-channel int16: the code is +-32767 and the value within float rounding */
        assert_true(fabs((double)a - b) <= 2e-7 * fabs(a) + 1e-30);
    }
    pdq_model_free(m);
}

int main(void) {
    const struct CMUnitTest unit[] = {
        cmocka_unit_test(test_int16_rounding),
        cmocka_unit_test(test_uint8_rounding),
        cmocka_unit_test(test_observers),
    };
    const struct CMUnitTest model[] = {
        cmocka_unit_test(test_edge_table),
        cmocka_unit_test(test_identity),
        cmocka_unit_test(test_order_free),
        cmocka_unit_test(test_shared_cache),
        cmocka_unit_test(test_save_load),
        cmocka_unit_test(test_norm_weights),
    };
    int r = cmocka_run_group_tests_name("ptq_grids", unit, NULL, NULL);
    return r + cmocka_run_group_tests_name("ptq_model", model, setup, teardown);
}
