/* External-KV runtime driving exported Circle files (whole-model pair or per-layer files), B = 1,
 * prompt at positions 0..n-1 with padding on the right, exactly the inputs the in-memory static
 * runtime builds (one mask per attention type, cos/sin rows of position 0 for padding, cache slots
 * of positions: a full layer's slot = position, a sliding layer's ring slot = position mod ring).
 * The KV cache is held in the dtype of the files' K/V outputs (int16 codes when quantized). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "circle/cinterp_share.h"
#include "circle/manifest_check.h"
#include "contract/kv_cache.h"
#include "contract/layer_loop.h"
#include "contract/rt_contract.h"
#include "pdq/file.h"
#include "pdq/circle_export.h"
#include "pdq/npy.h"

struct pdq_crt {
    int whole;
    int S, C, L, KV, hd, D, V;
    int rd, window;             /* cos/sin width (rotary dims), sliding layers' window (0: none) */
    int ring, has_full;         /* sliding layers' ring slots (0: no ring layer); some layer is full */
    pdq_ctr_whole_io io;        /* the whole-model files' inputs */
    float fill;
    pdq_ctr_rope tab;           /* (S, rd) each: the global table, the local one when some layer takes it */
    unsigned char local[PDQ_MANIFEST_MAX_LAYERS]; /* layer l takes the local table (manifest rope.layer_tables) */
    int *pos;                   /* (S) prefill row positions (scratch) */
    pdq_cgraph *prefill, *decode;          /* whole */
    pdq_cgraph *embed, *head, **lp, **ld;  /* per layer */
    pdq_kv_cache kv;            /* B = 1; float, or the codes of the files' K/V outputs */
    const pdq_tensor **kt, **vt; /* [L] the K/V output tensors giving each layer's cache grid */
    int *slot;                  /* (S) position of each graph row of a step or -1 (scratch) */
    int len;
    pdq_exec_opts eo;           /* float mode: the cache holds floats */
    int nb, bq[PDQ_MAX_BUCKETS + 1];          /* buckets, ascending, bq[0] = 1 (decode) */
    pdq_cgraph *wa[PDQ_MAX_BUCKETS + 1];      /* whole: model_append_prefill_q<Q> (NULL for Q = 1) */
    pdq_cgraph **la[PDQ_MAX_BUCKETS + 1];     /* per layer: decoder_layer_append_prefill_q<Q>_<l> */
};

void pdq_crt_free(pdq_crt *rt) {
    if (!rt) return;
    /* the decode and bucket files borrow float copies from the prefill files: freed first */
    pdq_cg_free(rt->decode);
    for (int b = 0; b < rt->nb; b++) {
        pdq_cg_free(rt->wa[b]);
        for (int l = 0; rt->la[b] && l < rt->L; l++) pdq_cg_free(rt->la[b][l]);
        free(rt->la[b]);
    }
    for (int l = 0; rt->ld && l < rt->L; l++) pdq_cg_free(rt->ld[l]);
    for (int l = 0; rt->lp && l < rt->L; l++) pdq_cg_free(rt->lp[l]);
    pdq_cg_free(rt->prefill);
    pdq_cg_free(rt->embed);
    pdq_cg_free(rt->head);
    pdq_kv_free(&rt->kv);
    free(rt->slot);
    free(rt->lp);
    free(rt->ld);
    free(rt->kt);
    free(rt->vt);
    free(rt->tab.cos);
    free(rt->tab.sin);
    free(rt->tab.cos_local);
    free(rt->tab.sin_local);
    free(rt->pos);
    free(rt);
}

/* like: an open file whose float copies of equal weights this one borrows (NULL: none). */
static pdq_code open_file(const pdq_crt *rt, const char *dir, const char *base, const char *tag, const pdq_cgraph *like,
                          pdq_cgraph **out, pdq_status *st) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s%s.circle", dir, base, tag);
    return pdq_cg_open_like(path, &rt->eo, like, out, st);
}

/* Checks a graph I/O tensor's shape against the contract. */
static pdq_code want_shape(const pdq_tensor *t, int nd, const int *sh, const char *file, pdq_status *st) {
    int ok = t->ndim == nd;
    for (int d = 0; ok && d < nd; d++) ok = t->shape[d] == sh[d];
    if (ok) return PDQ_OK;
    char a[80] = "", b[80] = "";
    size_t ka = 0, kb = 0;
    for (int d = 0; d < t->ndim && ka < 60; d++) ka += (size_t)snprintf(a + ka, sizeof a - ka, "%s%d", d ? "," : "", t->shape[d]);
    for (int d = 0; d < nd && kb < 60; d++) kb += (size_t)snprintf(b + kb, sizeof b - kb, "%s%d", d ? "," : "", sh[d]);
    return pdq_fail(st, PDQ_ERR_SHAPE, "%s: tensor %s has shape (%s), the manifest's contract needs (%s)", file, t->name, a, b);
}

/* The shape of layer l's past input and mask width in a Q-token graph (rt_contract.h). */
static int past_of(const pdq_crt *rt, int l, int Q) { return pdq_ctr_past_slots(rt->kv.ring[l], rt->S, Q); }

static pdq_code check_io_q(pdq_crt *rt, pdq_cgraph *cg, const char *file, int kind, int Q, int layer, pdq_status *st) {
    /* kind 0: whole prefill, 1: whole decode/append of Q, 2: layer prefill, 3: layer decode/append, 4: embed, 5: head */
    int S = rt->S, KV = rt->KV, hd = rt->hd, D = rt->D, V = rt->V;
    int T = (kind == 1 || kind == 3) ? Q : S, C = kind == 3 ? past_of(rt, layer, Q) : S - Q;
    int ni = pdq_cg_n_inputs(cg), no = pdq_cg_n_outputs(cg), ns = rt->io.n_shared;
    int want_in = kind == 0 ? ns : kind == 1 ? ns + 2 * rt->L : kind == 2 ? 4 : kind == 3 ? 6 : 1;
    int want_out = kind <= 1 ? 1 + 2 * rt->L : kind <= 3 ? 3 : 1;
    if (ni != want_in || no != want_out)
        return pdq_fail(st, PDQ_ERR_SHAPE, "%s: %d inputs / %d outputs, the contract has %d / %d", file, ni, no, want_in, want_out);
    pdq_code rc = PDQ_OK;
    int s2[2] = {1, T}, m3[3] = {1, T, kind == 3 ? C + T : S}, c3[3] = {1, T, rt->rd}, h3[3] = {1, T, D}, l3[3] = {1, T, V};
    int pk[4] = {1, KV, C, hd}, nk[4] = {1, KV, T, hd};
    if (kind <= 1) {
        const pdq_ctr_whole_io *io = &rt->io;
        int mr[3] = {1, T, kind == 0 ? S : rt->ring + T}; /* the sliding layers' mask */
        rc = want_shape(pdq_cg_input_tensor(cg, io->ids), 2, s2, file, st);
        if (!rc && io->mask_full >= 0) rc = want_shape(pdq_cg_input_tensor(cg, io->mask_full), 3, m3, file, st);
        if (!rc && io->mask_ring >= 0) rc = want_shape(pdq_cg_input_tensor(cg, io->mask_ring), 3, mr, file, st);
        if (!rc) rc = want_shape(pdq_cg_input_tensor(cg, io->cos), 3, c3, file, st);
        if (!rc) rc = want_shape(pdq_cg_input_tensor(cg, io->sin), 3, c3, file, st);
        if (!rc && io->cos_local >= 0) rc = want_shape(pdq_cg_input_tensor(cg, io->cos_local), 3, c3, file, st);
        if (!rc && io->sin_local >= 0) rc = want_shape(pdq_cg_input_tensor(cg, io->sin_local), 3, c3, file, st);
        for (int i = ns; i < ni && !rc; i++) {
            pk[2] = past_of(rt, (i - ns) / 2, Q);
            rc = want_shape(pdq_cg_input_tensor(cg, i), 4, pk, file, st);
        }
        if (!rc) rc = want_shape(pdq_cg_output_tensor(cg, 0), 3, l3, file, st);
        for (int i = 1; i < no && !rc; i++) rc = want_shape(pdq_cg_output_tensor(cg, i), 4, nk, file, st);
    } else if (kind == 2 || kind == 3) {
        rc = want_shape(pdq_cg_input_tensor(cg, 0), 3, h3, file, st);
        if (!rc) rc = want_shape(pdq_cg_input_tensor(cg, 1), 3, m3, file, st);
        int ci = kind == 2 ? PDQ_PF_IN_COS : PDQ_AP_IN_COS;
        if (!rc) rc = want_shape(pdq_cg_input_tensor(cg, ci), 3, c3, file, st);
        if (!rc) rc = want_shape(pdq_cg_input_tensor(cg, ci + 1), 3, c3, file, st);
        if (kind == 3 && !rc) rc = want_shape(pdq_cg_input_tensor(cg, PDQ_AP_IN_PAST_K), 4, pk, file, st);
        if (kind == 3 && !rc) rc = want_shape(pdq_cg_input_tensor(cg, PDQ_AP_IN_PAST_V), 4, pk, file, st);
        if (!rc) rc = want_shape(pdq_cg_output_tensor(cg, 0), 3, h3, file, st);
        if (!rc) rc = want_shape(pdq_cg_output_tensor(cg, 1), 4, nk, file, st);
        if (!rc) rc = want_shape(pdq_cg_output_tensor(cg, 2), 4, nk, file, st);
    } else if (kind == 4) {
        rc = want_shape(pdq_cg_input_tensor(cg, 0), 2, s2, file, st);
        if (!rc) rc = want_shape(pdq_cg_output_tensor(cg, 0), 3, h3, file, st);
    } else {
        int hi[3] = {1, 1, D}, lo[3] = {1, 1, V};
        rc = want_shape(pdq_cg_input_tensor(cg, 0), 3, hi, file, st);
        if (!rc) rc = want_shape(pdq_cg_output_tensor(cg, 0), 3, lo, file, st);
    }
    if (!rc && kind != 5 && pdq_cg_input_tensor(cg, 0)->dtype != PDQ_TI32 && kind != 2 && kind != 3)
        rc = pdq_fail(st, PDQ_ERR_UNSUPPORTED, "%s: token ids must be int32", file);
    return rc;
}

static pdq_code crt_read_buckets(pdq_crt *rt, const cJSON *root, const char *path, pdq_status *st);
static pdq_code crt_open_buckets(pdq_crt *rt, const char *dir, const char *tag, pdq_status *st);

static pdq_code check_io(pdq_crt *rt, pdq_cgraph *cg, const char *file, int kind, pdq_status *st) {
    return check_io_q(rt, cg, file, kind, 1, -1, st);
}

pdq_code pdq_crt_open(const char *dir, int whole, pdq_crt **out, pdq_status *st) {
    return pdq_crt_open_opts(dir, whole, NULL, out, st);
}

pdq_code pdq_crt_open_opts(const char *dir, int whole, const pdq_exec_opts *eo, pdq_crt **out, pdq_status *st) {
    char path[4096];
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    char *txt;
    pdq_code lrc = pdq_file_read(path, PDQ_FILE_MAX_JSON, &txt, NULL, st);
    if (lrc) return pdq_wrap(st, "circle runtime");
    cJSON *root = cJSON_Parse(txt);
    free(txt);
    if (!root) return pdq_fail(st, PDQ_ERR_FORMAT, "circle runtime: %s is not JSON", path);
    pdq_manifest mf;
    if (pdq_manifest_check(root, path, &mf, st)) { /* sizes checked before anything is sized from them */
        cJSON_Delete(root);
        return pdq_wrap(st, "circle runtime");
    }
    pdq_crt *rt = calloc(1, sizeof *rt);
    if (!rt) { cJSON_Delete(root); return pdq_fail(st, PDQ_ERR_NOMEM, "circle runtime"); }
    rt->whole = whole;
    if (eo) rt->eo = *eo;
    else pdq_exec_opts_default(&rt->eo);
    rt->S = mf.max_seq;
    rt->C = rt->S - 1;
    rt->L = mf.layers;
    rt->KV = mf.kv_heads;
    rt->hd = mf.head_dim;
    rt->rd = mf.rotary_dim;
    rt->window = mf.sliding_window;
    int ring[PDQ_MANIFEST_MAX_LAYERS];
    for (int l = 0; l < mf.layers; l++) {
        ring[l] = pdq_ctr_ring_of(mf.sliding[l] ? mf.sliding_window : 0, rt->S);
        if (ring[l]) rt->ring = ring[l];
        else rt->has_full = 1;
    }
    memcpy(rt->local, mf.rope_local, sizeof rt->local);
    pdq_ctr_whole_io_of(rt->has_full, rt->ring > 0, mf.local_rope, &rt->io);
    rt->D = mf.hidden;
    rt->V = mf.vocab;
    rt->fill = (float)mf.fill;
    char tag[16];
    const cJSON *ft = cJSON_GetObjectItemCaseSensitive(root, "file_tag");
    snprintf(tag, sizeof tag, "%s", cJSON_IsString(ft) ? ft->valuestring : mf.quantized ? ".q" : "");
    pdq_code brc = crt_read_buckets(rt, root, path, st);
    cJSON_Delete(root);
    if (brc != PDQ_OK) { pdq_crt_free(rt); return brc; }
    pdq_code rc = PDQ_OK;
    /* a downloaded manifest: the S x S mask is one tensor */
    if ((int64_t)rt->S * rt->S > PDQ_G_MAX_ELEMS) {
        pdq_fail(st, PDQ_ERR_LIMIT, "circle runtime: %s: max_seq %d (max 46340: the mask has max_seq^2 elements)", path, rt->S);
        pdq_crt_free(rt);
        return st ? st->code : PDQ_ERR_LIMIT;
    }
    /* RoPE tables: the global pair, and the local pair when a layer takes it */
    static const char *const names[4] = {"rope_cos", "rope_sin", "rope_cos_local", "rope_sin_local"};
    float **tabs[4] = {&rt->tab.cos, &rt->tab.sin, &rt->tab.cos_local, &rt->tab.sin_local};
    for (int k = 0; k < (mf.local_rope ? 4 : 2) && !rc; k++) {
        pdq_npy a = {0};
        snprintf(path, sizeof path, "%s/%s.npy", dir, names[k]);
        rc = pdq_npy_read_f32(path, &a, st);
        if (!rc && a.count != (size_t)rt->S * rt->rd)
            rc = pdq_fail(st, PDQ_ERR_SHAPE, "circle runtime: %s: %zu values, need %d x %d", path, a.count, rt->S, rt->rd);
        if (!rc) { *tabs[k] = a.data; a.data = NULL; }
        pdq_npy_free(&a);
    }
    int L = rt->L;
    /* the caches' geometry first (the files' shapes are checked against it), their grids later */
    if (!rc) rc = pdq_kv_init(&rt->kv, L, 1, rt->KV, rt->C, rt->hd, NULL, ring, st);
    if (!rc) {
        rt->kt = calloc((size_t)L, sizeof(void *));
        rt->vt = calloc((size_t)L, sizeof(void *));
        rt->pos = malloc(sizeof(int) * (size_t)rt->S);
        rt->slot = malloc(sizeof(int) * (size_t)rt->S);
        if (!rt->kt || !rt->vt || !rt->pos || !rt->slot) rc = pdq_fail(st, PDQ_ERR_NOMEM, "circle runtime");
    }
    if (!rc && whole) {
        rc = open_file(rt, dir, "model_prefill", tag, NULL, &rt->prefill, st);
        if (!rc) rc = check_io(rt, rt->prefill, "model_prefill", 0, st);
        if (!rc) rc = open_file(rt, dir, "model_decode", tag, rt->prefill, &rt->decode, st);
        if (!rc) rc = check_io(rt, rt->decode, "model_decode", 1, st);
        for (int l = 0; l < L && !rc; l++) {
            rt->kt[l] = pdq_cg_output_tensor(rt->decode, 1 + 2 * l);
            rt->vt[l] = pdq_cg_output_tensor(rt->decode, 2 + 2 * l);
        }
    } else if (!rc) {
        rt->lp = calloc((size_t)L, sizeof(void *));
        rt->ld = calloc((size_t)L, sizeof(void *));
        if (!rt->lp || !rt->ld) rc = pdq_fail(st, PDQ_ERR_NOMEM, "circle runtime");
        if (!rc) rc = open_file(rt, dir, "token_embedding", tag, NULL, &rt->embed, st);
        if (!rc) rc = check_io(rt, rt->embed, "token_embedding", 4, st);
        if (!rc) rc = open_file(rt, dir, "lm_head", tag, NULL, &rt->head, st);
        if (!rc) rc = check_io(rt, rt->head, "lm_head", 5, st);
        char base[96];
        for (int l = 0; l < L && !rc; l++) {
            snprintf(base, sizeof base, "decoder_layer_prefill_%d", l);
            rc = open_file(rt, dir, base, tag, NULL, &rt->lp[l], st);
            if (!rc) rc = check_io(rt, rt->lp[l], base, 2, st);
            snprintf(base, sizeof base, "decoder_layer_decode_%d", l);
            if (!rc) rc = open_file(rt, dir, base, tag, rt->lp[l], &rt->ld[l], st);
            if (!rc) rc = check_io_q(rt, rt->ld[l], base, 3, 1, l, st);
            if (!rc) {
                rt->kt[l] = pdq_cg_output_tensor(rt->ld[l], PDQ_L_OUT_K);
                rt->vt[l] = pdq_cg_output_tensor(rt->ld[l], PDQ_L_OUT_V);
            }
        }
    }
    if (!rc) rc = crt_open_buckets(rt, dir, tag, st);
    /* float mode computes in floats: the cache holds them; else the codes of the K/V outputs */
    pdq_kv_grid *grid = rc ? NULL : calloc((size_t)(2 * L) + 1, sizeof *grid);
    if (!rc && !grid) rc = pdq_fail(st, PDQ_ERR_NOMEM, "circle runtime");
    for (int l = 0; l < L && !rc; l++) {
        grid[2 * l] = pdq_kv_grid_of(rt->eo.mode == PDQ_EXEC_FLOAT ? NULL : rt->kt[l]);
        grid[2 * l + 1] = pdq_kv_grid_of(rt->eo.mode == PDQ_EXEC_FLOAT ? NULL : rt->vt[l]);
    }
    if (!rc) {
        pdq_kv_free(&rt->kv);
        rc = pdq_kv_init(&rt->kv, L, 1, rt->KV, rt->C, rt->hd, grid, ring, st);
    }
    free(grid);
    if (rc) { pdq_crt_free(rt); return pdq_wrap(st, "circle runtime on %s", dir); }
    *out = rt;
    return PDQ_OK;
}

int pdq_crt_max_seq(const pdq_crt *rt) { return rt->S; }
int pdq_crt_vocab(const pdq_crt *rt) { return rt->V; }
int pdq_crt_len(const pdq_crt *rt) { return rt->len; }

pdq_code pdq_crt_rewind(pdq_crt *rt, int len, pdq_status *st) {
    if (len < 0 || len > rt->len)
        return pdq_fail(st, PDQ_ERR_ARG, "circle rewind: the cache holds %d tokens, cannot rewind to %d", rt->len, len);
    if (!pdq_ctr_rewind_exact(rt->ring, rt->len, len))
        return pdq_fail(st, PDQ_ERR_UNSUPPORTED,
                        "circle rewind: from %d to %d tokens: the sliding layers' rings of %d slots were overwritten "
                        "past position %d (prefill again)", rt->len, len, rt->ring, len);
    rt->len = len;
    return PDQ_OK;
}

size_t pdq_crt_kv_bytes(const pdq_crt *rt) { return pdq_kv_bytes(&rt->kv); }

size_t pdq_crt_decode_weight_bytes(const pdq_crt *rt) {
    if (rt->whole) return pdq_cg_weight_bytes(rt->decode);
    size_t n = pdq_cg_weight_bytes(rt->embed) + pdq_cg_weight_bytes(rt->head);
    for (int l = 0; l < rt->L; l++) n += pdq_cg_weight_bytes(rt->ld[l]);
    return n;
}

/* Prefill masks / cos / sin for n real tokens at positions 0..n-1 (the rest padding): mask (full
 * layers') and rmask (sliding layers', with the window) when not NULL. */
static void prefill_inputs(const pdq_crt *rt, int n, float *mask, float *rmask, const pdq_ctr_rope *rows) {
    int S = rt->S, rd = rt->rd;
    for (int i = 0; i < S; i++) {
        rt->pos[i] = i < n ? i : -1;
        pdq_ctr_rope_rows(&rt->tab, rd, rt->pos[i], rows, (size_t)i);
    }
    if (mask) pdq_ctr_prefill_mask(rt->pos, S, 0, rt->fill, mask);
    if (rmask) pdq_ctr_prefill_mask(rt->pos, S, rt->window, rt->fill, rmask);
}

/* Inputs of an append of Q tokens at length len (decode: Q = 1; the in-memory runtime's rt_append
 * rows): in mask (full layers', when not NULL) query q sees cache slots 0..len-1 and the new
 * columns P..P+q (P = max_seq - Q); in rmask (sliding layers') the ring slots and new columns of
 * its window (pdq_ctr_ring_mask_row). */
static void append_inputs(const pdq_crt *rt, int Q, float *mask, float *rmask, const pdq_ctr_rope *rows) {
    int S = rt->S, rd = rt->rd;
    for (int q = 0; q < Q; q++) {
        if (mask) pdq_ctr_append_mask_row(S, Q, rt->len, q, 1, 0, rt->fill, mask + (size_t)q * S);
        if (rmask)
            pdq_ctr_ring_mask_row(rt->ring, rt->window, Q, rt->len, q, 1, rt->fill, rmask + (size_t)q * (rt->ring + Q));
        pdq_ctr_rope_rows(&rt->tab, rd, rt->len + q, rows, (size_t)q);
    }
}

/* Past inputs of layer l of a Q-token graph g (K at in_k, V at in_k + 1): the first max_seq - Q
 * cache slots (decode: all C), or the whole ring of a sliding layer. In integer mode the codes go in as they are when the input has the
 * cache's grid (it does: the KV cache has one grid per layer and K/V). */
static void past_inputs(const pdq_crt *rt, pdq_cgraph *g, int l, int in_k, int Q) {
    for (int w = 0; w < 2; w++) {
        int in = in_k + w;
        void *codes = pdq_cg_mode(g) == PDQ_EXEC_INT && pdq_kv_same_grid(&rt->kv, l, w, pdq_cg_input_tensor(g, in))
                          ? pdq_cg_input_codes(g, in)
                          : NULL;
        if (codes) pdq_kv_past_codes(&rt->kv, l, w, past_of(rt, l, Q), codes);
        else pdq_kv_past(&rt->kv, l, w, past_of(rt, l, Q), pdq_cg_input(g, in));
    }
}

/* The graphs of one step kind: the whole-model file, or the per-layer files (with the shared
 * token_embedding and lm_head). */
typedef struct {
    int prefill;          /* from length 0, T = max_seq rows (n real, right padding) */
    int T;                /* graph rows: max_seq (prefill) or Q (append; decode: 1) */
    pdq_cgraph *whole;
    pdq_cgraph **layers;
} crt_step;

static void fill_ids(int32_t *dst, int T, const int32_t *ids, int n) {
    for (int i = 0; i < T; i++) dst[i] = i < n ? ids[i] : 0;
}

typedef struct {
    pdq_crt *rt;
    const crt_step *k;
    int n;
} layer_ctx;

/* Layer l's file of a step on hidden rows h: the file's own input buffers get h, the contract's
 * mask / RoPE rows and, but for prefill, the past K/V from the cache. */
static pdq_code run_layer(void *vc, int l, const float *h, const float **h_out, const float **kd, const float **vd,
                          pdq_status *st) {
    const layer_ctx *c = vc;
    pdq_crt *rt = c->rt;
    const crt_step *k = c->k;
    pdq_cgraph *g = k->layers[l];
    memcpy(pdq_cg_input(g, PDQ_PF_IN_HIDDEN), h, sizeof(float) * (size_t)k->T * rt->D);
    int ring = rt->kv.ring[l], ci = k->prefill ? PDQ_PF_IN_COS : PDQ_AP_IN_COS;
    /* the layer's own cos/sin inputs take its table's rows */
    float *cos = pdq_cg_input(g, ci), *sin = pdq_cg_input(g, ci + 1);
    pdq_ctr_rope rows = {cos, sin, NULL, NULL};
    if (rt->local[l]) rows = (pdq_ctr_rope){NULL, NULL, cos, sin};
    if (k->prefill) {
        float *m = pdq_cg_input(g, PDQ_PF_IN_MASK);
        prefill_inputs(rt, c->n, ring ? NULL : m, ring ? m : NULL, &rows);
    } else {
        float *m = pdq_cg_input(g, PDQ_AP_IN_MASK);
        append_inputs(rt, k->T, ring ? NULL : m, ring ? m : NULL, &rows);
        past_inputs(rt, g, l, PDQ_AP_IN_PAST_K, k->T);
    }
    pdq_code rc = pdq_cg_run(g, st);
    *h_out = pdq_cg_output(g, PDQ_L_OUT_HIDDEN);
    *kd = pdq_cg_output(g, PDQ_L_OUT_K);
    *vd = pdq_cg_output(g, PDQ_L_OUT_V);
    return rc;
}

/* One step of the Circle runtime, every step kind and both file layouts: n tokens (n = T unless
 * prefill) at cache length len: ids in, the contract's masks / RoPE rows / past K/V, each layer's
 * K/V delta into the cache slots of their positions (the per-layer files through the contract's
 * layer loop, pdq_ctr_run_layers); logits of rows 0..n-1 into rows (may be NULL), of row n-1 into
 * last (may be NULL). */
static pdq_code run_step(pdq_crt *rt, const crt_step *k, const int32_t *ids, int n, float *rows, float *last,
                         pdq_status *st) {
    int T = k->T, D = rt->D, V = rt->V;
    pdq_code rc;
    if (k->prefill) rt->len = 0;
    for (int t = 0; t < T; t++) rt->slot[t] = t < n ? rt->len + t : -1;
    if (rt->whole) {
        pdq_cgraph *g = k->whole;
        const pdq_ctr_whole_io *io = &rt->io;
        float *mask = io->mask_full >= 0 ? pdq_cg_input(g, io->mask_full) : NULL;
        float *rmask = io->mask_ring >= 0 ? pdq_cg_input(g, io->mask_ring) : NULL;
        fill_ids(pdq_cg_input(g, io->ids), T, ids, n);
        pdq_ctr_rope rope = {pdq_cg_input(g, io->cos), pdq_cg_input(g, io->sin),
                             io->cos_local >= 0 ? pdq_cg_input(g, io->cos_local) : NULL,
                             io->sin_local >= 0 ? pdq_cg_input(g, io->sin_local) : NULL};
        if (k->prefill) prefill_inputs(rt, n, mask, rmask, &rope);
        else append_inputs(rt, T, mask, rmask, &rope);
        for (int l = 0; l < rt->L && !k->prefill; l++) past_inputs(rt, g, l, io->past + 2 * l, T);
        if ((rc = pdq_cg_run(g, st)) != PDQ_OK) return rc;
        const float *lg = pdq_cg_output(g, 0);
        if (rows) memcpy(rows, lg, sizeof(float) * (size_t)n * V);
        if (last) memcpy(last, lg + (size_t)(n - 1) * V, sizeof(float) * (size_t)V);
        for (int l = 0; l < rt->L; l++) pdq_kv_store(&rt->kv, l, pdq_cg_output(g, 1 + 2 * l), pdq_cg_output(g, 2 + 2 * l), T, rt->slot);
    } else {
        fill_ids(pdq_cg_input(rt->embed, 0), rt->S, ids, n);
        if ((rc = pdq_cg_run(rt->embed, st)) != PDQ_OK) return rc;
        const float *h = pdq_cg_output(rt->embed, 0); /* rows 0..T-1 */
        layer_ctx c = {rt, k, n};
        if ((rc = pdq_ctr_run_layers(&rt->kv, T, rt->slot, run_layer, &c, h, &h, st)) != PDQ_OK) return rc;
        /* lm_head takes one row: every requested row runs it once */
        for (int i = rows ? 0 : n - 1; i < n; i++) {
            memcpy(pdq_cg_input(rt->head, 0), h + (size_t)i * D, sizeof(float) * (size_t)D);
            if ((rc = pdq_cg_run(rt->head, st)) != PDQ_OK) return rc;
            if (rows) memcpy(rows + (size_t)i * V, pdq_cg_output(rt->head, 0), sizeof(float) * (size_t)V);
        }
        if (last) memcpy(last, pdq_cg_output(rt->head, 0), sizeof(float) * (size_t)V);
    }
    rt->len += n;
    return PDQ_OK;
}

/* logits: the last token's (may be NULL); all: rows 0..n-1 (may be NULL). */
static pdq_code prefill(pdq_crt *rt, const int32_t *ids, int n, float *logits, float *all, pdq_status *st) {
    int S = rt->S, V = rt->V;
    if (n < 1 || n > S) return pdq_fail(st, PDQ_ERR_LIMIT, "circle prefill: %d tokens, need 1..max_seq %d", n, S);
    for (int i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= V) return pdq_fail(st, PDQ_ERR_ARG, "circle prefill: token id %d out of range", ids[i]);
    crt_step k = {1, S, rt->prefill, rt->lp};
    return run_step(rt, &k, ids, n, all, logits, st);
}

pdq_code pdq_crt_prefill(pdq_crt *rt, const int32_t *ids, int n, float *logits, pdq_status *st) {
    return prefill(rt, ids, n, logits, NULL, st);
}

pdq_code pdq_crt_prefill_all(pdq_crt *rt, const int32_t *ids, int n, float *all_logits, pdq_status *st) {
    return prefill(rt, ids, n, NULL, all_logits, st);
}

pdq_code pdq_crt_window_logits(void *ctx, const int32_t *ids, int T, float *logits, pdq_status *st) {
    return prefill(ctx, ids, T, NULL, logits, st);
}

const void *pdq_crt_cache(const pdq_crt *rt, int layer, int which, const pdq_tensor **t) {
    if (layer < 0 || layer >= rt->L || which < 0 || which > 1) return NULL;
    if (t) *t = which ? rt->vt[layer] : rt->kt[layer];
    return pdq_kv_data(&rt->kv, layer, which);
}

pdq_code pdq_crt_decode(pdq_crt *rt, int32_t id, float *logits, pdq_status *st) {
    if (rt->len < 1) return pdq_fail(st, PDQ_ERR_ARG, "circle decode: no prompt (prefill first)");
    if (rt->len >= rt->S) return pdq_fail(st, PDQ_ERR_LIMIT, "circle decode: cache full: %d tokens (max_seq %d)", rt->len, rt->S);
    if (id < 0 || id >= rt->V) return pdq_fail(st, PDQ_ERR_ARG, "circle decode: token id %d out of range", id);
    crt_step k = {0, 1, rt->decode, rt->ld};
    return run_step(rt, &k, &id, 1, NULL, logits, st);
}

/* ---------------- append-prefill buckets ---------------- */

/* manifest "append_buckets" (absent: decode only). */
static pdq_code crt_read_buckets(pdq_crt *rt, const cJSON *root, const char *path, pdq_status *st) {
    rt->nb = 1;
    rt->bq[0] = 1;
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(root, "append_buckets"), *x;
    if (b && !cJSON_IsArray(b)) return pdq_fail(st, PDQ_ERR_FORMAT, "circle runtime: %s: append_buckets is not a list", path);
    cJSON_ArrayForEach(x, b) {
        int q = cJSON_IsNumber(x) ? x->valueint : 0;
        if (q < 1 || q >= rt->S || q <= rt->bq[rt->nb - 1]) {
            if (q == 1 && rt->nb == 1) continue;
            return pdq_fail(st, PDQ_ERR_FORMAT, "circle runtime: %s: append bucket %d (need ascending values in [1, max_seq-1 = %d])",
                            path, q, rt->S - 1);
        }
        if (rt->nb > PDQ_MAX_BUCKETS) return pdq_fail(st, PDQ_ERR_LIMIT, "circle runtime: %s: too many append buckets", path);
        rt->bq[rt->nb++] = q;
    }
    return PDQ_OK;
}

static pdq_code crt_open_buckets(pdq_crt *rt, const char *dir, const char *tag, pdq_status *st) {
    char base[128];
    pdq_code rc = PDQ_OK;
    for (int b = 1; b < rt->nb && !rc; b++) {
        int Q = rt->bq[b];
        if (rt->whole) {
            snprintf(base, sizeof base, "model_append_prefill_q%d", Q);
            rc = open_file(rt, dir, base, tag, rt->prefill, &rt->wa[b], st);
            if (!rc) rc = check_io_q(rt, rt->wa[b], base, 1, Q, -1, st);
            continue;
        }
        if (!(rt->la[b] = calloc((size_t)rt->L, sizeof(pdq_cgraph *)))) return pdq_fail(st, PDQ_ERR_NOMEM, "circle runtime");
        for (int l = 0; l < rt->L && !rc; l++) {
            snprintf(base, sizeof base, "decoder_layer_append_prefill_q%d_%d", Q, l);
            rc = open_file(rt, dir, base, tag, rt->lp[l], &rt->la[b][l], st);
            if (!rc) rc = check_io_q(rt, rt->la[b][l], base, 3, Q, l, st);
        }
    }
    return rc;
}

int pdq_crt_buckets(const pdq_crt *rt, const int **buckets) {
    if (buckets) *buckets = rt->bq;
    return rt->nb;
}

int pdq_crt_plan(const pdq_crt *rt, int n, int *plan, int cap) {
    return pdq_buckets_plan(rt->bq, rt->nb, rt->len, n, rt->S, plan, cap);
}

/* One bucket b (Q > 1) of Q tokens; logits of its rows into rows (Q x V) when not NULL, else only the last. */
static pdq_code append_bucket(pdq_crt *rt, int b, const int32_t *ids, float *rows, float *last, pdq_status *st) {
    crt_step k = {0, rt->bq[b], rt->wa[b], rt->la[b]};
    return run_step(rt, &k, ids, rt->bq[b], rows, last, st);
}

pdq_code pdq_crt_append(pdq_crt *rt, const int32_t *ids, int n, float *logits, float *all_logits, pdq_status *st) {
    int V = rt->V;
    if (n < 1) return pdq_fail(st, PDQ_ERR_ARG, "circle append: no tokens");
    for (int i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= V) return pdq_fail(st, PDQ_ERR_ARG, "circle append: token id %d out of range", ids[i]);
    if (rt->len + n > rt->S)
        return pdq_fail(st, PDQ_ERR_LIMIT, "circle append: %d tokens after %d exceed max_seq %d", n, rt->len, rt->S);
    int *plan = malloc(sizeof(int) * (size_t)n);
    float *last = malloc(sizeof(float) * (size_t)V);
    int k = plan ? pdq_crt_plan(rt, n, plan, n) : -1;
    if (!plan || !last || k < 0) {
        free(plan);
        free(last);
        if (k < 0 && plan && last) return pdq_fail(st, PDQ_ERR_LIMIT, "circle append: no bucket plan for %d tokens at length %d", n, rt->len);
        return pdq_fail(st, PDQ_ERR_NOMEM, "circle append");
    }
    pdq_code rc = PDQ_OK;
    int done = 0;
    for (int c = 0; c < k && rc == PDQ_OK; c++) {
        int Q = plan[c], b = 0;
        while (rt->bq[b] != Q) b++;
        float *rows = all_logits ? all_logits + (size_t)done * V : NULL;
        if (Q == 1 && rt->len == 0) { /* decode needs a prompt: a 1-token prefill is the same step */
            rc = pdq_crt_prefill(rt, ids + done, 1, last, st);
            if (rows && rc == PDQ_OK) memcpy(rows, last, sizeof(float) * (size_t)V);
        } else if (Q == 1) {
            rc = pdq_crt_decode(rt, ids[done], last, st);
            if (rows && rc == PDQ_OK) memcpy(rows, last, sizeof(float) * (size_t)V);
        } else {
            rc = append_bucket(rt, b, ids + done, rows, last, st);
        }
        done += Q;
    }
    if (rc == PDQ_OK && logits) memcpy(logits, last, sizeof(float) * (size_t)V);
    free(last);
    free(plan);
    return rc;
}
