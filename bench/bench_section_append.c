/* make bench section "append": a 64-token turn appended after a 32-token prompt through the
 * Circle runtime on float whole-model files of the bundled model (max_seq 256, buckets 1,4,16,64),
 * in the runtime's bucket plan (one Q = 64 graph) and token by token through model_decode: seconds
 * per turn and tokens/s of each, best of 3.
 * usage: bench_section_append MODEL_DIR [IGNORED] */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pdq/circle_export.h"
#include "pdq/model.h"
#include "pdq/progress.h"

enum { S = 256, PROMPT = 32, TURN = 64, REPEAT = 3 };

static void rm_dir(const char *dir) {
    DIR *d = opendir(dir);
    struct dirent *e;
    char p[4200];
    while (d && (e = readdir(d)))
        if (e->d_name[0] != '.') { snprintf(p, sizeof p, "%s/%s", dir, e->d_name); unlink(p); }
    if (d) closedir(d);
    rmdir(dir);
}

/* Best time of REPEAT turns: buckets != 0 through pdq_crt_append, else TURN decode steps. */
static double turn_seconds(pdq_crt *rt, const int32_t *prompt, const int32_t *turn, float *lg, int buckets, pdq_status *st) {
    double best = -1;
    for (int r = 0; r < REPEAT; r++) {
        if (pdq_crt_prefill(rt, prompt, PROMPT, lg, st) != PDQ_OK) return -1;
        double t0 = pdq_now();
        if (buckets) {
            if (pdq_crt_append(rt, turn, TURN, lg, NULL, st) != PDQ_OK) return -1;
        } else {
            for (int i = 0; i < TURN; i++)
                if (pdq_crt_decode(rt, turn[i], lg, st) != PDQ_OK) return -1;
        }
        double dt = pdq_now() - t0;
        if (best < 0 || dt < best) best = dt;
    }
    return best;
}

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: bench_section_append MODEL_DIR\n"); return 2; }
    pdq_status st = {0};
    pdq_model *m = NULL;
    if (pdq_model_load(argv[1], &m, &st) != PDQ_OK) { fprintf(stderr, "bench append: %s\n", st.msg); return 1; }
    int V = m->cfg.vocab_size;
    char tmpl[] = "/tmp/pdq-bench-append-XXXXXX";
    char *tmp = mkdtemp(tmpl);
    pdq_export_opts o;
    pdq_export_opts_default(&o);
    o.max_seq = S;
    o.per_layer = 0;
    o.quiet = 1;
    pdq_crt *rt = NULL;
    pdq_code rc = tmp ? pdq_buckets_parse("1,4,16,64", S, o.buckets, &o.n_buckets, &st) : PDQ_ERR_IO;
    fprintf(stderr, "bench append: float whole-model export, max_seq %d, buckets 1,4,16,64\n", S);
    if (rc == PDQ_OK) rc = pdq_export_model(m, tmp, &o, &st);
    pdq_model_free(m);
    if (rc == PDQ_OK) rc = pdq_crt_open(tmp, 1, &rt, &st);
    float *lg = malloc(sizeof(float) * (size_t)V);
    int32_t prompt[PROMPT], turn[TURN];
    for (int i = 0; i < PROMPT; i++) prompt[i] = 1 + (i * 7919) % (V - 1);
    for (int i = 0; i < TURN; i++) turn[i] = 1 + (i * 104729) % (V - 1);
    double tb = -1, tt = -1;
    if (rc == PDQ_OK && lg) {
        tb = turn_seconds(rt, prompt, turn, lg, 1, &st);
        tt = tb >= 0 ? turn_seconds(rt, prompt, turn, lg, 0, &st) : -1;
    }
    if (rc != PDQ_OK || tb < 0 || tt < 0) fprintf(stderr, "bench append: %s\n", st.msg);
    printf("{\"max_seq\": %d, \"prompt\": %d, \"turn\": %d, \"buckets_s\": %.4f, \"token_by_token_s\": %.4f, "
           "\"buckets_tok_s\": %.1f, \"token_by_token_tok_s\": %.1f}\n",
           S, PROMPT, TURN, tb, tt, tb > 0 ? TURN / tb : 0, tt > 0 ? TURN / tt : 0);
    free(lg);
    pdq_crt_free(rt);
    if (tmp) rm_dir(tmp);
    return rc == PDQ_OK && tb >= 0 && tt >= 0 ? 0 : 1;
}
