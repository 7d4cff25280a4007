/* The quantized checkpoint: OUTDIR/pdq_quant.json (the scheme and every quantized tensor) and
 * OUTDIR/model.q.safetensors holding, per quantized module NAME:
 *   NAME.qweight  U8 [rows, ceil(cols/2)] two 4-bit codes per byte, low nibble first (bits <= 4),
 *                 or U8 [rows, cols] (bits 5..8); codes in the original column order
 *   NAME.scales   F32 [rows, groups]; with groups the scheme's group scale type instead (F16 by
 *                 default, BF16, or F32: the entry's scale_dtype), the value the quantizer used
 *   NAME.zeros    U8 [rows, groups]; absent for a symmetric grouped tensor (entry zeros: false,
 *                 every zero point 2^(bits-1)): w4 g32 sym is then 4.5 bits a weight
 *   NAME.g_idx    I32 [cols] group of each column (only with groups whose columns are not simply
 *                 column / group, e.g. GPTQ act-order: the entry's g_idx says which)
 * and every other tensor as F32 under its HF name. w = scale * (code - zero). pdq_quant.json
 * records the format version (quant_json_check.h); version 1 checkpoints load as before.
 * Next to it: config/tokenizer copies, and OUTDIR/hf/ with the dequantized weights as an f32 HF
 * checkpoint (config.json + model.safetensors). Both files are streamed tensor by tensor (the
 * dequantized one row by row from the codes), so saving needs no whole model in memory. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pdq/family.h"
#include "pdq/file.h"
#include "pdq/quant.h"
#include "pdq/transform.h"
#include "pdq/safetensors.h"
#include "io/qgrid.h"
#include "model/tensor_list.h"
#include "io/quant_json_check.h"

#define MAXT 1024

typedef struct {
    pdq_st_tensor t[MAXT];
    char *names[MAXT];
    void *owned[MAXT];
    int n;
} tlist;

static void tl_free(tlist *l) {
    for (int i = 0; i < l->n; i++) { free(l->names[i]); free(l->owned[i]); }
    l->n = 0;
}

static pdq_code tl_add(tlist *l, const char *name, const char *suffix, pdq_dtype dt, int ndim, int64_t a, int64_t b,
                       const void *data, void *owned, pdq_status *st) {
    if (l->n == MAXT) { free(owned); return pdq_fail(st, PDQ_ERR_LIMIT, "more than %d tensors", MAXT); }
    size_t len = strlen(name) + strlen(suffix) + 1;
    char *nm = malloc(len);
    if (!nm) { free(owned); return pdq_fail(st, PDQ_ERR_NOMEM, "out of memory"); }
    snprintf(nm, len, "%s%s", name, suffix);
    pdq_st_tensor *t = &l->t[l->n];
    memset(t, 0, sizeof *t);
    t->name = nm;
    t->dtype = dt;
    t->ndim = ndim;
    t->shape[0] = a;
    t->shape[1] = b;
    t->data = data;
    t->nbytes = pdq_dtype_size(dt) * (size_t)a * (ndim > 1 ? (size_t)b : 1);
    l->names[l->n] = nm;
    l->owned[l->n] = owned;
    l->n++;
    return PDQ_OK;
}

/* Every tensor of the model, from the family's role table (model/tensor_list.h): the quantized
 * checkpoint lists each linear on its own (stacked 0), its hf/ copy stacks what the family's
 * checkpoint stacks (Phi-3's qkv_proj, gate_up_proj), so it loads as the source did. */
typedef pdq_tensor_entry mtensor;

static pdq_code model_tensors(const pdq_model *m, int stacked, mtensor **out, int *n, pdq_status *st) {
    return pdq_tensor_list_new(m, PDQ_TORDER_QUANT, stacked, MAXT, out, n, st);
}

static float *piece_data(const pdq_model *m, const mtensor *t, int k, long *rows, long *cols) {
    return pdq_tensor_entry_piece(m, t, k, rows, cols, NULL, 0);
}

/* The quantized module of a tensor: weights only (a bias shares its linear's name). */
static const pdq_qmodule *find_mod(const pdq_qmodel *q, const char *name);
static const pdq_qmodule *mod_of(const pdq_qmodel *q, const pdq_model *m, const mtensor *t, int k) {
    if (strcmp(t->suffix, ".weight") != 0) return NULL;
    if (t->kind != PDQ_ROLE_WEIGHT && t->kind != PDQ_ROLE_FUSED_WEIGHT) return find_mod(q, t->name);
    char nm[160];
    long r, c;
    pdq_tensor_entry_piece(m, t, k, &r, &c, nm, sizeof nm);
    return find_mod(q, nm);
}

/* How a module's grids are stored: grouped ones take the scheme's group scale type, and a
 * symmetric grouped one keeps no zero points (each is 2^(bits-1), checked here). */
static pdq_qscale_type mod_scale_type(const pdq_qmodel *q, const pdq_qmodule *mod) {
    return mod->group > 0 ? q->opts.gptq.scheme.group_scale : PDQ_QSCALE_F32;
}

static int mod_keeps_zeros(const pdq_qmodule *mod) {
    if (mod->group <= 0 || !mod->sym) return 1;
    float mid = (float)((1 << mod->bits) / 2);
    for (size_t i = 0; i < (size_t)mod->r.rows * mod->r.ngroups; i++)
        if (mod->r.zero[i] != mid) return 1;
    return 0;
}

/* 1 when the module's g_idx says more than column / group (act-order groups): only then is it stored. */
static int mod_keeps_gidx(const pdq_qmodule *mod) {
    const pdq_qresult *r = &mod->r;
    return r->g_idx && pdq_gidx_group(r->g_idx, r->cols, r->ngroups) != mod->group;
}

static pdq_dtype scale_dtype(pdq_qscale_type t) {
    return t == PDQ_QSCALE_F16 ? PDQ_DT_F16 : t == PDQ_QSCALE_BF16 ? PDQ_DT_BF16 : PDQ_DT_F32;
}

static const pdq_qmodule *find_mod(const pdq_qmodel *q, const char *name) {
    for (int i = 0; i < q->n; i++)
        if (strcmp(q->mods[i].name, name) == 0) return &q->mods[i];
    return NULL;
}

static pdq_code mkdir_ok(const char *path, pdq_status *st) {
    return pdq_dir_make(path, 0, st);
}

/* Side files go through the atomic file layer (pdq/file.h): a full disk leaves no truncated
 * config.json, tokenizer.json or pdq_quant.json under its final name. */
static pdq_code write_text(const char *path, const char *text, pdq_status *st) {
    return pdq_file_write_text(path, text, 0, NULL, st);
}

static char *slurp(const char *path, size_t *len) {
    char *buf;
    return pdq_file_read(path, PDQ_FILE_MAX_JSON, &buf, len, NULL) ? NULL : buf;
}

static pdq_code copy_file(const char *src, const char *dst, pdq_status *st) {
    return pdq_file_copy(src, dst, PDQ_FILE_MAX_JSON, NULL, st);
}

/* config.json (with torch_dtype float32) and tokenizer files into dir. */
/* config.json as m has it (f32; tied as m is: a transform view may untie a tied source), the
 * tokenizer files copied. */
static pdq_code copy_side_files(const char *src_dir, const char *dir, const pdq_model *m, pdq_status *st) {
    static const char *const files[] = {"tokenizer.json", "tokenizer_config.json", "generation_config.json",
                                        "special_tokens_map.json"};
    char a[4096], b[4096];
    snprintf(a, sizeof a, "%s/config.json", src_dir);
    char *cfg = slurp(a, NULL);
    if (!cfg) return pdq_fail(st, PDQ_ERR_IO, "%s: cannot read", a);
    cJSON *j = cJSON_Parse(cfg);
    free(cfg);
    if (!cJSON_IsObject(j)) { cJSON_Delete(j); return pdq_fail(st, PDQ_ERR_FORMAT, "%s: not a JSON object", a); }
    cJSON_DeleteItemFromObject(j, "torch_dtype");
    cJSON_AddStringToObject(j, "torch_dtype", "float32");
    cJSON_DeleteItemFromObject(j, "tie_word_embeddings");
    cJSON_AddBoolToObject(j, "tie_word_embeddings", m->cfg.tie_word_embeddings);
    char *txt = cJSON_Print(j);
    cJSON_Delete(j);
    if (!txt) return pdq_fail(st, PDQ_ERR_NOMEM, "out of memory");
    snprintf(b, sizeof b, "%s/config.json", dir);
    pdq_code rc = write_text(b, txt, st);
    free(txt);
    for (size_t i = 0; !rc && i < sizeof files / sizeof files[0]; i++) {
        snprintf(a, sizeof a, "%s/%s", src_dir, files[i]);
        if (pdq_path_stat(a, NULL, NULL) == PDQ_PATH_NONE) continue;
        snprintf(b, sizeof b, "%s/%s", dir, files[i]);
        rc = copy_file(a, b, st);
    }
    return rc;
}

static cJSON *scheme_json(const pdq_qmodel *q) {
    const pdq_quant_opts *o = &q->opts;
    const pdq_qscheme *s = &o->gptq.scheme;
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "format", "pdq-quant");
    cJSON_AddNumberToObject(j, "version", PDQ_QUANT_VERSION);
    cJSON_AddStringToObject(j, "method", o->method == PDQ_QM_GPTQ ? "gptq" : "rtn");
    cJSON_AddStringToObject(j, "formula", "w = scale * (code - zero)");
    cJSON_AddNumberToObject(j, "bits", s->bits);
    cJSON_AddNumberToObject(j, "group", s->group);
    cJSON_AddBoolToObject(j, "partial_groups", s->partial_groups);
    cJSON_AddBoolToObject(j, "sym", s->sym);
    cJSON_AddStringToObject(j, "group_scale", pdq_qscale_name(s->group_scale));
    cJSON_AddBoolToObject(j, "per_tensor", s->per_tensor);
    cJSON_AddBoolToObject(j, "mse", s->mse);
    if (s->mse) {
        cJSON_AddNumberToObject(j, "mse_grid", s->grid);
        cJSON_AddNumberToObject(j, "mse_maxshrink", s->maxshrink);
        cJSON_AddNumberToObject(j, "mse_norm", s->norm);
    }
    if (o->method == PDQ_QM_GPTQ) {
        cJSON_AddBoolToObject(j, "actorder", o->gptq.actorder);
        cJSON_AddBoolToObject(j, "static_groups", o->gptq.static_groups);
        cJSON_AddNumberToObject(j, "percdamp", o->gptq.percdamp);
        cJSON_AddNumberToObject(j, "blocksize", o->gptq.blocksize);
        cJSON_AddBoolToObject(j, "ref_groups", o->gptq.ref_groups);
        cJSON_AddBoolToObject(j, "mse_gptq", o->gptq.mse_gptq);
        cJSON_AddBoolToObject(j, "orig_inputs", o->orig_inputs);
        cJSON_AddNumberToObject(j, "nsamples", q->nsamples);
        cJSON_AddNumberToObject(j, "seq_len", q->seq_len);
        cJSON_AddNumberToObject(j, "seed", (double)o->seed);
    }
    cJSON_AddNumberToObject(j, "embed_bits", o->embed_bits);
    cJSON_AddNumberToObject(j, "lm_head_bits", o->lm_head_bits);
    cJSON_AddBoolToObject(j, "lm_head_gptq", o->lm_head_gptq);
    cJSON *ov = cJSON_AddArrayToObject(j, "overrides");
    for (int i = 0; i < o->n_overrides; i++) {
        char b[160];
        snprintf(b, sizeof b, "%s=%d", o->overrides[i].name, o->overrides[i].bits);
        cJSON_AddItemToArray(ov, cJSON_CreateString(b));
    }
    if (o->transforms) cJSON_AddItemToObject(j, "transforms", pdq_transform_json(o->transforms));
    cJSON *t = cJSON_AddObjectToObject(j, "tensors");
    for (int i = 0; i < q->n; i++) {
        const pdq_qmodule *m = &q->mods[i];
        cJSON *e = cJSON_AddObjectToObject(t, m->name);
        cJSON_AddNumberToObject(e, "bits", m->bits);
        cJSON_AddNumberToObject(e, "group", m->group);
        cJSON_AddBoolToObject(e, "sym", m->sym);
        cJSON_AddBoolToObject(e, "packed", m->bits <= 4);
        cJSON_AddBoolToObject(e, "g_idx", mod_keeps_gidx(m));
        cJSON_AddStringToObject(e, "scale_dtype", pdq_qscale_name(mod_scale_type(q, m)));
        cJSON_AddBoolToObject(e, "zeros", mod_keeps_zeros(m));
        cJSON *sh = cJSON_AddArrayToObject(e, "shape");
        cJSON_AddItemToArray(sh, cJSON_CreateNumber(m->r.rows));
        cJSON_AddItemToArray(sh, cJSON_CreateNumber(m->r.cols));
    }
    return j;
}

/* The tensor a lazy m holds for an unquantized linear or table, acquired (through any transform
 * view m has) and released after use: *release 1 the embedding, 2 lm_head, 3 + l layer l. */
static pdq_code lazy_data(pdq_model *m, const mtensor *t, int k, const float **data, int *release, pdq_status *st) {
    long r, c;
    pdq_code rc;
    if (t->kind == PDQ_ROLE_EMBED || t->kind == PDQ_ROLE_LM_HEAD) {
        int embed = t->kind == PDQ_ROLE_EMBED;
        rc = embed ? pdq_model_embed_acquire(m, st) : pdq_model_lm_head_acquire(m, st);
        *data = embed ? m->embed : m->lm_head;
        *release = embed ? 1 : 2;
        return rc;
    }
    int l = t->layer;
    if (l >= 0 && l < m->cfg.n_layers && (t->kind == PDQ_ROLE_WEIGHT || t->kind == PDQ_ROLE_FUSED_WEIGHT)) {
        int held = m->layers[l].w[0] != NULL;
        if ((rc = pdq_model_layer_acquire(m, l, st))) return rc;
        *release = held ? 0 : 3 + l;
        *data = piece_data(m, t, k, &r, &c);
        return PDQ_OK;
    }
    return pdq_fail(st, PDQ_ERR_ARG, "%s: the model holds no weights for it", t->name);
}

static void lazy_release(pdq_model *m, int release) {
    if (release == 1) pdq_model_embed_release(m);
    else if (release == 2) pdq_model_lm_head_release(m);
    else if (release >= 3) pdq_model_layer_release(m, release - 3);
}

/* Piece k of t as float32. */
static pdq_code put_float(pdq_st_writer *w, pdq_model *m, const mtensor *t, int k, pdq_status *st) {
    long rows, cols;
    const float *d = piece_data(m, t, k, &rows, &cols);
    int release = 0;
    pdq_code rc = d ? PDQ_OK
              : m->lazy_src ? lazy_data(m, t, k, &d, &release, st)
                            : pdq_fail(st, PDQ_ERR_ARG, "%s: the model holds no weights for it", t->name);
    if (!rc) rc = pdq_st_writer_put(w, d, sizeof(float) * (size_t)rows * (cols ? (size_t)cols : 1), st);
    lazy_release(m, release);
    return rc;
}

static int64_t qweight_cols(const pdq_qmodule *mod) { return mod->bits <= 4 ? (mod->r.cols + 1) / 2 : mod->r.cols; }

/* The quantized tensors of a module, in file order: qweight, scales, zeros (if kept), g_idx. */
static pdq_code put_module(pdq_st_writer *w, const pdq_qmodel *q, const pdq_qmodule *mod, pdq_status *st) {
    const pdq_qresult *r = &mod->r;
    size_t rows = (size_t)r->rows, cols = (size_t)r->cols, ng = (size_t)r->ngroups;
    if (!mod->qweight) return pdq_fail(st, PDQ_ERR_ARG, "%s: no codes", mod->name);
    pdq_code rc = pdq_st_writer_put(w, mod->qweight, rows * (size_t)qweight_cols(mod), st);
    pdq_qscale_type t = mod_scale_type(q, mod);
    void *sc = rc ? NULL : malloc(rows * ng * pdq_qscale_size(t));
    if (!rc && !sc) rc = pdq_fail(st, PDQ_ERR_NOMEM, "out of memory");
    for (size_t k = 0; !rc && k < rows * ng; k++) pdq_qscale_put(sc, t, k, r->scale[k]); /* exact: already rounded */
    if (!rc) rc = pdq_st_writer_put(w, sc, rows * ng * pdq_qscale_size(t), st);
    free(sc);
    int keep = mod_keeps_zeros(mod);
    uint8_t *z = rc || !keep ? NULL : malloc(rows * ng);
    if (!rc && keep && !z) rc = pdq_fail(st, PDQ_ERR_NOMEM, "out of memory");
    if (!rc && keep) {
        for (size_t k = 0; k < rows * ng; k++) z[k] = (uint8_t)r->zero[k];
        rc = pdq_st_writer_put(w, z, rows * ng, st);
    }
    free(z);
    if (!rc && mod_keeps_gidx(mod)) rc = pdq_st_writer_put(w, r->g_idx, cols * sizeof(int32_t), st);
    return rc;
}

/* The dequantized values of a module, row by row from its codes: scale * (code - zero), the
 * values the quantizer computed. */
static pdq_code put_dequant(pdq_st_writer *w, const pdq_qmodule *mod, pdq_status *st) {
    const pdq_qresult *r = &mod->r;
    int rows = r->rows, cols = r->cols, ng = r->ngroups;
    size_t qc = (size_t)qweight_cols(mod);
    uint8_t *codes = malloc((size_t)cols);
    float *row = malloc((size_t)cols * sizeof(float));
    pdq_code rc = codes && row ? PDQ_OK : pdq_fail(st, PDQ_ERR_NOMEM, "out of memory");
    for (int rr = 0; !rc && rr < rows; rr++) {
        const uint8_t *src = mod->qweight + (size_t)rr * qc;
        if (mod->bits <= 4) pdq_unpack4(src, (size_t)cols, codes);
        else memcpy(codes, src, (size_t)cols);
        for (int c = 0; c < cols; c++) {
            size_t g = (size_t)rr * ng + (size_t)(r->g_idx ? r->g_idx[c] : 0);
            row[c] = r->scale[g] * ((float)codes[c] - r->zero[g]);
        }
        rc = pdq_st_writer_put(w, row, (size_t)cols * sizeof(float), st);
    }
    free(codes);
    free(row);
    return rc;
}

/* Opens a writer for l's tensors (names, dtypes, shapes), then put(i) for every model tensor. */
typedef pdq_code (*put_fn)(pdq_st_writer *w, pdq_model *m, const mtensor *t, const pdq_qmodel *q, pdq_status *st);

static pdq_code stream(const char *path, const tlist *l, const char *meta, pdq_model *m, const mtensor *mt,
                       int nt, const pdq_qmodel *q, put_fn put, pdq_status *st) {
    pdq_st_writer *w;
    pdq_code rc = pdq_st_writer_open(path, l->t, l->n, meta, &w, st);
    for (int i = 0; !rc && i < nt; i++) rc = put(w, m, &mt[i], q, st);
    if (rc) {
        if (w) pdq_st_writer_abort(w);
        return rc;
    }
    return pdq_st_writer_close(w, st);
}

static pdq_code put_q(pdq_st_writer *w, pdq_model *m, const mtensor *t, const pdq_qmodel *q, pdq_status *st) {
    const pdq_qmodule *mod = mod_of(q, m, t, 0);
    return mod ? put_module(w, q, mod, st) : put_float(w, m, t, 0, st);
}

/* A stacked tensor is its linears' rows one after the other, as the family's checkpoint has them. */
static pdq_code put_hf(pdq_st_writer *w, pdq_model *m, const mtensor *t, const pdq_qmodel *q, pdq_status *st) {
    pdq_code rc = PDQ_OK;
    for (int k = 0; !rc && k < pdq_tensor_entry_pieces(t); k++) {
        const pdq_qmodule *mod = mod_of(q, m, t, k);
        rc = mod ? put_dequant(w, mod, st) : put_float(w, m, t, k, st);
    }
    return rc;
}

pdq_code pdq_quant_save(const char *outdir, const char *src_dir, pdq_model *m, const pdq_qmodel *q,
                        pdq_status *st) {
    char path[4096];
    pdq_code rc = mkdir_ok(outdir, st);
    snprintf(path, sizeof path, "%s/hf", outdir);
    if (!rc) rc = mkdir_ok(path, st);
    if (!rc) rc = copy_side_files(src_dir, outdir, m, st);
    if (!rc) rc = copy_side_files(src_dir, path, m, st);
    if (rc) return rc;

    int nt = 0, nh = 0;
    mtensor *mt = NULL, *mh = NULL;
    rc = model_tensors(m, 0, &mt, &nt, st);
    if (!rc) rc = model_tensors(m, 1, &mh, &nh, st);
    tlist *l = rc ? NULL : calloc(1, sizeof *l);
    if (!rc && !l) rc = pdq_fail(st, PDQ_ERR_NOMEM, "out of memory");
    if (rc) {
        free(mt);
        free(mh);
        return rc;
    }
    /* quantized checkpoint: the header lists every tensor, the data follow in the same order */
    for (int i = 0; !rc && i < nt; i++) {
        const pdq_qmodule *mod = mod_of(q, m, &mt[i], 0);
        if (!mod) {
            rc = tl_add(l, mt[i].name, mt[i].suffix, PDQ_DT_F32, mt[i].cols ? 2 : 1, mt[i].rows, mt[i].cols, NULL, NULL, st);
            continue;
        }
        const pdq_qresult *r = &mod->r;
        rc = tl_add(l, mod->name, ".qweight", PDQ_DT_U8, 2, r->rows, qweight_cols(mod), NULL, NULL, st);
        if (!rc) rc = tl_add(l, mod->name, ".scales", scale_dtype(mod_scale_type(q, mod)), 2, r->rows, r->ngroups, NULL,
                             NULL, st);
        if (!rc && mod_keeps_zeros(mod)) rc = tl_add(l, mod->name, ".zeros", PDQ_DT_U8, 2, r->rows, r->ngroups, NULL, NULL, st);
        if (!rc && mod_keeps_gidx(mod)) rc = tl_add(l, mod->name, ".g_idx", PDQ_DT_I32, 1, r->cols, 0, NULL, NULL, st);
    }
    snprintf(path, sizeof path, "%s/model.q.safetensors", outdir);
    if (!rc) rc = stream(path, l, "{\"format\": \"pdq-quant\"}", m, mt, nt, q, put_q, st);
    tl_free(l);
    /* dequantized HF checkpoint */
    for (int i = 0; !rc && i < nh; i++)
        rc = tl_add(l, mh[i].name, mh[i].suffix, PDQ_DT_F32, mh[i].cols ? 2 : 1, mh[i].rows, mh[i].cols, NULL, NULL, st);
    snprintf(path, sizeof path, "%s/hf/model.safetensors", outdir);
    if (!rc) rc = stream(path, l, "{\"format\": \"pt\"}", m, mh, nh, q, put_hf, st);
    tl_free(l);
    free(l);
    free(mt);
    free(mh);
    if (rc) return rc;
    cJSON *j = scheme_json(q);
    char *txt = cJSON_Print(j);
    cJSON_Delete(j);
    if (!txt) return pdq_fail(st, PDQ_ERR_NOMEM, "out of memory");
    snprintf(path, sizeof path, "%s/pdq_quant.json", outdir);
    rc = write_text(path, txt, st);
    free(txt);
    return rc;
}
