/* pdq chat's model: static runtime or Circle runtime (see chat_engine.h). */
#include "chat_engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat_cli.h"
#include "common.h"
#include "ptq_args.h"

int chat_engine_open(chat_engine *e, const char *model_dir, const char *circle_dir, int max_seq, int bucket,
                     const pdq_static_opts *so, int so_given, const cli_exec *ex, int per_layer, int threads) {
    memset(e, 0, sizeof *e);
    e->ex = *ex;
    e->bucket = bucket;
    pdq_status st = {0};
    const char *cfg_dir = circle_dir ? circle_dir : model_dir;
    pdq_config cfg;
    if (pdq_config_load(cfg_dir, &cfg, &st) != PDQ_OK) { fprintf(stderr, "pdq chat: %s\n", st.msg); return 1; }
    if (cli_stop_ids(cfg_dir, &cfg, &e->stop, &st)) { fprintf(stderr, "pdq chat: %s\n", st.msg); return 1; }
    if (circle_dir) {
        pdq_set_threads(NULL, threads);
        pdq_exec_opts eo;
        if (cli_exec_opts(&e->ex, "chat", threads, &eo)) return 1;
        if (pdq_crt_open_opts(circle_dir, !per_layer, &eo, &e->crt, &st) != PDQ_OK) { fprintf(stderr, "pdq chat: %s\n", st.msg); return 1; }
        e->vocab = pdq_crt_vocab(e->crt);
        e->max_seq = pdq_crt_max_seq(e->crt);
        if (max_seq > 0 && max_seq != e->max_seq)
            fprintf(stderr, "pdq chat: the exported pair has max_seq %d (--max-seq %d ignored)\n", e->max_seq, max_seq);
        snprintf(e->what, sizeof e->what, "the exported Circle %s in %s", per_layer ? "per-layer files" : "pair", circle_dir);
        return 0;
    }
    if (!(e->m = cli_load_model("chat", model_dir, threads))) return 1;
    /* max_seq <= 0: a quantized directory's calibrated max_seq (an error elsewhere) */
    if (max_seq <= 0 && !pdq_ptq_in_dir(model_dir)) max_seq = 256;
    if (cli_static_runtime("chat", model_dir, e->m, 1, max_seq, so, so_given, &e->rt, &e->ptq) ||
        cli_exec_rt(&e->ex, "chat", model_dir, e->rt, e->ptq, threads)) {
        chat_engine_close(e);
        return 1;
    }
    e->vocab = e->m->cfg.vocab_size;
    e->max_seq = pdq_rt_max_seq(e->rt);
    snprintf(e->what, sizeof e->what, "static graphs of %s (%s)", model_dir,
             !e->ptq ? "float activations" : e->ex.mode == PDQ_EXEC_INT ? "integer execution of ptq.json's grids"
             : e->ex.mode == PDQ_EXEC_FAKE ? "fake-quant activations from ptq.json" : "float activations");
    return 0;
}

void chat_engine_close(chat_engine *e) {
    pdq_crt_free(e->crt);
    pdq_rt_free(e->rt);
    pdq_ptq_free(e->ptq);
    pdq_model_free(e->m);
    cli_exec_free(&e->ex);
    memset(e, 0, sizeof *e);
}

int chat_engine_len(const chat_engine *e) { return e->crt ? pdq_crt_len(e->crt) : pdq_rt_len(e->rt, 0); }

int chat_engine_is_eos(const chat_engine *e, int id) { return pdq_stop_ids_has(&e->stop, id); }

/* --show-plan: the buckets the export's runtime is about to use for n tokens. */
static void show_plan(chat_engine *e, int n) {
    if (!e->show_plan) return;
    int cap = e->max_seq + 1, plan_buf[512], *plan = cap <= 512 ? plan_buf : malloc(sizeof(int) * (size_t)cap);
    if (!plan) return;
    int np = pdq_crt_plan(e->crt, n, plan, cap);
    fprintf(stderr, "turn %d: %d tokens at length %d: buckets", e->turns + 1, n, pdq_crt_len(e->crt));
    for (int i = 0; i < np; i++) fprintf(stderr, " %d", plan[i]);
    fprintf(stderr, "\n");
    if (plan != plan_buf) free(plan);
}

pdq_code chat_engine_start(chat_engine *e, const int32_t *ids, int n, float *logits, pdq_status *st) {
    if (e->crt && e->chunk && pdq_crt_len(e->crt) == 0) { /* chunked initial prefill through the buckets */
        show_plan(e, n);
        e->turns++;
        return pdq_crt_append(e->crt, ids, n, logits, NULL, st);
    }
    e->turns++;
    if (e->crt) return pdq_crt_prefill(e->crt, ids, n, logits, st);
    pdq_rt_reset(e->rt);
    return pdq_rt_prefill(e->rt, 1, n, ids, NULL, PDQ_PAD_RIGHT, logits, NULL, st);
}

pdq_code chat_engine_feed(chat_engine *e, const int32_t *ids, int n, float *logits, pdq_status *st) {
    if (n <= 0) return PDQ_OK;
    if (e->crt) {
        show_plan(e, n);
        e->turns++;
        return pdq_crt_append(e->crt, ids, n, logits, NULL, st);
    }
    e->turns++;
    int Q = e->bucket < n ? e->bucket : n;
    pdq_code rc = pdq_rt_append(e->rt, 1, n, ids, NULL, Q, logits, NULL, st);
    /* near the end of the cache a whole bucket no longer fits the past: one token at a time */
    if (rc == PDQ_ERR_LIMIT && pdq_rt_len(e->rt, 0) + n <= e->max_seq) rc = pdq_rt_append(e->rt, 1, n, ids, NULL, 1, logits, NULL, st);
    return rc;
}

pdq_code chat_engine_step(chat_engine *e, int32_t id, float *logits, pdq_status *st) {
    if (e->crt) return pdq_crt_decode(e->crt, id, logits, st);
    return pdq_rt_decode(e->rt, 1, &id, logits, st);
}
