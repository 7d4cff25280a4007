/* make bench section "circle": quantized (w4 a16) Circle export of the bundled model and of the
 * TinyLlama-1.1B shape at max_seq 256 (whole-model pair + per-layer files): RTN w4 weights (uint8
 * embedding / lm_head), int16 activations calibrated on one or two windows of pseudo-random ids
 * (only the timing matters here; the quality path is pdq quantize), export time and file sizes;
 * decode tokens/s of the Circle runtime (whole-model and per-layer files) next to the in-memory
 * static runtime, fake-quant and float, with the same graph options (bundled model).
 * usage: bench_section_circle MODEL_DIR [TINYLLAMA_DIR] */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench_ptq.h"
#include "pdq/circle_export.h"
#include "pdq/model.h"
#include "pdq/progress.h"
#include "pdq/ptq.h"
#include "pdq/quant.h"
#include "pdq/runtime.h"

typedef struct {
    double rtn_s, calib_s, seconds, total_mib, prefill_mib, decode_mib, layer_mib;
    int windows;
} exp_stats;

static double mib(const char *dir, const char *file) {
    char p[4096];
    struct stat sb;
    snprintf(p, sizeof p, "%s/%s", dir, file);
    return stat(p, &sb) == 0 ? (double)sb.st_size / 1048576.0 : -1;
}

static void rm_dir(const char *dir) {
    DIR *d = opendir(dir);
    struct dirent *e;
    char p[4096];
    while (d && (e = readdir(d)))
        if (e->d_name[0] != '.') { snprintf(p, sizeof p, "%s/%s", dir, e->d_name); unlink(p); }
    if (d) closedir(d);
    rmdir(dir);
}

static void rm_tree(const char *dir) {
    char p[4096];
    snprintf(p, sizeof p, "%s/hf", dir);
    rm_dir(p); /* the quantized checkpoint's dequantized HF copy */
    rm_dir(dir);
}

/* RTN w4 of m in place, quantized checkpoint in qdir (its f32 HF copy deleted at once), int16
 * grids from `windows` windows of S pseudo-random ids, then the timed quantized export into out.
 * *ptq keeps the grids (m's norms are fake-quantized) for the in-memory runtime. */
static int do_export(pdq_model *m, const char *src, const char *qdir, const char *out, int S, int windows,
                     exp_stats *s, pdq_ptq **ptq) {
    pdq_status st = {0};
    pdq_export_opts o;
    pdq_export_opts_default(&o);
    o.max_seq = S;
    o.quiet = 1;
    o.quant_dir = qdir;
    double t0 = pdq_now();
    pdq_code rc = bench_rtn_w4(m, src, qdir, &st);
    s->rtn_s = pdq_now() - t0;
    char hf[4200];
    snprintf(hf, sizeof hf, "%s/hf", qdir);
    rm_dir(hf);
    pdq_ptq *p = NULL;
    t0 = pdq_now();
    if (rc == PDQ_OK) rc = bench_calibrate(m, S, &o.so, windows, qdir, &p, &st);
    s->calib_s = pdq_now() - t0;
    s->windows = windows;
    if (rc == PDQ_OK) {
        t0 = pdq_now();
        rc = pdq_export_model(m, out, &o, &st);
        s->seconds = pdq_now() - t0;
    }
    if (rc != PDQ_OK) {
        fprintf(stderr, "bench circle: %s\n", st.msg);
        pdq_ptq_free(p);
        return 1;
    }
    s->total_mib = 0;
    DIR *d = opendir(out);
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (strstr(e->d_name, ".circle")) s->total_mib += mib(out, e->d_name);
    if (d) closedir(d);
    s->prefill_mib = mib(out, "model_prefill.q.circle");
    s->decode_mib = mib(out, "model_decode.q.circle");
    s->layer_mib = mib(out, "decoder_layer_decode_0.q.circle");
    if (ptq) *ptq = p;
    else pdq_ptq_free(p);
    return 0;
}

static double rt_decode(pdq_model *m, const pdq_static_opts *o, pdq_ptq *ptq, int S, const int32_t *ids, int n,
                        int steps) {
    pdq_status st = {0};
    pdq_rt *rt = NULL;
    int V = m->cfg.vocab_size;
    float *lg = malloc(sizeof(float) * (size_t)V);
    double r = -1;
    pdq_code rc = pdq_rt_create(m, 1, S, o, &rt, &st);
    if (rc == PDQ_OK && ptq) { /* fake-quant: what the quantized files compute */
        pdq_ptq_attach(ptq, rt);
        pdq_ptq_set_mode(ptq, PDQ_PTQ_FAKEQUANT);
    }
    if (rc == PDQ_OK &&
        pdq_rt_prefill(rt, 1, n, ids, NULL, PDQ_PAD_RIGHT, lg, NULL, &st) == PDQ_OK &&
        pdq_rt_decode(rt, 1, ids, lg, &st) == PDQ_OK) { /* warm-up builds the decode graphs */
        int32_t tok = 1;
        double t0 = pdq_now();
        int i = 0;
        for (; i < steps; i++) {
            tok = 1 + (tok * 31) % (V - 1);
            if (pdq_rt_decode(rt, 1, &tok, lg, &st) != PDQ_OK) break;
        }
        if (i == steps) r = steps / (pdq_now() - t0);
    }
    if (r < 0) fprintf(stderr, "bench circle: in-memory runtime: %s\n", st.msg);
    pdq_rt_free(rt);
    free(lg);
    return r;
}

static double crt_decode(const char *dir, int whole, const int32_t *ids, int n, int steps, int V) {
    pdq_status st = {0};
    pdq_crt *rt = NULL;
    float *lg = malloc(sizeof(float) * (size_t)V);
    double r = -1;
    if (pdq_crt_open(dir, whole, &rt, &st) == PDQ_OK && pdq_crt_prefill(rt, ids, n, lg, &st) == PDQ_OK &&
        pdq_crt_decode(rt, ids[0], lg, &st) == PDQ_OK) { /* same warm-up step as the in-memory runtime */
        int32_t tok = 1;
        double t0 = pdq_now();
        int i = 0;
        for (; i < steps; i++) {
            tok = 1 + (tok * 31) % (V - 1);
            if (pdq_crt_decode(rt, tok, lg, &st) != PDQ_OK) break;
        }
        if (i == steps) r = steps / (pdq_now() - t0);
    }
    if (r < 0) fprintf(stderr, "bench circle: circle runtime: %s\n", st.msg);
    pdq_crt_free(rt);
    free(lg);
    return r;
}

static void print_export(const char *key, const exp_stats *s) {
    printf("\"%s\": {\"rtn_w4_s\": %.2f, \"calibration_s\": %.2f, \"calibration_windows\": %d, \"export_s\": %.2f, "
           "\"total_mib\": %.1f, \"model_prefill_mib\": %.1f, \"model_decode_mib\": %.1f, \"decoder_layer_decode_0_mib\": %.2f}",
           key, s->rtn_s, s->calib_s, s->windows, s->seconds, s->total_mib, s->prefill_mib, s->decode_mib, s->layer_mib);
}

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: bench_section_circle MODEL_DIR [TINYLLAMA_DIR]\n"); return 2; }
    enum { S = 256, PROMPT = 16, STEPS = 64 };
    pdq_status st = {0};
    pdq_model *m = NULL;
    if (pdq_model_load(argv[1], &m, &st) != PDQ_OK) { fprintf(stderr, "bench circle: %s\n", st.msg); return 1; }
    int V = m->cfg.vocab_size;
    pdq_model *fm = NULL; /* float copy for the float in-memory figure */
    if (pdq_model_load(argv[1], &fm, &st) != PDQ_OK) { fprintf(stderr, "bench circle: %s\n", st.msg); pdq_model_free(m); return 1; }
    char tmpl[] = "/tmp/pdq-bench-circle-XXXXXX";
    char *tmp = mkdtemp(tmpl);
    if (!tmp) { pdq_model_free(m); pdq_model_free(fm); return 1; }
    char out[4200], qdir[4200];
    snprintf(out, sizeof out, "%s/small", tmp);
    snprintf(qdir, sizeof qdir, "%s/small-q", tmp);
    exp_stats small = {0}, big = {0};
    pdq_ptq *ptq = NULL;
    fprintf(stderr, "bench circle: w4 a16 export of the bundled model, max_seq %d\n", S);
    int rc = do_export(m, argv[1], qdir, out, S, 2, &small, &ptq);
    int32_t ids[PROMPT];
    for (int i = 0; i < PROMPT; i++) ids[i] = 1 + (i * 7919) % (V - 1);
    pdq_export_opts eo;
    pdq_export_opts_default(&eo);
    double mem_q = -1, mem_f = -1, whole = -1, layers = -1;
    if (!rc) {
        fprintf(stderr, "bench circle: decode speed, bundled model, max_seq %d\n", S);
        mem_f = rt_decode(fm, &eo.so, NULL, S, ids, PROMPT, STEPS);
        mem_q = rt_decode(m, &eo.so, ptq, S, ids, PROMPT, STEPS);
        whole = crt_decode(out, 1, ids, PROMPT, STEPS, V);
        layers = crt_decode(out, 0, ids, PROMPT, STEPS, V);
    }
    pdq_ptq_free(ptq);
    rm_dir(out);
    rm_tree(qdir);
    pdq_model_free(m);
    pdq_model_free(fm);
    m = NULL;
    int have_big = 0;
    if (!rc && argc > 2) {
        fprintf(stderr, "bench circle: w4 a16 export of the TinyLlama shape, max_seq %d\n", S);
        if (pdq_model_load(argv[2], &m, &st) == PDQ_OK) {
            snprintf(out, sizeof out, "%s/big", tmp);
            snprintf(qdir, sizeof qdir, "%s/big-q", tmp);
            have_big = do_export(m, argv[2], qdir, out, S, 1, &big, NULL) == 0;
            rm_dir(out);
            rm_tree(qdir);
            pdq_model_free(m);
        } else {
            fprintf(stderr, "bench circle: %s\n", st.msg);
        }
    }
    rmdir(tmp);
    if (rc) return 1;
    printf("{\"dtype\": \"w4 a16: RTN 4-bit per-channel weights (uint8 embedding/lm_head), int16 activations calibrated "
           "on pseudo-random-id windows of max_seq\", \"max_seq\": %d, \"files\": \"whole-model pair + per-layer\", ", S);
    print_export("export_bundled", &small);
    if (have_big) { printf(", "); print_export("export_tinyllama_shape", &big); }
    printf(", \"decode_tokens_per_s\": {\"in_memory_static_float\": %.1f, \"in_memory_static_fake_quant\": %.1f, "
           "\"circle_whole_model\": %.1f, \"circle_per_layer\": %.1f, \"prompt\": %d, \"steps\": %d}}\n",
           mem_f, mem_q, whole, layers, PROMPT, STEPS);
    return 0;
}
