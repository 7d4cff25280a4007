/* Private state of the static runtime, shared by its files (cache, tables, prefill, append). */
#ifndef PDQ_STATIC_RT_INTERNAL_H
#define PDQ_STATIC_RT_INTERNAL_H

#include "contract/kv_cache.h"
#include "contract/rt_contract.h"
#include "pdq/runtime.h"

typedef enum { RT_PREFILL = 0, RT_APPEND, RT_EMBED, RT_HEAD } rt_kind;

/* A set of graphs of one kind and length T: n_layers layer graphs, or one embed/head graph. */
typedef struct {
    rt_kind kind;
    int T;
    int n;
    pdq_graph **g;
    pdq_interp **ip;
    pdq_graph **qg;               /* integer mode: the lowered graphs and their executors */
    pdq_qexec **qx;
} rt_stack;

struct pdq_rt {
    const pdq_model *m;
    pdq_static_opts o;
    int B, max_seq, C;            /* C = max_seq - 1 cache slots of a full layer */
    int window, ring;             /* sliding layers' window and ring slots (0: no ring layer) */
    int has_full;                 /* some layer is full (its cache bounds an append's past) */
    int n_layers, KV, hd, D, V;
    int rd;                       /* the dims RoPE turns: the width of the cos/sin inputs */
    pdq_kv_cache kv;              /* float, (B, KV, C or ring, hd) per layer and K/V */
    int *len;                     /* [B] tokens of each row's sequence so far */
    pdq_ctr_rope tab;             /* (max_seq, rd) each; sin pre-negated for that convention */
    rt_stack **stacks;
    int n_stacks;
    void *arena;                  /* shared by every interpreter (they run one at a time) */
    size_t arena_bytes;
    pdq_edge_hook hook;
    void *hook_ctx;
    pdq_rt_lower_fn lower;        /* integer mode (NULL: the float interpreter) */
    void *lower_ctx;
    pdq_exec_opts eo;
    /* scratch, sized for the prefill graph (the largest) */
    float *hid_a, *hid_b;         /* (B, max_seq, D) */
    float *mask;                  /* (B, max_seq, max_seq): full layers' */
    float *rmask;                 /* sliding layers': (B, S, S) prefill, (B, Q, ring + Q) append */
    pdq_ctr_rope row;             /* (B, max_seq, rd) each: the step's rows of every table */
    float *past_k, *past_v;       /* (B, KV, C, hd) */
    float *new_k, *new_v;         /* (B, KV, max_seq, hd) */
    int32_t *ids;                 /* (B, max_seq) */
    int *pos;                     /* (B, max_seq) position of each graph row or -1 (padding) */
    float *last_h;                /* (B, D) */
    float *logit_buf;             /* (B, max_seq, V) lazily for all-position logits */
};

/* Returns the stack of `kind` for length T, building it on first use. */
pdq_code pdq_rt_stack(pdq_rt *rt, rt_kind kind, int T, rt_stack **out, pdq_status *st);
/* Embeds ids (B,T) into out (B,T,D) through the embed graph. */
pdq_code pdq_rt_embed(pdq_rt *rt, int T, const int32_t *ids, float *out, pdq_status *st);
/* Final norm + lm_head through the head graph: x (B,T,D) -> logits (B,T,V). */
pdq_code pdq_rt_head(pdq_rt *rt, int T, const float *x, float *logits, pdq_status *st);
/* Runs every layer of a prefill (T = max_seq) or append (T = Q) stack on rt->hid_a, with
 * rt->mask/rmask/cos/sin filled; writes K/V of the positions rt->pos (>= 0) into the cache.
 * Returns the final hidden (rt->hid_a or rt->hid_b) in *result. */
pdq_code pdq_rt_run_layers(pdq_rt *rt, rt_stack *s, float **result, pdq_status *st);

/* RoPE rows for a position (table lookup). */

#endif
