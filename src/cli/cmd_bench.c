/* pdq bench: speed of the reference forward, modelled on llama-bench. For every model, thread
 * count and test: prefill "ppP" = one forward over P tokens from an empty cache; decode "tgN" =
 * N single-token forwards with the KV cache after a --decode-prompt token prompt (untimed).
 * Each test runs once to warm up, then -r times; rows give mean and stddev of tokens/s. A
 * quantized OUTDIR runs the packed weight-only path (pdq_model_load_packed), a Circle export
 * (manifest.json + model_decode[.q].circle) the exported prefill/decode pair through the Circle
 * runtime in --mode (integer by default), any other directory the f32 reference. Decode rows
 * also give the weight bytes one token reads and the rate they are streamed at (GB/s; Circle
 * rows: 0, not counted). Token ids are random in [0, vocab) with a fixed seed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "args.h"
#include "commands.h"
#include "common.h"
#include "exec_args.h"
#include "ptq_args.h"
#include "kernels/qmatmul.h"
#include "pdq/file.h"
#include "pdq/model.h"
#include "pdq/quant.h"

static const char *k_usage =
    "usage: pdq bench --model DIR [--model DIR ...] [-p LIST] [-n LIST] [-t LIST] [-r N]\n"
    "                 [--decode-prompt N | --decode-at P] [--max-seq N] [--kernel auto|avx2|avx2-int|scalar|f32]\n"
    "                 [--static] [--json | -o md|json]\n"
    "  --model DIR      a HF checkpoint (f32 reference path), a quantized OUTDIR (packed weight-only\n"
    "                   path) or a Circle export (circle-int / -fake / -float path, by --mode);\n"
    "                   repeatable, or a comma-separated list\n"
    "  -p, --n-prompt   prefill lengths, comma-separated (default 128; 0 skips prefill)\n"
    "  -n, --n-gen      decode lengths (default 32; 0 skips decode)\n"
    "  -t, --threads    thread counts (default: all cores)\n"
    "  -r, --repetitions  timed runs per test (default 5), after one warm-up run\n"
    "  --decode-prompt N  prompt tokens before a decode test (default 16)\n"
    "  --decode-at P    decode from position P: a prompt of P tokens (untimed); with --static the\n"
    "                   repetitions continue the sequence (positions P .. P + (r+1)n), so only the\n"
    "                   first prefills\n"
    "  --max-seq N      --static: the runtime's max_seq (default: the longest test); its KV-cache\n"
    "                   bytes (full layers' max_seq-1 slots, sliding layers' rings) go in each row\n"
    "  --kernel K       packed kernels: auto (the fastest this CPU has), avx2 (no AVX-512), avx2-int\n"
    "                   (AVX2 without VNNI) or scalar, all the same bits; f32: uint4/uint8 weights on\n"
    "                   the float kernels instead of the integer path (A/B; last bits differ); Circle\n"
    "                   rows in integer mode: the executor's level (scalar, avx2; f32 does not apply)\n"
    "  --static         checkpoints and OUTDIRs through the in-memory static runtime (prefill and\n"
    "                   decode graphs, external KV cache, max_seq the longest test): static-float on a\n"
    "                   float checkpoint, static-fake / static-int (--mode) on an OUTDIR with ptq.json\n"
    "  --json, -o json  JSON rows (the format is documented in README.md, \"Packed weights\")\n"
    EXEC_ARGS_USAGE
    "                   (Circle exports; the prefill of a Circle pair is its max_seq graph, and\n"
    "                   --decode-prompt + -n must fit in max_seq)\n";

#define MAX_LIST 16
#define MAX_MODELS 16

static double clock_s(clockid_t id) {
    struct timespec t;
    clock_gettime(id, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}
static double now(void) { return clock_s(CLOCK_MONOTONIC); }
static double cpu_now(void) { return clock_s(CLOCK_PROCESS_CPUTIME_ID); }

static double peak_rss_mib(void) {
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) return 0;
    return (double)ru.ru_maxrss / 1024.0; /* Linux: KiB */
}

static int parse_list(const char *s, int *out, int max, int min, const char *flag) {
    int n = 0;
    while (s && *s) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v < min || v > 1000000 || n == max || (*end && *end != ',')) {
            fprintf(stderr, "pdq bench: bad %s list near '%s' (integers >= %d, at most %d)\n", flag, s, min, max);
            return -1;
        }
        out[n++] = (int)v;
        s = *end ? end + 1 : end;
    }
    return n;
}

typedef struct {
    const char *model, *path, *test;
    int n_prompt, n_gen, threads, reps;
    double mean, sd, load_s, rss, cpu_ts;
    double *samples, *cpu_samples;
    size_t weight_bytes;
    size_t kv_bytes; /* static and Circle runtimes: the external KV cache's bytes (0: not one) */
    const char *kernel;
} row_t;

static void stats(const double *x, int n, double *mean, double *sd) {
    double s = 0, q = 0;
    for (int i = 0; i < n; i++) s += x[i];
    *mean = s / n;
    for (int i = 0; i < n; i++) q += (x[i] - *mean) * (x[i] - *mean);
    *sd = n > 1 ? sqrt(q / (n - 1)) : 0.0;
}

/* One timed run: tokens/s of wall time (and *cpu_rate per CPU second of the process), or < 0 on
 * error (message printed). */
static double run_once(void *mv, const int32_t *ids, int p, int n, int decode_prompt, float *unused, double *cpu_rate) {
    (void)unused;
    pdq_model *m = mv;
    pdq_status st = {0};
    pdq_kvcache kv = {0};
    int V = m->cfg.vocab_size;
    float *logits = malloc(sizeof(float) * (size_t)V);
    int cap = n ? decode_prompt + n : p;
    double rate = -1;
    if (!logits || pdq_kvcache_init(&kv, &m->cfg, 1, cap, &st) != PDQ_OK) {
        fprintf(stderr, "pdq bench: %s\n", logits ? st.msg : "out of memory");
        free(logits);
        return -1;
    }
    if (n == 0) {
        double t0 = now(), c0 = cpu_now();
        pdq_code rc = pdq_model_forward(m, &kv, 1, p, ids, NULL, NULL, logits, 1, &st);
        double t1 = now(), c1 = cpu_now();
        if (rc == PDQ_OK) rate = p / (t1 - t0), *cpu_rate = p / (c1 - c0);
    } else {
        pdq_code rc = pdq_model_forward(m, &kv, 1, decode_prompt, ids, NULL, NULL, logits, 1, &st);
        double t0 = now(), c0 = cpu_now();
        for (int i = 0; rc == PDQ_OK && i < n; i++)
            rc = pdq_model_forward(m, &kv, 1, 1, ids + decode_prompt + i, NULL, NULL, logits, 1, &st);
        double t1 = now(), c1 = cpu_now();
        if (rc == PDQ_OK) rate = n / (t1 - t0), *cpu_rate = n / (c1 - c0);
    }
    if (rate < 0) fprintf(stderr, "pdq bench: %s\n", st.msg);
    pdq_kvcache_free(&kv);
    free(logits);
    return rate;
}

/* The Circle runtime's form of run_once: prefill p tokens, or decode n after a prefill of the
 * decode prompt. */
static double circle_once(void *rtv, const int32_t *ids, int p, int n, int decode_prompt, float *logits,
                          double *cpu_rate) {
    pdq_crt *rt = rtv;
    pdq_status st = {0};
    double rate = -1;
    if (n == 0) {
        double t0 = now(), c0 = cpu_now();
        pdq_code rc = pdq_crt_prefill(rt, ids, p, logits, &st);
        double t1 = now(), c1 = cpu_now();
        if (rc == PDQ_OK) rate = p / (t1 - t0), *cpu_rate = p / (c1 - c0);
    } else {
        pdq_code rc = pdq_crt_prefill(rt, ids, decode_prompt, logits, &st);
        double t0 = now(), c0 = cpu_now();
        for (int i = 0; rc == PDQ_OK && i < n; i++) rc = pdq_crt_decode(rt, ids[decode_prompt + i], logits, &st);
        double t1 = now(), c1 = cpu_now();
        if (rc == PDQ_OK) rate = n / (t1 - t0), *cpu_rate = n / (c1 - c0);
    }
    if (rate < 0) fprintf(stderr, "pdq bench: %s\n", st.msg);
    return rate;
}

static int file_exists(const char *dir, const char *name) {
    char p[4096];
    size_t sz;
    pdq_status st = {0};
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return pdq_file_size(p, &sz, &st) == PDQ_OK;
}

static int is_circle_dir(const char *dir) {
    return file_exists(dir, "manifest.json") &&
           (file_exists(dir, "model_decode.q.circle") || file_exists(dir, "model_decode.circle"));
}

static void random_ids(int32_t *ids, int len, int vocab) {
    uint64_t s = 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < len; i++) {
        s ^= s << 13; s ^= s >> 7; s ^= s << 17;
        ids[i] = (int32_t)(s % (uint64_t)vocab);
    }
}

typedef struct {
    const int *P, *N, *T;
    int np, nn, nt, reps, dprompt, json;
    int decode_at, max_seq; /* --decode-at given; --max-seq (0: the longest test) */
    int kpath; /* --kernel: 0 auto, 1 scalar, 2 avx2, 3 avx2-int, 4 f32 */
    pdq_exec_mode mode;
} bench_plan;

/* One runtime under test at one thread count: once() times a test on rt (prefill p tokens, or
 * decode n after the decode prompt), ids and logits its scratch. */
typedef double (*once_fn)(void *rt, const int32_t *ids, int p, int n, int decode_prompt, float *logits, double *cpu_rate);
typedef struct {
    const char *dir, *path, *kernel;
    int threads, max_seq; /* max_seq 0: no limit */
    double load_s;
    size_t weight_bytes, kv_bytes;
    once_fn once;
    void *rt;
    const int32_t *ids;
    float *logits;
} bench_target;

/* Every -p and -n test of t: a warm-up and -r timed runs, a row each. 0, or 1 / 2 after an error
 * (2: a test does not fit max_seq). */
static int test_rows(const bench_plan *b, const bench_target *t, row_t *rows, int *nrows, double *samples,
                     double *cpu_samples) {
    for (int k = 0; k < b->np + b->nn; k++) {
        int p = k < b->np ? b->P[k] : 0, n = k < b->np ? 0 : b->N[k - b->np];
        if ((k < b->np && p == 0) || (k >= b->np && n == 0)) continue;
        if (t->max_seq && (p > t->max_seq || (n && b->dprompt + n > t->max_seq))) {
            fprintf(stderr, "pdq bench: %s: %s needs %d positions, the export has max_seq %d\n", t->dir,
                    n ? "decode-prompt + n" : "-p", n ? b->dprompt + n : p, t->max_seq);
            return 2;
        }
        row_t *r = &rows[*nrows];
        r->samples = samples + (size_t)*nrows * b->reps;
        r->cpu_samples = cpu_samples + (size_t)*nrows * b->reps;
        double cpu_rate = 0, sd_unused;
        if (t->once(t->rt, t->ids, p, n, b->dprompt, t->logits, &cpu_rate) < 0) return 1; /* warm-up */
        for (int rep = 0; rep < b->reps; rep++)
            if ((r->samples[rep] = t->once(t->rt, t->ids, p, n, b->dprompt, t->logits, &r->cpu_samples[rep])) < 0) return 1;
        stats(r->cpu_samples, b->reps, &r->cpu_ts, &sd_unused);
        char *test = malloc(32);
        if (test) snprintf(test, 32, n ? "tg%d" : "pp%d", n ? n : p);
        r->model = t->dir;
        r->path = t->path;
        r->kernel = t->kernel;
        r->test = test ? test : "?";
        r->n_prompt = n ? b->dprompt : p;
        r->n_gen = n;
        r->threads = t->threads;
        r->reps = b->reps;
        r->load_s = t->load_s;
        r->weight_bytes = t->weight_bytes;
        r->kv_bytes = t->kv_bytes;
        stats(r->samples, b->reps, &r->mean, &r->sd);
        (*nrows)++;
        if (!b->json) fprintf(stderr, "pdq bench: %s %s t=%d %s: %.2f t/s\n", t->dir, r->path, t->threads, r->test, r->mean);
    }
    return 0;
}

/* The peak RSS of the process after dir's tests, on each of its rows. */
static void set_rss(const char *dir, row_t *rows, int nrows) {
    double rss = peak_rss_mib();
    for (int i = 0; i < nrows; i++)
        if (rows[i].model == dir) rows[i].rss = rss;
}

/* The static runtime's form of run_once: prefill p tokens, or decode n after a prefill of the
 * decode prompt (the prefill graph is the runtime's max_seq graph, as a Circle pair's). */
typedef struct {
    pdq_rt *rt;
    int cont; /* --decode-at: a decode test continues the sequence while it fits max_seq */
} static_target;

static double static_once(void *tv, const int32_t *ids, int p, int n, int decode_prompt, float *logits,
                          double *cpu_rate) {
    static_target *tg = tv;
    pdq_rt *rt = tg->rt;
    pdq_status st = {0};
    double rate = -1;
    int len = n ? decode_prompt : p, at = pdq_rt_len(rt, 0);
    int cont = n && tg->cont && at >= decode_prompt && at + n <= pdq_rt_max_seq(rt);
    double t0 = now(), c0 = cpu_now();
    pdq_code rc = cont ? PDQ_OK : pdq_rt_prefill_rows(rt, 1, &ids, &len, PDQ_PAD_LEFT, logits, &st);
    if (n) {
        at = pdq_rt_len(rt, 0);
        t0 = now(), c0 = cpu_now();
        for (int i = 0; rc == PDQ_OK && i < n; i++) rc = pdq_rt_decode(rt, 1, &ids[(at + i) % pdq_rt_max_seq(rt)], logits, &st);
    }
    double t1 = now(), c1 = cpu_now();
    if (rc == PDQ_OK) rate = (n ? n : p) / (t1 - t0), *cpu_rate = (n ? n : p) / (c1 - c0);
    else fprintf(stderr, "pdq bench: %s\n", st.msg);
    return rate;
}

/* Rows of the in-memory static runtime (--static): the prefill and decode graphs over an external
 * KV cache, built once per thread count with max_seq the longest test, on a float checkpoint
 * (static-float) or a quantized OUTDIR with ptq.json in --mode (static-fake, static-int). */
static int static_rows(const char *dir, const bench_plan *b, const cli_exec *mode, row_t *rows, int *nrows,
                       double *samples, double *cpu_samples) {
    static const char *const paths[] = {"static-fake", "static-float", "static-int"}; /* by pdq_exec_mode */
    int status = 0;
    int maxp = 0, maxn = 0;
    for (int i = 0; i < b->np; i++) maxp = b->P[i] > maxp ? b->P[i] : maxp;
    for (int i = 0; i < b->nn; i++) maxn = b->N[i] > maxn ? b->N[i] : maxn;
    int S = maxp > b->dprompt + maxn ? maxp : b->dprompt + maxn;
    if (b->max_seq) {
        if (b->max_seq < S) {
            fprintf(stderr, "pdq bench: --max-seq %d is shorter than the longest test (%d positions)\n", b->max_seq, S);
            return 2;
        }
        S = b->max_seq;
    }
    for (int ti = 0; ti < b->nt && !status; ti++) {
        cli_exec ex = {.mode = mode->mode, .given = mode->given};
        pdq_rt *rt = NULL;
        pdq_ptq *ptq = NULL;
        double t0 = now();
        pdq_model *m = cli_load_model("bench", dir, b->T[ti]);
        if (!m || cli_static_runtime("bench", dir, m, 1, S, NULL, 0, &rt, &ptq) ||
            cli_exec_rt(&ex, "bench", dir, rt, ptq, b->T[ti])) {
            pdq_rt_free(rt);
            pdq_ptq_free(ptq);
            pdq_model_free(m);
            cli_exec_free(&ex);
            return 1;
        }
        double load_s = now() - t0;
        pdq_exec_mode run_mode = ptq ? ex.mode : PDQ_EXEC_FLOAT;
        int V = m->cfg.vocab_size;
        int32_t *ids = malloc(sizeof(int32_t) * (size_t)S);
        float *logits = malloc(sizeof(float) * (size_t)V);
        if (!ids || !logits) status = 1;
        else random_ids(ids, S, V);
        static_target tg = {rt, b->decode_at};
        bench_target t = {.dir = dir, .path = paths[run_mode], .kernel = run_mode == PDQ_EXEC_INT ? "int" : "blas",
                          .threads = b->T[ti], .load_s = load_s, .once = static_once, .rt = &tg, .ids = ids,
                          .logits = logits, .kv_bytes = pdq_rt_kv_bytes(rt)}; /* weight_bytes 0: no packed figure */
        if (!b->json)
            fprintf(stderr, "pdq bench: %s: static runtime max_seq %d, KV cache %zu bytes\n", dir, S, t.kv_bytes);
        if (!status) status = test_rows(b, &t, rows, nrows, samples, cpu_samples);
        free(ids);
        free(logits);
        pdq_rt_free(rt);
        pdq_ptq_free(ptq);
        pdq_model_free(m);
        cli_exec_free(&ex);
    }
    set_rss(dir, rows, *nrows);
    return status;
}

/* Rows of one Circle export: the pair opened once per thread count (its pool), every test. */
static int circle_rows(const char *dir, const bench_plan *b, row_t *rows, int *nrows, double *samples, double *cpu_samples) {
    static const char *const paths[] = {"circle-fake", "circle-float", "circle-int"}; /* by pdq_exec_mode */
    int status = 0;
    for (int ti = 0; ti < b->nt && !status; ti++) {
        pdq_status st = {0};
        pdq_pool *pool = pdq_pool_create(b->T[ti], &st);
        pdq_exec_opts eo;
        pdq_exec_opts_default(&eo);
        eo.mode = b->mode;
        eo.pool = pool;
        eo.force_scalar = b->kpath == 1; /* the integer executor's SIMD level, as --kernel says */
        eo.no_avx512 = b->kpath == 2 || b->kpath == 3;
        pdq_set_threads(NULL, b->T[ti]);
        pdq_crt *rt = NULL;
        double t0 = now();
        if (!pool || pdq_crt_open_opts(dir, 1, &eo, &rt, &st) != PDQ_OK) {
            fprintf(stderr, "pdq bench: %s\n", st.msg);
            pdq_pool_free(pool);
            return 1;
        }
        double load_s = now() - t0;
        int S = pdq_crt_max_seq(rt), V = pdq_crt_vocab(rt), len = S;
        int32_t *ids = malloc(sizeof(int32_t) * (size_t)len);
        float *logits = malloc(sizeof(float) * (size_t)V);
        if (!ids || !logits) status = 1;
        else random_ids(ids, len, V);
        bench_target t = {.dir = dir, .path = paths[b->mode], .threads = b->T[ti], .max_seq = S, .load_s = load_s,
                          .weight_bytes = pdq_crt_decode_weight_bytes(rt), .once = circle_once, .rt = rt, .ids = ids,
                          .logits = logits, .kv_bytes = pdq_crt_kv_bytes(rt)};
        t.kernel = b->mode != PDQ_EXEC_INT ? "float" : b->kpath == 1 ? "int-scalar" : b->kpath == 2 || b->kpath == 3 ? "int-avx2" : "int";
        if (!status) status = test_rows(b, &t, rows, nrows, samples, cpu_samples);
        free(ids);
        free(logits);
        pdq_crt_free(rt);
        pdq_pool_free(pool);
    }
    set_rss(dir, rows, *nrows);
    return status;
}

static void print_json(const row_t *rows, int n) {
    printf("[\n");
    for (int i = 0; i < n; i++) {
        const row_t *r = &rows[i];
        double gbps = r->n_gen ? r->mean * (double)r->weight_bytes / 1e9 : 0;
        printf("  {\"model\": \"%s\", \"path\": \"%s\", \"kernel\": \"%s\", \"test\": \"%s\", \"n_prompt\": %d, "
               "\"n_gen\": %d, \"n_threads\": %d, \"repetitions\": %d, \"avg_ts\": %.4f, \"stddev_ts\": %.4f, "
               "\"samples_ts\": [",
               r->model, r->path, r->kernel, r->test, r->n_prompt, r->n_gen, r->threads, r->reps, r->mean, r->sd);
        for (int k = 0; k < r->reps; k++) printf("%s%.4f", k ? ", " : "", r->samples[k]);
        printf("], \"avg_ts_cpu\": %.4f, \"weight_bytes\": %zu, \"avg_gbps\": %.3f, \"load_s\": %.3f, "
               "\"peak_rss_mib\": %.1f",
               r->cpu_ts, r->weight_bytes, gbps, r->load_s, r->rss);
        if (r->kv_bytes) printf(", \"kv_cache_bytes\": %zu", r->kv_bytes);
        printf("}%s\n", i + 1 < n ? "," : "");
    }
    printf("]\n");
}

static void print_md(const row_t *rows, int n) {
    printf("| model | path | weights MiB | threads | test | t/s | t/cpu-s | GB/s | load s | peak RSS MiB |\n");
    printf("| --- | --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: |\n");
    for (int i = 0; i < n; i++) {
        const row_t *r = &rows[i];
        char gb[32] = "–", mib[32] = "–"; /* static rows have no packed weight figure */
        if (r->n_gen && r->weight_bytes) snprintf(gb, sizeof gb, "%.2f", r->mean * (double)r->weight_bytes / 1e9);
        if (r->weight_bytes) snprintf(mib, sizeof mib, "%.1f", (double)r->weight_bytes / (1024.0 * 1024.0));
        printf("| %s | %s | %s | %d | %s | %.2f ± %.2f | %.2f | %s | %.2f | %.0f |\n", r->model, r->path, mib,
               r->threads, r->test, r->mean, r->sd, r->cpu_ts, gb, r->load_s, r->rss);
    }
}

int cmd_bench(int argc, char **argv) {
    pdq_args a;
    args_init(&a, "bench", argc, argv);
    if (args_flag(&a, "--help") || args_flag(&a, "-h")) { fputs(k_usage, stdout); return 0; }
    const char *mv[MAX_MODELS];
    int nm_args = args_all(&a, "--model", mv, MAX_MODELS);
    const char *ps = args_str(&a, "-p"), *ps2 = args_str(&a, "--n-prompt");
    const char *ns = args_str(&a, "-n"), *ns2 = args_str(&a, "--n-gen");
    const char *ts = args_str(&a, "-t"), *ts2 = args_str(&a, "--threads");
    long reps = args_int(&a, "-r", args_int(&a, "--repetitions", 5));
    long dprompt = args_int(&a, "--decode-prompt", 16), dat = args_int(&a, "--decode-at", 0);
    long mseq = args_int(&a, "--max-seq", 0);
    if (dat > 0) dprompt = dat;
    const char *fmt = args_str(&a, "-o"), *kern = args_str(&a, "--kernel");
    int json = args_flag(&a, "--json") || (fmt && strcmp(fmt, "json") == 0);
    int stat_rt = args_flag(&a, "--static");
    cli_exec ex;
    if (cli_exec_read(&a, &ex)) return 2;
    if (args_finish(&a)) { fputs(k_usage, stderr); return 2; }
    if (fmt && strcmp(fmt, "json") != 0 && strcmp(fmt, "md") != 0) {
        fprintf(stderr, "pdq bench: -o takes md or json\n");
        return 2;
    }
    int kpath = 0;
    static const char *const kernels[] = {"auto", "scalar", "avx2", "avx2-int", "f32"}; /* kernel_path 0..4 */
    if (kern) {
        kpath = -1;
        for (int i = 0; i < 5; i++)
            if (strcmp(kern, kernels[i]) == 0) kpath = i;
        if (kpath < 0) {
            fprintf(stderr, "pdq bench: --kernel takes auto, scalar, avx2, avx2-int or f32\n");
            return 2;
        }
    }
    int P[MAX_LIST] = {128}, N[MAX_LIST] = {32}, Tn[MAX_LIST] = {pdq_default_threads()};
    int np = 1, nn = 1, nt = 1;
    if ((ps2 ? ps2 : ps) && (np = parse_list(ps2 ? ps2 : ps, P, MAX_LIST, 0, "-p")) < 0) return 2;
    if ((ns2 ? ns2 : ns) && (nn = parse_list(ns2 ? ns2 : ns, N, MAX_LIST, 0, "-n")) < 0) return 2;
    if ((ts2 ? ts2 : ts) && (nt = parse_list(ts2 ? ts2 : ts, Tn, MAX_LIST, 1, "-t")) < 0) return 2;
    if (nm_args == 0 || reps < 1 || reps > 1000 || dprompt < 1 || dprompt > 100000 || dat < 0 || mseq < 0 ||
        mseq > 100000) {
        fputs(k_usage, stderr);
        return 2;
    }
    /* --model a,b and repeated --model */
    char *models[MAX_MODELS * 4];
    int nmod = 0;
    for (int i = 0; i < nm_args; i++) {
        char *dup = strdup(mv[i]), *save = NULL;
        for (char *tok = strtok_r(dup, ",", &save); tok && nmod < MAX_MODELS * 4; tok = strtok_r(NULL, ",", &save))
            models[nmod++] = strdup(tok);
        free(dup);
    }
    int maxp = 0, maxn = 0;
    for (int i = 0; i < np; i++) maxp = P[i] > maxp ? P[i] : maxp;
    for (int i = 0; i < nn; i++) maxn = N[i] > maxn ? N[i] : maxn;
    int cap_rows = nmod * nt * (np + nn);
    row_t *rows = calloc((size_t)cap_rows + 1, sizeof *rows);
    double *samples = calloc((size_t)(cap_rows + 1) * (size_t)reps, sizeof *samples);
    double *cpu_samples = calloc((size_t)(cap_rows + 1) * (size_t)reps, sizeof *cpu_samples);
    int nrows = 0, status = 0;
    pdq_qctx probe = {.force_scalar = kpath == 1, .no_avx512 = kpath == 2 || kpath == 3, .no_vnni = kpath == 3,
                     .no_int = kpath == 4};
    const char *kernel = pdq_qmatmul_path(&probe);
    bench_plan plan = {.P = P, .N = N, .T = Tn, .np = np, .nn = nn, .nt = nt, .reps = (int)reps, .dprompt = (int)dprompt,
                       .json = json, .kpath = kpath, .mode = ex.mode, .decode_at = dat > 0, .max_seq = (int)mseq};
    for (int mi = 0; rows && samples && cpu_samples && mi < nmod && !status; mi++) {
        if (is_circle_dir(models[mi])) {
            status = circle_rows(models[mi], &plan, rows, &nrows, samples, cpu_samples);
            continue;
        }
        if (stat_rt) {
            status = static_rows(models[mi], &plan, &ex, rows, &nrows, samples, cpu_samples);
            continue;
        }
        pdq_status st = {0};
        pdq_model *m = NULL;
        double t0 = now();
        if (pdq_model_load_packed(models[mi], &m, &st) != PDQ_OK) {
            fprintf(stderr, "pdq bench: %s\n", st.msg);
            status = 1;
            break;
        }
        double load_s = now() - t0;
        m->kernel_path = kpath;
        int packed = m->packed != NULL;
        size_t wbytes = pdq_model_decode_weight_bytes(m);
        int len = maxp > (int)dprompt + maxn ? maxp : (int)dprompt + maxn;
        if (len > m->cfg.max_position_embeddings)
            fprintf(stderr, "pdq bench: warning: %d tokens exceed max_position_embeddings %d\n", len,
                    m->cfg.max_position_embeddings);
        int32_t *ids = malloc(sizeof(int32_t) * (size_t)len);
        if (ids) random_ids(ids, len, m->cfg.vocab_size);
        else status = 1;
        for (int ti = 0; ids && ti < nt && !status; ti++) {
            pdq_set_threads(m, Tn[ti]);
            bench_target t = {.dir = models[mi], .path = packed ? "packed" : "f32", .kernel = packed ? kernel : "f32mm",
                              .threads = Tn[ti], .load_s = load_s, .weight_bytes = wbytes, .once = run_once, .rt = m,
                              .ids = ids};
            status = test_rows(&plan, &t, rows, &nrows, samples, cpu_samples);
        }
        set_rss(models[mi], rows, nrows);
        free(ids);
        pdq_model_free(m);
    }
    if (!rows || !samples || !cpu_samples) { fprintf(stderr, "pdq bench: out of memory\n"); status = 1; }
    if (!status) {
        if (json) print_json(rows, nrows);
        else print_md(rows, nrows);
    }
    for (int i = 0; i < nrows; i++) free((char *)rows[i].test);
    for (int i = 0; i < nmod; i++) free(models[i]);
    free(rows);
    free(samples);
    free(cpu_samples);
    return status;
}
