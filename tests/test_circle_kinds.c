/* The three kinds of exported files read independently, and append-prefill buckets.
 *
 * A tiny synthetic model is quantized (RTN w4, uint8 embedding / lm_head), calibrated (int16
 * activations) and exported three ways from the same checkpoint: float (dequantized weights),
 * hybrid (--hybrid: float activations, packed weights) and quantized (.q). Every file is parsed by
 * Debian's flatc against the real schema (skipped without ../shared/circle or flatc) and checked
 * from flatc's JSON alone: each FC weight's dtype, per-channel qparams and packing, GATHER's
 * standard type rule (output type = params type) with the DEQUANTIZE / QUANTIZE around it, the
 * activation dtypes of each kind, and the hybrid weights unpacked by hand (low nibble = even index)
 * and dequantized with the file's scales equal, bit for bit, the float file's FLOAT32 weights.
 *
 * Buckets: pdq_buckets_parse / pdq_buckets_plan on hand-worked cases; then through the Circle
 * runtime (whole-model and per-layer, float and hybrid files, buckets 1,4,16) a turn of every length
 * 1..25 appended after a prompt gives, at every token, the logits of feeding the same tokens one by
 * one through the decode files; quantized files appended in buckets give exactly the int16 logits of
 * the in-memory fake-quant runtime fed the same bucket sequence. A hand-built DEQUANTIZE -> GATHER
 * file runs to the hand-computed rows; one without qparams is refused. */
#include "testutil.h"

#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "pdq/circle_export.h"
#include "pdq/eval.h"
#include "pdq/model.h"
#include "pdq/ptq.h"
#include "pdq/quant.h"
#include "pdq/runtime.h"
#include "pdq/synth.h"

enum { S = 40 };

typedef struct {
    char *src, *qdir, *f, *h, *q; /* synthetic checkpoint, quantized checkpoint, three export dirs */
} kinds;

static pdq_code export_dir(const char *qdir, const char *out, int hybrid, int quant, pdq_status *st) {
    pdq_model *m = NULL;
    pdq_code rc = pdq_model_load(qdir, &m, st);
    if (rc != PDQ_OK) return rc;
    pdq_set_threads(m, 1);
    pdq_export_opts eo;
    pdq_export_opts_default(&eo);
    eo.max_seq = S;
    eo.quiet = 1;
    rc = pdq_buckets_parse("16,4,1", S, eo.buckets, &eo.n_buckets, st);
    if (hybrid || quant) eo.quant_dir = qdir;
    eo.hybrid = hybrid;
    if (quant) pdq_ptq_quantize_norms(m);
    if (rc == PDQ_OK) rc = pdq_export_model(m, out, &eo, st);
    pdq_model_free(m);
    return rc;
}

static int kinds_setup(void **state) {
    kinds *k = calloc(1, sizeof *k);
    k->src = tu_mkdtemp();
    k->qdir = tu_mkdtemp();
    k->f = tu_mkdtemp();
    k->h = tu_mkdtemp();
    k->q = tu_mkdtemp();
    pdq_synth_opts so;
    pdq_synth_opts_default(&so);
    so.out_dir = k->src;
    so.seed = 11;
    pdq_status st = {0};
    pdq_model *m = NULL;
    pdq_code rc = pdq_synth_write(&so, &st);
    if (rc == PDQ_OK) rc = pdq_model_load(k->src, &m, &st);
    pdq_quant_opts qo;
    pdq_quant_opts_default(&qo, 4);
    qo.method = PDQ_QM_RTN;
    qo.quiet = 1;
    pdq_qmodel qm;
    memset(&qm, 0, sizeof qm);
    if (rc == PDQ_OK) { pdq_set_threads(m, 1); rc = pdq_quantize_model(m, &qo, NULL, 0, 0, &qm, &st); }
    if (rc == PDQ_OK) rc = pdq_quant_save(k->qdir, k->src, m, &qm, &st);
    pdq_qmodel_free(&qm);
    /* int16 activation grids from one window, TICO's graph options */
    pdq_export_opts eo;
    pdq_export_opts_default(&eo);
    pdq_ptq_opts po;
    pdq_ptq_opts_default(&po);
    pdq_ptq *cal = NULL;
    pdq_rt *rt = NULL;
    if (rc == PDQ_OK) { pdq_ptq_quantize_norms(m); rc = pdq_ptq_create(m, S, &eo.so, &po, &cal, &st); }
    if (rc == PDQ_OK) rc = pdq_rt_create(m, 1, S, &eo.so, &rt, &st);
    int32_t win[S];
    uint64_t rs = 5;
    for (int i = 0; i < S; i++) win[i] = (int32_t)(tu_rand(&rs) % 300);
    pdq_ptq_calib_opts co = {.decode_steps = 2, .pad = PDQ_PAD_RIGHT};
    if (rc == PDQ_OK) rc = pdq_ptq_calibrate(cal, rt, win, 1, &co, &st);
    char path[1024];
    snprintf(path, sizeof path, "%s/ptq.json", k->qdir);
    if (rc == PDQ_OK) rc = pdq_ptq_save(cal, path, NULL, &st);
    pdq_rt_free(rt);
    pdq_ptq_free(cal);
    pdq_model_free(m);
    /* float: the dequantized checkpoint without its activation grids */
    if (rc == PDQ_OK) {
        pdq_model *mf = NULL;
        rc = pdq_model_load(k->qdir, &mf, &st);
        pdq_export_opts fo;
        pdq_export_opts_default(&fo);
        fo.max_seq = S;
        fo.quiet = 1;
        if (rc == PDQ_OK) rc = pdq_buckets_parse("1,4,16", S, fo.buckets, &fo.n_buckets, &st);
        if (rc == PDQ_OK) rc = pdq_export_model(mf, k->f, &fo, &st);
        pdq_model_free(mf);
    }
    if (rc == PDQ_OK) rc = export_dir(k->qdir, k->h, 1, 0, &st);
    if (rc == PDQ_OK) rc = export_dir(k->qdir, k->q, 0, 1, &st);
    if (rc != PDQ_OK) { fprintf(stderr, "setup: %s\n", st.msg); return -1; }
    *state = k;
    return 0;
}

static int kinds_teardown(void **state) {
    kinds *k = *state;
    char *d[5] = {k->src, k->qdir, k->f, k->h, k->q};
    for (int i = 0; i < 5; i++) { tu_rmtree(d[i]); free(d[i]); }
    free(k);
    return 0;
}

/* ---------------------------------------------------------------- flatc */

static const cJSON *item(const cJSON *o, const char *key) { return cJSON_GetObjectItemCaseSensitive(o, key); }

static cJSON *flatc(const char *path, const char *tmp) {
    char *txt = tu_flatc_json_text(path, tmp);
    assert_non_null(txt);
    cJSON *j = cJSON_Parse(txt);
    free(txt);
    assert_non_null(j);
    return j;
}

static const char *ttype(const cJSON *t) {
    const cJSON *x = item(t, "type");
    return cJSON_IsString(x) ? x->valuestring : "FLOAT32"; /* flatc leaves out the default */
}

static int n_of(const cJSON *q, const char *key) { return q ? cJSON_GetArraySize(item(q, key)) : 0; }

typedef struct {
    const cJSON *j, *sg, *tensors, *bufs;
    const char **ops; /* builtin name per operator */
    int n_ops;
} fjson;

static const char *op_name(const cJSON *j, const cJSON *op) {
    const cJSON *oc = cJSON_GetArrayItem(item(j, "operator_codes"), cJSON_IsNumber(item(op, "opcode_index")) ? item(op, "opcode_index")->valueint : 0);
    const cJSON *b = item(oc, "builtin_code");
    return cJSON_IsString(b) ? b->valuestring : "ADD"; /* ADD = 0 is flatc's left-out default */
}

static const cJSON *tensor(const fjson *f, int i) { return cJSON_GetArrayItem(f->tensors, i); }
static int is_const(const fjson *f, int i) { return cJSON_IsNumber(item(tensor(f, i), "buffer")) && item(tensor(f, i), "buffer")->valueint > 0; }

/* Buffer bytes of tensor i (flatc prints them as a number list). */
static unsigned char *buffer_bytes(const fjson *f, int i, int *len) {
    const cJSON *data = item(cJSON_GetArrayItem(f->bufs, item(tensor(f, i), "buffer")->valueint), "data");
    *len = cJSON_GetArraySize(data);
    unsigned char *b = malloc((size_t)(*len ? *len : 1));
    int k = 0;
    const cJSON *x;
    cJSON_ArrayForEach(x, data) b[k++] = (unsigned char)x->valueint;
    return b;
}

static long count_of(const cJSON *t) {
    long n = 1;
    const cJSON *d;
    cJSON_ArrayForEach(d, item(t, "shape")) n *= d->valueint;
    return n;
}

/* Checks one file of kind 'f' (float), 'h' (hybrid) or 'q' (int16 activations). */
static void check_file(const cJSON *j, const char *name, char kind, int *fc_weights, int *gathers) {
    fjson f = {.j = j};
    f.sg = cJSON_GetArrayItem(item(j, "subgraphs"), 0);
    f.tensors = item(f.sg, "tensors");
    f.bufs = item(j, "buffers");
    const cJSON *op;
    cJSON_ArrayForEach(op, item(f.sg, "operators")) {
        const char *nm = op_name(j, op);
        const cJSON *ins = item(op, "inputs"), *outs = item(op, "outputs");
        int i0 = cJSON_GetArrayItem(ins, 0)->valueint, o0 = cJSON_GetArrayItem(outs, 0)->valueint;
        const cJSON *x = tensor(&f, i0), *y = tensor(&f, o0);
        if (!strcmp(nm, "FULLY_CONNECTED")) {
            int wi = cJSON_GetArrayItem(ins, 1)->valueint;
            const cJSON *w = tensor(&f, wi), *q = item(w, "quantization");
            const char *wt = ttype(w);
            assert_true(is_const(&f, wi));
            if (kind == 'f') {
                assert_string_equal(wt, "FLOAT32");
                assert_int_equal(n_of(q, "scale"), 0);
            } else { /* packed weights, one scale and zero point per output channel (dimension 0) */
                assert_true(!strcmp(wt, "UINT4") || !strcmp(wt, "UINT8"));
                int rows = cJSON_GetArrayItem(item(w, "shape"), 0)->valueint;
                assert_int_equal(n_of(q, "scale"), rows);
                assert_int_equal(n_of(q, "zero_point"), rows);
                const cJSON *qd = item(q, "quantized_dimension");
                assert_true(!qd || qd->valueint == 0);
                const cJSON *z;
                cJSON_ArrayForEach(z, item(q, "zero_point"))
                    assert_true(z->valuedouble >= 0 && z->valuedouble <= (!strcmp(wt, "UINT4") ? 15 : 255));
                int len;
                unsigned char *b = buffer_bytes(&f, wi, &len);
                assert_int_equal(len, !strcmp(wt, "UINT4") ? (count_of(w) + 1) / 2 : count_of(w));
                free(b);
            }
            /* activations: float32 with no grid in float/hybrid files, int16 per tensor (zp 0) in .q */
            const char *want = kind == 'q' ? "INT16" : "FLOAT32";
            assert_string_equal(ttype(x), want);
            assert_string_equal(ttype(y), want);
            if (kind == 'q') {
                assert_int_equal(n_of(item(y, "quantization"), "scale"), 1);
                assert_int_equal((int)cJSON_GetArrayItem(item(item(y, "quantization"), "zero_point"), 0)->valuedouble, 0);
            } else {
                assert_int_equal(n_of(item(y, "quantization"), "scale"), 0);
            }
            (*fc_weights)++;
        } else if (!strcmp(nm, "GATHER")) {
            /* TFLite/Circle rule: the output has the params' type (no requantization) */
            assert_string_equal(ttype(x), ttype(y));
            assert_string_equal(ttype(x), "FLOAT32");
            assert_string_equal(ttype(tensor(&f, cJSON_GetArrayItem(ins, 1)->valueint)), "INT32");
            assert_int_equal(n_of(item(y, "quantization"), "scale"), 0);
            (*gathers)++;
        } else if (!strcmp(nm, "DEQUANTIZE")) {
            assert_true(kind != 'f');
            assert_true(is_const(&f, i0));
            assert_string_equal(ttype(x), "UINT8");
            assert_int_equal(n_of(item(x, "quantization"), "scale"), cJSON_GetArrayItem(item(x, "shape"), 0)->valueint);
            assert_string_equal(ttype(y), "FLOAT32");
        } else if (!strcmp(nm, "QUANTIZE")) {
            assert_true(kind == 'q');
            assert_string_equal(ttype(x), "FLOAT32");
            assert_string_equal(ttype(y), "INT16");
        } else if (kind == 'h' || kind == 'f') { /* every other op computes in float32 */
            assert_true(!strcmp(ttype(y), "FLOAT32"));
        }
    }
    /* graph inputs: int32 ids, float32 (float / hybrid) or int16 (quantized) activations */
    const cJSON *in;
    cJSON_ArrayForEach(in, item(f.sg, "inputs")) {
        const char *t = ttype(tensor(&f, in->valueint));
        if (strstr(name, "token_embedding") || strstr(name, "model_")) {
            if (in == cJSON_GetArrayItem(item(f.sg, "inputs"), 0)) { assert_string_equal(t, "INT32"); continue; }
        }
        assert_string_equal(t, kind == 'q' ? "INT16" : "FLOAT32");
    }
}

/* Container and operator conventions (NOTES.md §1-§3) and the subgraph I/O against the manifest's
 * contract for this file (names, shapes, dtypes in order). */
static void check_conventions(const cJSON *j, const cJSON *man_file) {
    assert_true(!item(j, "version") || item(j, "version")->valueint == 0);
    assert_null(item(cJSON_GetArrayItem(item(j, "buffers"), 0), "data"));
    const cJSON *oc;
    cJSON_ArrayForEach(oc, item(j, "operator_codes")) { /* deprecated byte = code below 127, also negative */
        const cJSON *dep = item(oc, "deprecated_builtin_code"), *b = item(oc, "builtin_code");
        int d = cJSON_IsNumber(dep) ? dep->valueint : 0;
        if (cJSON_IsString(b) && !strcmp(b->valuestring, "RMS_NORM")) assert_int_equal(d, -6);
        if (cJSON_IsString(b) && !strcmp(b->valuestring, "DEQUANTIZE")) assert_int_equal(d, 6);
        if (cJSON_IsString(b) && !strcmp(b->valuestring, "QUANTIZE")) assert_int_equal(d, 114);
        if (cJSON_IsString(b) && !strcmp(b->valuestring, "GATHER")) assert_int_equal(d, 36);
    }
    const cJSON *sg = cJSON_GetArrayItem(item(j, "subgraphs"), 0), *op;
    cJSON_ArrayForEach(op, item(sg, "operators")) {
        const cJSON *ot = item(op, "builtin_options_type");
        if (cJSON_IsString(ot) && !strcmp(ot->valuestring, "FullyConnectedOptions")) {
            assert_true(cJSON_IsTrue(item(item(op, "builtin_options"), "keep_num_dims")));
            assert_int_equal(cJSON_GetArraySize(item(op, "inputs")), 3);
            assert_int_equal(cJSON_GetArrayItem(item(op, "inputs"), 2)->valueint, -1);
        }
    }
    static const char *const io[2] = {"inputs", "outputs"};
    for (int w = 0; w < 2; w++) {
        const cJSON *want = item(man_file, io[w]), *got = item(sg, io[w]);
        assert_int_equal(cJSON_GetArraySize(want), cJSON_GetArraySize(got));
        for (int i = 0; i < cJSON_GetArraySize(got); i++) {
            const cJSON *t = cJSON_GetArrayItem(item(sg, "tensors"), cJSON_GetArrayItem(got, i)->valueint);
            const cJSON *m = cJSON_GetArrayItem(want, i);
            assert_string_equal(item(t, "name")->valuestring, item(m, "name")->valuestring);
            char *a = cJSON_PrintUnformatted(item(t, "shape")), *b = cJSON_PrintUnformatted(item(m, "shape"));
            assert_string_equal(a, b);
            free(a);
            free(b);
            const char *dt = item(m, "dtype")->valuestring, *ty = ttype(t);
            assert_true((!strcmp(dt, "float32") && !strcmp(ty, "FLOAT32")) || (!strcmp(dt, "int32") && !strcmp(ty, "INT32")) ||
                        (!strcmp(dt, "int16") && !strcmp(ty, "INT16")));
        }
    }
}

/* Every file of one export dir through flatc. */
static int check_dir(const char *dir, char kind, const char *tmp) {
    char mp[2048];
    snprintf(mp, sizeof mp, "%s/manifest.json", dir);
    char *txt = tu_read_file(mp, NULL);
    cJSON *man = cJSON_Parse(txt);
    free(txt);
    assert_non_null(man);
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    int files = 0, fc = 0, ga = 0;
    while ((e = readdir(d))) {
        if (!strstr(e->d_name, ".circle")) continue;
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        cJSON *j = flatc(path, tmp);
        check_file(j, e->d_name, kind, &fc, &ga);
        char base[256];
        snprintf(base, sizeof base, "%.*s", (int)strcspn(e->d_name, "."), e->d_name);
        const cJSON *mf = item(item(man, "files"), base);
        assert_non_null(mf);
        assert_string_equal(item(mf, "file")->valuestring, e->d_name);
        check_conventions(j, mf);
        cJSON_Delete(j);
        files++;
    }
    closedir(d);
    cJSON_Delete(man);
    assert_true(fc > 0 && ga > 0);
    return files;
}

/* Weight `name` of a file: float32 values (raw bytes of a FLOAT32 tensor, else dequantized by
 * hand with flatc's scales, which it prints to 6 decimal places) and, for packed tensors, the codes
 * (low nibble = even flat index) and per-row scale / zero point. */
typedef struct {
    long n, cols;
    float *v;
    int *code;
    double *scale, *zero;
} wvals;

static void wvals_free(wvals *w) { free(w->v); free(w->code); free(w->scale); free(w->zero); }

static wvals weight_values(const char *path, const char *tmp, const char *name) {
    wvals w = {0};
    cJSON *j = flatc(path, tmp);
    fjson f = {.j = j};
    f.sg = cJSON_GetArrayItem(item(j, "subgraphs"), 0);
    f.tensors = item(f.sg, "tensors");
    f.bufs = item(j, "buffers");
    int ti = -1, k = 0;
    const cJSON *t;
    cJSON_ArrayForEach(t, f.tensors) {
        if (!strcmp(item(t, "name")->valuestring, name)) ti = k;
        k++;
    }
    assert_true(ti >= 0);
    t = tensor(&f, ti);
    w.n = count_of(t);
    int len, rows = cJSON_GetArrayItem(item(t, "shape"), 0)->valueint;
    w.cols = w.n / rows;
    unsigned char *b = buffer_bytes(&f, ti, &len);
    w.v = malloc(sizeof(float) * (size_t)w.n);
    const char *ty = ttype(t);
    if (!strcmp(ty, "FLOAT32")) {
        assert_int_equal(len, 4 * w.n);
        memcpy(w.v, b, sizeof(float) * (size_t)w.n);
    } else {
        const cJSON *q = item(t, "quantization");
        w.code = malloc(sizeof(int) * (size_t)w.n);
        w.scale = malloc(sizeof(double) * (size_t)rows);
        w.zero = malloc(sizeof(double) * (size_t)rows);
        for (int r = 0; r < rows; r++) {
            w.scale[r] = cJSON_GetArrayItem(item(q, "scale"), r)->valuedouble;
            w.zero[r] = cJSON_GetArrayItem(item(q, "zero_point"), r)->valuedouble;
        }
        for (long i = 0; i < w.n; i++) {
            w.code[i] = !strcmp(ty, "UINT4") ? (i & 1 ? b[i / 2] >> 4 : b[i / 2] & 15) : b[i];
            long r = i / w.cols;
            w.v[i] = (float)(((double)w.code[i] - w.zero[r]) * w.scale[r]);
        }
    }
    free(b);
    cJSON_Delete(j);
    return w;
}

static void test_kinds_flatc(void **state) {
    kinds *k = *state;
    char *out = NULL;
    if (!tu_shared_dir() || tu_run("flatc --version >/dev/null 2>&1", &out) != 0) { free(out); skip(); return; }
    free(out);
    char *tmp = tu_mkdtemp();
    int nf = check_dir(k->f, 'f', tmp), nh = check_dir(k->h, 'h', tmp), nq = check_dir(k->q, 'q', tmp);
    /* 2 layers: whole prefill, decode, append q4, q16; embed, head; per layer prefill, decode, q1, q4, q16 */
    assert_int_equal(nf, 6 + 2 * 5);
    assert_int_equal(nh, nf);
    assert_int_equal(nq, nf);
    /* the hybrid file's packed codes, unpacked from flatc's bytes, are exactly the codes of the float
     * file's weights on the file's per-row grid (k_proj with the 1/sqrt(hd) fold included, lm_head
     * uint8): round(w / scale[row]) + zero[row] == code, and the dequantized values agree within
     * the precision flatc prints the scales with */
    static const char *const names[] = {"model.layers.1.self_attn.q_proj.weight", "model.layers.1.self_attn.k_proj.weight",
                                        "model.layers.1.mlp.down_proj.weight"};
    char pf[1024], ph[1024];
    snprintf(pf, sizeof pf, "%s/decoder_layer_decode_1.circle", k->f);
    snprintf(ph, sizeof ph, "%s/decoder_layer_decode_1.w4.circle", k->h);
    for (int i = 0; i < 4; i++) {
        const char *nm = i < 3 ? names[i] : "lm_head.weight";
        if (i == 3) {
            snprintf(pf, sizeof pf, "%s/lm_head.circle", k->f);
            snprintf(ph, sizeof ph, "%s/lm_head.w4.circle", k->h);
        }
        wvals a = weight_values(pf, tmp, nm), b = weight_values(ph, tmp, nm);
        assert_int_equal(a.n, b.n);
        assert_null(a.code);
        assert_non_null(b.code);
        long diff = 0;
        double worst = 0;
        for (long x = 0; x < a.n; x++) {
            long r = x / b.cols;
            diff += (int)nearbyint((double)a.v[x] / b.scale[r] + b.zero[r]) != b.code[x];
            /* flatc prints floats to 6 decimal places: each scale is known to +-5e-7 */
            double k = fabs((double)b.code[x] - b.zero[r]);
            double d = fabs((double)a.v[x] - (double)b.v[x]) / (k * 5e-7 + 1e-6 * fabs((double)a.v[x]) + 1e-12);
            if (d > worst) worst = d;
        }
        if (diff) fprintf(stderr, "%s: %ld of %ld codes differ\n", nm, diff, a.n);
        assert_int_equal(diff, 0);
        if (worst > 1) fprintf(stderr, "%s: difference %.3g x the print precision\n", nm, worst);
        assert_true(worst <= 1);
        wvals_free(&a);
        wvals_free(&b);
    }
    /* manifest: tags, forms and buckets */
    snprintf(pf, sizeof pf, "%s/manifest.json", k->h);
    char *txt = tu_read_file(pf, NULL);
    cJSON *man = cJSON_Parse(txt);
    free(txt);
    assert_string_equal(item(man, "file_tag")->valuestring, ".w4");
    assert_string_equal(item(man, "activations")->valuestring, "float32");
    assert_int_equal(cJSON_GetArraySize(item(man, "append_buckets")), 3);
    assert_int_equal(cJSON_GetArrayItem(item(man, "append_buckets"), 2)->valueint, 16);
    int fc_hybrid = 0;
    const cJSON *r;
    cJSON_ArrayForEach(r, item(man, "consumer_requirements"))
        fc_hybrid |= !strcmp(r->valuestring, "FULLY_CONNECTED FLOAT32,UINT4[const,per-channel],none -> FLOAT32");
    assert_true(fc_hybrid);
    cJSON_Delete(man);
    tu_rmtree(tmp);
    free(tmp);
}

/* ---------------------------------------------------------------- buckets */

static void expect_plan(const int *b, int nb, int len, int n, int max_seq, int k, const int *want) {
    int plan[64];
    int got = pdq_buckets_plan(b, nb, len, n, max_seq, plan, 64);
    assert_int_equal(got, k);
    for (int i = 0; i < k; i++) assert_int_equal(plan[i], want[i]);
}

static void test_bucket_plan(void **state) {
    (void)state;
    pdq_status st = {0};
    int b[PDQ_MAX_BUCKETS], nb;
    assert_int_equal(pdq_buckets_parse("16,4,1,4", 64, b, &nb, &st), PDQ_OK);
    assert_int_equal(nb, 3);
    assert_int_equal(b[0], 1);
    assert_int_equal(b[1], 4);
    assert_int_equal(b[2], 16);
    /* hand-worked: largest that fits the tokens left and the past, then smaller, no padding */
    expect_plan(b, nb, 11, 13, 64, 4, (const int[]){4, 4, 4, 1});
    expect_plan(b, nb, 0, 37, 64, 4, (const int[]){16, 16, 4, 1});
    expect_plan(b, nb, 44, 20, 64, 2, (const int[]){16, 4});     /* 44 + 16 = 60 <= 64 */
    expect_plan(b, nb, 50, 14, 64, 5, (const int[]){4, 4, 4, 1, 1}); /* 50 + 16 > 64 */
    expect_plan(b, nb, 61, 3, 64, 3, (const int[]){1, 1, 1});
    expect_plan(NULL, 0, 5, 3, 64, 3, (const int[]){1, 1, 1});     /* decode only */
    int plan[4];
    assert_int_equal(pdq_buckets_plan(b, nb, 62, 3, 64, plan, 4), -1); /* context full */
    assert_int_equal(pdq_buckets_plan(b, nb, 0, 9, 64, plan, 2), -1);  /* plan longer than cap */
    static const char *const bad[] = {"", "0", "64", "4,,5", "4,", "a", "4;5", "-1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_not_equal(pdq_buckets_parse(bad[i], 64, b, &nb, &st), PDQ_OK);
        assert_true(strlen(st.msg) > 0);
    }
    assert_int_equal(pdq_buckets_parse("64", 64, b, &nb, &st), PDQ_ERR_LIMIT);
    assert_non_null(strstr(st.msg, "max_seq-1 = 63"));
}

/* Largest |a - b| (pdq_compare_logits' max, NaN counted). */
static double max_abs(const float *a, const float *b, int n) {
    pdq_logit_cmp c;
    pdq_compare_logits(a, b, n, &c);
    return c.max_abs_diff;
}

/* Turns of 1..25 tokens after a 3-token prompt: bucketed append vs token-by-token decode. */
static void append_vs_decode(const char *dir, int whole) {
    pdq_status st = {0};
    pdq_crt *a = NULL, *b = NULL;
    if (pdq_crt_open(dir, whole, &a, &st) != PDQ_OK) fprintf(stderr, "%s\n", st.msg);
    assert_non_null(a);
    assert_int_equal(pdq_crt_open(dir, whole, &b, &st), PDQ_OK);
    const int *bq;
    assert_int_equal(pdq_crt_buckets(a, &bq), 3);
    assert_int_equal(bq[2], 16);
    int V = pdq_crt_vocab(a);
    enum { P = 3, TMAX = 25 };
    float *la = malloc(sizeof(float) * (size_t)V * TMAX), *lb = malloc(sizeof(float) * (size_t)V), *last = malloc(sizeof(float) * (size_t)V);
    int32_t prompt[P] = {1, 17, 230}, turn[TMAX];
    uint64_t rs = 9;
    for (int i = 0; i < TMAX; i++) turn[i] = (int32_t)(tu_rand(&rs) % (uint64_t)V);
    double worst = 0;
    int used16 = 0;
    for (int T = 1; T <= TMAX; T++) {
        assert_int_equal(pdq_crt_prefill(a, prompt, P, last, &st), PDQ_OK);
        assert_int_equal(pdq_crt_prefill(b, prompt, P, lb, &st), PDQ_OK);
        int plan[64];
        int np = pdq_crt_plan(a, T, plan, 64);
        assert_true(np > 0);
        for (int i = 0; i < np; i++) used16 |= plan[i] == 16;
        assert_int_equal(pdq_crt_append(a, turn, T, last, la, &st), PDQ_OK);
        assert_int_equal(pdq_crt_len(a), P + T);
        for (int t = 0; t < T; t++) {
            assert_int_equal(pdq_crt_decode(b, turn[t], lb, &st), PDQ_OK);
            double d = max_abs(la + (size_t)t * V, lb, V);
            if (d > worst) worst = d;
            assert_int_equal(pdq_argmax(la + (size_t)t * V, V), pdq_argmax(lb, V));
        }
        assert_true(max_abs(last, la + (size_t)(T - 1) * V, V) == 0.0); /* logits = the last row of all_logits */
    }
    assert_true(used16);
    fprintf(stderr, "%s %s: turns of 1..%d tokens in buckets vs token by token: max |d| %.3g\n", dir,
            whole ? "whole" : "per-layer", TMAX, worst);
    assert_true(worst <= 1e-4);
    /* no room: refused before anything runs */
    assert_int_equal(pdq_crt_prefill(a, prompt, P, last, &st), PDQ_OK);
    int32_t many[S];
    for (int i = 0; i < S; i++) many[i] = 5;
    assert_int_equal(pdq_crt_append(a, many, S - P + 1, last, NULL, &st), PDQ_ERR_LIMIT);
    assert_non_null(strstr(st.msg, "max_seq"));
    assert_int_equal(pdq_crt_len(a), P);
    /* a chunked initial prefill: the whole prompt through the buckets from length 0 */
    assert_int_equal(pdq_crt_append(a, many, S - P, last, NULL, &st), PDQ_OK);
    free(la);
    free(lb);
    free(last);
    pdq_crt_free(a);
    pdq_crt_free(b);
}

static void test_append_float(void **state) {
    kinds *k = *state;
    append_vs_decode(k->f, 1);
    append_vs_decode(k->f, 0);
}

static void test_append_hybrid(void **state) {
    kinds *k = *state;
    append_vs_decode(k->h, 1);
    append_vs_decode(k->h, 0);
}

/* Quantized files in buckets: exactly the in-memory fake-quant runtime's int16 logits on the same
 * bucket sequence, at every token of the turn. */
static void test_append_quantized_exact(void **state) {
    kinds *k = *state;
    pdq_status st = {0};
    pdq_model *m = NULL;
    assert_int_equal(pdq_model_load(k->qdir, &m, &st), PDQ_OK);
    pdq_set_threads(m, 1);
    pdq_rt *rt = NULL;
    pdq_ptq *ptq = NULL;
    assert_int_equal(pdq_ptq_open_runtime(m, k->qdir, 1, S, NULL, &rt, &ptq, &st), PDQ_OK);
    assert_non_null(ptq);
    int V = m->cfg.vocab_size;
    enum { P = 4, T = 23 };
    float *a = malloc(sizeof(float) * (size_t)V * T), *b = malloc(sizeof(float) * (size_t)V * T);
    int32_t prompt[P] = {1, 40, 41, 42}, turn[T];
    for (int i = 0; i < T; i++) turn[i] = (int32_t)((i * 37 + 11) % V);
    for (int whole = 1; whole >= 0; whole--) {
        pdq_crt *crt = NULL;
        assert_int_equal(pdq_crt_open(k->q, whole, &crt, &st), PDQ_OK);
        assert_int_equal(pdq_crt_prefill(crt, prompt, P, a, &st), PDQ_OK);
        pdq_rt_reset(rt);
        assert_int_equal(pdq_rt_prefill(rt, 1, P, prompt, NULL, PDQ_PAD_RIGHT, b, NULL, &st), PDQ_OK);
        int plan[64], np = pdq_crt_plan(crt, T, plan, 64);
        assert_int_equal(np, 5); /* 23 = 16 + 4 + 1 + 1 + 1 */
        assert_int_equal(pdq_crt_append(crt, turn, T, NULL, a, &st), PDQ_OK);
        /* whole: the head over the bucket's rows in both; per-layer: lm_head takes one row, so the
         * bucket's last token, which the in-memory runtime also runs through a one-row head */
        long diff = 0, cmp = 0;
        for (int i = 0, at = 0; i < np; at += plan[i++]) {
            float *rows = whole ? b + (size_t)at * V : NULL, *lastb = b + (size_t)(at + plan[i] - 1) * V;
            assert_int_equal(pdq_rt_append(rt, 1, plan[i], turn + at, NULL, plan[i], whole ? NULL : lastb, rows, &st), PDQ_OK);
            for (int t = whole ? at : at + plan[i] - 1; t < at + plan[i]; t++, cmp++)
                for (int x = 0; x < V; x++) diff += a[(size_t)t * V + x] != b[(size_t)t * V + x];
        }
        assert_int_equal(cmp, whole ? T : np);
        if (diff) fprintf(stderr, "quantized %s: %ld logits differ\n", whole ? "whole" : "per-layer", diff);
        assert_int_equal(diff, 0);
        pdq_crt_free(crt);
    }
    free(a);
    free(b);
    pdq_rt_free(rt);
    pdq_ptq_free(ptq);
    pdq_model_free(m);
}

/* DEQUANTIZE(uint8 per-row table) -> GATHER(ids) read back: the table becomes the float constant
 * scale[r] * (q - zero[r]) (worked out by hand here), the gather runs on it; a table without
 * qparams is refused with the tensor named (scales that do not match its rows: the writer refuses). */
static pdq_code gather_file(const char *path, int n_scale, int with_q, pdq_status *st) {
    pdq_circle_model m;
    pdq_code rc = pdq_circle_model_init(&m, st);
    if (rc != PDQ_OK) return rc;
    static const uint8_t table[3 * 4] = {0, 1, 2, 3, 10, 20, 30, 40, 255, 128, 7, 0};
    float sc[3] = {0.5f, 0.25f, 0.125f};
    int64_t zp[3] = {1, 20, 128};
    int32_t ts[2] = {3, 4}, is[2] = {1, 2}, os[3] = {1, 2, 4};
    int32_t b = pdq_circle_add_buffer(&m, table, sizeof table, 1, st);
    int32_t t = pdq_circle_add_tensor(&m, "table", 3 /* UINT8 */, 2, ts, (uint32_t)b, st);
    int32_t dq = pdq_circle_add_tensor(&m, "table.dequantized", 0 /* FLOAT32 */, 2, ts, 0, st);
    int32_t ids = pdq_circle_add_tensor(&m, "ids", 2 /* INT32 */, 2, is, 0, st);
    int32_t out = pdq_circle_add_tensor(&m, "out", 0, 3, os, 0, st);
    if (with_q) rc = pdq_circle_set_quant(&m, t, n_scale, sc, zp, 0, st);
    int32_t i1[1] = {t}, o1[1] = {dq}, i2[2] = {dq, ids}, o2[1] = {out};
    pdq_circle_options go = pdq_circle_options_default(23 /* GatherOptions */);
    if (rc == PDQ_OK && (pdq_circle_add_op(&m, 6 /* DEQUANTIZE */, 1, i1, 1, o1, 0, NULL, st) < 0 ||
                         pdq_circle_add_op(&m, 36 /* GATHER */, 2, i2, 1, o2, 23, &go, st) < 0))
        rc = st->code;
    if (rc == PDQ_OK) rc = pdq_circle_add_input(&m, ids, st);
    if (rc == PDQ_OK) rc = pdq_circle_add_output(&m, out, st);
    if (rc == PDQ_OK) rc = pdq_circle_write(path, &m, NULL, st);
    pdq_circle_model_free(&m);
    return rc;
}

static void test_dequantize_gather_import(void **state) {
    (void)state;
    pdq_status st = {0};
    char *dir = tu_mkdtemp(), path[1024];
    snprintf(path, sizeof path, "%s/g.circle", dir);
    assert_int_equal(gather_file(path, 3, 1, &st), PDQ_OK);
    pdq_cgraph *cg = NULL;
    if (pdq_cg_open(path, &cg, &st) != PDQ_OK) fprintf(stderr, "%s\n", st.msg);
    assert_non_null(cg);
    int32_t *in = pdq_cg_input(cg, 0);
    in[0] = 2;
    in[1] = 0;
    assert_int_equal(pdq_cg_run(cg, &st), PDQ_OK);
    const float *o = pdq_cg_output(cg, 0);
    static const float want[8] = {0.125f * (255 - 128), 0.125f * (128 - 128), 0.125f * (7 - 128), 0.125f * (0 - 128),
                                  0.5f * (0 - 1), 0.5f * (1 - 1), 0.5f * (2 - 1), 0.5f * (3 - 1)};
    for (int i = 0; i < 8; i++) assert_true(o[i] == want[i]);
    pdq_cg_free(cg);
    pdq_graph *g = NULL;
    assert_int_equal(gather_file(path, 0, 0, &st), PDQ_OK);
    assert_int_not_equal(pdq_circle_load_graph(path, &g, &st), PDQ_OK);
    assert_non_null(strstr(st.msg, "DEQUANTIZE of 'table'"));
    assert_null(g);
    assert_int_not_equal(gather_file(path, 2, 1, &st), PDQ_OK); /* 2 scales for 3 rows: the writer refuses */
    tu_rmtree(dir);
    free(dir);
}

int main(void) {
    const struct CMUnitTest plain[] = {cmocka_unit_test(test_bucket_plan), cmocka_unit_test(test_dequantize_gather_import)};
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kinds_flatc),
        cmocka_unit_test(test_append_float),
        cmocka_unit_test(test_append_hybrid),
        cmocka_unit_test(test_append_quantized_exact),
    };
    int f = cmocka_run_group_tests_name("circle_buckets", plain, NULL, NULL);
    return f + cmocka_run_group_tests_name("circle_kinds", tests, kinds_setup, kinds_teardown);
}
