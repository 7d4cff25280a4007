/* Sliding layers' rings (rt_contract.h) against a full cache with the window mask, step by step:
 * the static runtime (ring of W-1 slots per sliding layer) and the FP32 reference model (its own
 * full-length cache, the window as a mask) over a conversation that wraps the ring many times:
 * a prefill longer than W, append buckets smaller and larger than W across the window boundary,
 * then decode to max_seq. After every step the logits agree within 1e-4 and every ring slot
 * holds the K/V of the position a brute-force simulation of the writes puts there (the reference
 * cache's row at that position). Models: Mistral (every layer slides) and Qwen2 with
 * max_window_layers (mixed full and sliding layers), Gemma 3 (every third layer global, the
 * sliding layers on their local RoPE table, the global one on rope_theta), synthetic checkpoints. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "contract/rt_contract.h"
#include "pdq/eval.h"
#include "pdq/model.h"
#include "pdq/runtime.h"
#include "pdq/synth.h"
#include "pdq/tasks.h"
#include "testutil.h"

#define TOL 1e-4
enum { B = 2, S = 40, W = 5, R = W - 1, NL = 3 };

static pdq_model *load_synth(const char *family, int mwl, char **dir) {
    pdq_status st = {0};
    pdq_synth_opts o;
    pdq_synth_opts_default(&o);
    *dir = tu_mkdtemp();
    o.out_dir = *dir;
    o.family = family;
    o.layers = NL;
    o.sliding_window = W;
    o.max_window_layers = mwl;
    if (!strcmp(family, "gemma3")) { /* every 3rd layer global; sliding layers on the local table */
        o.window = W;
        o.window_pattern = 3;
        o.rope_theta = 1e6;
        o.rope_local_theta = 10000;
    }
    o.seed = 7;
    assert_int_equal(pdq_synth_write(&o, &st), PDQ_OK);
    pdq_model *m;
    if (pdq_model_load(*dir, &m, &st) != PDQ_OK) fail_msg("load: %s", st.msg);
    pdq_set_threads(m, 1);
    return m;
}

typedef struct {
    pdq_kvcache kv;
    float *logits;
    int len;
    int slotpos[R]; /* brute force: the position each ring slot was last written with (-1: none) */
} refrow;

/* Feeds n tokens to the reference and replays the ring writes one position at a time. */
static void ref_feed(const pdq_model *m, refrow *r, const int32_t *ids, int n) {
    pdq_status st = {0};
    assert_int_equal(pdq_model_forward(m, &r->kv, 1, n, ids, NULL, NULL, r->logits, 1, &st), PDQ_OK);
    for (int i = 0; i < n; i++, r->len++) r->slotpos[r->len % R] = r->len;
}

/* Logits of every row, and every sliding layer's ring against the reference's full cache. */
static void compare(const pdq_model *m, pdq_rt *rt, refrow *ref, const float *logits, const char *what) {
    const pdq_config *c = &m->cfg;
    int V = c->vocab_size, KV = c->n_kv_heads, hd = c->head_dim, rings = 0;
    for (int b = 0; b < B; b++) {
        assert_int_equal(pdq_rt_len(rt, b), ref[b].len);
        double d = 0;
        for (int i = 0; i < V; i++) d = fmax(d, fabs((double)logits[(size_t)b * V + i] - ref[b].logits[i]));
        if (!(d <= TOL)) fail_msg("%s row %d at length %d: max|dlogit| %g", what, b, ref[b].len, d);
        for (int l = 0; l < c->n_layers; l++) {
            if (!pdq_ctr_ring(c, S, l)) continue;
            assert_int_equal(pdq_ctr_ring(c, S, l), R);
            rings++;
            for (int w = 0; w < 2; w++) {
                const float *ring = pdq_rt_cache(rt, l, w), *full = w ? ref[b].kv.v[l] : ref[b].kv.k[l];
                for (int j = 0; j < R; j++) {
                    int p = ref[b].slotpos[j];
                    if (p < 0) continue;
                    for (int h = 0; h < KV; h++)
                        for (int e = 0; e < hd; e++) {
                            float got = ring[(((size_t)b * KV + h) * R + j) * hd + e];
                            float want = full[((size_t)h * ref[b].kv.capacity + p) * hd + e];
                            if (!(fabs((double)got - want) <= TOL))
                                fail_msg("%s layer %d row %d slot %d (position %d) %s: %g vs %g", what, l, b, j, p,
                                         w ? "V" : "K", (double)got, (double)want);
                        }
                }
            }
        }
    }
    assert_true(rings > 0);
}

static void conversation(const char *family, int mwl, pdq_padding pad) {
    char *dir;
    pdq_model *m = load_synth(family, mwl, &dir);
    const pdq_config *c = &m->cfg;
    int V = c->vocab_size, full = 0;
    for (int l = 0; l < c->n_layers; l++) full += !pdq_ctr_ring(c, S, l);
    assert_int_equal(full, mwl); /* qwen2: layers < max_window_layers are full; mistral: none */
    /* gemma3: sliding layers take the local RoPE table (its K in the ring is turned by it) */
    assert_int_equal(pdq_rope_local_differs(c), !strcmp(family, "gemma3"));
    pdq_status st = {0};
    pdq_rt *rt;
    assert_int_equal(pdq_rt_create(m, B, S, NULL, &rt, &st), PDQ_OK);
    refrow ref[B];
    uint64_t rs = 11;
    for (int b = 0; b < B; b++) {
        assert_int_equal(pdq_kvcache_init(&ref[b].kv, c, 1, S, &st), PDQ_OK);
        ref[b].logits = malloc(sizeof(float) * (size_t)V);
        ref[b].len = 0;
        for (int j = 0; j < R; j++) ref[b].slotpos[j] = -1;
    }
    float *logits = malloc(sizeof(float) * (size_t)B * V);
    int32_t ids[B][16];
    for (int b = 0; b < B; b++)
        for (int i = 0; i < 16; i++) ids[b][i] = 3 + (int32_t)(tu_rand(&rs) % (uint64_t)(V - 3));
    /* prefill longer than the window (row 1 shorter: padding on the given side) */
    int lens[B] = {9, 6};
    const int32_t *rows[B] = {ids[0], ids[1]};
    assert_int_equal(pdq_rt_prefill_rows(rt, B, rows, lens, pad, logits, &st), PDQ_OK);
    for (int b = 0; b < B; b++) ref_feed(m, &ref[b], ids[b], lens[b]);
    compare(m, rt, ref, logits, "prefill");
    /* appends: bucket 3 (< W) with uneven rows, bucket 7 (> W: the ring wraps inside one step) */
    int q3[B] = {7, 4}, q7[B] = {9, 11};
    assert_int_equal(pdq_rt_append(rt, B, 16, &ids[0][0], q3, 3, logits, NULL, &st), PDQ_OK);
    for (int b = 0; b < B; b++) ref_feed(m, &ref[b], ids[b], q3[b]);
    compare(m, rt, ref, logits, "append q3");
    assert_int_equal(pdq_rt_append(rt, B, 16, &ids[0][0], q7, 7, logits, NULL, &st), PDQ_OK);
    for (int b = 0; b < B; b++) ref_feed(m, &ref[b], ids[b], q7[b]);
    compare(m, rt, ref, logits, "append q7");
    /* decode to max_seq: the ring of 4 wraps (40 / 4) times over the conversation */
    while (ref[0].len < S && ref[1].len < S) {
        int32_t next[B];
        for (int b = 0; b < B; b++) next[b] = pdq_argmax(ref[b].logits, V);
        assert_int_equal(pdq_rt_decode(rt, B, next, logits, &st), PDQ_OK);
        for (int b = 0; b < B; b++) ref_feed(m, &ref[b], &next[b], 1);
        compare(m, rt, ref, logits, "decode");
    }
    /* the cache is full for a full layer; a model of rings only is bounded by its RoPE table */
    int32_t one[B] = {5, 5};
    assert_int_not_equal(pdq_rt_decode(rt, B, one, logits, &st), PDQ_OK);
    free(logits);
    for (int b = 0; b < B; b++) {
        pdq_kvcache_free(&ref[b].kv);
        free(ref[b].logits);
    }
    pdq_rt_free(rt);
    pdq_model_free(m);
    tu_rmtree(dir);
    free(dir);
}

static void test_mistral_left(void **s) { (void)s; conversation("mistral", 0, PDQ_PAD_LEFT); }
static void test_mistral_right(void **s) { (void)s; conversation("mistral", 0, PDQ_PAD_RIGHT); }
static void test_qwen2_mixed(void **s) { (void)s; conversation("qwen2", 1, PDQ_PAD_LEFT); }
static void test_gemma3_local_rope(void **s) { (void)s; conversation("gemma3", 1, PDQ_PAD_RIGHT); }

/* The graphs' I/O shapes per layer type: a sliding layer's decode/append take the ring as past
 * and a mask of ring + Q columns; a full layer's are unchanged; the prefill mask is (B,S,S). */
static void test_graph_shapes(void **s) {
    (void)s;
    char *dir;
    pdq_model *m = load_synth("qwen2", 1, &dir);
    pdq_status st = {0};
    for (int l = 0; l < NL; l++)
        for (int Q = 0; Q <= 7; Q += 7) {
            pdq_graph *g;
            int Qe = Q ? Q : 1;
            assert_int_equal(pdq_build_layer(m, l, NULL, PDQ_MODE_APPEND, 1, S, Qe, NULL, &g, &st), PDQ_OK);
            int P = l == 0 ? S - Qe : R;
            const pdq_tensor *mk = &g->tensors[g->inputs[PDQ_AP_IN_MASK]], *pk = &g->tensors[g->inputs[PDQ_AP_IN_PAST_K]];
            assert_int_equal(mk->shape[1], Qe);
            assert_int_equal(mk->shape[2], P + Qe);
            assert_int_equal(pk->shape[2], P);
            pdq_graph_free(g);
            assert_int_equal(pdq_build_layer(m, l, NULL, PDQ_MODE_PREFILL, 1, S, 0, NULL, &g, &st), PDQ_OK);
            mk = &g->tensors[g->inputs[PDQ_PF_IN_MASK]];
            assert_int_equal(mk->shape[1], S);
            assert_int_equal(mk->shape[2], S);
            pdq_graph_free(g);
        }
    pdq_model_free(m);
    tu_rmtree(dir);
    free(dir);
}

/* The ring mask row against the full-cache mask row with the window: the same keys visible,
 * for every length, bucket size and query, by the positions the slots hold (brute force). */
static void test_ring_mask_rule(void **s) {
    (void)s;
    enum { MS = 64 };
    for (int w = 1; w <= 9; w++) {
        int ring = pdq_ctr_ring_of(w, MS);
        for (int Q = 1; Q <= 10; Q++)
            for (int len = 0; len + Q <= MS; len++)
                for (int q = 0; q < Q; q++) {
                    float fr[MS], rr[2 * MS];
                    pdq_ctr_append_mask_row(MS, Q, len, q, 1, w, -1.0f, fr);
                    pdq_ctr_ring_mask_row(ring, w, Q, len, q, 1, -1.0f, rr);
                    int seen_full = 0, seen_ring = 0;
                    for (int j = 0; j < MS - Q; j++) seen_full += fr[j] == 0.0f;
                    for (int j = 0; j < ring; j++) {
                        if (rr[j] != 0.0f) continue;
                        seen_ring++;
                        int p = -1; /* the position slot j holds: the last written p < len with p % ring == j */
                        for (int x = 0; x < len; x++)
                            if (x % ring == j) p = x;
                        assert_true(p >= 0 && fr[p] == 0.0f);
                    }
                    assert_int_equal(seen_ring, seen_full);
                    for (int i = 0; i < Q; i++) assert_true((rr[ring + i] == 0.0f) == (fr[MS - Q + i] == 0.0f));
                }
    }
}

/* Rewinding a ring: pdq_ctr_rewind_exact against the slots a brute-force replay of the writes
 * leaves, and the shared-context scorer on a sliding model (its rewinds refused once a ring
 * wrapped into the context, the context prefilled again) bit for bit against scoring each
 * continuation on its own. */
typedef struct {
    pdq_rt *rt;
    int V, never_rewind;
} sess;
static pdq_code s_prefill(void *c, const int32_t *ids, int n, float *last, pdq_status *st) {
    sess *s = c;
    pdq_rt_reset(s->rt);
    return pdq_rt_prefill(s->rt, 1, n, ids, NULL, PDQ_PAD_RIGHT, last, NULL, st);
}
static pdq_code s_append(void *c, const int32_t *ids, int n, float *rows, pdq_status *st) {
    sess *s = c;
    for (int i = 0; i < n; i++) /* decode steps: no bucket plan needed */
        if (pdq_rt_append(s->rt, 1, 1, ids + i, NULL, 1, NULL, rows + (size_t)i * s->V, st) != PDQ_OK) return st->code;
    return PDQ_OK;
}
static pdq_code s_rewind(void *c, int len, pdq_status *st) {
    sess *s = c;
    if (s->never_rewind) return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "test: prefill again");
    return pdq_rt_rewind(s->rt, 0, len, st);
}

static void test_rewind(void **unused) {
    (void)unused;
    for (int ring = 1; ring <= 6; ring++)
        for (int from = 0; from <= 20; from++)
            for (int to = 0; to <= from; to++) {
                int slot[8], ok = 1;
                for (int k = 0; k < ring; k++) slot[k] = -1;
                for (int p = 0; p < from; p++) slot[p % ring] = p;
                for (int q = to - ring < 0 ? 0 : to - ring; q < to; q++) ok &= slot[q % ring] == q;
                assert_int_equal(pdq_ctr_rewind_exact(ring, from, to), ok);
            }
    assert_true(pdq_ctr_rewind_exact(0, 30, 2));
    char *dir;
    pdq_model *m = load_synth("mistral", 0, &dir);
    pdq_status st = {0};
    pdq_rt *rt;
    assert_int_equal(pdq_rt_create(m, 1, S, NULL, &rt, &st), PDQ_OK);
    int V = m->cfg.vocab_size;
    sess a = {rt, V, 0}, b = {rt, V, 1};
    pdq_ll_session shared = {s_prefill, s_append, s_rewind, &a, V, S, NULL};
    pdq_ll_session alone = {s_prefill, s_append, s_rewind, &b, V, S, NULL};
    int32_t ctx[12], c0[2] = {7, 8}, c1[6] = {9, 10, 11, 12, 13, 14}, c2[1] = {15}, c3[3] = {16, 17, 18};
    for (int i = 0; i < 12; i++) ctx[i] = 3 + 5 * i;
    int32_t *cont[4] = {c0, c1, c2, c3};
    int n_cont[4] = {2, 6, 1, 3}, g1[4], g2[4];
    double l1[4], l2[4];
    for (int n_ctx = 2; n_ctx <= 12; n_ctx += 5) { /* inside the ring, at its edge, past it */
        assert_int_equal(pdq_ll_session_score(&shared, ctx, n_ctx, cont, n_cont, 4, l1, g1, &st), PDQ_OK);
        assert_int_equal(pdq_ll_session_score(&alone, ctx, n_ctx, cont, n_cont, 4, l2, g2, &st), PDQ_OK);
        for (int i = 0; i < 4; i++) {
            assert_true(l1[i] == l2[i]);
            assert_int_equal(g1[i], g2[i]);
        }
    }
    /* the refusal names the rings */
    assert_int_equal(pdq_rt_prefill(rt, 1, 12, ctx, NULL, PDQ_PAD_RIGHT, NULL, NULL, &st), PDQ_OK);
    assert_int_equal(pdq_rt_append(rt, 1, 1, c2, NULL, 1, NULL, NULL, &st), PDQ_OK);
    assert_int_equal(pdq_rt_rewind(rt, 0, 12, &st), PDQ_ERR_UNSUPPORTED);
    assert_non_null(strstr(st.msg, "rings of 4 slots"));
    pdq_ll_session_free(&shared);
    pdq_ll_session_free(&alone);
    pdq_rt_free(rt);
    pdq_model_free(m);
    tu_rmtree(dir);
    free(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ring_mask_rule), cmocka_unit_test(test_graph_shapes),
        cmocka_unit_test(test_mistral_left),   cmocka_unit_test(test_mistral_right),
        cmocka_unit_test(test_qwen2_mixed),    cmocka_unit_test(test_gemma3_local_rope),
        cmocka_unit_test(test_rewind),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
