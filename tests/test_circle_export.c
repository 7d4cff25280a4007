/* Circle export: every file of a tiny synthetic model parsed by Debian's flatc against the real
 * schema (skipped without ../shared/circle or flatc) with TICO's conventions checked from flatc's
 * JSON; IR -> .circle -> IR round trips; the Circle runtime (whole-model pair and per-layer files)
 * against the in-memory static runtime and the FP32 reference for 32 greedy steps on the bundled
 * model; interpreter of quantized tensors vs brute-force requantization; the quantized export (RTN
 * w4, int16 activations) reproducing the in-memory fake-quant int16 logits and K/V codes exactly
 * for prefill + 32 decode steps, whole-model and per-layer; bad files. */
#include "testutil.h"

#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "pdq/circle_export.h"
#include "pdq/model.h"
#include "pdq/ptq.h"
#include "pdq/quant.h"
#include "pdq/runtime.h"
#include "pdq/synth.h"

/* ---------------------------------------------------------------- fixtures */

typedef struct {
    char *dir;      /* synthetic checkpoint */
    char *out;      /* export dir */
    pdq_model *m;
} tiny;

static int tiny_setup(void **state) {
    tiny *t = calloc(1, sizeof *t);
    t->dir = tu_mkdtemp();
    t->out = tu_mkdtemp();
    pdq_synth_opts so;
    pdq_synth_opts_default(&so);
    so.out_dir = t->dir;
    so.seed = 7;
    pdq_status st = {0};
    if (pdq_synth_write(&so, &st) != PDQ_OK || pdq_model_load(t->dir, &t->m, &st) != PDQ_OK) {
        fprintf(stderr, "%s\n", st.msg);
        return -1;
    }
    pdq_set_threads(t->m, 1);
    *state = t;
    return 0;
}

static int tiny_teardown(void **state) {
    tiny *t = *state;
    pdq_model_free(t->m);
    tu_rmtree(t->dir);
    tu_rmtree(t->out);
    free(t->dir);
    free(t->out);
    free(t);
    return 0;
}

/* ---------------------------------------------------------------- flatc conventions */

static const cJSON *item(const cJSON *o, const char *k) { return cJSON_GetObjectItemCaseSensitive(o, k); }

static int jnum(const cJSON *o, const char *k, int def) {
    const cJSON *x = item(o, k);
    return cJSON_IsNumber(x) ? x->valueint : def;
}

/* Schema numbers of the builtin names flatc prints (from circle_schema.fbs). */
static int code_of_name(const char *s) {
    static const struct { const char *n; int c; } k[] = {
        {"ADD", 0}, {"CONCATENATION", 2}, {"FULLY_CONNECTED", 9}, {"LOGISTIC", 14}, {"MUL", 18},
        {"RESHAPE", 22}, {"SOFTMAX", 25}, {"GATHER", 36}, {"TRANSPOSE", 39}, {"STRIDED_SLICE", 45},
        {"BATCH_MATMUL", 126}, {"RMS_NORM", -6}, {"NEG", 59},
    };
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
        if (!strcmp(k[i].n, s)) return k[i].c;
    return 1000;
}

/* Parses path with flatc; NULL when the schema is missing (test skipped). */
static cJSON *flatc_json(const char *path, const char *tmp) {
    if (!tu_shared_dir()) return NULL;
    char *txt = tu_flatc_json_text(path, tmp);
    assert_non_null(txt);
    cJSON *j = cJSON_Parse(txt);
    free(txt);
    assert_non_null(j);
    return j;
}

/* Checks TICO's conventions on flatc's JSON of one exported file; returns the subgraph. */
static const cJSON *check_conventions(const cJSON *j, const char *file) {
    (void)file;
    assert_int_equal(jnum(j, "version", 0), 0);
    const cJSON *bufs = item(j, "buffers");
    assert_true(cJSON_GetArraySize(bufs) >= 1);
    assert_null(item(cJSON_GetArrayItem(bufs, 0), "data"));
    /* opcode rules: deprecated byte = code for code < 127 (negative Circle-only codes too), version 1 */
    const cJSON *oc;
    int n_codes = 0;
    cJSON_ArrayForEach(oc, item(j, "operator_codes")) {
        const cJSON *b = item(oc, "builtin_code");
        int code = cJSON_IsString(b) ? code_of_name(b->valuestring) : jnum(oc, "builtin_code", 0);
        assert_true(code != 1000);
        int dep = jnum(oc, "deprecated_builtin_code", 0);
        assert_int_equal(dep, code < 127 ? code : 127);
        assert_int_equal(jnum(oc, "version", 1), 1);
        n_codes++;
    }
    const cJSON *sgs = item(j, "subgraphs");
    assert_int_equal(cJSON_GetArraySize(sgs), 1);
    const cJSON *sg = cJSON_GetArrayItem(sgs, 0);
    assert_string_equal(item(sg, "name")->valuestring, "subgraph");
    const cJSON *t;
    int ti = 0;
    cJSON_ArrayForEach(t, item(sg, "tensors")) {
        const cJSON *ty = item(t, "type");
        const char *type = cJSON_IsString(ty) ? ty->valuestring : "FLOAT32";
        const cJSON *q = item(t, "quantization");
        if (!strcmp(type, "INT16") && q) {
            const cJSON *z;
            cJSON_ArrayForEach(z, item(q, "zero_point")) assert_int_equal((int)z->valuedouble, 0);
        }
        int b = jnum(t, "buffer", 0);
        long long n = 1;
        const cJSON *d;
        cJSON_ArrayForEach(d, item(t, "shape")) n *= d->valueint;
        if (b) {
            const cJSON *data = item(cJSON_GetArrayItem(bufs, b), "data");
            int len = cJSON_GetArraySize(data);
            if (!strcmp(type, "UINT4")) assert_int_equal(len, (n + 1) / 2);
            else if (!strcmp(type, "FLOAT32") || !strcmp(type, "INT32")) assert_int_equal(len, 4 * n);
        }
        assert_non_null(item(t, "name"));
        ti++;
    }
    /* every FC: keep_num_dims, bias -1 */
    const cJSON *op;
    cJSON_ArrayForEach(op, item(sg, "operators")) {
        const cJSON *opt = item(op, "builtin_options_type");
        if (cJSON_IsString(opt) && !strcmp(opt->valuestring, "FullyConnectedOptions")) {
            assert_true(cJSON_IsTrue(item(item(op, "builtin_options"), "keep_num_dims")));
            const cJSON *ins = item(op, "inputs");
            assert_int_equal(cJSON_GetArraySize(ins), 3);
            assert_int_equal(cJSON_GetArrayItem(ins, 2)->valueint, -1);
        }
    }
    assert_true(n_codes > 0 && ti > 0);
    return sg;
}

/* Shape of subgraph I/O k (inputs or outputs) from flatc's JSON. */
static void io_shape(const cJSON *sg, const char *which, int k, int *nd, int *shape) {
    int ti = cJSON_GetArrayItem(item(sg, which), k)->valueint;
    const cJSON *t = cJSON_GetArrayItem(item(sg, "tensors"), ti);
    *nd = 0;
    const cJSON *d;
    cJSON_ArrayForEach(d, item(t, "shape")) shape[(*nd)++] = d->valueint;
}

static void expect_shape(const cJSON *sg, const char *which, int k, int nd, const int *want) {
    int n, s[8];
    io_shape(sg, which, k, &n, s);
    assert_int_equal(n, nd);
    for (int d = 0; d < nd; d++) assert_int_equal(s[d], want[d]);
}

static void test_flatc_conventions(void **state) {
    tiny *t = *state;
    if (!tu_shared_dir()) { skip(); return; }
    char *out = NULL;
    if (tu_run("flatc --version >/dev/null 2>&1", &out) != 0) { free(out); skip(); return; }
    free(out);
    pdq_export_opts o;
    pdq_export_opts_default(&o);
    o.max_seq = 16;
    o.append_q = 4;
    o.quiet = 1;
    pdq_status st = {0};
    assert_int_equal(pdq_export_model(t->m, t->out, &o, &st), PDQ_OK);
    const pdq_config *c = &t->m->cfg;
    int S = o.max_seq, L = c->n_layers, KV = c->n_kv_heads, hd = c->head_dim, D = c->hidden_size, V = c->vocab_size;
    char *tmp = tu_mkdtemp();
    DIR *dd = opendir(t->out);
    struct dirent *e;
    int files = 0;
    while ((e = readdir(dd))) {
        if (!strstr(e->d_name, ".circle")) continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", t->out, e->d_name);
        cJSON *j = flatc_json(path, tmp);
        const cJSON *sg = check_conventions(j, e->d_name);
        if (!strcmp(e->d_name, "model_prefill.circle")) {
            int ids[2] = {1, S}, m3[3] = {1, S, S}, c3[3] = {1, S, hd}, lg[3] = {1, S, V}, kv[4] = {1, KV, S, hd};
            assert_int_equal(cJSON_GetArraySize(item(sg, "inputs")), 4);
            assert_int_equal(cJSON_GetArraySize(item(sg, "outputs")), 1 + 2 * L);
            expect_shape(sg, "inputs", 0, 2, ids);
            expect_shape(sg, "inputs", 1, 3, m3);
            expect_shape(sg, "inputs", 2, 3, c3);
            expect_shape(sg, "inputs", 3, 3, c3);
            expect_shape(sg, "outputs", 0, 3, lg);
            for (int k = 1; k <= 2 * L; k++) expect_shape(sg, "outputs", k, 4, kv);
        } else if (!strcmp(e->d_name, "model_decode.circle")) {
            int ids[2] = {1, 1}, m3[3] = {1, 1, S}, c3[3] = {1, 1, hd}, lg[3] = {1, 1, V}, pk[4] = {1, KV, S - 1, hd},
                nk[4] = {1, KV, 1, hd};
            assert_int_equal(cJSON_GetArraySize(item(sg, "inputs")), 4 + 2 * L);
            assert_int_equal(cJSON_GetArraySize(item(sg, "outputs")), 1 + 2 * L);
            expect_shape(sg, "inputs", 0, 2, ids);
            expect_shape(sg, "inputs", 1, 3, m3);
            expect_shape(sg, "inputs", 2, 3, c3);
            expect_shape(sg, "inputs", 3, 3, c3);
            for (int k = 4; k < 4 + 2 * L; k++) expect_shape(sg, "inputs", k, 4, pk);
            expect_shape(sg, "outputs", 0, 3, lg);
            for (int k = 1; k <= 2 * L; k++) expect_shape(sg, "outputs", k, 4, nk);
        } else if (!strncmp(e->d_name, "decoder_layer_decode_", 21)) {
            int h[3] = {1, 1, D}, m3[3] = {1, 1, S}, pk[4] = {1, KV, S - 1, hd}, c3[3] = {1, 1, hd}, nk[4] = {1, KV, 1, hd};
            expect_shape(sg, "inputs", 0, 3, h);
            expect_shape(sg, "inputs", 1, 3, m3);
            expect_shape(sg, "inputs", 2, 4, pk);
            expect_shape(sg, "inputs", 3, 4, pk);
            expect_shape(sg, "inputs", 4, 3, c3);
            expect_shape(sg, "inputs", 5, 3, c3);
            expect_shape(sg, "outputs", 0, 3, h);
            expect_shape(sg, "outputs", 1, 4, nk);
            expect_shape(sg, "outputs", 2, 4, nk);
        } else if (!strncmp(e->d_name, "decoder_layer_prefill_", 22)) {
            int h[3] = {1, S, D}, m3[3] = {1, S, S}, c3[3] = {1, S, hd}, nk[4] = {1, KV, S, hd};
            expect_shape(sg, "inputs", 0, 3, h);
            expect_shape(sg, "inputs", 1, 3, m3);
            expect_shape(sg, "inputs", 2, 3, c3);
            expect_shape(sg, "inputs", 3, 3, c3);
            expect_shape(sg, "outputs", 0, 3, h);
            expect_shape(sg, "outputs", 1, 4, nk);
        } else if (!strncmp(e->d_name, "decoder_layer_append_prefill_q4_", 32)) { /* TICO's append-prefill name */
            int pk[4] = {1, KV, S - 4, hd}, nk[4] = {1, KV, 4, hd};
            expect_shape(sg, "inputs", 2, 4, pk);
            expect_shape(sg, "outputs", 1, 4, nk);
        } else if (!strcmp(e->d_name, "model_append_prefill_q4.circle")) {
            int ids[2] = {1, 4}, m3[3] = {1, 4, S}, lg[3] = {1, 4, V}, pk[4] = {1, KV, S - 4, hd}, nk[4] = {1, KV, 4, hd};
            assert_int_equal(cJSON_GetArraySize(item(sg, "inputs")), 4 + 2 * L);
            expect_shape(sg, "inputs", 0, 2, ids);
            expect_shape(sg, "inputs", 1, 3, m3);
            for (int k = 4; k < 4 + 2 * L; k++) expect_shape(sg, "inputs", k, 4, pk);
            expect_shape(sg, "outputs", 0, 3, lg);
            for (int k = 1; k <= 2 * L; k++) expect_shape(sg, "outputs", k, 4, nk);
        }
        cJSON_Delete(j);
        files++;
    }
    closedir(dd);
    /* 3 whole (prefill, decode, append q4) + embed + head + 3 per layer */
    assert_int_equal(files, 5 + 3 * L);
    tu_rmtree(tmp);
    free(tmp);
}

/* ---------------------------------------------------------------- round trip */

static void roundtrip(pdq_graph *g, const char *dir) {
    char path[1024], why[256];
    snprintf(path, sizeof path, "%s/rt.circle", dir);
    pdq_status st = {0};
    assert_int_equal(pdq_circle_write_graph(path, g, &st), PDQ_OK);
    pdq_graph *b = NULL;
    if (pdq_circle_load_graph(path, &b, &st) != PDQ_OK) fprintf(stderr, "%s\n", st.msg);
    assert_non_null(b);
    /* byte constants (uint4 packed as stored, uint8) are the file's mapped bytes, not copies */
    for (int i = 0; i < b->n_tensors; i++)
        if (b->tensors[i].kind == PDQ_TK_CONST && (b->tensors[i].dtype == PDQ_TU4 || b->tensors[i].dtype == PDQ_TU8)) {
            assert_true(b->tensors[i].file_backed);
            assert_false(b->tensors[i].owned);
        }
    int same = pdq_graph_same(g, b, why, sizeof why);
    if (!same) fprintf(stderr, "%s: %s\n", g->name, why);
    assert_true(same);
    /* and the comparison does see a difference */
    if (b->n_ops > 0) {
        b->ops[0].type = b->ops[0].type == PDQ_OP_ADD ? PDQ_OP_SUB : PDQ_OP_ADD;
        assert_false(pdq_graph_same(g, b, why, sizeof why));
    }
    pdq_graph_free(b);
    pdq_graph_free(g);
}

static void test_roundtrip(void **state) {
    tiny *t = *state;
    pdq_status st = {0};
    pdq_static_opts so, hf;
    pdq_export_opts eo;
    pdq_export_opts_default(&eo);
    so = eo.so;
    pdq_static_opts_default(&hf); /* batched, GATHER for GQA, NEG, logits scale */
    pdq_graph *g;
    assert_int_equal(pdq_build_layer(t->m, 1, NULL, PDQ_MODE_PREFILL, 1, 8, 0, &so, &g, &st), PDQ_OK);
    roundtrip(g, t->out);
    assert_int_equal(pdq_build_layer(t->m, 0, NULL, PDQ_MODE_APPEND, 1, 8, 3, &so, &g, &st), PDQ_OK);
    roundtrip(g, t->out);
    assert_int_equal(pdq_build_layer(t->m, 0, NULL, PDQ_MODE_APPEND, 2, 8, 1, &hf, &g, &st), PDQ_OK);
    roundtrip(g, t->out);
    assert_int_equal(pdq_build_embed(t->m, 1, 8, &g, &st), PDQ_OK);
    roundtrip(g, t->out);
    assert_int_equal(pdq_build_head(t->m, 1, 1, &g, &st), PDQ_OK);
    roundtrip(g, t->out);
    assert_int_equal(pdq_build_whole(t->m, PDQ_MODE_PREFILL, 8, &so, &g, &st), PDQ_OK);
    roundtrip(g, t->out);
    assert_int_equal(pdq_build_whole(t->m, PDQ_MODE_APPEND, 8, &so, &g, &st), PDQ_OK);
    roundtrip(g, t->out);

    /* quantized tensors: int16 activations, uint4 per-channel weights (odd count), int16 gamma */
    pdq_graph *q;
    assert_int_equal(pdq_graph_new("q", &q, &st), PDQ_OK);
    int xs[3] = {1, 2, 5}, ws[2] = {3, 5}, gs[1] = {5};
    int x = pdq_graph_input(q, "x", PDQ_TI16, 3, xs, &st);
    uint8_t codes[15];
    int16_t gam[5];
    for (int i = 0; i < 15; i++) codes[i] = (uint8_t)((i * 7) % 16);
    for (int i = 0; i < 5; i++) gam[i] = (int16_t)(1000 * i - 2000);
    uint8_t packed[8]; /* the graph holds uint4 packed, two codes a byte */
    pdq_pack4(codes, 15, packed);
    int w = pdq_graph_const(q, "w", PDQ_TU4, 2, ws, packed, 1, &st);
    int gm = pdq_graph_const(q, "gamma", PDQ_TI16, 1, gs, gam, 1, &st);
    int rin[2] = {x, gm};
    int r = pdq_graph_op(q, PDQ_OP_RMS_NORM, rin, 2, NULL, "r", &st);
    int fin[2] = {r, w};
    int y = pdq_graph_op(q, PDQ_OP_FULLY_CONNECTED, fin, 2, NULL, "y", &st);
    assert_true(y >= 0);
    assert_int_equal(pdq_graph_mark_output(q, y, &st), PDQ_OK);
    float s1 = 0.001f, s3[3] = {0.1f, 0.2f, 0.3f};
    int64_t z1 = 0, z3[3] = {1, 8, 15};
    int ids[4] = {x, r, y, gm};
    for (int k = 0; k < 4; k++) {
        pdq_qparams *p = calloc(1, sizeof *p);
        p->n = 1;
        p->scale = malloc(sizeof(float));
        p->zero_point = malloc(sizeof(int64_t));
        p->scale[0] = s1 * (float)(k + 1);
        p->zero_point[0] = z1;
        q->tensors[ids[k]].q = p;
    }
    pdq_qparams *p = calloc(1, sizeof *p);
    p->n = 3;
    p->scale = malloc(3 * sizeof(float));
    p->zero_point = malloc(3 * sizeof(int64_t));
    memcpy(p->scale, s3, sizeof s3);
    memcpy(p->zero_point, z3, sizeof z3);
    q->tensors[w].q = p;
    q->tensors[r].dtype = q->tensors[y].dtype = PDQ_TI16;
    roundtrip(q, t->out);
}

/* ---------------------------------------------------------------- quantized interpreter */

/* y = requant(FC(requant(rms(deq x, deq gamma)), deq w)) by brute force vs the cgraph. */
static void test_quantized_interp(void **state) {
    (void)state;
    pdq_status st = {0};
    pdq_graph *q;
    assert_int_equal(pdq_graph_new("q", &q, &st), PDQ_OK);
    enum { IN = 7, OUT = 3 };
    int xs[2] = {2, IN}, ws[2] = {OUT, IN};
    int x = pdq_graph_input(q, "x", PDQ_TI16, 2, xs, &st);
    uint8_t codes[OUT * IN];
    uint64_t rs = 5;
    for (int i = 0; i < OUT * IN; i++) codes[i] = (uint8_t)(tu_rand(&rs) % 16);
    uint8_t packed[(OUT * IN + 1) / 2]; /* odd width: rows start mid-byte */
    pdq_pack4(codes, OUT * IN, packed);
    int w = pdq_graph_const(q, "w", PDQ_TU4, 2, ws, packed, 1, &st);
    int fin[2] = {x, w};
    int y = pdq_graph_op(q, PDQ_OP_FULLY_CONNECTED, fin, 2, NULL, "y", &st);
    assert_int_equal(pdq_graph_mark_output(q, y, &st), PDQ_OK);
    float sx = 0.01f, sy = 0.0625f, sw[OUT] = {0.1f, 0.02f, 0.3f};
    int64_t zw[OUT] = {8, 3, 12};
    pdq_qparams *pq[3];
    for (int k = 0; k < 3; k++) {
        int n = k == 1 ? OUT : 1;
        pq[k] = calloc(1, sizeof *pq[k]);
        pq[k]->n = n;
        pq[k]->scale = malloc(sizeof(float) * (size_t)n);
        pq[k]->zero_point = calloc((size_t)n, sizeof(int64_t));
    }
    pq[0]->scale[0] = sx;
    pq[2]->scale[0] = sy;
    memcpy(pq[1]->scale, sw, sizeof sw);
    memcpy(pq[1]->zero_point, zw, sizeof zw);
    q->tensors[x].q = pq[0];
    q->tensors[w].q = pq[1];
    q->tensors[y].q = pq[2];
    q->tensors[y].dtype = PDQ_TI16;
    char *dir = tu_mkdtemp(), path[1024];
    snprintf(path, sizeof path, "%s/q.circle", dir);
    assert_int_equal(pdq_circle_write_graph(path, q, &st), PDQ_OK);
    pdq_graph_free(q);
    pdq_cgraph *cg = NULL;
    assert_int_equal(pdq_cg_open(path, &cg, &st), PDQ_OK);
    assert_true(pdq_cg_quantized(cg));
    float *in = pdq_cg_input(cg, 0);
    float xv[2 * IN];
    for (int i = 0; i < 2 * IN; i++) in[i] = xv[i] = (float)(tu_randn(&rs) * 0.3);
    /* a value far out of range saturates, a tie rounds to even */
    in[0] = xv[0] = 1000.0f;
    in[1] = xv[1] = 0.025f; /* 2.5 steps: fl(0.025)/fl(0.01) is not exactly 2.5 in double; just run */
    assert_int_equal(pdq_cg_run(cg, &st), PDQ_OK);
    const float *out = pdq_cg_output(cg, 0);
    for (int r = 0; r < 2; r++)
        for (int o = 0; o < OUT; o++) {
            double acc = 0;
            for (int i = 0; i < IN; i++) {
                double qx = nearbyint((double)xv[r * IN + i] / (double)sx);
                if (qx > 32767) qx = 32767;
                if (qx < -32768) qx = -32768;
                float dx = (float)(qx * (double)sx);
                float dw = (float)((double)(codes[o * IN + i] - zw[o]) * (double)sw[o]);
                acc += (double)dx * (double)dw;
            }
            double qy = nearbyint(acc / (double)sy);
            if (qy > 32767) qy = 32767;
            if (qy < -32768) qy = -32768;
            float want = (float)(qy * (double)sy);
            /* float accumulation in the kernel vs double here: at most one grid step apart */
            assert_true(fabsf(out[r * OUT + o] - want) <= sy * 1.01f);
            /* the output is exactly on the grid */
            double k = (double)out[r * OUT + o] / (double)sy;
            assert_true(fabs(k - nearbyint(k)) < 1e-3);
        }
    /* helper rounding: half to even, saturation */
    const pdq_tensor *ot = pdq_cg_output_tensor(cg, 0);
    assert_int_equal(pdq_cg_quantize_value(ot, 0.15625f), 2); /* 2.5 -> 2 */
    assert_int_equal(pdq_cg_quantize_value(ot, 0.21875f), 4); /* 3.5 -> 4 */
    assert_int_equal(pdq_cg_quantize_value(ot, 1e9f), 32767);
    assert_int_equal(pdq_cg_quantize_value(ot, -1e9f), -32768);
    pdq_cg_free(cg);
    tu_rmtree(dir);
    free(dir);
}

/* ---------------------------------------------------------------- runtime vs in-memory */

static double max_abs_diff(const float *a, const float *b, int n) {
    double m = 0;
    for (int i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (d > m || d != d) m = d;
    }
    return m;
}

static int argmax(const float *x, int n) {
    int b = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[b]) b = i;
    return b;
}

static void runtime_vs_memory(int whole) {
    pdq_status st = {0};
    pdq_model *m = NULL;
    assert_int_equal(pdq_model_load(PDQ_TEST_MODEL, &m, &st), PDQ_OK);
    pdq_set_threads(m, 1);
    enum { S = 48, STEPS = 32 };
    char *out = tu_mkdtemp();
    pdq_export_opts eo;
    pdq_export_opts_default(&eo);
    eo.max_seq = S;
    eo.whole = whole;
    eo.per_layer = !whole;
    eo.quiet = 1;
    assert_int_equal(pdq_export_model(m, out, &eo, &st), PDQ_OK);
    pdq_crt *crt = NULL;
    if (pdq_crt_open(out, whole, &crt, &st) != PDQ_OK) fprintf(stderr, "%s\n", st.msg);
    assert_non_null(crt);
    pdq_rt *rt = NULL;
    assert_int_equal(pdq_rt_create(m, 1, S, &eo.so, &rt, &st), PDQ_OK);
    int V = m->cfg.vocab_size;
    float *a = malloc(sizeof(float) * (size_t)V), *b = malloc(sizeof(float) * (size_t)V);
    int32_t seq[S] = {1, 450, 3186, 310, 278, 6171, 471, 2000};
    int n = 8;
    pdq_kvcache kv;
    assert_int_equal(pdq_kvcache_init(&kv, &m->cfg, 1, S, &st), PDQ_OK);
    float *ref = malloc(sizeof(float) * (size_t)V);
    assert_int_equal(pdq_crt_prefill(crt, seq, n, a, &st), PDQ_OK);
    assert_int_equal(pdq_rt_prefill(rt, 1, n, seq, NULL, PDQ_PAD_RIGHT, b, NULL, &st), PDQ_OK);
    assert_int_equal(pdq_model_forward(m, &kv, 1, n, seq, NULL, NULL, ref, 1, &st), PDQ_OK);
    double worst = 0, worst_ref = 0;
    for (int step = 0; step <= STEPS; step++) {
        double d = max_abs_diff(a, b, V);
        if (d > worst) worst = d;
        double dr = max_abs_diff(a, ref, V);
        if (dr > worst_ref) worst_ref = dr;
        int ta = argmax(a, V), tb = argmax(b, V);
        assert_int_equal(ta, tb);
        if (step == STEPS) break;
        seq[n++] = ta;
        assert_int_equal(pdq_crt_decode(crt, ta, a, &st), PDQ_OK);
        assert_int_equal(pdq_rt_decode(rt, 1, &seq[n - 1], b, &st), PDQ_OK);
        assert_int_equal(pdq_model_forward(m, &kv, 1, 1, &seq[n - 1], NULL, NULL, ref, 1, &st), PDQ_OK);
    }
    fprintf(stderr, "%s: max |circle - in-memory| %.3g, max |circle - fp32 reference| %.3g over %d steps\n",
            whole ? "whole" : "per-layer", worst, worst_ref, STEPS);
    assert_true(worst <= 1e-5);
    assert_true(worst_ref <= 1e-3);
    assert_int_equal(pdq_crt_len(crt), n);
    /* cache full after max_seq tokens */
    pdq_kvcache_free(&kv);
    free(ref);
    free(a);
    free(b);
    pdq_rt_free(rt);
    pdq_crt_free(crt);
    pdq_model_free(m);
    tu_rmtree(out);
    free(out);
}

static void test_runtime_whole(void **state) { (void)state; runtime_vs_memory(1); }
static void test_runtime_per_layer(void **state) { (void)state; runtime_vs_memory(0); }

/* ---------------------------------------------------------------- quantized: exact */

/* In-memory K/V outputs of every layer graph the runtime ran last, recorded after fake-quant. */
typedef struct {
    pdq_ptq *ptq;
    int L;
    float *k[8], *v[8];
    size_t n[8];
} kv_rec;

static pdq_code rec_hook(void *ctx, const pdq_graph *g, int op, int tid, float *data, pdq_status *st) {
    kv_rec *r = ctx;
    pdq_code rc = pdq_ptq_hook(r->ptq, g, op, tid, data, st);
    int l, end = 0;
    char which;
    const char *nm = g->tensors[tid].name;
    if (rc == PDQ_OK && sscanf(nm, "model.layers.%d.self_attn.new_%c%n", &l, &which, &end) == 2 && !nm[end] &&
        l >= 0 && l < r->L && (which == 'k' || which == 'v')) {
        size_t n = pdq_tensor_count(&g->tensors[tid]);
        float **dst = which == 'k' ? &r->k[l] : &r->v[l];
        *dst = realloc(*dst, n * sizeof(float));
        memcpy(*dst, data, n * sizeof(float));
        r->n[l] = n;
    }
    return rc;
}

static int64_t cache_code(const pdq_tensor *t, const void *c, size_t i) {
    return t->dtype == PDQ_TI16 ? ((const int16_t *)c)[i] : ((const uint8_t *)c)[i];
}

/* The Circle cache slots [slot0, slot0 + T_real) hold exactly the codes of the in-memory K/V
 * outputs (T positions per head) on the same grid. */
static void expect_kv(const pdq_crt *crt, const kv_rec *rec, int KV, int C, int hd, int T, int slot0, int n) {
    for (int l = 0; l < rec->L; l++)
        for (int w = 0; w < 2; w++) {
            const pdq_tensor *t;
            const void *c = pdq_crt_cache(crt, l, w, &t);
            assert_non_null(c);
            assert_true(t->q && t->dtype == PDQ_TI16);
            const float *mem = w ? rec->v[l] : rec->k[l];
            assert_int_equal(rec->n[l], (size_t)KV * T * hd);
            for (int h = 0; h < KV; h++)
                for (int p = 0; p < n; p++)
                    for (int d = 0; d < hd; d++) {
                        float x = mem[((size_t)h * T + p) * hd + d];
                        int64_t q = pdq_cg_quantize_value(t, x);
                        assert_true(pdq_cg_dequantize_value(t, q) == x); /* in memory: on the grid */
                        assert_int_equal(cache_code(t, c, ((size_t)h * C + slot0 + p) * hd + d), q);
                    }
        }
}

/* Logits of both paths are the same grid values: same int16 codes. */
static void expect_same(const float *a, const float *b, int n, const pdq_ptq *p) {
    int gi = pdq_ptq_find(p, "lm_head.out");
    const pdq_agrid *g = gi >= 0 ? &pdq_ptq_group_at((pdq_ptq *)p, gi)->grid : NULL;
    for (int i = 0; i < n; i++) {
        if (g) assert_int_equal(pdq_agrid_code(g, a[i]), pdq_agrid_code(g, b[i]));
        if (a[i] != b[i]) {
            fprintf(stderr, "logit %d: circle %.9g in-memory %.9g\n", i, a[i], b[i]);
            fail();
        }
    }
}

/* RTN w4 weights (uint8 embedding / lm_head), int16 activations calibrated on one window with
 * TICO's graph options, exported as a quantized pair and per-layer files: prefill and 32 greedy
 * decode steps through the files give the in-memory fake-quant runtime's int16 logits and K/V
 * codes exactly, in both layouts. */
static void test_quantized_exact(void **state) {
    (void)state;
    enum { S = 48, STEPS = 32 };
    pdq_status st = {0};
    pdq_model *m = NULL;
    assert_int_equal(pdq_model_load(PDQ_TEST_MODEL, &m, &st), PDQ_OK);
    pdq_set_threads(m, 1);
    pdq_quant_opts qo;
    pdq_quant_opts_default(&qo, 4);
    qo.method = PDQ_QM_RTN;
    qo.quiet = 1;
    pdq_qmodel qm;
    memset(&qm, 0, sizeof qm);
    assert_int_equal(pdq_quantize_model(m, &qo, NULL, 0, 0, &qm, &st), PDQ_OK);
    char *qdir = tu_mkdtemp(), *out = tu_mkdtemp(), path[1024];
    assert_int_equal(pdq_quant_save(qdir, PDQ_TEST_MODEL, m, &qm, &st), PDQ_OK);
    pdq_qmodel_free(&qm);
    /* activation grids from one window (a Bible-like id sequence), TICO graph options */
    pdq_export_opts eo;
    pdq_export_opts_default(&eo);
    pdq_ptq_opts po;
    pdq_ptq_opts_default(&po);
    pdq_ptq *cal;
    pdq_ptq_quantize_norms(m);
    assert_int_equal(pdq_ptq_create(m, S, &eo.so, &po, &cal, &st), PDQ_OK);
    pdq_rt *crt_cal;
    assert_int_equal(pdq_rt_create(m, 1, S, &eo.so, &crt_cal, &st), PDQ_OK);
    int32_t win[S];
    uint64_t rs = 3;
    win[0] = 1;
    for (int i = 1; i < S; i++) win[i] = 300 + (int32_t)(tu_rand(&rs) % 2000); /* any ids: only ranges are observed */
    for (int i = 1; i < S; i += 3) win[i] = 278; /* "the" */
    pdq_ptq_calib_opts co = {.decode_steps = 2, .pad = PDQ_PAD_RIGHT};
    assert_int_equal(pdq_ptq_calibrate(cal, crt_cal, win, 1, &co, &st), PDQ_OK);
    snprintf(path, sizeof path, "%s/ptq.json", qdir);
    assert_int_equal(pdq_ptq_save(cal, path, NULL, &st), PDQ_OK);
    pdq_rt_free(crt_cal);
    pdq_ptq_free(cal);
    pdq_model_free(m);

    /* what pdq export / pdq verify do: the checkpoint loaded back, its grids from ptq.json */
    assert_int_equal(pdq_model_load(qdir, &m, &st), PDQ_OK);
    pdq_set_threads(m, 1);
    pdq_rt *rt = NULL;
    pdq_ptq *ptq = NULL;
    assert_int_equal(pdq_ptq_open_runtime(m, qdir, 1, S, NULL, &rt, &ptq, &st), PDQ_OK); /* norms fake-quantized */
    assert_non_null(ptq);
    eo.max_seq = S;
    eo.quiet = 1;
    eo.quant_dir = qdir;
    if (pdq_export_model(m, out, &eo, &st) != PDQ_OK) fprintf(stderr, "%s\n", st.msg);
    assert_int_equal(st.code, PDQ_OK);
    kv_rec rec;
    memset(&rec, 0, sizeof rec);
    rec.ptq = ptq;
    rec.L = m->cfg.n_layers;
    assert_true(rec.L <= 8);
    pdq_rt_set_hook(rt, rec_hook, &rec);
    int V = m->cfg.vocab_size, KV = m->cfg.n_kv_heads, hd = m->cfg.head_dim;
    float *a = malloc(sizeof(float) * (size_t)V * S), *b = malloc(sizeof(float) * (size_t)V * S);
    for (int whole = 1; whole >= 0; whole--) {
        pdq_crt *crt = NULL;
        if (pdq_crt_open(out, whole, &crt, &st) != PDQ_OK) fprintf(stderr, "%s\n", st.msg);
        assert_non_null(crt);
        int32_t seq[S] = {1, 450, 3186, 310, 278, 6171, 471, 2000};
        int n = 8;
        pdq_rt_reset(rt);
        if (whole) { /* every row of the prefill logits output: the in-memory head over all rows */
            assert_int_equal(pdq_crt_prefill_all(crt, seq, n, a, &st), PDQ_OK);
            assert_int_equal(pdq_rt_prefill(rt, 1, n, seq, NULL, PDQ_PAD_RIGHT, NULL, b, &st), PDQ_OK);
            expect_same(a, b, n * V, ptq);
            memmove(a, a + (size_t)(n - 1) * V, sizeof(float) * (size_t)V);
            memmove(b, b + (size_t)(n - 1) * V, sizeof(float) * (size_t)V);
        } else { /* lm_head.q.circle takes the last row */
            assert_int_equal(pdq_crt_prefill(crt, seq, n, a, &st), PDQ_OK);
            assert_int_equal(pdq_rt_prefill(rt, 1, n, seq, NULL, PDQ_PAD_RIGHT, b, NULL, &st), PDQ_OK);
            expect_same(a, b, V, ptq);
        }
        expect_kv(crt, &rec, KV, S - 1, hd, S, 0, n);
        for (int step = 0; step < STEPS; step++) {
            int t = argmax(a, V);
            assert_int_equal(t, argmax(b, V));
            seq[n++] = t;
            assert_int_equal(pdq_crt_decode(crt, t, a, &st), PDQ_OK);
            assert_int_equal(pdq_rt_decode(rt, 1, &seq[n - 1], b, &st), PDQ_OK);
            expect_same(a, b, V, ptq);
            expect_kv(crt, &rec, KV, S - 1, hd, 1, n - 1, 1);
        }
        fprintf(stderr, "quantized %s: prefill + %d decode steps, logits and K/V codes identical\n",
                whole ? "whole-model" : "per-layer", STEPS);
        pdq_crt_free(crt);
    }
    for (int l = 0; l < rec.L; l++) { free(rec.k[l]); free(rec.v[l]); }
    free(a);
    free(b);
    pdq_rt_free(rt);
    pdq_ptq_free(ptq);
    pdq_model_free(m);
    tu_rmtree(qdir);
    tu_rmtree(out);
    free(qdir);
    free(out);
}

/* ---------------------------------------------------------------- bad files */

static void expect_bad(const char *path, const void *data, size_t len, const char *needle) {
    assert_int_equal(tu_write_file(path, data, len), 0);
    pdq_graph *g = NULL;
    pdq_status st = {0};
    pdq_code rc = pdq_circle_load_graph(path, &g, &st);
    if (rc == PDQ_OK || !strstr(st.msg, needle)) fprintf(stderr, "want '%s', got rc %d: %s\n", needle, rc, st.msg);
    assert_int_not_equal(rc, PDQ_OK);
    assert_null(g);
    assert_non_null(strstr(st.msg, needle));
    assert_non_null(strstr(st.msg, path));
}

static void test_bad_files(void **state) {
    tiny *t = *state;
    pdq_status st = {0};
    pdq_graph *g;
    pdq_static_opts so;
    pdq_export_opts eo;
    pdq_export_opts_default(&eo);
    so = eo.so;
    assert_int_equal(pdq_build_layer(t->m, 0, NULL, PDQ_MODE_APPEND, 1, 8, 1, &so, &g, &st), PDQ_OK);
    pdq_circle_model cm;
    assert_int_equal(pdq_circle_from_graph(g, &cm, &st), PDQ_OK);
    char good[1024], bad[1024];
    snprintf(good, sizeof good, "%s/good.circle", t->out);
    snprintf(bad, sizeof bad, "%s/bad.circle", t->out);
    assert_int_equal(pdq_circle_write(good, &cm, NULL, &st), PDQ_OK);
    size_t len;
    char *bytes = tu_read_file(good, &len);
    assert_non_null(bytes);
    /* truncated */
    expect_bad(bad, bytes, len / 3, "");
    /* wrong identifier */
    char *c = malloc(len);
    memcpy(c, bytes, len);
    memcpy(c + 4, "TFL3", 4);
    expect_bad(bad, c, len, "CIR0");
    /* root offset out of range */
    memcpy(c, bytes, len);
    c[0] = c[1] = c[2] = (char)0xff;
    c[3] = 0x7f;
    expect_bad(bad, c, len, "");
    free(c);

    /* unknown / unsupported opcode: patch the model description */
    int32_t saved = cm.opcodes[0].builtin_code;
    cm.opcodes[0].builtin_code = 150; /* GELU: valid code, not an op pdq runs */
    assert_int_equal(pdq_circle_write(bad, &cm, NULL, &st), PDQ_OK);
    pdq_graph *b = NULL;
    assert_int_not_equal(pdq_circle_load_graph(bad, &b, &st), PDQ_OK);
    assert_non_null(strstr(st.msg, "GELU"));
    cm.opcodes[0].builtin_code = saved;
    /* shape mismatch: the first op's output says a wrong shape */
    int32_t ot = cm.ops[0].outputs[0];
    int32_t sd = cm.tensors[ot].shape[cm.tensors[ot].rank - 1];
    cm.tensors[ot].shape[cm.tensors[ot].rank - 1] = sd + 1;
    assert_int_equal(pdq_circle_write(bad, &cm, NULL, &st), PDQ_OK);
    assert_int_not_equal(pdq_circle_load_graph(bad, &b, &st), PDQ_OK);
    assert_non_null(strstr(st.msg, "shape"));
    assert_non_null(strstr(st.msg, cm.tensors[ot].name));
    cm.tensors[ot].shape[cm.tensors[ot].rank - 1] = sd;
    /* the runtime refuses a manifest whose files do not match the contract */
    pdq_circle_model_free(&cm);
    pdq_graph_free(g);
    free(bytes);
    /* the runtime refuses files that do not match the manifest's contract */
    char *dir = tu_mkdtemp(), cmd[2300];
    eo.max_seq = 8;
    eo.quiet = 1;
    eo.per_layer = 0;
    assert_int_equal(pdq_export_model(t->m, dir, &eo, &st), PDQ_OK);
    snprintf(cmd, sizeof cmd, "cp %s/model_prefill.circle %s/model_decode.circle", dir, dir);
    assert_int_equal(tu_run(cmd, NULL), 0);
    pdq_crt *crt = NULL;
    assert_int_not_equal(pdq_crt_open(dir, 1, &crt, &st), PDQ_OK);
    assert_non_null(strstr(st.msg, "model_decode"));
    tu_rmtree(dir);
    free(dir);
    assert_null(crt);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_flatc_conventions),
        cmocka_unit_test(test_roundtrip),
        cmocka_unit_test(test_bad_files),
    };
    const struct CMUnitTest rt_tests[] = {
        cmocka_unit_test(test_quantized_interp),
        cmocka_unit_test(test_runtime_whole),
        cmocka_unit_test(test_runtime_per_layer),
        cmocka_unit_test(test_quantized_exact),
    };
    int f = cmocka_run_group_tests_name("circle_export_tiny", tests, tiny_setup, tiny_teardown);
    return f + cmocka_run_group_tests_name("circle_export_runtime", rt_tests, NULL, NULL);
}
