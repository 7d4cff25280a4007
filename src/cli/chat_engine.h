/* The model behind pdq chat: the in-memory static runtime (float, or a quantized directory's
 * fake-quant graphs) or the Circle runtime over an exported pair, behind one start/feed/step. */
#ifndef PDQ_CLI_CHAT_ENGINE_H
#define PDQ_CLI_CHAT_ENGINE_H

#include <stdint.h>

#include "pdq/circle_export.h"
#include "pdq/model.h"
#include "pdq/ptq.h"
#include "pdq/runtime.h"
#include "exec_args.h"
#include "pdq/stop_ids.h"

typedef struct {
    pdq_model *m;   /* in-memory path */
    pdq_rt *rt;
    pdq_ptq *ptq;   /* non-NULL: fake-quant activations */
    pdq_crt *crt;   /* --circle path */
    cli_exec ex;    /* --mode: the execution mode of either path */
    int show_plan;  /* --circle: each turn's bucket sequence on stderr */
    int chunk;      /* --circle: a first turn into an empty cache goes through the buckets too */
    int turns;      /* turns fed so far (for the plan lines) */
    int vocab, max_seq, bucket;
    pdq_stop_ids stop; /* config.json's and generation_config.json's EOS ids, the template's end of turn */
    char what[256]; /* for the banner */
} chat_engine;

/* model_dir (static graphs; a quantized dir with ptq.json runs its grids in ex's mode) or
 * circle_dir (per_layer: the per-layer files instead of the whole-model pair). Prints errors;
 * returns 0 on success. */
int chat_engine_open(chat_engine *e, const char *model_dir, const char *circle_dir, int max_seq, int bucket,
                     const pdq_static_opts *so, int so_given, const cli_exec *ex, int per_layer, int threads);
void chat_engine_close(chat_engine *e);
/* Starts a new sequence with ids[0..n) (n <= max_seq): logits of the last token. */
pdq_code chat_engine_start(chat_engine *e, const int32_t *ids, int n, float *logits, pdq_status *st);
/* Appends ids to the sequence (append buckets: the in-memory runtime's, or the export's in the
 * runtime's plan, largest first; Q = 1 is the decode graph). */
pdq_code chat_engine_feed(chat_engine *e, const int32_t *ids, int n, float *logits, pdq_status *st);
/* One generated token: a decode step. */
pdq_code chat_engine_step(chat_engine *e, int32_t id, float *logits, pdq_status *st);
int chat_engine_len(const chat_engine *e);
int chat_engine_is_eos(const chat_engine *e, int id);

#endif
