/* Export of a model to Circle files as TICO names them, the RoPE tables and manifest.json (the
 * contract a device runtime needs: I/O order, names, shapes, dtypes, qparams, max_seq, mask fill,
 * RoPE convention and tables, KV-cache layout and update rule). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "pdq/circle_export.h"
#include "pdq/file.h"
#include "pdq/npy.h"
#include "circle/export_gather.h"
#include "contract/rt_contract.h"
#include "ptq/lower_quant.h"

void pdq_export_opts_default(pdq_export_opts *o) {
    memset(o, 0, sizeof *o);
    o->max_seq = 64;
    o->whole = 1;
    o->per_layer = 1;
    pdq_static_opts_default(&o->so);
    o->so.rope = PDQ_RT_ROPE_PRE_NEGATED_SIN;
    o->so.scale = PDQ_RT_SCALE_K_PROJ;
    o->so.layout = PDQ_RT_LAYOUT_UNROLLED;
}

static cJSON *qparams_json(const pdq_qparams *q) {
    cJSON *o = cJSON_CreateObject();
    cJSON *s = cJSON_AddArrayToObject(o, "scale"), *z = cJSON_AddArrayToObject(o, "zero_point");
    for (int i = 0; i < q->n; i++) {
        cJSON_AddItemToArray(s, cJSON_CreateNumber(q->scale[i]));
        cJSON_AddItemToArray(z, cJSON_CreateNumber((double)q->zero_point[i]));
    }
    if (q->n > 1) cJSON_AddNumberToObject(o, "quantized_dimension", q->quantized_dim);
    return o;
}

static cJSON *tensor_json(const pdq_tensor *t) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", t->name);
    cJSON *sh = cJSON_AddArrayToObject(o, "shape");
    for (int d = 0; d < t->ndim; d++) cJSON_AddItemToArray(sh, cJSON_CreateNumber(t->shape[d]));
    cJSON_AddStringToObject(o, "dtype", pdq_tdtype_name(t->dtype));
    if (t->q) cJSON_AddItemToObject(o, "qparams", qparams_json(t->q));
    return o;
}

static cJSON *graph_json(const pdq_graph *g, const char *file, long long bytes) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "file", file);
    cJSON_AddNumberToObject(o, "bytes", (double)bytes);
    cJSON_AddNumberToObject(o, "operators", g->n_ops);
    cJSON *in = cJSON_AddArrayToObject(o, "inputs"), *out = cJSON_AddArrayToObject(o, "outputs");
    for (int i = 0; i < g->n_inputs; i++) cJSON_AddItemToArray(in, tensor_json(&g->tensors[g->inputs[i]]));
    for (int i = 0; i < g->n_outputs; i++) cJSON_AddItemToArray(out, tensor_json(&g->tensors[g->outputs[i]]));
    return o;
}

typedef struct {
    const char *dir;
    const char *tag;    /* "", ".q" or ".w4"/".w8" (hybrid) */
    cJSON *files;       /* manifest "files" object */
    int quiet;
    pdq_status *st;
    pdq_ptq *ptq;       /* quantized export */
    pdq_qweights *qw;
    int hybrid;         /* weights only */
    cJSON *needs;       /* manifest "consumer_requirements": union over the files */
} ectx;

/* Writes g as dir/<base><tag>.circle and records it in the manifest under key. Frees g. */
static pdq_code emit(ectx *e, pdq_graph *g, const char *base) {
    char path[4096], file[512];
    snprintf(file, sizeof file, "%s%s.circle", base, e->tag);
    snprintf(path, sizeof path, "%s/%s", e->dir, file);
    pdq_code rc = e->ptq ? pdq_export_quantize_graph(g, e->ptq, e->qw, e->st)
                  : e->hybrid ? pdq_export_quantize_weights(g, e->qw, e->st) : PDQ_OK;
    pdq_circle_model cm;
    int have_cm = 0;
    if (rc == PDQ_OK) rc = pdq_circle_from_graph(g, &cm, e->st);
    if (rc == PDQ_OK) {
        have_cm = 1;
        rc = pdq_circle_write(path, &cm, NULL, e->st);
    }
    if (rc == PDQ_OK) {
        long long bytes = -1;
        pdq_path_stat(path, &bytes, NULL);
        cJSON *gj = graph_json(g, file, bytes);
        cJSON *req = pdq_circle_requirements(&cm);
        cJSON *r;
        cJSON_ArrayForEach(r, req) { /* union, first-seen order */
            int seen = 0;
            cJSON *x;
            cJSON_ArrayForEach(x, e->needs) seen |= !strcmp(x->valuestring, r->valuestring);
            if (!seen) cJSON_AddItemToArray(e->needs, cJSON_CreateString(r->valuestring));
        }
        cJSON_AddItemToObject(gj, "requires", req);
        cJSON_AddItemToObject(e->files, base, gj);
        if (!e->quiet) fprintf(stderr, "export: %s (%d ops, %.1f MiB)\n", file, g->n_ops, (double)bytes / 1048576.0);
    }
    if (have_cm) pdq_circle_model_free(&cm);
    pdq_graph_free(g);
    return rc;
}

static pdq_code write_tables(const pdq_model *m, const char *dir, const pdq_static_opts *so, int S, pdq_status *st) {
    int hd = pdq_cfg_rotary_dim(&m->cfg); /* the width of the cos/sin inputs */
    float *cs = malloc(sizeof(float) * (size_t)S * hd * 2);
    int32_t *pos = malloc(sizeof(int32_t) * (size_t)S);
    if (!cs || !pos) { free(cs); free(pos); return pdq_fail(st, PDQ_ERR_NOMEM, "rope tables"); }
    float *sn = cs + (size_t)S * hd;
    for (int i = 0; i < S; i++) pos[i] = i;
    pdq_rope_tables(m, S, pos, cs, sn);
    if (so->rope == PDQ_RT_ROPE_PRE_NEGATED_SIN)
        for (int p = 0; p < S; p++)
            for (int i = 0; i < hd / 2; i++) sn[(size_t)p * hd + i] = -sn[(size_t)p * hd + i];
    char path[4096];
    int64_t shape[2] = {S, hd};
    snprintf(path, sizeof path, "%s/rope_cos.npy", dir);
    pdq_code rc = pdq_npy_write(path, PDQ_NPY_F32, 2, shape, cs, st);
    snprintf(path, sizeof path, "%s/rope_sin.npy", dir);
    if (rc == PDQ_OK) rc = pdq_npy_write(path, PDQ_NPY_F32, 2, shape, sn, st);
    free(cs);
    free(pos);
    return rc;
}

static void manifest_head(cJSON *root, const pdq_model *m, const pdq_export_opts *o, int quantized) {
    const pdq_config *c = &m->cfg;
    cJSON_AddStringToObject(root, "format", "pdq-circle-export");
    cJSON_AddNumberToObject(root, "version", 1);
    cJSON_AddBoolToObject(root, "quantized", quantized);
    cJSON_AddNumberToObject(root, "max_seq", o->max_seq);
    cJSON_AddNumberToObject(root, "batch", 1);
    cJSON *mo = cJSON_AddObjectToObject(root, "model");
    cJSON_AddNumberToObject(mo, "hidden_size", c->hidden_size);
    cJSON_AddNumberToObject(mo, "intermediate_size", c->intermediate_size);
    cJSON_AddNumberToObject(mo, "num_hidden_layers", c->n_layers);
    cJSON_AddNumberToObject(mo, "num_attention_heads", c->n_heads);
    cJSON_AddNumberToObject(mo, "num_key_value_heads", c->n_kv_heads);
    cJSON_AddNumberToObject(mo, "head_dim", c->head_dim);
    /* the families' switches, written only when set so a Llama manifest is unchanged */
    if (c->sliding_window) cJSON_AddNumberToObject(mo, "sliding_window", c->sliding_window);
    if (pdq_cfg_rotary_dim(c) != c->head_dim) cJSON_AddNumberToObject(mo, "rotary_dim", pdq_cfg_rotary_dim(c));
    cJSON_AddNumberToObject(mo, "vocab_size", c->vocab_size);
    cJSON_AddNumberToObject(mo, "rms_norm_eps", c->rms_norm_eps);
    cJSON_AddNumberToObject(mo, "bos_token_id", c->bos_token_id);
    cJSON *eos = cJSON_AddArrayToObject(mo, "eos_token_ids");
    for (int i = 0; i < c->n_eos; i++) cJSON_AddItemToArray(eos, cJSON_CreateNumber(c->eos_token_ids[i]));
    cJSON_AddStringToObject(root, "scale_fusion", o->so.scale == PDQ_RT_SCALE_K_PROJ ? "k_proj" : "none");
    cJSON_AddStringToObject(root, "attention_layout", o->so.layout == PDQ_RT_LAYOUT_UNROLLED ? "unrolled" : "batched");
    cJSON *mk = cJSON_AddObjectToObject(root, "attention_mask");
    cJSON_AddNumberToObject(mk, "fill", o->so.mask_fill);
    cJSON_AddStringToObject(mk, "kind", "additive: 0 where the query may see the key, fill elsewhere");
    cJSON_AddStringToObject(mk, "prefill",
                            "(1,S,S), S = max_seq, prompt at positions 0..n-1 (padding on the right): row i has 0 at "
                            "columns j <= i for i < n; padding rows are all fill");
    cJSON_AddStringToObject(mk, "decode",
                            "(1,Q,max_seq), keys = concat(past cache slots 0..max_seq-Q-1, the Q new tokens): 0 at the "
                            "len used cache slots and at new columns max_seq-Q..max_seq-Q+q for query q, fill elsewhere");
    int ring = 0;
    for (int l = 0; l < c->n_layers; l++)
        if (pdq_ctr_ring(c, o->max_seq, l)) ring = pdq_ctr_ring(c, o->max_seq, l);
    if (c->sliding_window) {
        cJSON *lt = cJSON_AddArrayToObject(mo, "layer_types");
        for (int l = 0; l < c->n_layers; l++)
            cJSON_AddItemToArray(lt, cJSON_CreateString(pdq_cfg_layer_window(c, l) ? "sliding_attention" : "full_attention"));
        cJSON_AddStringToObject(mk, "window",
                                "model.sliding_window = W on the model.layer_types \"sliding_attention\" layers: a query "
                                "at position p also masks every key at a position <= p - W");
    }
    if (ring)
        cJSON_AddStringToObject(mk, "sliding",
                                "sliding layers (W < max_seq) take their own mask, named sliding_attention_mask in the "
                                "whole-model files: prefill (1,S,S) with the window; decode/append (1,Q,R+Q), keys = "
                                "concat(the R ring slots, the Q new tokens): 0 at ring slot j when it holds a position p "
                                "(the latest p < len with p mod R = j) with p > len+q-W, and at new column R+i for i <= q "
                                "with q-i < W");
    cJSON *rp = cJSON_AddObjectToObject(root, "rope");
    cJSON_AddStringToObject(rp, "convention", o->so.rope == PDQ_RT_ROPE_PRE_NEGATED_SIN ? "pre_negated_sin" : "hf");
    cJSON_AddStringToObject(rp, "formula",
                            o->so.rope == PDQ_RT_ROPE_PRE_NEGATED_SIN
                                ? "y = x*cos + concat(x2, x1)*sin' with sin'[:hd/2] = -sin[:hd/2]"
                                : "y = x*cos + concat(-x2, x1)*sin");
    cJSON_AddNumberToObject(rp, "theta", c->rope_theta);
    int longrope = c->rope_type == PDQ_ROPE_LONGROPE;
    cJSON_AddStringToObject(rp, "scaling", c->rope_type == PDQ_ROPE_LLAMA3   ? "llama3"
                                           : c->rope_type == PDQ_ROPE_LINEAR ? "linear"
                                           : longrope                        ? "longrope"
                                                                             : "default");
    if (c->rope_type == PDQ_ROPE_LINEAR) cJSON_AddNumberToObject(rp, "factor", c->rope_factor);
    if (c->rope_type == PDQ_ROPE_LLAMA3) {
        cJSON_AddNumberToObject(rp, "factor", c->rope_factor);
        cJSON_AddNumberToObject(rp, "low_freq_factor", c->rope_low_freq_factor);
        cJSON_AddNumberToObject(rp, "high_freq_factor", c->rope_high_freq_factor);
        cJSON_AddNumberToObject(rp, "original_max_position_embeddings", c->rope_original_max_pos);
    }
    if (longrope) {
        /* HF picks long_factor for a sequence longer than original_max_position_embeddings; the
         * graphs hold one table and max_seq is refused past that length, so every graph here
         * uses short_factor, at every position */
        cJSON_AddStringToObject(rp, "factor_set", "short_factor");
        cJSON *sf = cJSON_AddArrayToObject(rp, "factors");
        for (int i = 0; i < pdq_cfg_rotary_dim(c) / 2; i++) cJSON_AddItemToArray(sf, cJSON_CreateNumber(c->rope_short[i]));
        cJSON_AddNumberToObject(rp, "original_max_position_embeddings", c->rope_original_max_pos);
        cJSON_AddStringToObject(rp, "factor_rule",
                                "inv_freq[i] = 1 / (factors[i] * theta^(2i/rotary_dim)); long_factor (positions past "
                                "original_max_position_embeddings) is not served: max_seq <= that length");
    }
    /* longrope's attention factor multiplies cos and sin; the tables already hold it */
    cJSON_AddNumberToObject(rp, "attention_scaling", longrope ? c->rope_attn_factor : 1.0);
    cJSON_AddStringToObject(rp, "tables", "rope_cos.npy, rope_sin.npy: (max_seq, head_dim) float32 rows by position "
                                          "(emb = cat(freqs, freqs)); sin already in the convention's form");
    cJSON_AddStringToObject(rp, "cos", "rope_cos.npy");
    cJSON_AddStringToObject(rp, "sin", "rope_sin.npy");
    cJSON *kv = cJSON_AddObjectToObject(root, "kv_cache");
    cJSON_AddStringToObject(kv, "layout", "per layer K and V of (1, num_key_value_heads, max_seq-1, head_dim), slot = position");
    cJSON_AddStringToObject(kv, "contents", o->so.scale == PDQ_RT_SCALE_K_PROJ
                                                ? "K after RoPE, computed with k_proj pre-scaled by 1/sqrt(head_dim); V as projected"
                                                : "K after RoPE; V as projected");
    cJSON_AddStringToObject(kv, "dtype", quantized ? "the dtype and qparams of the new_k/new_v outputs (stored codes, copied without requantization)"
                                                   : "float32");
    cJSON_AddStringToObject(kv, "update",
                            "prefill of n tokens: slots 0..n-1 <- new_k/new_v[:, :, 0:n]; decode at length len: pass "
                            "the whole cache as past_key/past_value (append Q: its first max_seq-Q slots), then slot "
                            "len+q <- delta[:, :, q]; len += Q");
    if (ring) {
        cJSON_AddNumberToObject(kv, "ring_slots", ring);
        cJSON *ls = cJSON_AddArrayToObject(kv, "layer_slots");
        for (int l = 0; l < c->n_layers; l++)
            cJSON_AddItemToArray(ls, cJSON_CreateNumber(pdq_ctr_cache_slots(pdq_ctr_ring(c, o->max_seq, l), o->max_seq)));
        cJSON_AddStringToObject(kv, "ring_layout", "sliding layers: K and V of (1, num_key_value_heads, ring_slots, head_dim), "
                                                   "ring_slots = sliding_window - 1, passed whole as past_key/past_value");
        cJSON_AddStringToObject(kv, "ring_slot_rule", "the token at position p goes to ring slot p mod ring_slots (prefill: "
                                                      "positions in order, so the ring keeps the last ring_slots)");
    }
    cJSON_AddStringToObject(root, "token_ids", "int32 (GATHER indices)");
}

/* Weights in groups of columns, as the manifest describes them. */
#define BLOCKWISE "in groups of columns: BlockwiseQuantization (block_size columns; FLOAT32 scales and UINT8 zero " \
                  "points in tensors of [rows, groups]; per-channel where a weight has one group)"

/* What the files are: tag, activation and weight forms, buckets and how the runtime uses them. */
static void manifest_kind(cJSON *root, const char *tag, int quantized, int hybrid, int wbits, int grouped, const int *bk,
                          int nb) {
    cJSON_AddStringToObject(root, "file_tag", tag);
    cJSON_AddStringToObject(root, "activations", quantized ? "quantized (int16/uint8 per tensor, QuantizationParameters on every edge)"
                                                           : "float32");
    if (hybrid) {
        char w[512];
        snprintf(w, sizeof w, "%s %s with float32 scales and zero points; float32 activations",
                 wbits && wbits <= 4 ? "uint4 packed two per byte (low nibble first) / uint8" : "uint8", grouped ? BLOCKWISE
                 : "per-channel (quantized_dimension 0)");
        cJSON_AddStringToObject(root, "weights", w);
    } else {
        cJSON_AddStringToObject(root, "weights", !quantized ? "float32"
                                                 : grouped ? "uint4/uint8 codes, " BLOCKWISE ", norms int16"
                                                           : "uint4/uint8 per-channel codes, norms int16");
    }
    cJSON *b = cJSON_AddArrayToObject(root, "append_buckets");
    for (int i = 0; i < nb; i++) cJSON_AddItemToArray(b, cJSON_CreateNumber(bk[i]));
    cJSON_AddStringToObject(root, "append_files", "decoder_layer_append_prefill_q<Q>_<i> (per layer), model_append_prefill_q<Q> "
                                                  "(whole model, Q > 1); Q = 1 is also the decode graph");
    cJSON_AddStringToObject(root, "bucket_rule", "a turn of n tokens at cache length len: repeatedly the largest bucket Q "
                                                 "(decode = 1 included) with Q <= tokens left and len + Q <= max_seq, then "
                                                 "smaller ones; no padding");
    cJSON_AddStringToObject(root, "embedding", "GATHER reads float32 params: a quantized table is DEQUANTIZE(uint8 per-row "
                                               "constant) -> GATHER (float32) [-> QUANTIZE to the activation grid]");
}

/* config and tokenizer next to the files, so the export dir is self-contained for generate. */
static pdq_code copy_side_files(const char *src, const char *dir, pdq_status *st) {
    static const char *const k[] = {"config.json", "tokenizer.json", "tokenizer_config.json", "generation_config.json"};
    for (size_t i = 0; src && i < sizeof k / sizeof k[0]; i++) {
        char a[4096], b[4096];
        snprintf(a, sizeof a, "%s/%s", src, k[i]);
        snprintf(b, sizeof b, "%s/%s", dir, k[i]);
        if (pdq_path_stat(a, NULL, NULL) == PDQ_PATH_NONE) continue;
        pdq_code rc = pdq_file_copy(a, b, PDQ_FILE_MAX_JSON, NULL, st); /* atomic: pdq/file.h */
        if (rc) return rc;
    }
    return PDQ_OK;
}

pdq_code pdq_export_model(const pdq_model *m, const char *outdir, const pdq_export_opts *o, pdq_status *st) {
    const pdq_config *c = &m->cfg;
    pdq_export_opts def;
    if (!o) { pdq_export_opts_default(&def); o = &def; }
    int S = o->max_seq;
    pdq_code frc = pdq_family_require(c, PDQ_PATH_EXPORT, st);
    if (frc) return frc;
    if (S < 2) return pdq_fail(st, PDQ_ERR_ARG, "export: max_seq %d must be >= 2", S);
    if (c->rope_type == PDQ_ROPE_LONGROPE && S > c->rope_original_max_pos)
        return pdq_fail(st, PDQ_ERR_UNSUPPORTED,
                        "export: max_seq %d exceeds longrope's original_max_position_embeddings %d (one RoPE table)", S,
                        c->rope_original_max_pos);
    if (c->max_position_embeddings > 0 && S > c->max_position_embeddings)
        return pdq_fail(st, PDQ_ERR_LIMIT, "export: max_seq %d exceeds max_position_embeddings %d", S, c->max_position_embeddings);
    /* append-prefill buckets: the list and the single append_q, distinct, ascending */
    int nb = 0, bk[PDQ_MAX_BUCKETS + 1];
    for (int i = 0; i <= o->n_buckets; i++) {
        int q = i < o->n_buckets ? o->buckets[i] : o->append_q;
        if (i == o->n_buckets && !q) break;
        if (q < 1 || q >= S) return pdq_fail(st, PDQ_ERR_LIMIT, "export: append bucket %d must be in [1, max_seq-1 = %d]", q, S - 1);
        int seen = 0;
        for (int j = 0; j < nb; j++) seen |= bk[j] == q;
        if (seen) continue;
        if (nb >= PDQ_MAX_BUCKETS) return pdq_fail(st, PDQ_ERR_LIMIT, "export: more than %d append buckets", PDQ_MAX_BUCKETS);
        int k = nb++;
        while (k > 0 && bk[k - 1] > q) { bk[k] = bk[k - 1]; k--; }
        bk[k] = q;
    }
    if (o->hybrid && !o->quant_dir) return pdq_fail(st, PDQ_ERR_ARG, "export: a hybrid export needs a quantized checkpoint");
    if (!o->whole && !o->per_layer) return pdq_fail(st, PDQ_ERR_ARG, "export: nothing to export (neither whole nor per-layer)");
    if (pdq_dir_make(outdir, 0, st) != PDQ_OK) return pdq_wrap(st, "export");
    pdq_export_opts qo = *o;
    pdq_ptq *ptq = NULL;
    pdq_qweights *qw = NULL;
    if (o->quant_dir && o->hybrid) {
        pdq_code qrc = pdq_qweights_open(o->quant_dir, &qw, st);
        if (qrc != PDQ_OK) return pdq_wrap(st, "hybrid export");
    } else if (o->quant_dir) {
        char pp[4096];
        snprintf(pp, sizeof pp, "%s/ptq.json", o->quant_dir);
        pdq_code qrc = pdq_ptq_load(m, pp, &ptq, st);
        if (qrc == PDQ_OK) qrc = pdq_qweights_open(o->quant_dir, &qw, st);
        if (qrc != PDQ_OK) { pdq_ptq_free(ptq); return pdq_wrap(st, "quantized export"); }
        qo.so = *pdq_ptq_static_opts(ptq);
        o = &qo;
    }
    cJSON *root = cJSON_CreateObject();
    if (!root) { pdq_ptq_free(ptq); pdq_qweights_free(qw); return pdq_fail(st, PDQ_ERR_NOMEM, "manifest"); }
    manifest_head(root, m, o, ptq != NULL);
    int wbits = qw ? pdq_qweights_min_bits(qw) : 0;
    const char *tag = ptq ? ".q" : o->hybrid ? (wbits && wbits <= 4 ? ".w4" : ".w8") : "";
    manifest_kind(root, tag, ptq != NULL, o->hybrid, wbits, qw && pdq_qweights_grouped(qw), bk, nb);
    ectx e = {.dir = outdir, .tag = tag, .files = cJSON_AddObjectToObject(root, "files"), .quiet = o->quiet,
              .st = st, .ptq = ptq, .qw = qw, .hybrid = o->hybrid,
              .needs = cJSON_AddArrayToObject(root, "consumer_requirements")};
    pdq_code rc = write_tables(m, outdir, &o->so, S, st);
    if (rc == PDQ_OK && m->dir && strcmp(m->dir, outdir)) rc = copy_side_files(m->dir, outdir, st);
    pdq_graph *g = NULL;
    char base[128];
    if (rc == PDQ_OK && o->whole) {
        rc = pdq_build_whole(m, PDQ_MODE_PREFILL, S, &o->so, &g, st);
        if (rc == PDQ_OK) rc = emit(&e, g, "model_prefill");
        if (rc == PDQ_OK) rc = pdq_build_whole(m, PDQ_MODE_APPEND, S, &o->so, &g, st);
        if (rc == PDQ_OK) rc = emit(&e, g, "model_decode");
        for (int b = 0; b < nb && rc == PDQ_OK; b++) {
            if (bk[b] == 1) continue; /* model_decode is the Q = 1 bucket */
            rc = pdq_build_whole_q(m, PDQ_MODE_APPEND, S, bk[b], &o->so, &g, st);
            snprintf(base, sizeof base, "model_append_prefill_q%d", bk[b]);
            if (rc == PDQ_OK) rc = emit(&e, g, base);
        }
    }
    if (rc == PDQ_OK && o->per_layer) {
        rc = pdq_build_embed(m, 1, S, &g, st);
        if (rc == PDQ_OK) rc = emit(&e, g, "token_embedding");
        for (int l = 0; l < c->n_layers && rc == PDQ_OK; l++) {
            rc = pdq_build_layer(m, l, NULL, PDQ_MODE_PREFILL, 1, S, 0, &o->so, &g, st);
            snprintf(base, sizeof base, "decoder_layer_prefill_%d", l);
            if (rc == PDQ_OK) rc = emit(&e, g, base);
            if (rc == PDQ_OK) rc = pdq_build_layer(m, l, NULL, PDQ_MODE_APPEND, 1, S, 1, &o->so, &g, st);
            snprintf(base, sizeof base, "decoder_layer_decode_%d", l);
            if (rc == PDQ_OK) rc = emit(&e, g, base);
            for (int b = 0; b < nb && rc == PDQ_OK; b++) { /* TICO's name for the append-prefill graphs */
                rc = pdq_build_layer(m, l, NULL, PDQ_MODE_APPEND, 1, S, bk[b], &o->so, &g, st);
                snprintf(base, sizeof base, "decoder_layer_append_prefill_q%d_%d", bk[b], l);
                if (rc == PDQ_OK) rc = emit(&e, g, base);
            }
        }
        if (rc == PDQ_OK) rc = pdq_build_head(m, 1, 1, &g, st);
        if (rc == PDQ_OK) rc = emit(&e, g, "lm_head");
    }
    if (qw) cJSON_AddNumberToObject(root, "inexact_weight_channels", (double)pdq_qweights_inexact(qw));
    if (rc == PDQ_OK) {
        char *txt = cJSON_Print(root);
        char path[4096];
        snprintf(path, sizeof path, "%s/manifest.json", outdir);
        rc = pdq_file_write_text(path, txt, 1, NULL, st);
        free(txt);
    }
    if (rc == PDQ_OK && qw && pdq_qweights_inexact(qw) && !o->quiet)
        fprintf(stderr, "export: warning: %ld weight rows/channels could not be stored bit-exactly\n", pdq_qweights_inexact(qw));
    cJSON_Delete(root);
    pdq_ptq_free(ptq);
    pdq_qweights_free(qw);
    if (rc != PDQ_OK) return pdq_wrap(st, "export to %s", outdir);
    return PDQ_OK;
}
