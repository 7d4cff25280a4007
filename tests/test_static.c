/* Static prefill/decode/append graphs + runtime vs the FP32 reference model on the bundled
 * checkpoint: logits within 1e-4 for every option combination, paddings, batch sizes, buckets;
 * greedy tokens identical; the graph I/O contract; every error case. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pdq/eval.h"
#include "pdq/model.h"
#include "pdq/runtime.h"
#include "testutil.h"

#define TOL 1e-4

static pdq_model *g_model;
static double g_worst; /* largest |Δlogit| seen over the whole run, printed at the end */

static int setup(void **state) {
    (void)state;
    pdq_status st = {0};
    if (pdq_model_load(PDQ_TEST_MODEL, &g_model, &st) != PDQ_OK) {
        fprintf(stderr, "load: %s\n", st.msg);
        return -1;
    }
    pdq_set_threads(g_model, 1);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    fprintf(stderr, "test_static: worst max|dlogit| vs reference = %.3g\n", g_worst);
    pdq_model_free(g_model);
    return 0;
}

static double max_abs_diff(const float *a, const float *b, int n) {
    double m = 0;
    for (int i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]);
        if (d > m || d != d) m = d != d ? INFINITY : d;
    }
    if (m > g_worst) g_worst = m;
    return m;
}

static void rand_ids(uint64_t *rs, int32_t *ids, int n) {
    for (int i = 0; i < n; i++) ids[i] = 3 + (int32_t)(tu_rand(rs) % (uint64_t)(g_model->cfg.vocab_size - 3));
}

/* Per-row incremental reference (its own dynamic KV cache, no padding). */
typedef struct {
    pdq_kvcache kv;
    float *logits;
} refrow;

static void ref_init(refrow *r, int cap) {
    pdq_status st = {0};
    assert_int_equal(pdq_kvcache_init(&r->kv, &g_model->cfg, 1, cap, &st), PDQ_OK);
    r->logits = malloc(sizeof(float) * (size_t)g_model->cfg.vocab_size);
}

static void ref_feed(refrow *r, const int32_t *ids, int n) {
    pdq_status st = {0};
    assert_int_equal(pdq_model_forward(g_model, &r->kv, 1, n, ids, NULL, NULL, r->logits, 1, &st), PDQ_OK);
}

static void ref_free(refrow *r) {
    pdq_kvcache_free(&r->kv);
    free(r->logits);
}

/* The reference trajectory of a scenario: prompts, then `steps` greedy tokens; logits of the
 * prefill and of every step for every row. Computed once, shared by all option combinations. */
typedef struct {
    int B, steps, lens[4];
    int32_t *ids[4];
    int32_t next[64][4];
    float *logits; /* [(steps + 1) * B * V] */
} traj;

static void traj_make(traj *t, int B, const int *lens, int max_seq, int steps, uint64_t seed) {
    int V = g_model->cfg.vocab_size;
    uint64_t rs = seed;
    memset(t, 0, sizeof *t);
    t->B = B;
    t->steps = steps;
    t->logits = malloc(sizeof(float) * (size_t)(steps + 1) * B * V);
    for (int b = 0; b < B; b++) {
        refrow ref;
        t->lens[b] = lens[b];
        t->ids[b] = malloc(sizeof(int32_t) * (size_t)lens[b]);
        rand_ids(&rs, t->ids[b], lens[b]);
        ref_init(&ref, max_seq);
        ref_feed(&ref, t->ids[b], lens[b]);
        for (int s = 0; s <= steps; s++) {
            memcpy(t->logits + ((size_t)s * B + b) * V, ref.logits, sizeof(float) * (size_t)V);
            if (s == steps) break;
            t->next[s][b] = pdq_argmax(ref.logits, V);
            ref_feed(&ref, &t->next[s][b], 1);
        }
        ref_free(&ref);
    }
}

static void traj_free(traj *t) {
    for (int b = 0; b < t->B; b++) free(t->ids[b]);
    free(t->logits);
}

/* Prefill the trajectory's prompts, then decode its tokens; every step's logits of every row must
 * match the reference within TOL. */
static void scenario(const pdq_static_opts *o, const traj *t, pdq_padding pad, int max_seq) {
    int V = g_model->cfg.vocab_size, B = t->B;
    pdq_status st = {0};
    pdq_rt *rt;
    assert_int_equal(pdq_rt_create(g_model, B, max_seq, o, &rt, &st), PDQ_OK);
    float *logits = malloc(sizeof(float) * (size_t)B * V);
    assert_int_equal(pdq_rt_prefill_rows(rt, B, (const int32_t *const *)t->ids, t->lens, pad, logits, &st), PDQ_OK);
    for (int s = 0; s <= t->steps; s++) {
        if (s > 0) assert_int_equal(pdq_rt_decode(rt, B, t->next[s - 1], logits, &st), PDQ_OK);
        for (int b = 0; b < B; b++) {
            double d = max_abs_diff(t->logits + ((size_t)s * B + b) * V, logits + (size_t)b * V, V);
            if (d > TOL) print_error("step %d row %d: max|d| %g\n", s, b, d);
            assert_true(d <= TOL);
            assert_int_equal(pdq_rt_len(rt, b), t->lens[b] + s);
        }
    }
    free(logits);
    pdq_rt_free(rt);
}

/* Every rope x scale-fusion x layout combination, left and right padding, 32 decode steps. */
static void test_option_matrix(void **state) {
    (void)state;
    int lens[3] = {5, 17, 11};
    /* 32 steps in Release; fewer under the sanitizers, which only look for memory errors here */
    int steps = getenv("PDQ_ASAN") ? 6 : 32;
    traj t;
    traj_make(&t, 3, lens, 64, steps, 100);
    for (int combo = 0; combo < 8; combo++)
        for (int pad = 0; pad < 2; pad++) {
            pdq_static_opts o;
            pdq_static_opts_default(&o);
            o.rope = (combo & 1) ? PDQ_RT_ROPE_PRE_NEGATED_SIN : PDQ_RT_ROPE_HF;
            o.scale = (combo & 2) ? PDQ_RT_SCALE_K_PROJ : PDQ_RT_SCALE_LOGITS;
            o.layout = (combo & 4) ? PDQ_RT_LAYOUT_UNROLLED : PDQ_RT_LAYOUT_BATCHED;
            scenario(&o, &t, (pdq_padding)pad, 64);
        }
    traj_free(&t);
}

/* Batch sizes 1..4 with mixed lengths (including a prompt filling max_seq - 32 - 1). */
static void test_batch_sizes(void **state) {
    (void)state;
    int lens[4][4] = {{9}, {3, 20}, {1, 14, 7}, {31, 2, 16, 8}};
    for (int B = 1; B <= 4; B++) {
        pdq_static_opts o;
        pdq_static_opts_default(&o);
        traj t;
        traj_make(&t, B, lens[B - 1], 64, 32, 200 + (uint64_t)B);
        scenario(&o, &t, B % 2 ? PDQ_PAD_LEFT : PDQ_PAD_RIGHT, 64);
        traj_free(&t);
    }
}

/* Greedy generation, each side choosing its own argmax: identical tokens for 64 steps. */
static void test_greedy_64(void **state) {
    (void)state;
    int V = g_model->cfg.vocab_size, B = 2, steps = 64, max_seq = 80;
    int lens[2] = {7, 12};
    uint64_t rs = 300;
    pdq_status st = {0};
    pdq_static_opts o;
    pdq_static_opts_default(&o);
    o.rope = PDQ_RT_ROPE_PRE_NEGATED_SIN;
    o.scale = PDQ_RT_SCALE_K_PROJ;
    o.layout = PDQ_RT_LAYOUT_UNROLLED; /* the NPU export profile */
    pdq_rt *rt;
    assert_int_equal(pdq_rt_create(g_model, B, max_seq, &o, &rt, &st), PDQ_OK);
    int32_t *ids[2];
    refrow ref[2];
    for (int b = 0; b < B; b++) {
        ids[b] = malloc(sizeof(int32_t) * (size_t)lens[b]);
        rand_ids(&rs, ids[b], lens[b]);
        ref_init(&ref[b], max_seq);
        ref_feed(&ref[b], ids[b], lens[b]);
    }
    float *logits = malloc(sizeof(float) * (size_t)B * V);
    assert_int_equal(pdq_rt_prefill_rows(rt, B, (const int32_t *const *)ids, lens, PDQ_PAD_LEFT, logits, &st), PDQ_OK);
    for (int s = 0; s < steps; s++) {
        int32_t mine[2];
        for (int b = 0; b < B; b++) {
            mine[b] = pdq_argmax(logits + (size_t)b * V, V);
            int32_t theirs = pdq_argmax(ref[b].logits, V);
            assert_int_equal(mine[b], theirs);
            ref_feed(&ref[b], &theirs, 1);
        }
        assert_int_equal(pdq_rt_decode(rt, B, mine, logits, &st), PDQ_OK);
    }
    for (int b = 0; b < B; b++) { free(ids[b]); ref_free(&ref[b]); }
    free(logits);
    pdq_rt_free(rt);
}

/* Reference on a whole sequence, all positions. */
static float *ref_all(const int32_t *ids, int n) {
    pdq_status st = {0};
    float *l = malloc(sizeof(float) * (size_t)n * g_model->cfg.vocab_size);
    assert_int_equal(pdq_model_forward(g_model, NULL, 1, n, ids, NULL, NULL, l, 0, &st), PDQ_OK);
    return l;
}

/* Appending a turn through buckets == token-by-token decode == reference on the concatenation. */
static void test_append(void **state) {
    (void)state;
    int V = g_model->cfg.vocab_size, B = 2, max_seq = 64, Q = 4;
    int lens[2] = {6, 9}, turn[2] = {13, 7};
    uint64_t rs = 400;
    pdq_status st = {0};
    for (int layout = 0; layout < 2; layout++) {
        pdq_static_opts o;
        pdq_static_opts_default(&o);
        o.layout = layout ? PDQ_RT_LAYOUT_UNROLLED : PDQ_RT_LAYOUT_BATCHED;
        o.rope = layout ? PDQ_RT_ROPE_PRE_NEGATED_SIN : PDQ_RT_ROPE_HF;
        pdq_rt *ra, *rd;
        assert_int_equal(pdq_rt_create(g_model, B, max_seq, &o, &ra, &st), PDQ_OK);
        assert_int_equal(pdq_rt_create(g_model, B, max_seq, &o, &rd, &st), PDQ_OK);
        int32_t seq[2][64];
        for (int b = 0; b < B; b++) rand_ids(&rs, seq[b], lens[b] + turn[b]);
        const int32_t *p[2] = {seq[0], seq[1]};
        float *la = malloc(sizeof(float) * (size_t)B * V), *ld = malloc(sizeof(float) * (size_t)B * V);
        float *all = malloc(sizeof(float) * (size_t)B * 13 * V);
        assert_int_equal(pdq_rt_prefill_rows(ra, B, p, lens, PDQ_PAD_RIGHT, la, &st), PDQ_OK);
        assert_int_equal(pdq_rt_prefill_rows(rd, B, p, lens, PDQ_PAD_LEFT, ld, &st), PDQ_OK);
        /* The turn, real tokens first in each row of a (B, 13) block. */
        int32_t tids[2 * 13] = {0};
        for (int b = 0; b < B; b++) memcpy(tids + b * 13, seq[b] + lens[b], sizeof(int32_t) * (size_t)turn[b]);
        assert_int_equal(pdq_rt_append(ra, B, 13, tids, turn, Q, la, all, &st), PDQ_OK);
        /* Token by token through decode; rows with a shorter turn use append of n = 0. */
        float *dec_last = calloc((size_t)B * V, sizeof(float));
        for (int t = 0; t < 13; t++) {
            int32_t one[2];
            int n1[2];
            for (int b = 0; b < B; b++) { n1[b] = t < turn[b]; one[b] = n1[b] ? tids[b * 13 + t] : 0; }
            if (n1[0] && n1[1]) assert_int_equal(pdq_rt_decode(rd, B, one, ld, &st), PDQ_OK);
            else assert_int_equal(pdq_rt_append(rd, B, 1, one, n1, 1, ld, NULL, &st), PDQ_OK);
            for (int b = 0; b < B; b++)
                if (t == turn[b] - 1) memcpy(dec_last + (size_t)b * V, ld + (size_t)b * V, sizeof(float) * (size_t)V);
        }
        for (int b = 0; b < B; b++) {
            int n = lens[b] + turn[b];
            assert_int_equal(pdq_rt_len(ra, b), n);
            assert_int_equal(pdq_rt_len(rd, b), n);
            float *ref = ref_all(seq[b], n);
            assert_true(max_abs_diff(la + (size_t)b * V, dec_last + (size_t)b * V, V) <= TOL);
            assert_true(max_abs_diff(la + (size_t)b * V, ref + (size_t)(n - 1) * V, V) <= TOL);
            for (int t = 0; t < turn[b]; t++)
                assert_true(max_abs_diff(all + ((size_t)b * 13 + t) * V, ref + (size_t)(lens[b] + t) * V, V) <= TOL);
            free(ref);
        }
        /* And decoding continues consistently after the append. */
        int32_t nx[2] = {pdq_argmax(la, V), pdq_argmax(la + V, V)};
        assert_int_equal(pdq_rt_decode(ra, B, nx, la, &st), PDQ_OK);
        for (int b = 0; b < B; b++) {
            int n = lens[b] + turn[b];
            seq[b][n] = nx[b];
            float *ref = ref_all(seq[b], n + 1);
            assert_true(max_abs_diff(la + (size_t)b * V, ref + (size_t)n * V, V) <= TOL);
            free(ref);
        }
        free(la);
        free(ld);
        free(all);
        free(dec_last);
        pdq_rt_free(ra);
        pdq_rt_free(rd);
    }
}

/* All-position logits of the prefill graph (perplexity path), both paddings. */
static void test_prefill_all_logits(void **state) {
    (void)state;
    int V = g_model->cfg.vocab_size, T = 20, max_seq = 32;
    uint64_t rs = 500;
    pdq_status st = {0};
    int32_t ids[20];
    rand_ids(&rs, ids, T);
    float *ref = ref_all(ids, T);
    pdq_rt *rt;
    assert_int_equal(pdq_rt_create(g_model, 1, max_seq, NULL, &rt, &st), PDQ_OK);
    float *all = malloc(sizeof(float) * (size_t)T * V);
    assert_int_equal(pdq_rt_window_logits(rt, ids, T, all, &st), PDQ_OK);
    assert_true(max_abs_diff(all, ref, T * V) <= TOL);
    assert_int_equal(pdq_rt_prefill(rt, 1, T, ids, NULL, PDQ_PAD_LEFT, NULL, all, &st), PDQ_OK);
    assert_true(max_abs_diff(all, ref, T * V) <= TOL);
    free(all);
    free(ref);
    pdq_rt_free(rt);
    /* Caller-provided left padding: only the real positions are compared. */
    assert_int_equal(pdq_rt_create(g_model, 2, max_seq, NULL, &rt, &st), PDQ_OK);
    int32_t pid[2 * 20] = {0};
    uint8_t pm[2 * 20] = {0};
    memcpy(pid, ids, sizeof ids);
    memset(pm, 1, 20);
    memcpy(pid + 20 + 8, ids, sizeof(int32_t) * 12);
    memset(pm + 20 + 8, 1, 12);
    all = malloc(sizeof(float) * 2 * (size_t)T * V);
    float *last = malloc(sizeof(float) * 2 * (size_t)V);
    assert_int_equal(pdq_rt_prefill(rt, 2, T, pid, pm, PDQ_PAD_LEFT, last, all, &st), PDQ_OK);
    ref = ref_all(ids, T);
    assert_true(max_abs_diff(all, ref, T * V) <= TOL);
    assert_true(max_abs_diff(all + (size_t)(20 + 8) * V, ref, 12 * V) <= TOL);
    assert_true(max_abs_diff(last + V, ref + (size_t)11 * V, V) <= TOL);
    free(ref);
    free(all);
    free(last);
    pdq_rt_free(rt);
}

/* Seeded random cases: batch, lengths, padding, options, bucket, turn lengths, decode steps. */
static void test_random_properties(void **state) {
    (void)state;
    int V = g_model->cfg.vocab_size;
    uint64_t rs = 600;
    pdq_status st = {0};
    for (int cs = 0; cs < 6; cs++) {
        int B = 1 + (int)(tu_rand(&rs) % 4);
        int max_seq = 32 + 16 * (int)(tu_rand(&rs) % 3);
        int Q = 1 + (int)(tu_rand(&rs) % 8);
        pdq_static_opts o;
        pdq_static_opts_default(&o);
        o.rope = (pdq_rope_conv)(tu_rand(&rs) % 2);
        o.scale = (pdq_scale_fusion)(tu_rand(&rs) % 2);
        o.layout = (pdq_attn_layout)(tu_rand(&rs) % 2);
        pdq_padding pad = (pdq_padding)(tu_rand(&rs) % 2);
        int lens[4], turn[4], steps = (int)(tu_rand(&rs) % 4), maxturn = 0;
        int32_t seq[4][64];
        refrow ref[4];
        for (int b = 0; b < B; b++) {
            lens[b] = 1 + (int)(tu_rand(&rs) % (uint64_t)(max_seq / 3));
            /* the turn must fit its buckets: len + steps + turn <= max_seq - Q */
            int room = max_seq - Q - lens[b] - steps - 2;
            turn[b] = (int)(tu_rand(&rs) % (uint64_t)(room > 1 ? room : 1));
            if (turn[b] > maxturn) maxturn = turn[b];
            rand_ids(&rs, seq[b], lens[b] + turn[b]);
            ref_init(&ref[b], max_seq);
            ref_feed(&ref[b], seq[b], lens[b]);
        }
        if (maxturn == 0) { turn[0] = 1; maxturn = 1; rand_ids(&rs, seq[0] + lens[0], 1); }
        pdq_rt *rt;
        assert_int_equal(pdq_rt_create(g_model, B, max_seq, &o, &rt, &st), PDQ_OK);
        const int32_t *p[4] = {seq[0], seq[1], seq[2], seq[3]};
        float *logits = malloc(sizeof(float) * (size_t)B * V);
        assert_int_equal(pdq_rt_prefill_rows(rt, B, p, lens, pad, logits, &st), PDQ_OK);
        for (int b = 0; b < B; b++) assert_true(max_abs_diff(ref[b].logits, logits + (size_t)b * V, V) <= TOL);
        int32_t dec[4][4];
        for (int s = 0; s < steps; s++) {
            int32_t nx[4];
            for (int b = 0; b < B; b++) { nx[b] = pdq_argmax(ref[b].logits, V); dec[b][s] = nx[b]; }
            assert_int_equal(pdq_rt_decode(rt, B, nx, logits, &st), PDQ_OK);
            for (int b = 0; b < B; b++) {
                ref_feed(&ref[b], &nx[b], 1);
                assert_true(max_abs_diff(ref[b].logits, logits + (size_t)b * V, V) <= TOL);
            }
        }
        int32_t *tids = calloc((size_t)B * maxturn, sizeof(int32_t));
        for (int b = 0; b < B; b++) memcpy(tids + (size_t)b * maxturn, seq[b] + lens[b], sizeof(int32_t) * (size_t)turn[b]);
        float *all = malloc(sizeof(float) * (size_t)B * maxturn * V);
        assert_int_equal(pdq_rt_append(rt, B, maxturn, tids, turn, Q, logits, all, &st), PDQ_OK);
        for (int b = 0; b < B; b++) {
            for (int t = 0; t < turn[b]; t++) {
                ref_feed(&ref[b], tids + (size_t)b * maxturn + t, 1);
                assert_true(max_abs_diff(ref[b].logits, all + ((size_t)b * maxturn + t) * V, V) <= TOL);
            }
            if (turn[b] > 0) assert_true(max_abs_diff(ref[b].logits, logits + (size_t)b * V, V) <= TOL);
            assert_int_equal(pdq_rt_len(rt, b), lens[b] + steps + turn[b]);
        }
        (void)dec;
        free(tids);
        free(all);
        free(logits);
        for (int b = 0; b < B; b++) ref_free(&ref[b]);
        pdq_rt_free(rt);
    }
}

static int has_op(const pdq_graph *g, pdq_op_type t) {
    for (int i = 0; i < g->n_ops; i++)
        if (g->ops[i].type == t) return 1;
    return 0;
}

static void expect_tensor(const pdq_graph *g, int tid, const char *name, int ndim, const int *shape) {
    const pdq_tensor *t = &g->tensors[tid];
    assert_string_equal(t->name, name);
    assert_int_equal(t->ndim, ndim);
    for (int i = 0; i < ndim; i++) assert_int_equal(t->shape[i], shape[i]);
}

/* Inputs/outputs, names, shapes and order of the three graph kinds; option-specific ops. */
static void test_graph_contract(void **state) {
    (void)state;
    const pdq_config *c = &g_model->cfg;
    int D = c->hidden_size, KV = c->n_kv_heads, hd = c->head_dim, B = 2, L = 16;
    pdq_status st = {0};
    pdq_graph *g;
    assert_int_equal(pdq_build_layer(g_model, 1, NULL, PDQ_MODE_PREFILL, B, L, 0, NULL, &g, &st), PDQ_OK);
    assert_int_equal(g->n_inputs, 4);
    assert_int_equal(g->n_outputs, 3);
    expect_tensor(g, g->inputs[0], "model.layers.1.hidden_states", 3, (int[]){B, L, D});
    expect_tensor(g, g->inputs[1], "model.layers.1.attention_mask", 3, (int[]){B, L, L});
    expect_tensor(g, g->inputs[2], "model.layers.1.cos", 3, (int[]){B, L, hd});
    expect_tensor(g, g->inputs[3], "model.layers.1.sin", 3, (int[]){B, L, hd});
    expect_tensor(g, g->outputs[0], "model.layers.1.out", 3, (int[]){B, L, D});
    expect_tensor(g, g->outputs[1], "model.layers.1.self_attn.new_k", 4, (int[]){B, KV, L, hd});
    expect_tensor(g, g->outputs[2], "model.layers.1.self_attn.new_v", 4, (int[]){B, KV, L, hd});
    assert_true(pdq_graph_find(g, "model.layers.1.self_attn.q_proj.out") >= 0);
    assert_true(has_op(g, PDQ_OP_NEG) && has_op(g, PDQ_OP_RMS_NORM));
    assert_true(has_op(g, PDQ_OP_GATHER) == (c->n_heads != KV));
    pdq_graph_free(g);
    int Qs[2] = {1, 5};
    for (int i = 0; i < 2; i++) {
        int Q = Qs[i];
        pdq_static_opts o;
        pdq_static_opts_default(&o);
        o.rope = PDQ_RT_ROPE_PRE_NEGATED_SIN;
        o.scale = PDQ_RT_SCALE_K_PROJ;
        o.layout = PDQ_RT_LAYOUT_UNROLLED;
        assert_int_equal(pdq_build_layer(g_model, 0, NULL, PDQ_MODE_APPEND, B, L, Q, &o, &g, &st), PDQ_OK);
        assert_int_equal(g->n_inputs, 6);
        expect_tensor(g, g->inputs[0], "model.layers.0.hidden_states", 3, (int[]){B, Q, D});
        expect_tensor(g, g->inputs[1], "model.layers.0.attention_mask", 3, (int[]){B, Q, L});
        expect_tensor(g, g->inputs[2], "model.layers.0.past_key", 4, (int[]){B, KV, L - Q, hd});
        expect_tensor(g, g->inputs[3], "model.layers.0.past_value", 4, (int[]){B, KV, L - Q, hd});
        expect_tensor(g, g->inputs[4], "model.layers.0.cos", 3, (int[]){B, Q, hd});
        expect_tensor(g, g->inputs[5], "model.layers.0.sin", 3, (int[]){B, Q, hd});
        expect_tensor(g, g->outputs[0], "model.layers.0.out", 3, (int[]){B, Q, D});
        expect_tensor(g, g->outputs[1], "model.layers.0.self_attn.new_k", 4, (int[]){B, KV, Q, hd});
        expect_tensor(g, g->outputs[2], "model.layers.0.self_attn.new_v", 4, (int[]){B, KV, Q, hd});
        /* NPU profile: no NEG, no GATHER, no logits scale; k_proj weight pre-scaled. */
        assert_false(has_op(g, PDQ_OP_NEG));
        assert_false(has_op(g, PDQ_OP_GATHER));
        assert_true(pdq_graph_find(g, "model.layers.0.self_attn.scale") < 0);
        int wk = pdq_graph_find(g, "model.layers.0.self_attn.k_proj.weight");
        assert_true(wk >= 0 && g->tensors[wk].owned);
        const float *w = g->tensors[wk].data, *w0 = g_model->layers[0].w[PDQ_LIN_K];
        for (int k = 0; k < 100; k++) assert_true(fabsf(w[k] - w0[k] / sqrtf((float)hd)) <= 1e-7f);
        int wq = pdq_graph_find(g, "model.layers.0.self_attn.q_proj.weight");
        assert_true(!g->tensors[wq].owned && g->tensors[wq].data == g_model->layers[0].w[PDQ_LIN_Q]);
        assert_int_equal(pdq_graph_validate(g, &st), PDQ_OK);
        pdq_graph_free(g);
    }
    assert_int_equal(pdq_build_head(g_model, B, 3, &g, &st), PDQ_OK);
    expect_tensor(g, g->outputs[0], "lm_head.out", 3, (int[]){B, 3, c->vocab_size});
    pdq_graph_free(g);
    assert_int_equal(pdq_build_embed(g_model, B, 3, &g, &st), PDQ_OK);
    expect_tensor(g, g->inputs[0], "input_ids", 2, (int[]){B, 3});
    assert_int_equal(g->tensors[g->inputs[0]].dtype, PDQ_TI32);
    pdq_graph_free(g);
    assert_int_equal(pdq_build_layer(g_model, 0, NULL, PDQ_MODE_APPEND, B, L, L, NULL, &g, &st), PDQ_ERR_LIMIT);
    assert_int_equal(pdq_build_layer(g_model, 9, NULL, PDQ_MODE_PREFILL, B, L, 0, NULL, &g, &st), PDQ_ERR_ARG);
}

static void test_errors(void **state) {
    (void)state;
    int V = g_model->cfg.vocab_size, L = 16;
    pdq_status st = {0};
    pdq_rt *rt;
    assert_int_equal(pdq_rt_create(g_model, 1, 1, NULL, &rt, &st), PDQ_ERR_ARG);
    assert_int_equal(pdq_rt_create(g_model, 0, 16, NULL, &rt, &st), PDQ_ERR_ARG);
    assert_int_equal(pdq_rt_create(g_model, 1, g_model->cfg.max_position_embeddings + 1, NULL, &rt, &st), PDQ_ERR_LIMIT);
    assert_int_equal(pdq_rt_create(g_model, 2, L, NULL, &rt, &st), PDQ_OK);
    float *logits = malloc(sizeof(float) * 2 * (size_t)V);
    int32_t ids[2 * 17];
    uint64_t rs = 700;
    rand_ids(&rs, ids, 2 * 17);
    int32_t one[2] = {5, 6};
    /* decode before any prefill */
    assert_int_equal(pdq_rt_decode(rt, 2, one, logits, &st), PDQ_ERR_ARG);
    /* prompt longer than max_seq */
    assert_int_equal(pdq_rt_prefill(rt, 2, 17, ids, NULL, PDQ_PAD_LEFT, logits, NULL, &st), PDQ_ERR_LIMIT);
    assert_non_null(strstr(st.msg, "max_seq"));
    /* batch mismatch */
    assert_int_equal(pdq_rt_prefill(rt, 1, 4, ids, NULL, PDQ_PAD_LEFT, logits, NULL, &st), PDQ_ERR_SHAPE);
    /* bad padding layouts */
    uint8_t m_left_bad[2 * 4] = {1, 0, 1, 1, 1, 1, 1, 1};
    assert_int_equal(pdq_rt_prefill(rt, 2, 4, ids, m_left_bad, PDQ_PAD_LEFT, logits, NULL, &st), PDQ_ERR_ARG);
    uint8_t m_right_bad[2 * 4] = {1, 1, 1, 1, 0, 1, 1, 1};
    assert_int_equal(pdq_rt_prefill(rt, 2, 4, ids, m_right_bad, PDQ_PAD_RIGHT, logits, NULL, &st), PDQ_ERR_ARG);
    assert_non_null(strstr(st.msg, "row 1"));
    uint8_t m_empty[2 * 4] = {1, 1, 1, 1, 0, 0, 0, 0};
    assert_int_equal(pdq_rt_prefill(rt, 2, 4, ids, m_empty, PDQ_PAD_RIGHT, logits, NULL, &st), PDQ_ERR_ARG);
    /* token id outside the vocabulary */
    int32_t bad_ids[2 * 2] = {1, V, 2, 3};
    assert_int_equal(pdq_rt_prefill(rt, 2, 2, bad_ids, NULL, PDQ_PAD_LEFT, logits, NULL, &st), PDQ_ERR_ARG);
    /* a prompt of exactly max_seq is fine; then the cache is full */
    assert_int_equal(pdq_rt_prefill(rt, 2, L, ids, NULL, PDQ_PAD_LEFT, logits, NULL, &st), PDQ_OK);
    assert_int_equal(pdq_rt_decode(rt, 2, one, logits, &st), PDQ_ERR_LIMIT);
    assert_non_null(strstr(st.msg, "full"));
    /* fill up through decode: prompt of 13, 3 decodes reach max_seq, the 4th fails */
    assert_int_equal(pdq_rt_prefill(rt, 2, 13, ids, NULL, PDQ_PAD_RIGHT, logits, NULL, &st), PDQ_OK);
    for (int i = 0; i < 3; i++) assert_int_equal(pdq_rt_decode(rt, 2, one, logits, &st), PDQ_OK);
    assert_int_equal(pdq_rt_len(rt, 0), L);
    assert_int_equal(pdq_rt_decode(rt, 2, one, logits, &st), PDQ_ERR_LIMIT);
    assert_int_equal(pdq_rt_decode(rt, 1, one, logits, &st), PDQ_ERR_SHAPE);
    /* append: bucket too large / zero, cache overflow, bucket past not fitting; state unchanged */
    assert_int_equal(pdq_rt_prefill(rt, 2, 10, ids, NULL, PDQ_PAD_RIGHT, logits, NULL, &st), PDQ_OK);
    assert_int_equal(pdq_rt_append(rt, 2, 2, ids, NULL, L, logits, NULL, &st), PDQ_ERR_LIMIT);
    assert_non_null(strstr(st.msg, "too large"));
    assert_int_equal(pdq_rt_append(rt, 2, 2, ids, NULL, 0, logits, NULL, &st), PDQ_ERR_LIMIT);
    assert_int_equal(pdq_rt_append(rt, 2, 7, ids, NULL, 2, logits, NULL, &st), PDQ_ERR_LIMIT);
    assert_int_equal(pdq_rt_append(rt, 2, 6, ids, NULL, 4, logits, NULL, &st), PDQ_ERR_LIMIT); /* 10+4 > 16-4 */
    assert_int_equal(pdq_rt_append(rt, 1, 2, ids, NULL, 2, logits, NULL, &st), PDQ_ERR_SHAPE);
    int bad_n[2] = {3, 1};
    assert_int_equal(pdq_rt_append(rt, 2, 2, ids, bad_n, 2, logits, NULL, &st), PDQ_ERR_ARG);
    assert_int_equal(pdq_rt_len(rt, 0), 10);
    assert_int_equal(pdq_rt_len(rt, 1), 10);
    /* what does fit still works after the errors */
    assert_int_equal(pdq_rt_append(rt, 2, 6, ids, NULL, 2, logits, NULL, &st), PDQ_OK);
    assert_int_equal(pdq_rt_len(rt, 1), 16);
    free(logits);
    pdq_rt_free(rt);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_graph_contract),    cmocka_unit_test(test_errors),
        cmocka_unit_test(test_prefill_all_logits), cmocka_unit_test(test_option_matrix),
        cmocka_unit_test(test_batch_sizes),       cmocka_unit_test(test_greedy_64),
        cmocka_unit_test(test_append),            cmocka_unit_test(test_random_properties),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
