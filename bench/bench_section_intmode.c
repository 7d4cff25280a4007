/* make bench section "intmode": decode and prefill speed of the execution modes on a quantized
 * checkpoint and its Circle export: in-memory static float (same weights, no activation
 * quantization), in-memory fake-quant, in-memory integer, Circle fake-quant and integer
 * (whole-model pair and per-layer files), with 1 and N threads; wall-clock and CPU time.
 * usage: bench_section_intmode MODEL_DIR [ignored]   (RTN w4 + a16 from 2 pseudo-random windows,
 *                                                    max_seq 256, in a temporary dir)
 *        bench_section_intmode --qdir QDIR CIRCLE_DIR [THREADS (2)]   (an existing export) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_ptq.h"
#include "pdq/circle_export.h"
#include "pdq/ptq.h"
#include "pdq/lower.h"
#include "pdq/qexec.h"
#include "pdq/quant.h"
#include "pdq/runtime.h"

enum { PROMPT = 16, STEPS = 64 };

static double clk(clockid_t id) {
    struct timespec t;
    clock_gettime(id, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}
static double now(void) { return clk(CLOCK_MONOTONIC); }
/* CPU seconds of the whole process: on a shared machine, tokens per CPU second of a 1-thread run
 * are what the code costs, whatever else runs */
static double cpu(void) { return clk(CLOCK_PROCESS_CPUTIME_ID); }

/* tokens/s of decode (after a warm-up step) and of one full prefill window; wall and CPU time */
typedef struct { double decode, prefill, decode_cpu, prefill_cpu; } speed;

static speed mem_speed(const char *qdir, pdq_exec_mode mode, int threads) {
    speed r = {-1, -1, -1, -1};
    pdq_status st = {0};
    pdq_model *m = NULL;
    pdq_rt *rt = NULL;
    pdq_ptq *ptq = NULL;
    pdq_pool *pool = NULL;
    pdq_lowering *lw = NULL;
    if (pdq_model_load(qdir, &m, &st) != PDQ_OK) { fprintf(stderr, "%s\n", st.msg); return r; }
    pdq_set_threads(m, threads);
    int V = m->cfg.vocab_size;
    float *lg = malloc(sizeof(float) * (size_t)V);
    int32_t ids[PROMPT];
    for (int i = 0; i < PROMPT; i++) ids[i] = 1 + (i * 7919) % (V - 1);
    pdq_code rc = pdq_ptq_open_runtime(m, qdir, 1, 0, NULL, &rt, &ptq, &st);
    if (rc == PDQ_OK && mode == PDQ_EXEC_FLOAT) pdq_ptq_set_mode(ptq, PDQ_PTQ_OFF);
    if (rc == PDQ_OK && mode == PDQ_EXEC_INT) {
        pdq_exec_opts eo;
        pdq_exec_opts_default(&eo);
        eo.mode = PDQ_EXEC_INT;
        pool = pdq_pool_create(threads, &st);
        eo.pool = pool;
        rc = pool ? pdq_lowering_open(qdir, ptq, &lw, &st) : PDQ_ERR_NOMEM;
        if (rc == PDQ_OK) rc = pdq_rt_set_lowering(rt, pdq_lowering_lower, lw, &eo, &st);
    }
    if (rc == PDQ_OK && pdq_rt_prefill(rt, 1, PROMPT, ids, NULL, PDQ_PAD_RIGHT, lg, NULL, &st) == PDQ_OK &&
        pdq_rt_decode(rt, 1, ids, lg, &st) == PDQ_OK) {
        int32_t tok = 1;
        double t0 = now(), c0 = cpu();
        int i = 0;
        for (; i < STEPS && rc == PDQ_OK; i++) {
            tok = 1 + (tok * 31) % (V - 1);
            rc = pdq_rt_decode(rt, 1, &tok, lg, &st);
        }
        if (rc == PDQ_OK) { r.decode = STEPS / (now() - t0); r.decode_cpu = STEPS / (cpu() - c0); }
        int S = pdq_rt_max_seq(rt);
        int32_t *w = malloc(sizeof(int32_t) * (size_t)S);
        for (int k = 0; k < S; k++) w[k] = 1 + (k * 7919) % (V - 1);
        t0 = now();
        c0 = cpu();
        if (rc == PDQ_OK && pdq_rt_prefill(rt, 1, S, w, NULL, PDQ_PAD_RIGHT, lg, NULL, &st) == PDQ_OK) {
            r.prefill = S / (now() - t0);
            r.prefill_cpu = S / (cpu() - c0);
        }
        free(w);
    }
    if (r.decode < 0) fprintf(stderr, "bench intmode: in-memory %s: %s\n", pdq_exec_mode_name(mode), st.msg);
    pdq_rt_free(rt);
    pdq_lowering_free(lw);
    pdq_pool_free(pool);
    pdq_ptq_free(ptq);
    pdq_model_free(m);
    free(lg);
    return r;
}

static speed crt_speed(const char *dir, int whole, pdq_exec_mode mode, int threads) {
    speed r = {-1, -1, -1, -1};
    pdq_status st = {0};
    pdq_set_threads(NULL, threads);
    pdq_exec_opts eo;
    pdq_exec_opts_default(&eo);
    eo.mode = mode;
    pdq_pool *pool = mode == PDQ_EXEC_INT ? pdq_pool_create(threads, &st) : NULL;
    eo.pool = pool;
    pdq_crt *rt = NULL;
    if (pdq_crt_open_opts(dir, whole, &eo, &rt, &st) == PDQ_OK) {
        int V = pdq_crt_vocab(rt), S = pdq_crt_max_seq(rt);
        float *lg = malloc(sizeof(float) * (size_t)V);
        int32_t *ids = malloc(sizeof(int32_t) * (size_t)S);
        for (int i = 0; i < S; i++) ids[i] = 1 + (i * 7919) % (V - 1);
        if (pdq_crt_prefill(rt, ids, PROMPT, lg, &st) == PDQ_OK && pdq_crt_decode(rt, ids[0], lg, &st) == PDQ_OK) {
            int32_t tok = 1;
            double t0 = now(), c0 = cpu();
            int i = 0;
            for (; i < STEPS; i++) {
                tok = 1 + (tok * 31) % (V - 1);
                if (pdq_crt_decode(rt, tok, lg, &st) != PDQ_OK) break;
            }
            if (i == STEPS) { r.decode = STEPS / (now() - t0); r.decode_cpu = STEPS / (cpu() - c0); }
            t0 = now();
            c0 = cpu();
            if (pdq_crt_prefill(rt, ids, S, lg, &st) == PDQ_OK) {
                r.prefill = S / (now() - t0);
                r.prefill_cpu = S / (cpu() - c0);
            }
        }
        free(lg);
        free(ids);
    }
    if (r.decode < 0) fprintf(stderr, "bench intmode: circle %s: %s\n", pdq_exec_mode_name(mode), st.msg);
    pdq_crt_free(rt);
    pdq_pool_free(pool);
    return r;
}

static void put(const char *key, speed s, int last) {
    printf("\"%s\": {\"decode_tok_s\": %.1f, \"prefill_tok_s\": %.1f, \"decode_tok_per_cpu_s\": %.1f, "
           "\"prefill_tok_per_cpu_s\": %.1f}%s", key, s.decode, s.prefill, s.decode_cpu, s.prefill_cpu, last ? "" : ", ");
}

/* RTN w4 checkpoint + int16 grids from 2 windows of pseudo-random ids + the quantized export. */
static int make_export(const char *src, const char *qdir, const char *out, int S) {
    pdq_status st = {0};
    pdq_model *m = NULL;
    pdq_code rc = pdq_model_load(src, &m, &st);
    pdq_export_opts o;
    pdq_export_opts_default(&o);
    o.max_seq = S;
    o.quiet = 1;
    o.quant_dir = qdir;
    if (rc == PDQ_OK) rc = bench_rtn_w4(m, src, qdir, &st);
    pdq_ptq *p = NULL;
    enum { WINDOWS = 2 };
    if (rc == PDQ_OK) rc = bench_calibrate(m, S, &o.so, WINDOWS, qdir, &p, &st);
    if (rc == PDQ_OK) rc = pdq_export_model(m, out, &o, &st);
    if (rc != PDQ_OK) fprintf(stderr, "bench intmode: %s\n", st.msg);
    pdq_ptq_free(p);
    pdq_model_free(m);
    return rc != PDQ_OK;
}

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: bench_section_intmode MODEL_DIR | --qdir QDIR CIRCLE_DIR [THREADS]\n"); return 2; }
    char tmpl[] = "/tmp/pdq-bench-intmode-XXXXXX", qd[64], cd[64], cmd[128];
    const char *qdir, *cdir, *tmp = NULL;
    int nt = 2;
    if (!strcmp(argv[1], "--qdir")) {
        if (argc < 4) { fprintf(stderr, "usage: bench_section_intmode --qdir QDIR CIRCLE_DIR [THREADS]\n"); return 2; }
        qdir = argv[2];
        cdir = argv[3];
        if (argc > 4) nt = atoi(argv[4]);
    } else {
        if (!(tmp = mkdtemp(tmpl))) return 1;
        snprintf(qd, sizeof qd, "%s/q", tmp);
        snprintf(cd, sizeof cd, "%s/q/circle", tmp);
        qdir = qd;
        cdir = cd;
        fprintf(stderr, "bench intmode: RTN w4 a16 export of %s, max_seq 256\n", argv[1]);
        if (make_export(argv[1], qdir, cdir, 256)) return 1;
    }
    if (nt < 1) nt = 1;
    printf("{\"prompt\": %d, \"decode_steps\": %d", PROMPT, STEPS);
    int ts[2] = {1, nt};
    for (int k = 0; k < 2; k++) {
        int t = ts[k];
        fprintf(stderr, "bench intmode: %d thread(s)\n", t);
        printf(", \"threads_%d\": {", t);
        put("in_memory_float", mem_speed(qdir, PDQ_EXEC_FLOAT, t), 0);
        put("in_memory_fake", mem_speed(qdir, PDQ_EXEC_FAKE, t), 0);
        put("in_memory_int", mem_speed(qdir, PDQ_EXEC_INT, t), 0);
        put("circle_whole_fake", crt_speed(cdir, 1, PDQ_EXEC_FAKE, t), 0);
        put("circle_whole_int", crt_speed(cdir, 1, PDQ_EXEC_INT, t), 0);
        put("circle_per_layer_fake", crt_speed(cdir, 0, PDQ_EXEC_FAKE, t), 0);
        put("circle_per_layer_int", crt_speed(cdir, 0, PDQ_EXEC_INT, t), 1);
        printf("}");
    }
    printf("}\n");
    if (tmp) {
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
        if (system(cmd) != 0) fprintf(stderr, "bench intmode: could not remove %s\n", tmp);
    }
    return 0;
}
