/* Quantized export: annotates a float graph with the file dtypes and qparams.
 *   activations: the PTQ group grid of the edge (int16 symmetric zp 0, or uint8), scale stored as
 *                float32;
 *   linear / embedding / lm_head weights: the checkpoint's codes (UINT4 when bits <= 4, else
 *                UINT8), per-channel scale/zero on dimension 0, or per group of columns
 *                (pdq_qparams.block; in a Circle file a BlockwiseQuantization);
 *   norm weights: int16 per channel, code +-32767, scale searched (a few ulps) so that the file
 *                dequantizes to exactly the in-memory (fake-quantized) value.
 * The k_proj weight with scale fusion is (code - zero) * fl(scale / sqrt(hd)) in memory too (the
 * model keeps k_proj's row scales, pdq_layer.wk_scale), so its stored scale reproduces it exactly.
 * A weight no float32 scale reproduces is an error: file and memory would compute other numbers. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ptq/lower_quant.h"
#include "ptq/ptq_internal.h"
#include "pdq/family.h"
#include "pdq/file.h"
#include "pdq/quant.h"
#include "pdq/safetensors.h"
#include "io/qgrid.h"
#include "io/quant_json_check.h"

/* One weight as the graphs hold it, made once per checkpoint and shared: the prefill, decode and
 * append graphs (in memory and in every exported file) quantize the same in-memory weight. The
 * memo and each graph that borrows the codes hold a reference (pdq_graph_hold), so graphs may
 * outlive the pdq_qweights. */
typedef struct {
    int refs;
    char *mod;
    const void *src;     /* the in-memory weight it was made from (borrowed by the graphs) */
    void *codes;         /* uint4 packed as the graph holds it (pdq_pack4's layout), or uint8 */
    pdq_tdtype dt;
    float *scale;        /* [rows * ngroups] */
    int64_t *zero;       /* [rows * ngroups] */
    int rows, ngroups;
    int group;           /* columns per group; 0: per channel (ngroups 1) */
} qw_block;

static void block_release(void *v) {
    qw_block *b = v;
    if (!b || --b->refs > 0) return;
    free(b->mod);
    free(b->codes);
    free(b->scale);
    free(b->zero);
    free(b);
}

struct pdq_qweights {
    pdq_safetensors *s;
    cJSON *desc;     /* pdq_quant.json "tensors" */
    cJSON *root;
    long inexact;    /* rows whose scale could not reproduce the in-memory weight exactly */
    char tied_embed[256]; /* a tied checkpoint's embedding module, whose entry lm_head uses; "" untied */
    qw_block **memo;
    int n_memo, cap_memo;
};

void pdq_qweights_free(pdq_qweights *w) {
    if (!w) return;
    if (w->s) pdq_st_close(w->s);
    cJSON_Delete(w->root);
    for (int i = 0; i < w->n_memo; i++) block_release(w->memo[i]);
    free(w->memo);
    free(w);
}

long pdq_qweights_inexact(const pdq_qweights *w) { return w ? w->inexact : 0; }

pdq_code pdq_qweights_open(const char *dir, pdq_qweights **out, pdq_status *st) {
    char path[4096];
    snprintf(path, sizeof path, "%s/pdq_quant.json", dir);
    char *txt;
    if (pdq_file_read(path, PDQ_FILE_MAX_JSON, &txt, NULL, st)) return pdq_wrap(st, "quantized export");
    pdq_qweights *w = calloc(1, sizeof *w);
    if (!w) { free(txt); return pdq_fail(st, PDQ_ERR_NOMEM, "quantized export"); }
    w->root = cJSON_Parse(txt);
    free(txt);
    if (!w->root) { pdq_qweights_free(w); return pdq_fail(st, PDQ_ERR_FORMAT, "%s: not valid JSON", path); }
    if (pdq_quant_doc_check(w->root, path, st)) { pdq_qweights_free(w); return st ? st->code : PDQ_ERR_FORMAT; }
    w->desc = w->root ? cJSON_GetObjectItemCaseSensitive(w->root, "tensors") : NULL;
    if (!cJSON_IsObject(w->desc)) { pdq_qweights_free(w); return pdq_fail(st, PDQ_ERR_FORMAT, "%s: no tensors", path); }
    /* a tied checkpoint lists the embedding only: lm_head is the same matrix, so it takes the
     * embedding's codes and row scales (the in-memory lm_head is that dequantized embedding) */
    pdq_config cfg;
    if (pdq_config_load(dir, &cfg, st)) { pdq_qweights_free(w); return pdq_wrap(st, "quantized export"); }
    if (cfg.tie_word_embeddings) pdq_family_role_module(&cfg, PDQ_ROLE_EMBED, -1, w->tied_embed, sizeof w->tied_embed);
    snprintf(path, sizeof path, "%s/model.q.safetensors", dir);
    pdq_code rc = pdq_st_open(path, &w->s, st);
    if (rc) { pdq_qweights_free(w); return rc; }
    *out = w;
    return PDQ_OK;
}

static void free_q(pdq_qparams *q) {
    if (q) { free(q->scale); free(q->zero_point); free(q); }
}

static pdq_qparams *new_q(int n, pdq_status *st) {
    pdq_qparams *q = calloc(1, sizeof *q);
    if (q) {
        q->scale = calloc((size_t)n, sizeof(float));
        q->zero_point = calloc((size_t)n, sizeof(int64_t));
    }
    if (!q || !q->scale || !q->zero_point) {
        free_q(q);
        pdq_fail(st, PDQ_ERR_NOMEM, "quantized export: qparams");
        return NULL;
    }
    q->n = n;
    return q;
}

static void set_q(pdq_tensor *t, pdq_qparams *q) {
    free_q(t->q);
    t->q = q;
}

static float deq(float s, int64_t k) { return (float)((double)k * (double)s); }

/* A float s' near s0 with deq(s', k) == want[k] for every k in ks; returns 1 if found. */
static int search_scale(float s0, const int64_t *ks, const float *want, int n, float *out) {
    float lo = s0, hi = s0;
    for (int step = 0; step <= 64; step++) {
        for (int side = 0; side < 2; side++) {
            float s = side ? hi : lo;
            int ok = 1;
            for (int i = 0; ok && i < n; i++) ok = deq(s, ks[i]) == want[i];
            if (ok) { *out = s; return 1; }
        }
        lo = nextafterf(lo, 0.0f);
        hi = nextafterf(hi, INFINITY);
    }
    *out = s0;
    return 0;
}

/* The codes of one weight from the checkpoint with per-row (or per-group) scales that reproduce
 * the in-memory weight t exactly, row by row (a row of codes at a time: no unpacked copy of the
 * matrix). Groups must be the checkpoint's plain ones (column c in group c / group): act-order
 * groups (GPTQ g_idx) would need the kernels to gather columns. */
static pdq_code make_block(pdq_qweights *w, const pdq_tensor *t, const char *mod, const cJSON *e, int bits, int group,
                           qw_block **out, pdq_status *st) {
    int packed = bits <= 4;
    int rows = t->shape[0], cols = t->shape[1];
    int G = group > 0 && group < cols ? group : cols, ng = (cols + G - 1) / G;
    char nm[300];
    snprintf(nm, sizeof nm, "%s.qweight", mod);
    const pdq_st_tensor *tq = pdq_st_find(w->s, nm);
    if (!tq) return pdq_fail(st, PDQ_ERR_MISSING, "quantized export: codes of %s missing", mod);
    if (tq->nbytes != (size_t)rows * (packed ? (size_t)(cols + 1) / 2 : (size_t)cols))
        return pdq_fail(st, PDQ_ERR_FORMAT, "quantized export: %s: codes are not [%d, %d]", mod, rows,
                        packed ? (cols + 1) / 2 : cols);
    pdq_qgrid_view gv; /* scales of the stored type (widened exactly), zero points stored or implied */
    if (pdq_qgrid_open(w->s, e, mod, rows, ng, bits, "quantized export", &gv, st)) return st ? st->code : PDQ_ERR_FORMAT;
    if (ng > 1) {
        snprintf(nm, sizeof nm, "%s.g_idx", mod);
        const pdq_st_tensor *tg = pdq_st_find(w->s, nm);
        if (tg && tg->nbytes != sizeof(int32_t) * (size_t)cols)
            return pdq_fail(st, PDQ_ERR_FORMAT, "quantized export: %s: g_idx is not [%d]", mod, cols);
        int32_t *gi = tg ? malloc(tg->nbytes) : NULL;
        if (tg && !gi) return pdq_fail(st, PDQ_ERR_NOMEM, "%s", mod);
        if (gi) memcpy(gi, tg->data, tg->nbytes); /* mmapped data may be unaligned */
        int contiguous = !gi || pdq_gidx_group(gi, cols, ng) == G;
        free(gi);
        if (!contiguous)
            return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "quantized export: %s: g_idx does not put column c in group c / %d "
                            "(act-order groups; integer graphs take contiguous groups only)", mod, G);
    }
    size_t qc = packed ? (size_t)(cols + 1) / 2 : (size_t)cols, n = (size_t)rows * cols;
    qw_block *bk = calloc(1, sizeof *bk);
    uint8_t *row = malloc((size_t)cols);
    if (bk) {
        bk->refs = 1;
        bk->mod = strdup(mod);
        bk->src = t->data;
        bk->dt = packed ? PDQ_TU4 : PDQ_TU8;
        bk->rows = rows;
        bk->ngroups = ng;
        bk->group = ng > 1 ? G : 0;
        bk->codes = malloc(packed ? n / 2 + 1 : n);
        bk->scale = malloc(sizeof(float) * (size_t)rows * ng);
        bk->zero = malloc(sizeof(int64_t) * (size_t)rows * ng);
    }
    if (!bk || !row || !bk->mod || !bk->codes || !bk->scale || !bk->zero) {
        block_release(bk);
        free(row);
        return pdq_fail(st, PDQ_ERR_NOMEM, "%s", mod);
    }
    const float *wf = t->data; /* the in-memory weight (scaled k_proj included) */
    int64_t ks[16];
    float want[16];
    for (int r = 0; r < rows; r++) {
        const uint8_t *src = (const uint8_t *)tq->data + (size_t)r * qc;
        const float *wr = wf + (size_t)r * cols;
        if (packed) pdq_unpack4(src, (size_t)cols, row);
        else memcpy(row, src, (size_t)cols);
        for (int g = 0; g < ng; g++) {
            int c0 = g * G, c1 = c0 + G < cols ? c0 + G : cols;
            size_t gi = (size_t)r * ng + g;
            float sc = pdq_qgrid_scale(&gv, gi);
            uint8_t z = (uint8_t)pdq_qgrid_zero(&gv, gi);
            bk->zero[gi] = z;
            /* up to 16 distinct (code - zero) of the group and the weights they must dequantize to
             * (seen[] by code: one pass over the group, not one per distinct value) */
            int k = 0;
            unsigned char seen[256] = {0};
            for (int c = c0; c < c1 && k < 16; c++)
                if (!seen[row[c]]) {
                    seen[row[c]] = 1;
                    ks[k] = (int64_t)row[c] - z;
                    want[k] = wr[c];
                    k++;
                }
            float s0 = sc;
            if (k > 0) {
                for (int i = 0; i < k; i++)
                    if (ks[i]) { s0 = (float)((double)want[i] / (double)ks[i]); break; }
                int ok = search_scale(s0, ks, want, k, &s0);
                /* the search saw at most 16 distinct codes: the whole group must reproduce */
                for (int c = c0; ok && c < c1; c++) ok = deq(s0, (int64_t)row[c] - z) == wr[c];
                if (!ok) {
                    w->inexact++;
                    block_release(bk);
                    free(row);
                    return pdq_fail(st, PDQ_ERR_NUMERIC, "quantized export: %s row %d group %d: no float32 scale makes "
                                    "(code - zero) * scale equal the in-memory weight, the file would compute other "
                                    "numbers (a k_proj scale fold on a quantized weight needs the model's per-row k scales)",
                                    mod, r, g);
                }
            }
            bk->scale[gi] = s0;
        }
        /* the graph's layout: the flattened codes (uint4 two a byte from element r * cols on) */
        if (packed) pdq_pack4_at(row, (size_t)cols, bk->codes, (size_t)r * cols);
        else memcpy((uint8_t *)bk->codes + (size_t)r * cols, row, (size_t)cols);
    }
    free(row);
    *out = bk;
    return PDQ_OK;
}

/* One weight constant from the checkpoint: the codes into the tensor (borrowed from the shared
 * block, which g holds), per-row qparams. */
static pdq_code quant_weight(pdq_graph *g, pdq_qweights *w, pdq_tensor *t, const char *mod, const cJSON *e,
                             pdq_status *st) {
    int bits = cJSON_GetObjectItemCaseSensitive(e, "bits")->valueint;
    int group = cJSON_GetObjectItemCaseSensitive(e, "group")->valueint;
    /* a weight the graph borrows (the model's) is the same for every graph: made once; a graph's
     * own copy may be freed and another allocated in its place, so it is made each time */
    qw_block *bk = NULL;
    for (int i = 0; !t->owned && i < w->n_memo && !bk; i++)
        if (w->memo[i]->src == t->data && !strcmp(w->memo[i]->mod, mod)) bk = w->memo[i];
    pdq_code rc;
    if (!bk) {
        if ((rc = make_block(w, t, mod, e, bits, group, &bk, st))) return rc;
        if (!t->owned) {
            if (w->n_memo == w->cap_memo) {
                int cap = w->cap_memo ? 2 * w->cap_memo : 64;
                qw_block **m = realloc(w->memo, sizeof *m * (size_t)cap);
                if (!m) {
                    block_release(bk);
                    return pdq_fail(st, PDQ_ERR_NOMEM, "%s", mod);
                }
                w->memo = m;
                w->cap_memo = cap;
            }
            w->memo[w->n_memo++] = bk;
            bk->refs++;
        }
    } else {
        bk->refs++;
    }
    pdq_qparams *q = new_q(bk->rows * bk->ngroups, st);
    if (!q || (rc = pdq_graph_hold(g, bk, block_release, st))) { /* the hold releases bk on failure */
        if (!q) block_release(bk);
        free_q(q);
        return st ? st->code : PDQ_ERR_NOMEM;
    }
    memcpy(q->scale, bk->scale, sizeof(float) * (size_t)q->n);
    memcpy(q->zero_point, bk->zero, sizeof(int64_t) * (size_t)q->n);
    q->quantized_dim = 0;
    q->block = bk->group;
    if (t->owned) free(t->data);
    t->data = bk->codes;
    t->owned = 0;
    t->dtype = bk->dt;
    set_q(t, q);
    return PDQ_OK;
}

/* Norm gamma: int16 per channel, code +-32767 (0 for 0), scale reproducing the value exactly. */
static pdq_code quant_norm(pdq_qweights *w, pdq_tensor *t, pdq_status *st) {
    int n = t->shape[0];
    int16_t *codes = malloc(sizeof(int16_t) * (size_t)n);
    pdq_qparams *q = new_q(n, st);
    if (!codes || !q) { free(codes); return pdq_fail(st, PDQ_ERR_NOMEM, "%s", t->name); }
    const float *g = t->data;
    for (int i = 0; i < n; i++) {
        int64_t k = g[i] > 0 ? 32767 : g[i] < 0 ? -32767 : 0;
        codes[i] = (int16_t)k;
        float s = k ? (float)((double)g[i] / (double)k) : 1.0f;
        if (k && !search_scale(s, &k, &g[i], 1, &s)) {
            w->inexact++;
            free(codes);
            free_q(q);
            return pdq_fail(st, PDQ_ERR_NUMERIC, "quantized export: %s[%d]: no float32 scale reproduces the in-memory "
                            "norm weight", t->name, i);
        }
        q->scale[i] = s > 0 ? s : 1.0f;
    }
    if (t->owned) free(t->data);
    t->data = codes;
    t->owned = 1;
    t->dtype = PDQ_TI16;
    set_q(t, q);
    return PDQ_OK;
}


int pdq_qweights_grouped(const pdq_qweights *w) {
    const cJSON *e;
    cJSON_ArrayForEach(e, w->desc) {
        char nm[300];
        snprintf(nm, sizeof nm, "%s.scales", e->string);
        const pdq_st_tensor *t = pdq_st_find(w->s, nm);
        if (t && t->ndim == 2 && t->shape[1] > 1) return 1;
    }
    return 0;
}

int pdq_qweights_min_bits(const pdq_qweights *w) {
    int bits = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, w->desc) {
        const cJSON *b = cJSON_GetObjectItemCaseSensitive(e, "bits");
        if (cJSON_IsNumber(b) && (bits == 0 || b->valueint < bits)) bits = b->valueint;
    }
    return bits;
}

/* The checkpoint entry of a weight constant (by its role: a linear, the embedding, lm_head), or
 * NULL (float weight). The graph builders name it "<module>.weight" after the checkpoint's module;
 * a tied lm_head is the embedding's entry (mod becomes the embedding's module: one shared block). */
static const cJSON *weight_entry(const pdq_qweights *w, const pdq_tensor *t, char *mod, size_t n) {
    int role = t->role - 1;
    size_t len = strlen(t->name);
    if (t->kind != PDQ_TK_CONST || t->dtype != PDQ_TF32 || t->ndim != 2 || len < 7 ||
        !(role == PDQ_ROLE_WEIGHT || role == PDQ_ROLE_EMBED || role == PDQ_ROLE_LM_HEAD))
        return NULL;
    snprintf(mod, n, "%.*s", (int)(len - 7), t->name);
    if (role == PDQ_ROLE_LM_HEAD && w->tied_embed[0] && !cJSON_GetObjectItemCaseSensitive(w->desc, mod))
        snprintf(mod, n, "%s", w->tied_embed);
    return cJSON_GetObjectItemCaseSensitive(w->desc, mod);
}

pdq_code pdq_export_quantize_weights(pdq_graph *g, pdq_qweights *w, pdq_status *st) {
    for (int i = 0; i < g->n_tensors; i++) {
        char mod[256];
        const cJSON *e = weight_entry(w, &g->tensors[i], mod, sizeof mod);
        if (e && quant_weight(g, w, &g->tensors[i], mod, e, st) != PDQ_OK) return pdq_wrap(st, "graph %s", g->name);
    }
    return PDQ_OK;
}

pdq_code pdq_export_quantize_graph(pdq_graph *g, pdq_ptq *p, pdq_qweights *w, pdq_status *st) {
    for (int i = 0; i < g->n_tensors; i++) {
        pdq_tensor *t = &g->tensors[i];
        pdq_code rc = PDQ_OK;
        if (t->kind == PDQ_TK_CONST) {
            if (t->dtype != PDQ_TF32) continue; /* shapes, perms, indices */
            int role = t->role - 1;
            if (role == PDQ_ROLE_ATTN_NORM || role == PDQ_ROLE_FFN_NORM || role == PDQ_ROLE_FINAL_NORM ||
                role == PDQ_ROLE_Q_NORM || role == PDQ_ROLE_K_NORM || role == PDQ_ROLE_POST_ATTN_NORM ||
                role == PDQ_ROLE_POST_FFN_NORM) {
                rc = quant_norm(w, t, st);
            } else {
                char mod[256];
                const cJSON *e = weight_entry(w, t, mod, sizeof mod);
                if (e) rc = quant_weight(g, w, t, mod, e, st);
            }
            if (rc) return pdq_wrap(st, "graph %s", g->name);
            continue;
        }
        if (t->dtype != PDQ_TF32) continue; /* token ids */
        const char *nm = t->name;
        char alias[256];
        if (!strcmp(nm, "attention_mask") || !strcmp(nm, "sliding_attention_mask") || !strcmp(nm, "cos") ||
            !strcmp(nm, "sin") || !strcmp(nm, "cos_local") || !strcmp(nm, "sin_local")) {
            /* shared whole-model inputs; every mask has the fixed grid of [fill, 0], every cos / sin
             * (either table) the fixed grid of both tables' range (ptq/table.c) */
            snprintf(alias, sizeof alias, "%s%s", p->layer0,
                     strstr(nm, "attention_mask") ? "attention_mask" : nm[0] == 'c' ? "cos" : "sin");
            nm = alias;
        }
        int gi = pdq_ptq_find(p, nm);
        if (gi < 0)
            return pdq_fail(st, PDQ_ERR_MISSING, "quantized export: edge %s of graph %s has no activation grid in ptq.json "
                            "(calibrated with other graph options?)", t->name, g->name);
        const pdq_agrid *gr = &pdq_ptq_group_at(p, gi)->grid;
        if (gr->dt == PDQ_ADT_FLOAT) continue;
        if (gr->dt != PDQ_ADT_INT16 && gr->dt != PDQ_ADT_UINT8)
            return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "quantized export: edge %s: %s activations", t->name, pdq_adtype_name(gr->dt));
        pdq_qparams *q = new_q(1, st);
        if (!q) return st->code;
        q->scale[0] = (float)gr->scale;
        q->zero_point[0] = gr->zero_point;
        t->dtype = gr->dt == PDQ_ADT_INT16 ? PDQ_TI16 : PDQ_TU8;
        set_q(t, q);
    }
    return PDQ_OK;
}
