/* The packed weight-only model against today's dequantized path: RTN and GPTQ (act-order with
 * groups, so the column permutation is exercised) checkpoints of the bundled model and of
 * stories260K are quantized here, loaded both ways, and must give the same perplexity within
 * 1e-4 relative and close logits; the packed model holds no f32 copy of a quantized weight, and
 * its logits are the same bits on the AVX-512, AVX2 and scalar kernels, at 1, 2 or 3 threads and
 * with the forward's kept work or scratch allocated per call.
 * Symmetric grouped checkpoints with f16 / bf16 scales stay compact in memory (two-byte scales,
 * one shared row of zero points) and pass the same checks. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/qmatmul.h"
#include "pdq/eval.h"
#include "pdq/model.h"
#include "pdq/quant.h"
#include "testutil.h"

#define STORIES PDQ_TEST_STORIES

typedef struct {
    const char *model, *text;
    pdq_qmethod method;
    int bits, group;
    long n_eval;  /* tokens of the text evaluated */
    int sym;
    pdq_qscale_type gscale;
} qcase;

static char *quantize(const qcase *c) {
    pdq_status st = {0};
    pdq_model *m = NULL;
    assert_int_equal(pdq_model_load_lazy(c->model, &m, &st), PDQ_OK);
    pdq_set_threads(m, 1);
    pdq_quant_opts o;
    pdq_quant_opts_default(&o, c->bits);
    o.method = c->method;
    o.gptq.scheme.group = c->group;
    o.gptq.scheme.partial_groups = 1;
    o.gptq.scheme.sym = c->sym;
    o.gptq.scheme.group_scale = c->gscale;
    o.quiet = 1;
    int32_t *text = NULL, *win = NULL;
    long n = 0;
    int bos = -1, ns = 8, T = 64;
    if (c->method == PDQ_QM_GPTQ) {
        assert_int_equal(pdq_calib_tokenize(c->model, c->text, &text, &n, &bos, &st), PDQ_OK);
        assert_int_equal(pdq_calib_windows(text, n, ns, T, bos, 0, &win, &st), PDQ_OK);
    }
    pdq_qmodel q;
    if (pdq_quantize_model(m, &o, win, ns, T, &q, &st) != PDQ_OK) fail_msg("quantize: %s", st.msg);
    char *dir = tu_mkdtemp();
    if (pdq_quant_save(dir, c->model, m, &q, &st) != PDQ_OK) fail_msg("save: %s", st.msg);
    pdq_qmodel_free(&q);
    pdq_model_free(m);
    free(text);
    free(win);
    return dir;
}

static void check_packed_layout(const pdq_model *m, int expect_perm) {
    assert_non_null(m->packed);
    int perms = 0, rows4 = 0;
    for (int l = 0; l < m->cfg.n_layers; l++)
        for (int i = 0; i < PDQ_LIN_COUNT; i++) {
            const pdq_qmatrix *w = m->layers[l].pw[i];
            assert_non_null(w);
            assert_null(m->layers[l].w[i]); /* no f32 copy */
            perms += w->perm != NULL;
            /* the 4-row layout exactly where its rule allows: whole 64-byte chunks per row,
             * groups of whole 16-byte runs */
            size_t gbytes = w->type == PDQ_QT_U4 ? (size_t)w->group / 2 : (size_t)w->group;
            int want = w->row_bytes % 64 == 0 && (w->group == w->cols || gbytes % 16 == 0);
            assert_int_equal(w->layout, want ? PDQ_QL_ROWS4 : PDQ_QL_ROWS);
            rows4 += want;
        }
    assert_null(m->embed);
    assert_non_null(m->embed_q);
    assert_non_null(m->lm_head_q);
    if (m->cfg.tie_word_embeddings) assert_ptr_equal(m->lm_head_q, m->embed_q);
    else assert_int_equal(m->embed_q->layout, PDQ_QL_ROWS); /* looked up, not multiplied: stays mapped */
    if (expect_perm) assert_true(perms > 0);
    /* the bundled model (hidden 256) packs q/k/v/o/gate/up, not down (688 columns) */
    if (m->cfg.hidden_size == 256) assert_int_equal(rows4, m->cfg.n_layers * (PDQ_LIN_COUNT - 1));
}

/* Grouped decoder matrices keep the checkpoint's compact grids: two-byte scales of its type and,
 * symmetric, one shared row of zero points; their bytes are codes + 2 per group (+ that row). */
static void check_compact(const pdq_model *m, const qcase *c) {
    if (!c->group || c->gscale == PDQ_QSCALE_F32) return;
    for (int l = 0; l < m->cfg.n_layers; l++)
        for (int i = 0; i < PDQ_LIN_COUNT; i++) {
            const pdq_qmatrix *w = m->layers[l].pw[i];
            assert_null(w->scales);
            assert_non_null(w->scales16);
            assert_int_equal(w->scale_type, c->gscale);
            assert_int_equal(w->zero_stride, c->sym ? 0 : (size_t)w->ngroups);
            size_t want = (size_t)w->rows * w->row_bytes + (size_t)w->rows * w->ngroups * 2 +
                          (c->sym ? 1 : (size_t)w->rows) * w->ngroups + (w->perm ? (size_t)w->cols * 4 : 0);
            assert_int_equal(pdq_qmatrix_bytes(w), want);
            /* uint4 g32 4-row codes take 4-row scale blocks, re-laid in the loader's own block (no copy) */
            int blocks = w->type == PDQ_QT_U4 && w->group == 32 && w->cols % 128 == 0 && w->layout == PDQ_QL_ROWS4 &&
                         w->rows % 4 == 0;
            assert_int_equal(w->scales_rows4, blocks);
            if (blocks) assert_ptr_equal((const void *)w->scales16, w->owned);
        }
}

/* Logits of a 24-token prefill and 2 cached decode steps of the packed model. */
static void packed_logits(pdq_model *pk, const int32_t *ids, float *out) {
    pdq_status st = {0};
    pdq_kvcache kv = {0};
    int V = pk->cfg.vocab_size, T = 24;
    assert_int_equal(pdq_kvcache_init(&kv, &pk->cfg, 1, T + 2, &st), PDQ_OK);
    assert_int_equal(pdq_model_forward(pk, &kv, 1, T, ids, NULL, NULL, out, 0, &st), PDQ_OK);
    for (int s = 0; s < 2; s++)
        assert_int_equal(pdq_model_forward(pk, &kv, 1, 1, ids + T + s, NULL, NULL, out + (size_t)(T + s) * V, 1, &st),
                         PDQ_OK);
    pdq_kvcache_free(&kv);
}

/* The whole packed model gives the same bits on every kernel path and thread count. */
static void same_bits_every_path(pdq_model *pk, const int32_t *ids) {
    size_t n = (size_t)pk->cfg.vocab_size * 26;
    float *a = malloc(sizeof(float) * n), *b = malloc(sizeof(float) * n);
    pdq_set_threads(pk, 2);
    pk->kernel_path = 0;
    packed_logits(pk, ids, a);
    static const int paths[][2] = {{1, 2}, {2, 2}, {3, 2}, {0, 1}, {0, 3}, {1, 3}, {3, 1}};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        pk->kernel_path = paths[i][0];
        pdq_set_threads(pk, paths[i][1]);
        packed_logits(pk, ids, b);
        if (memcmp(a, b, sizeof(float) * n) != 0)
            fail_msg("kernel path %d with %d threads changes the logits", paths[i][0], paths[i][1]);
    }
    /* the work the model keeps between calls (grown by the calls above, stale contents) against
     * scratch allocated per call */
    assert_non_null(pk->work);
    struct pdq_fwd_work *keep = pk->work;
    pk->work = NULL;
    pk->kernel_path = 0;
    pdq_set_threads(pk, 2);
    packed_logits(pk, ids, b);
    pk->work = keep;
    if (memcmp(a, b, sizeof(float) * n) != 0) fail_msg("the kept forward work changes the logits");
    pk->kernel_path = 0;
    pdq_set_threads(pk, 2);
    free(a);
    free(b);
}

static void compare(const qcase *c, int expect_perm) {
    char *dir = quantize(c);
    pdq_status st = {0};
    pdq_model *deq = NULL, *pk = NULL;
    assert_int_equal(pdq_model_load(dir, &deq, &st), PDQ_OK);
    if (pdq_model_load_packed(dir, &pk, &st) != PDQ_OK) fail_msg("packed load: %s", st.msg);
    pdq_set_threads(deq, 1);
    pdq_set_threads(pk, 2);
    check_packed_layout(pk, expect_perm);
    check_compact(pk, c);
    assert_null(deq->packed);

    int32_t *ids = NULL;
    long n = 0;
    int bos = -1;
    assert_int_equal(pdq_calib_tokenize(c->model, c->text, &ids, &n, &bos, &st), PDQ_OK);
    if (n > c->n_eval) n = c->n_eval;
    if (bos >= 0) ids[0] = bos;
    same_bits_every_path(pk, ids);
    pdq_ppl_result a, b;
    assert_int_equal(pdq_ppl_model(deq, ids, n, 128, 128, NULL, &a, &st), PDQ_OK);
    assert_int_equal(pdq_ppl_model(pk, ids, n, 128, 128, NULL, &b, &st), PDQ_OK);
    double rel = fabs(a.ppl - b.ppl) / a.ppl;
    printf("%s %s w%d group %d: ppl dequantized %.6f packed %.6f (relative %.2e, %ld tokens)\n", c->model,
           c->method == PDQ_QM_GPTQ ? "gptq" : "rtn", c->bits, c->group, a.ppl, b.ppl, rel, a.tokens);
    assert_true(rel <= 1e-4);
    assert_int_equal(a.tokens, b.tokens);

    /* logits of a 40-token prefill and of 8 cached decode steps after it */
    int V = deq->cfg.vocab_size, T = 40, steps = 8;
    float *la = malloc(sizeof(float) * (size_t)V * (T + steps)), *lb = malloc(sizeof(float) * (size_t)V * (T + steps));
    pdq_kvcache ka = {0}, kb = {0};
    assert_int_equal(pdq_kvcache_init(&ka, &deq->cfg, 1, T + steps, &st), PDQ_OK);
    assert_int_equal(pdq_kvcache_init(&kb, &pk->cfg, 1, T + steps, &st), PDQ_OK);
    assert_int_equal(pdq_model_forward(deq, &ka, 1, T, ids, NULL, NULL, la, 0, &st), PDQ_OK);
    assert_int_equal(pdq_model_forward(pk, &kb, 1, T, ids, NULL, NULL, lb, 0, &st), PDQ_OK);
    for (int s = 0; s < steps; s++) {
        assert_int_equal(pdq_model_forward(deq, &ka, 1, 1, ids + T + s, NULL, NULL, la + (size_t)(T + s) * V, 1, &st), PDQ_OK);
        assert_int_equal(pdq_model_forward(pk, &kb, 1, 1, ids + T + s, NULL, NULL, lb + (size_t)(T + s) * V, 1, &st), PDQ_OK);
    }
    double maxd = 0, maxv = 0;
    for (size_t i = 0; i < (size_t)V * (T + steps); i++) {
        maxd = fmax(maxd, fabs((double)la[i] - lb[i]));
        maxv = fmax(maxv, fabs((double)la[i]));
    }
    printf("  logits max |delta| %.3g (max |logit| %.3g)\n", maxd, maxv);
    assert_true(maxd <= 1e-4 * maxv + 1e-5);
    pdq_kvcache_free(&ka);
    pdq_kvcache_free(&kb);
    free(la);
    free(lb);
    free(ids);
    pdq_model_free(deq);
    pdq_model_free(pk);
    tu_rmtree(dir);
    free(dir);
}

/* The f32 model with BLAS single-threaded runs attention's heads on its pool (the quantize
 * pipeline's calibration passes): the same logits bits as with BLAS's own threads, at 2 and 3. */
static void test_f32_heads_on_pool(void **state) {
    (void)state;
    pdq_status st = {0};
    pdq_model *m = NULL;
    assert_int_equal(pdq_model_load(PDQ_TEST_MODEL, &m, &st), PDQ_OK);
    int32_t ids[26];
    for (int i = 0; i < 26; i++) ids[i] = (int32_t)((i * 37 + 11) % m->cfg.vocab_size);
    size_t n = (size_t)m->cfg.vocab_size * 26;
    float *a = malloc(sizeof(float) * n), *b = malloc(sizeof(float) * n);
    pdq_set_threads(m, 2);
    packed_logits(m, ids, a);
    for (int t = 2; t <= 3; t++) {
        pdq_set_threads(m, t);
        pdq_model_blas_serial(m, 1);
        packed_logits(m, ids, b);
        pdq_model_blas_serial(m, 0);
        if (memcmp(a, b, sizeof(float) * n) != 0) fail_msg("heads on a pool of %d change the logits", t);
    }
    free(a);
    free(b);
    pdq_model_free(m);
}

static void test_bundled_rtn_w4(void **state) {
    (void)state;
    qcase c = {PDQ_TEST_MODEL, "data/web-bible/test.txt", PDQ_QM_RTN, 4, 0, 2048, 0, PDQ_QSCALE_F32};
    compare(&c, 0);
}

static void test_bundled_rtn_w8_group(void **state) {
    (void)state;
    qcase c = {PDQ_TEST_MODEL, "data/web-bible/test.txt", PDQ_QM_RTN, 8, 128, 2048, 0, PDQ_QSCALE_F32};
    compare(&c, 0);
}

static void test_stories_rtn_w4_group32(void **state) {
    (void)state;
    if (!tu_have_stories()) skip();
    qcase c = {STORIES, PDQ_TEST_TINYSTORIES "/test.txt", PDQ_QM_RTN, 4, 32, 4096, 0, PDQ_QSCALE_F32};
    compare(&c, 0);
}

static void test_stories_gptq_actorder_groups(void **state) {
    (void)state;
    if (!tu_have_stories()) skip();
    qcase c = {STORIES, PDQ_TEST_TINYSTORIES "/train.txt", PDQ_QM_GPTQ, 4, 32, 4096, 0, PDQ_QSCALE_F32};
    compare(&c, 1);
}

/* act-order codes reordered at load, then copied into the 4-row layout (hidden 256, groups of 32) */
static void test_bundled_gptq_actorder_groups(void **state) {
    (void)state;
    qcase c = {PDQ_TEST_MODEL, "data/web-bible/train.txt", PDQ_QM_GPTQ, 4, 32, 1024, 0, PDQ_QSCALE_F32};
    compare(&c, 1);
}

/* the issue-27 format: w4 g32 sym, f16 scales, no zero points (4.5 bits a weight) */
static void test_bundled_rtn_w4_g32_sym_f16(void **state) {
    (void)state;
    qcase c = {PDQ_TEST_MODEL, "data/web-bible/test.txt", PDQ_QM_RTN, 4, 32, 2048, 1, PDQ_QSCALE_F16};
    compare(&c, 0);
}

/* act-order permutation with compact grids; bf16 scales */
static void test_bundled_gptq_w4_g32_sym_bf16(void **state) {
    (void)state;
    qcase c = {PDQ_TEST_MODEL, "data/web-bible/train.txt", PDQ_QM_GPTQ, 4, 32, 1024, 1, PDQ_QSCALE_BF16};
    compare(&c, 1);
}

static void test_stories_rtn_w8(void **state) {
    (void)state;
    if (!tu_have_stories()) skip();
    qcase c = {STORIES, PDQ_TEST_TINYSTORIES "/test.txt", PDQ_QM_RTN, 8, 0, 4096, 0, PDQ_QSCALE_F32};
    compare(&c, 0);
}

/* A plain HF directory loads as the f32 reference; a damaged checkpoint is an error, not a crash. */
static void test_plain_and_bad(void **state) {
    (void)state;
    if (!tu_have_stories()) skip();
    pdq_status st = {0};
    pdq_model *m = NULL;
    assert_int_equal(pdq_model_load_packed(STORIES, &m, &st), PDQ_OK);
    assert_null(m->packed);
    assert_non_null(m->layers[0].w[0]);
    pdq_model_free(m);
    qcase c = {STORIES, NULL, PDQ_QM_RTN, 4, 0, 0, 0, PDQ_QSCALE_F32};
    char *dir = quantize(&c);
    char path[1024];
    snprintf(path, sizeof path, "%s/pdq_quant.json", dir);
    size_t len = 0;
    char *txt = tu_read_file(path, &len);
    assert_non_null(txt);
    char *shape = strstr(txt, "\"shape\"");
    assert_non_null(shape);
    char *num = strpbrk(shape, "0123456789");
    char saved = *num;
    *num = *num == '9' ? '1' : '9'; /* the first tensor's row count no longer matches the config */
    assert_int_equal(tu_write_file(path, txt, len), 0);
    assert_int_not_equal(pdq_model_load_packed(dir, &m, &st), PDQ_OK);
    assert_null(m);
    assert_non_null(strstr(st.msg, "shape"));
    *num = saved;
    char *tens = strstr(txt, "\"tensors\"");
    assert_non_null(tens);
    char *bits = strstr(tens, "\"bits\":\t"); /* cJSON's layout: the first tensor's bits */
    assert_non_null(bits);
    bits[strlen("\"bits\":\t")] = '9';
    assert_int_equal(tu_write_file(path, txt, len), 0);
    assert_int_not_equal(pdq_model_load_packed(dir, &m, &st), PDQ_OK);
    assert_null(m);
    assert_non_null(strstr(st.msg, "bits = 9: must be an integer in [2, 8]")); /* pdq_quant_doc_check */
    free(txt);
    tu_rmtree(dir);
    free(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bundled_rtn_w4),
        cmocka_unit_test(test_bundled_rtn_w8_group),
        cmocka_unit_test(test_stories_rtn_w4_group32),
        cmocka_unit_test(test_stories_gptq_actorder_groups),
        cmocka_unit_test(test_bundled_gptq_actorder_groups),
        cmocka_unit_test(test_stories_rtn_w8),
        cmocka_unit_test(test_bundled_rtn_w4_g32_sym_f16),
        cmocka_unit_test(test_bundled_gptq_w4_g32_sym_bf16),
        cmocka_unit_test(test_plain_and_bad),
        cmocka_unit_test(test_f32_heads_on_pool),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
