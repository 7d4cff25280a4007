/* make bench section "circle": float Circle export time and file sizes for the bundled model and
 * the TinyLlama-1.1B shape (max_seq 256, whole-model pair + per-layer files; float because this
 * section does not run PTQ), and decode tokens/s of the Circle runtime (whole-model and per-layer
 * files) next to the in-memory static runtime with the same graph options (bundled model).
 * usage: bench_section_circle MODEL_DIR [TINYLLAMA_DIR] */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pdq/circle_export.h"
#include "pdq/model.h"
#include "pdq/progress.h"
#include "pdq/runtime.h"

typedef struct { double seconds, total_mib, prefill_mib, decode_mib, layer_mib; } exp_stats;

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

static int do_export(const pdq_model *m, const char *out, int max_seq, exp_stats *s) {
    pdq_export_opts o;
    pdq_export_opts_default(&o);
    o.max_seq = max_seq;
    o.quiet = 1;
    pdq_status st = {0};
    double t0 = pdq_now();
    if (pdq_export_model(m, out, &o, &st) != PDQ_OK) { fprintf(stderr, "bench circle: %s\n", st.msg); return 1; }
    s->seconds = pdq_now() - t0;
    s->total_mib = 0;
    DIR *d = opendir(out);
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (strstr(e->d_name, ".circle")) s->total_mib += mib(out, e->d_name);
    if (d) closedir(d);
    s->prefill_mib = mib(out, "model_prefill.circle");
    s->decode_mib = mib(out, "model_decode.circle");
    s->layer_mib = mib(out, "decoder_layer_decode_0.circle");
    return 0;
}

static double rt_decode(pdq_model *m, const pdq_static_opts *o, int S, const int32_t *ids, int n, int steps) {
    pdq_status st = {0};
    pdq_rt *rt = NULL;
    int V = m->cfg.vocab_size;
    float *lg = malloc(sizeof(float) * (size_t)V);
    double r = -1;
    if (pdq_rt_create(m, 1, S, o, &rt, &st) == PDQ_OK &&
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
    printf("\"%s\": {\"seconds\": %.2f, \"total_mib\": %.1f, \"model_prefill_mib\": %.1f, \"model_decode_mib\": %.1f, "
           "\"decoder_layer_decode_0_mib\": %.2f}", key, s->seconds, s->total_mib, s->prefill_mib, s->decode_mib,
           s->layer_mib);
}

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: bench_section_circle MODEL_DIR [TINYLLAMA_DIR]\n"); return 2; }
    enum { S = 256, PROMPT = 16, STEPS = 64 };
    pdq_status st = {0};
    pdq_model *m = NULL;
    if (pdq_model_load(argv[1], &m, &st) != PDQ_OK) { fprintf(stderr, "bench circle: %s\n", st.msg); return 1; }
    char tmpl[] = "/tmp/pdq-bench-circle-XXXXXX";
    char *tmp = mkdtemp(tmpl);
    if (!tmp) { pdq_model_free(m); return 1; }
    char out[4200];
    snprintf(out, sizeof out, "%s/small", tmp);
    exp_stats small = {0}, big = {0};
    int rc = do_export(m, out, S, &small);
    int V = m->cfg.vocab_size;
    int32_t ids[PROMPT];
    for (int i = 0; i < PROMPT; i++) ids[i] = 1 + (i * 7919) % (V - 1);
    pdq_export_opts eo;
    pdq_export_opts_default(&eo);
    double mem = -1, whole = -1, layers = -1;
    if (!rc) {
        fprintf(stderr, "bench circle: decode speed, bundled model, max_seq %d\n", S);
        mem = rt_decode(m, &eo.so, S, ids, PROMPT, STEPS);
        whole = crt_decode(out, 1, ids, PROMPT, STEPS, V);
        layers = crt_decode(out, 0, ids, PROMPT, STEPS, V);
    }
    rm_dir(out);
    pdq_model_free(m);
    m = NULL;
    int have_big = 0;
    if (!rc && argc > 2) {
        fprintf(stderr, "bench circle: float export of the TinyLlama shape, max_seq %d\n", S);
        if (pdq_model_load(argv[2], &m, &st) == PDQ_OK) {
            snprintf(out, sizeof out, "%s/big", tmp);
            have_big = do_export(m, out, S, &big) == 0;
            rm_dir(out);
            pdq_model_free(m);
        } else {
            fprintf(stderr, "bench circle: %s\n", st.msg);
        }
    }
    rmdir(tmp);
    if (rc) return 1;
    printf("{\"dtype\": \"float32 (PTQ w4a16 export not in this section)\", \"max_seq\": %d, ", S);
    print_export("export_bundled", &small);
    if (have_big) { printf(", "); print_export("export_tinyllama_shape", &big); }
    printf(", \"decode_tokens_per_s\": {\"in_memory_static\": %.1f, \"circle_whole_model\": %.1f, \"circle_per_layer\": %.1f, "
           "\"prompt\": %d, \"steps\": %d}}\n", mem, whole, layers, PROMPT, STEPS);
    return 0;
}
