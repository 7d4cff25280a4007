/* The reader of a pdq quantized checkpoint (the format is described in src/quant/checkpoint.c,
 * its writer): pdq_quant.json checked field by field (io/quant_json_check.h), then every tensor
 * of the model from the family's role table: a quantized module's codes dequantized through the
 * one grid reader (io/qgrid.h), every other tensor read as float32. It lives with the loaders,
 * below the quantizer, so loading a checkpoint needs nothing of quant/. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/qgrid.h"
#include "kernels/codes4.h"
#include "io/quant_json_check.h"
#include "model/tensor_list.h"
#include "pdq/file.h"
#include "pdq/model.h"
#include "pdq/qscale.h"
#include "pdq/safetensors.h"

#define MAXT 1024

typedef pdq_tensor_entry mtensor;

int pdq_quant_is_checkpoint(const char *dir) {
    char path[4096];
    snprintf(path, sizeof path, "%s/pdq_quant.json", dir);
    return pdq_path_stat(path, NULL, NULL) != PDQ_PATH_NONE;
}

/* Dequantizes one module described by e into dst [rows, cols]. */
static pdq_code load_module(const pdq_safetensors *s, const cJSON *e, const mtensor *mt, float *dst, const char *file,
                            pdq_status *st) {
    const cJSON *jb = cJSON_GetObjectItem(e, "bits"), *jg = cJSON_GetObjectItem(e, "group");
    const cJSON *jsh = cJSON_GetObjectItem(e, "shape");
    if (!cJSON_IsNumber(jb) || !cJSON_IsNumber(jg) || !cJSON_IsArray(jsh) || cJSON_GetArraySize(jsh) != 2)
        return pdq_fail(st, PDQ_ERR_FORMAT, "%s: entry %s needs bits, group and shape", file, mt->name);
    int bits = jb->valueint, group = jg->valueint, rows = (int)mt->rows, cols = (int)mt->cols;
    if (cJSON_GetArrayItem(jsh, 0)->valueint != rows || cJSON_GetArrayItem(jsh, 1)->valueint != cols)
        return pdq_fail(st, PDQ_ERR_SHAPE, "%s: %s has shape [%d, %d] in pdq_quant.json, the config needs [%d, %d]",
                        file, mt->name, cJSON_GetArrayItem(jsh, 0)->valueint, cJSON_GetArrayItem(jsh, 1)->valueint,
                        rows, cols);
    if (bits < 2 || bits > 8 || group < 0)
        return pdq_fail(st, PDQ_ERR_FORMAT, "%s: %s: bad bits %d / group %d", file, mt->name, bits, group);
    int ng = group ? (cols + group - 1) / group : 1, maxq = (1 << bits) - 1;
    int packed = bits <= 4;
    int64_t qc = packed ? (cols + 1) / 2 : cols;
    const pdq_st_tensor *tq = pdq_st_expect(s, mt->name, ".qweight", PDQ_DT_U8, 2, rows, qc, file, st);
    if (!tq) return st ? st->code : PDQ_ERR_FORMAT;
    pdq_qgrid_view gv;
    pdq_code grc = pdq_qgrid_open(s, e, mt->name, rows, ng, bits, file, &gv, st);
    if (grc) return grc;
    int32_t *gi = NULL;
    if (ng > 1 && pdq_qgrid_has_gidx(e, ng)) {
        const pdq_st_tensor *tg = pdq_st_expect(s, mt->name, ".g_idx", PDQ_DT_I32, 1, cols, 0, file, st);
        if (!tg) return st ? st->code : PDQ_ERR_FORMAT;
        if (!(gi = malloc((size_t)cols * sizeof *gi))) return pdq_fail(st, PDQ_ERR_NOMEM, "out of memory");
        memcpy(gi, tg->data, (size_t)cols * sizeof *gi); /* mmapped data may be unaligned */
        for (int c = 0; c < cols; c++)
            if (gi[c] < 0 || gi[c] >= ng) {
                pdq_fail(st, PDQ_ERR_FORMAT, "%s: %s.g_idx[%d] = %d outside [0, %d)", file, mt->name, c, gi[c], ng);
                free(gi);
                return PDQ_ERR_FORMAT;
            }
    }
    const uint8_t *q = tq->data;
    uint8_t *row = malloc((size_t)cols);
    if (!row) { free(gi); return pdq_fail(st, PDQ_ERR_NOMEM, "out of memory"); }
    for (int r = 0; r < rows; r++) {
        if (packed) pdq_unpack4(q + (size_t)r * qc, (size_t)cols, row);
        else memcpy(row, q + (size_t)r * cols, (size_t)cols);
        for (int c = 0; c < cols; c++) {
            int g = gi ? gi[c] : c / (group ? group : cols);
            float scale = pdq_qgrid_scale(&gv, (size_t)r * ng + g);
            if (row[c] > maxq) {
                int bad = row[c];
                free(row);
                free(gi);
                return pdq_fail(st, PDQ_ERR_FORMAT, "%s: %s code %d at [%d, %d] exceeds %d bits", file, mt->name,
                                bad, r, c, bits);
            }
            dst[(size_t)r * cols + c] = scale * ((float)row[c] - (float)pdq_qgrid_zero(&gv, (size_t)r * ng + g));
        }
    }
    free(row);
    free(gi);
    return PDQ_OK;
}

/* A quantized k_proj keeps its float32 row (or contiguous group) scales on the model
 * (pdq_layer.wk_scale): a k_proj scale fold then scales them, keeping the folded weight (code -
 * zero) * float32 scale. Act-order groups keep none. */
static pdq_code keep_k_scale(pdq_model *m, const pdq_safetensors *s, const cJSON *e, const mtensor *t, pdq_status *st) {
    int l = t->layer;
    const char *name = t->name;
    if (t->kind != PDQ_ROLE_WEIGHT || t->lin != PDQ_LIN_K || l < 0 || l >= m->cfg.n_layers) return PDQ_OK;
    char nm[160];
    snprintf(nm, sizeof nm, "%.127s.scales", name);
    const pdq_st_tensor *ts = pdq_st_find(s, nm);
    int rows = m->cfg.n_kv_heads * m->cfg.head_dim;
    int cols = m->cfg.hidden_size;
    int stype = ts ? pdq_qgrid_scale_type(ts->dtype) : -1;
    if (!ts || stype < 0 || ts->ndim != 2 || ts->shape[0] != rows || ts->shape[1] < 1 || ts->shape[1] > cols)
        return PDQ_OK;
    int ng = (int)ts->shape[1], G = cols;
    const cJSON *jg = cJSON_GetObjectItemCaseSensitive(e, "group");
    if (ng > 1 && !pdq_qgrid_has_gidx(e, ng)) { /* plain groups: column c in group c / group */
        G = cJSON_IsNumber(jg) ? jg->valueint : 0;
        if (G < 1 || (cols + G - 1) / G != ng) return PDQ_OK;
    } else if (ng > 1) {
        snprintf(nm, sizeof nm, "%.127s.g_idx", name);
        const pdq_st_tensor *tg = pdq_st_find(s, nm);
        if (!tg || tg->nbytes != sizeof(int32_t) * (size_t)cols) return PDQ_OK;
        int32_t *gi = malloc(sizeof(int32_t) * (size_t)cols);
        if (!gi) return pdq_fail(st, PDQ_ERR_NOMEM, "k_proj groups");
        memcpy(gi, tg->data, sizeof(int32_t) * (size_t)cols); /* mmapped data may be unaligned */
        G = pdq_gidx_group(gi, cols, ng);
        free(gi);
        if (!G) return PDQ_OK; /* act-order groups: no scale per contiguous group */
    }
    float *sc = malloc(sizeof(float) * (size_t)rows * ng);
    if (!sc) return pdq_fail(st, PDQ_ERR_NOMEM, "k_proj scales");
    for (size_t i = 0; i < (size_t)rows * ng; i++) sc[i] = pdq_qscale_at(ts->data, (pdq_qscale_type)stype, i);
    free(m->layers[l].wk_scale);
    m->layers[l].wk_scale = sc;
    m->layers[l].wk_group = ng > 1 ? G : 0;
    return PDQ_OK;
}

pdq_code pdq_quant_load(const char *dir, pdq_model *m, pdq_status *st) {
    char path[4096];
    snprintf(path, sizeof path, "%s/pdq_quant.json", dir);
    size_t len;
    char *txt = NULL;
    if (pdq_file_read(path, PDQ_FILE_MAX_JSON, &txt, &len, NULL)) return pdq_fail(st, PDQ_ERR_IO, "%s: cannot read", path);
    cJSON *j = cJSON_ParseWithLength(txt, len);
    free(txt);
    if (!j) return pdq_fail(st, PDQ_ERR_FORMAT, "%s: not valid JSON", path);
    pdq_code vrc = pdq_quant_doc_check(j, path, st); /* every field in range before use */
    if (vrc) { cJSON_Delete(j); return vrc; }
    const cJSON *fmt = cJSON_GetObjectItem(j, "format"), *tens = cJSON_GetObjectItem(j, "tensors");
    if (!cJSON_IsObject(j) || !cJSON_IsString(fmt) || strcmp(fmt->valuestring, "pdq-quant") != 0 ||
        !cJSON_IsObject(tens)) {
        cJSON_Delete(j);
        return pdq_fail(st, PDQ_ERR_FORMAT, "%s: not a pdq-quant description (format/tensors missing)", path);
    }
    snprintf(path, sizeof path, "%s/model.q.safetensors", dir);
    pdq_safetensors *s;
    pdq_code rc = pdq_st_open(path, &s, st);
    if (rc) { cJSON_Delete(j); return rc; }
    int nt = 0;
    mtensor *mt = NULL;
    if (!rc) rc = pdq_tensor_list_new(m, PDQ_TORDER_QUANT, 0, MAXT, &mt, &nt, st);
    int matched = 0;
    for (int i = 0; !rc && i < nt; i++) {
        long rows, cols;
        float *dst = pdq_tensor_entry_piece(m, &mt[i], 0, &rows, &cols, NULL, 0);
        const cJSON *e = strcmp(mt[i].suffix, ".weight") == 0 ? cJSON_GetObjectItem(tens, mt[i].name) : NULL;
        if (!dst) {
            rc = pdq_fail(st, PDQ_ERR_ARG, "%s: the model holds no buffer for it", mt[i].name);
        } else if (e) {
            matched++;
            if (!mt[i].cols) rc = pdq_fail(st, PDQ_ERR_FORMAT, "%s: %s is 1-D and cannot be quantized", path, mt[i].name);
            else rc = load_module(s, e, &mt[i], dst, path, st);
            if (!rc) rc = keep_k_scale(m, s, e, &mt[i], st);
        } else {
            char nm[160];
            snprintf(nm, sizeof nm, "%.127s%s", mt[i].name, mt[i].suffix);
            int64_t shape[2] = {mt[i].rows, mt[i].cols};
            rc = pdq_st_read_f32(s, nm, mt[i].cols ? 2 : 1, shape, dst, st);
        }
    }
    free(mt);
    if (!rc && matched != cJSON_GetArraySize(tens))
        rc = pdq_fail(st, PDQ_ERR_FORMAT, "%s/pdq_quant.json: %d quantized tensors listed, only %d belong to the model",
                      dir, cJSON_GetArraySize(tens), matched);
    pdq_st_close(s);
    cJSON_Delete(j);
    return rc;
}
