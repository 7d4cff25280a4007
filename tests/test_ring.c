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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ring_mask_rule), cmocka_unit_test(test_graph_shapes),
        cmocka_unit_test(test_mistral_left),   cmocka_unit_test(test_mistral_right),
        cmocka_unit_test(test_qwen2_mixed),    cmocka_unit_test(test_gemma3_local_rope),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
