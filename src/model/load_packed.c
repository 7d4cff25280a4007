/* Weight-only loading of a pdq quantized checkpoint with the weights kept packed (no
 * dequantization): the codes of every quantized tensor are copied once from the mapped
 * model.q.safetensors into the kernels' 4-row layout where it applies (pdq_qmatrix_pack_rows4:
 * a third faster decode at 2 threads), after which their mapped pages leave the resident set;
 * other matrices use their codes in place. Scales and zero points are copied (they may be
 * unaligned in the file), and the forward runs the packed kernels. A GPTQ act-order checkpoint
 * with groups (g_idx not column / group) has its codes reordered once so that every group is
 * contiguous, with the permutation applied to x by the kernel. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/qmatmul.h"
#include "model/load_roles.h"
#include "model/packed_internal.h"
#include "io/qgrid.h"
#include "io/quant_json_check.h"
#include "pdq/file.h"
#include "pdq/model.h"
#include "pdq/safetensors.h"
#include "pdq/threadpool.h"

struct pdq_packed {
    pdq_safetensors *src;  /* the mapped checkpoint the codes live in */
    pdq_qmatrix *mats;
    int n, cap;
};

void pdq_packed_free(struct pdq_packed *p) {
    if (!p) return;
    for (int i = 0; i < p->n; i++) pdq_qmatrix_free(&p->mats[i]);
    free(p->mats);
    pdq_st_close(p->src);
    free(p);
}

/* Column order that makes every group contiguous: columns sorted by g_idx (stable). NULL perm
 * when g_idx is already column / group; error when a group's size does not fit the layout. */
static pdq_code group_order(const int32_t *gi, int cols, int group, int ng, int32_t **perm, const char *file,
                            const char *name, pdq_status *st) {
    *perm = NULL;
    int seq = 1;
    for (int c = 0; c < cols && seq; c++) seq = gi[c] == c / group;
    if (seq) return PDQ_OK;
    int *count = calloc((size_t)ng + 1, sizeof *count);
    int32_t *p = malloc(sizeof(int32_t) * (size_t)cols);
    if (!count || !p) { free(count); free(p); return pdq_fail(st, PDQ_ERR_NOMEM, "out of memory"); }
    for (int c = 0; c < cols; c++) count[gi[c] + 1]++;
    for (int g = 0; g < ng; g++) {
        int len = cols - g * group < group ? cols - g * group : group;
        if (count[g + 1] != len) {
            int got = count[g + 1];
            free(count);
            free(p);
            return pdq_fail(st, PDQ_ERR_FORMAT, "%s: %s.g_idx puts %d columns in group %d, the packed layout needs %d",
                            file, name, got, g, len);
        }
    }
    for (int g = 0; g < ng; g++) count[g + 1] += count[g];
    for (int c = 0; c < cols; c++) p[count[gi[c]]++] = c;
    free(count);
    *perm = p;
    return PDQ_OK;
}

/* One quantized tensor described by e -> *w, over the mapped codes (or reordered ones), in the
 * 4-row layout when gemv is set (a matrix decode multiplies by; the embedding is only looked up
 * a row at a time, its codes stay mapped and mostly unread). */
static pdq_code load_matrix(const pdq_safetensors *s, const cJSON *e, const char *name, int rows, int cols,
                            const char *file, int gemv, pdq_qmatrix *w, pdq_status *st) {
    const cJSON *jb = cJSON_GetObjectItem(e, "bits"), *jg = cJSON_GetObjectItem(e, "group");
    const cJSON *jsh = cJSON_GetObjectItem(e, "shape");
    if (!cJSON_IsNumber(jb) || !cJSON_IsNumber(jg) || !cJSON_IsArray(jsh) || cJSON_GetArraySize(jsh) != 2)
        return pdq_fail(st, PDQ_ERR_FORMAT, "%s: entry %s needs bits, group and shape", file, name);
    int bits = jb->valueint, group = jg->valueint;
    if (cJSON_GetArrayItem(jsh, 0)->valueint != rows || cJSON_GetArrayItem(jsh, 1)->valueint != cols)
        return pdq_fail(st, PDQ_ERR_SHAPE, "%s: %s has shape [%d, %d] in pdq_quant.json, the config needs [%d, %d]",
                        file, name, cJSON_GetArrayItem(jsh, 0)->valueint, cJSON_GetArrayItem(jsh, 1)->valueint,
                        rows, cols);
    if (bits < 2 || bits > 8 || group < 0)
        return pdq_fail(st, PDQ_ERR_FORMAT, "%s: %s: bad bits %d / group %d", file, name, bits, group);
    int ng = group ? (cols + group - 1) / group : 1, maxq = (1 << bits) - 1, packed = bits <= 4;
    int64_t qc = packed ? (cols + 1) / 2 : cols;
    const pdq_st_tensor *tq = pdq_st_expect(s, name, ".qweight", PDQ_DT_U8, 2, rows, qc, file, st);
    pdq_qgrid_view gv;
    if (!tq) return st ? st->code : PDQ_ERR_FORMAT;
    pdq_code grc = pdq_qgrid_open(s, e, name, rows, ng, bits, file, &gv, st); /* zero points checked */
    if (grc) return grc;
    int has_gidx = pdq_qgrid_has_gidx(e, ng);
    const pdq_st_tensor *tg = has_gidx ? pdq_st_expect(s, name, ".g_idx", PDQ_DT_I32, 1, cols, 0, file, st) : NULL;
    if (has_gidx && !tg) return st ? st->code : PDQ_ERR_FORMAT;
    const uint8_t *codes = tq->data;
    /* 4- and 8-bit codes cannot exceed their grid; narrower ones are checked like the eager loader */
    if (bits != 4 && bits != 8)
        for (int r = 0; r < rows; r++)
            for (int c = 0; c < cols; c++) {
                const uint8_t *row = codes + (size_t)r * qc;
                int v = packed ? (row[c >> 1] >> ((c & 1) * 4)) & 0xF : row[c];
                if (v > maxq)
                    return pdq_fail(st, PDQ_ERR_FORMAT, "%s: %s code %d at [%d, %d] exceeds %d bits", file, name, v, r, c, bits);
            }
    int32_t *gi = NULL, *perm = NULL;
    pdq_code rc = PDQ_OK;
    if (tg) {
        if (!(gi = malloc(sizeof(int32_t) * (size_t)cols))) return pdq_fail(st, PDQ_ERR_NOMEM, "out of memory");
        memcpy(gi, tg->data, sizeof(int32_t) * (size_t)cols); /* mapped data may be unaligned */
        for (int c = 0; !rc && c < cols; c++)
            if (gi[c] < 0 || gi[c] >= ng)
                rc = pdq_fail(st, PDQ_ERR_FORMAT, "%s: %s.g_idx[%d] = %d outside [0, %d)", file, name, c, gi[c], ng);
        if (!rc) rc = group_order(gi, cols, group, ng, &perm, file, name, st);
        free(gi);
        if (rc) return rc;
    }
    /* one block: scales | zeros | perm; reordered codes apart (the 4-row copy replaces them).
     * Scales stay as stored (compact ones widened only past the kernels' group limit); a
     * checkpoint without zero points gets one shared row of them. */
    pdq_qscale_type stype = ng > PDQ_QMATRIX_MAX_COMPACT_GROUPS ? PDQ_QSCALE_F32 : gv.stype;
    size_t zstride = gv.zeros ? (size_t)ng : 0;
    size_t nsc = (size_t)rows * ng * pdq_qscale_size(stype), nz = (zstride ? (size_t)rows : 1) * ng;
    size_t np = perm ? sizeof(int32_t) * (size_t)cols : 0;
    size_t off_z = nsc, off_p = (off_z + nz + 3) / 4 * 4, off_c = off_p + np;
    size_t ncodes = perm ? (size_t)rows * (size_t)qc : 0;
    unsigned char *blk = malloc(off_c + 1);
    uint8_t *reordered = perm ? calloc(ncodes, 1) : NULL;
    if (!blk || (perm && !reordered)) {
        free(blk);
        free(perm);
        return pdq_fail(st, PDQ_ERR_NOMEM, "%s: out of memory for its grids", name);
    }
    if (stype == gv.stype) memcpy(blk, gv.scales, nsc);
    else
        for (size_t i = 0; i < (size_t)rows * ng; i++) pdq_qscale_put(blk, stype, i, pdq_qgrid_scale(&gv, i));
    if (gv.zeros) memcpy(blk + off_z, gv.zeros, nz);
    else memset(blk + off_z, gv.zero, nz);
    if (perm) {
        memcpy(blk + off_p, perm, np);
        uint8_t *dst = reordered;
        for (int r = 0; r < rows; r++) {
            const uint8_t *src = codes + (size_t)r * qc;
            uint8_t *d = dst + (size_t)r * qc;
            for (int j = 0; j < cols; j++) {
                int c = perm[j];
                int v = packed ? (src[c >> 1] >> ((c & 1) * 4)) & 0xF : src[c];
                if (packed) d[j >> 1] |= (uint8_t)(v << ((j & 1) * 4));
                else d[j] = (uint8_t)v;
            }
        }
        codes = dst;
    }
    free(perm);
    rc = pdq_qmatrix_init_grids(w, packed ? PDQ_QT_U4 : PDQ_QT_U8, rows, cols, group, codes, blk, stype, blk + off_z,
                                zstride, np ? (const int32_t *)(blk + off_p) : NULL, name, st);
    if (rc) { free(blk); free(reordered); return rc; }
    w->owned = blk;
    w->owned_codes = reordered;
    if (gemv && (rc = pdq_qmatrix_pack_rows4(w, st))) {
        pdq_qmatrix_free(w);
        return rc;
    }
    if (w->codes != tq->data) { /* the mapped codes are read no more */
        char nm[192];
        snprintf(nm, sizeof nm, "%s.qweight", name);
        pdq_st_drop_pages(s, nm);
    }
    return PDQ_OK;
}

static pdq_code read_f32(const pdq_safetensors *s, const char *name, int rows, int cols, float **dst, pdq_status *st) {
    char nm[192];
    snprintf(nm, sizeof nm, "%s.weight", name);
    size_t n = (size_t)rows * (cols ? (size_t)cols : 1);
    if (!(*dst = malloc(n * sizeof(float)))) return pdq_fail(st, PDQ_ERR_NOMEM, "%s: out of memory", nm);
    int64_t shape[2] = {rows, cols};
    return pdq_st_read_f32(s, nm, cols ? 2 : 1, shape, *dst, st);
}

/* A 2-D tensor: packed when pdq_quant.json lists it, else f32. */
static pdq_code load_2d(struct pdq_packed *p, const cJSON *tens, const char *name, int rows, int cols,
                        const char *file, int gemv, float **f32, pdq_qmatrix **q, int *matched, pdq_status *st) {
    const cJSON *e = cJSON_GetObjectItem(tens, name);
    if (!e) return read_f32(p->src, name, rows, cols, f32, st);
    (*matched)++;
    pdq_qmatrix *w = &p->mats[p->n];
    pdq_code rc = load_matrix(p->src, e, name, rows, cols, file, gemv, w, st);
    if (!rc) { *q = w; p->n++; }
    return rc;
}


static pdq_code load_all(pdq_model *m, struct pdq_packed *p, const cJSON *tens, const char *file, pdq_status *st) {
    const pdq_config *c = &m->cfg;
    int D = c->hidden_size, V = c->vocab_size, matched = 0;
    char nm[192];
    pdq_model_role_module(c, PDQ_ROLE_EMBED, -1, nm, sizeof nm);
    pdq_code rc = load_2d(p, tens, nm, V, D, file, c->tie_word_embeddings, &m->embed, &m->embed_q, &matched, st);
    if (!rc) rc = pdq_model_read_small(p->src, m, st);
    for (int l = 0; !rc && l < c->n_layers; l++) {
        pdq_layer *L = &m->layers[l];
        for (int i = 0; !rc && i < PDQ_LIN_COUNT; i++) {
            int o, in;
            pdq_linear_shape(c, (pdq_linear_id)i, &o, &in);
            pdq_linear_module(c, l, (pdq_linear_id)i, nm, sizeof nm);
            rc = load_2d(p, tens, nm, o, in, file, 1, &L->w[i], &L->pw[i], &matched, st);
        }
    }
    if (!rc && c->tie_word_embeddings) {
        m->lm_head = m->embed;
        m->lm_head_q = m->embed_q;
    } else if (!rc) {
        pdq_model_role_module(c, PDQ_ROLE_LM_HEAD, -1, nm, sizeof nm);
        rc = load_2d(p, tens, nm, V, D, file, 1, &m->lm_head, &m->lm_head_q, &matched, st);
    }
    if (!rc && matched != cJSON_GetArraySize(tens))
        rc = pdq_fail(st, PDQ_ERR_FORMAT, "%s: %d quantized tensors listed, only %d belong to the model", file,
                      cJSON_GetArraySize(tens), matched);
    return rc;
}

pdq_code pdq_model_load_packed(const char *dir, pdq_model **out, pdq_status *st) {
    *out = NULL;
    if (!pdq_dir_exists(dir)) return pdq_fail(st, PDQ_ERR_IO, "%s: not a model directory", dir);
    if (!pdq_quant_is_checkpoint(dir)) return pdq_model_load(dir, out, st);
    pdq_config cfg;
    pdq_code rc = pdq_config_load(dir, &cfg, st);
    if (rc) return rc;
    char path[4096];
    snprintf(path, sizeof path, "%s/pdq_quant.json", dir);
    size_t len = 0;
    char *txt = NULL;
    if ((rc = pdq_file_read(path, PDQ_FILE_MAX_JSON, &txt, &len, st))) return rc;
    cJSON *j = cJSON_ParseWithLength(txt, len);
    free(txt);
    if (!j) return pdq_fail(st, PDQ_ERR_FORMAT, "%s: not valid JSON", path);
    if ((rc = pdq_quant_doc_check(j, path, st))) { /* every field in range before use, as the eager loader */
        cJSON_Delete(j);
        return rc;
    }
    const cJSON *fmt = cJSON_GetObjectItem(j, "format"), *tens = cJSON_GetObjectItem(j, "tensors");
    if (!cJSON_IsObject(j) || !cJSON_IsString(fmt) || strcmp(fmt->valuestring, "pdq-quant") != 0 || !cJSON_IsObject(tens)) {
        cJSON_Delete(j);
        return pdq_fail(st, PDQ_ERR_FORMAT, "%s: not a pdq-quant description (format/tensors missing)", path);
    }
    pdq_model *m = calloc(1, sizeof *m);
    struct pdq_packed *p = calloc(1, sizeof *p);
    if (m) m->cfg = cfg;
    if (m) m->n_threads = pdq_default_threads();
    if (!m || !p || !(m->layers = calloc((size_t)cfg.n_layers, sizeof *m->layers))) {
        if (m && !m->layers) m->cfg.n_layers = 0;
        rc = pdq_fail(st, PDQ_ERR_NOMEM, "out of memory allocating the model");
    }
    if (m) m->packed = p;
    if (!rc) rc = pdq_model_alloc_small(m, st);
    if (!rc) {
        p->cap = cfg.n_layers * PDQ_LIN_COUNT + 2;
        if (!(p->mats = calloc((size_t)p->cap, sizeof *p->mats))) rc = pdq_fail(st, PDQ_ERR_NOMEM, "out of memory");
    }
    snprintf(path, sizeof path, "%s/model.q.safetensors", dir);
    if (!rc) rc = pdq_st_open(path, &p->src, st);
    if (!rc) rc = load_all(m, p, tens, path, st);
    if (!rc && !(m->dir = strdup(dir))) rc = pdq_fail(st, PDQ_ERR_NOMEM, "out of memory");
    cJSON_Delete(j);
    if (!rc) m->pool = pdq_pool_create(m->n_threads, st);
    if (!rc && !m->pool) rc = st ? st->code : PDQ_ERR_NOMEM;
    if (rc) {
        if (m) pdq_model_free(m);
        else free(p);
        return rc;
    }
    *out = m;
    return PDQ_OK;
}

size_t pdq_model_decode_weight_bytes(const pdq_model *m) {
    const pdq_config *c = &m->cfg;
    size_t total = 0;
    for (int l = 0; l < c->n_layers; l++)
        for (int i = 0; i < PDQ_LIN_COUNT; i++) {
            int o, in;
            pdq_linear_shape(c, (pdq_linear_id)i, &o, &in);
            total += m->layers[l].pw[i] ? pdq_qmatrix_bytes(m->layers[l].pw[i]) : (size_t)o * in * sizeof(float);
        }
    total += m->lm_head_q ? pdq_qmatrix_bytes(m->lm_head_q) : (size_t)c->vocab_size * c->hidden_size * sizeof(float);
    return total;
}
