/* ptq.json: the activation grids of a quantized checkpoint, by edge name, plus what is needed to
 * rebuild the same graphs (max_seq, static options) and the calibration record. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pdq/file.h"
#include "ptq/store_check.h"
#include "ptq_internal.h"

static const char *rope_name(pdq_rope_conv r) { return r == PDQ_RT_ROPE_PRE_NEGATED_SIN ? "pre_negated_sin" : "hf"; }
static const char *fusion_name(pdq_scale_fusion s) { return s == PDQ_RT_SCALE_K_PROJ ? "k_proj" : "none"; }
static const char *layout_name(pdq_attn_layout l) { return l == PDQ_RT_LAYOUT_UNROLLED ? "unrolled" : "batched"; }

/* cJSON prints 15 significant digits when they compare "close enough"; grids need exact doubles. */
static void add_exact(cJSON *o, const char *k, double v) {
    char buf[40];
    snprintf(buf, sizeof buf, "%.17g", v);
    cJSON_AddRawToObject(o, k, buf);
}

pdq_code pdq_ptq_save(const pdq_ptq *p, const char *path, const void *calib_json, pdq_status *st) {
    cJSON *root = cJSON_CreateObject(), *so = cJSON_CreateObject(), *groups = cJSON_CreateArray(),
          *edges = cJSON_CreateObject();
    if (!root || !so || !groups || !edges) goto nomem;
    cJSON_AddStringToObject(root, "format", "pdq-ptq");
    cJSON_AddNumberToObject(root, "version", 1);
    cJSON_AddStringToObject(root, "activation_dtype", pdq_adtype_name(p->o.adtype));
    cJSON_AddStringToObject(root, "observer", pdq_obs_name(p->o.observer));
    cJSON_AddNumberToObject(root, "ema_momentum", p->o.ema_momentum);
    cJSON_AddNumberToObject(root, "max_seq", p->max_seq);
    cJSON_AddStringToObject(so, "rope", rope_name(p->so.rope));
    cJSON_AddStringToObject(so, "scale_fusion", fusion_name(p->so.scale));
    cJSON_AddStringToObject(so, "layout", layout_name(p->so.layout));
    cJSON_AddNumberToObject(so, "mask_fill", p->so.mask_fill);
    cJSON_AddItemToObject(root, "static_opts", so);
    so = NULL;
    cJSON_AddStringToObject(root, "norm_weights", "int16 symmetric per-channel");
    cJSON_AddStringToObject(root, "sharing",
                            "one grid per group; an edge name means the same edge in prefill, decode and append graphs");
    cJSON *cal = calib_json ? cJSON_Duplicate((const cJSON *)calib_json, 1) : cJSON_CreateObject();
    if (!cal) goto nomem;
    cJSON_AddNumberToObject(cal, "samples", p->calib_samples);
    cJSON_AddNumberToObject(cal, "decode_steps", p->calib_decode_steps);
    cJSON_AddItemToObject(root, "calibration", cal);
    for (int i = 0; i < p->n_groups; i++) {
        const pdq_ptq_group *G = &p->groups[i];
        cJSON *o = cJSON_CreateObject();
        if (!o) goto nomem;
        cJSON_AddStringToObject(o, "name", G->name);
        cJSON_AddStringToObject(o, "dtype", pdq_adtype_name(G->grid.dt));
        add_exact(o, "scale", G->grid.scale);
        cJSON_AddNumberToObject(o, "zero_point", (double)G->grid.zero_point);
        cJSON_AddNumberToObject(o, "qmin", (double)G->grid.qmin);
        cJSON_AddNumberToObject(o, "qmax", (double)G->grid.qmax);
        add_exact(o, "min", G->obs.min);
        add_exact(o, "max", G->obs.max);
        cJSON_AddBoolToObject(o, "fixed", G->fixed);
        cJSON_AddNumberToObject(o, "steps", (double)G->obs.steps);
        cJSON_AddNumberToObject(o, "clipped", G->clipped);
        cJSON_AddNumberToObject(o, "counted", G->counted);
        cJSON_AddItemToArray(groups, o);
    }
    cJSON_AddItemToObject(root, "groups", groups);
    groups = NULL;
    for (int e = 0; e < p->n_edges; e++) cJSON_AddNumberToObject(edges, p->edges[e], p->edge_group[e]);
    cJSON_AddItemToObject(root, "edges", edges);
    edges = NULL;
    char *txt = cJSON_Print(root);
    cJSON_Delete(root);
    if (!txt) return pdq_fail(st, PDQ_ERR_NOMEM, "ptq: %s", path);
    pdq_code rc = pdq_file_write_text(path, txt, 0, NULL, st); /* atomic: pdq/file.h */
    free(txt);
    return rc;
nomem:
    cJSON_Delete(root);
    cJSON_Delete(so);
    cJSON_Delete(groups);
    cJSON_Delete(edges);
    return pdq_fail(st, PDQ_ERR_NOMEM, "ptq: %s", path);
}

static char *slurp(const char *path, pdq_status *st) {
    char *buf;
    size_t len;
    if (pdq_file_read(path, PDQ_FILE_MAX_JSON, &buf, &len, st)) return NULL;
    if (!len) { free(buf); pdq_fail(st, PDQ_ERR_FORMAT, "ptq: %s is empty", path); return NULL; }
    return buf;
}

/* Groups and edges (already checked by pdq_ptq_doc_check) matched to the model's graphs. */
static pdq_code apply_groups(pdq_ptq *p, const ptq_doc *d, const char *path, pdq_status *st) {
    int n = d->n_groups;
    int *map = malloc(sizeof(int) * (size_t)(n ? n : 1)), *seen = calloc((size_t)p->n_groups + 1, sizeof(int));
    pdq_code rc = PDQ_OK;
    if (!map || !seen) rc = pdq_fail(st, PDQ_ERR_NOMEM, "ptq: %s", path);
    for (int i = 0; i < n && rc == PDQ_OK; i++) {
        ptq_group_doc g;
        if ((rc = pdq_ptq_group_check(cJSON_GetArrayItem(d->groups, i), i, path, &g, st))) break;
        int gi = pdq_ptq_find(p, g.name);
        if (gi < 0 || seen[gi]) {
            rc = pdq_fail(st, PDQ_ERR_FORMAT, "%s: groups[%d].name = \"%.200s\": %s", path, i, g.name,
                          gi < 0 ? "no such edge group in the model's graphs" : "listed twice");
            break;
        }
        seen[gi] = 1;
        map[i] = gi;
        pdq_ptq_group *G = &p->groups[gi];
        G->grid.dt = (pdq_adtype)g.dtype;
        G->grid.scale = pdq_agrid_f32(g.scale); /* tables written before scales were float32 */
        G->grid.zero_point = g.zero_point;
        G->grid.qmin = g.qmin;
        G->grid.qmax = g.qmax;
        G->obs.min = g.min;
        G->obs.max = g.max;
        G->obs.have = 1;
        if (g.has_steps) G->obs.steps = (long)g.steps;
        if (g.has_clipped) G->clipped = g.clipped;
        if (g.has_counted) G->counted = g.counted;
    }
    for (int i = 0; i < p->n_groups && rc == PDQ_OK; i++)
        if (!seen[i]) rc = pdq_fail(st, PDQ_ERR_FORMAT, "ptq: %s has no grid for edge %s", path, p->groups[i].name);
    /* Every stored edge must sit in the group the graphs give it. */
    const cJSON *e;
    cJSON_ArrayForEach(e, d->edges) {
        if (rc != PDQ_OK) break;
        int gi = pdq_ptq_find(p, e->string), fi = e->valueint; /* fi: checked to be in [0, n) */
        if (gi < 0 || map[fi] != gi)
            rc = pdq_fail(st, PDQ_ERR_FORMAT, "ptq: %s: edge %s does not match the model's graphs", path, e->string);
    }
    if (rc == PDQ_OK && d->n_edges != p->n_edges)
        rc = pdq_fail(st, PDQ_ERR_FORMAT, "ptq: %s lists %d edges, the graphs have %d", path, d->n_edges, p->n_edges);
    free(map);
    free(seen);
    return rc;
}

pdq_code pdq_ptq_load(const pdq_model *m, const char *path, pdq_ptq **out, pdq_status *st) {
    char *txt = slurp(path, st);
    if (!txt) return st ? st->code : PDQ_ERR_IO;
    cJSON *root = cJSON_Parse(txt);
    free(txt);
    if (!root) return pdq_fail(st, PDQ_ERR_FORMAT, "ptq: %s is not valid JSON", path);
    ptq_doc d;
    pdq_code rc = pdq_ptq_doc_check(root, path, PDQ_PTQ_MAX_SEQ_LIMIT, &d, st);
    if (rc == PDQ_OK && d.max_seq > m->cfg.max_position_embeddings)
        rc = pdq_fail(st, PDQ_ERR_LIMIT, "%s: max_seq = %d: exceeds the model's max_position_embeddings %d", path,
                      d.max_seq, m->cfg.max_position_embeddings);
    pdq_ptq *p = NULL;
    if (rc == PDQ_OK) {
        pdq_static_opts so;
        pdq_static_opts_default(&so);
        pdq_ptq_opts po;
        pdq_ptq_opts_default(&po);
        so.rope = (pdq_rope_conv)d.rope;
        so.scale = (pdq_scale_fusion)d.scale_fusion;
        so.layout = (pdq_attn_layout)d.layout;
        so.mask_fill = (float)d.mask_fill;
        po.adtype = (pdq_adtype)d.adtype;
        po.observer = (pdq_obs_kind)d.observer;
        po.ema_momentum = d.ema_momentum;
        rc = pdq_ptq_create(m, d.max_seq, &so, &po, &p, st);
    }
    if (rc == PDQ_OK) rc = apply_groups(p, &d, path, st);
    if (rc == PDQ_OK) {
        if (d.has_samples) p->calib_samples = d.samples;
        if (d.has_decode_steps) p->calib_decode_steps = d.decode_steps;
    }
    cJSON_Delete(root);
    if (rc != PDQ_OK) { pdq_ptq_free(p); return rc; }
    *out = p;
    return PDQ_OK;
}

int pdq_ptq_in_dir(const char *dir) {
    char path[4096];
    snprintf(path, sizeof path, "%s/ptq.json", dir);
    return pdq_file_exists(path);
}

pdq_code pdq_ptq_open_runtime(pdq_model *m, const char *dir, int B, int max_seq,
                              const pdq_static_opts *so, pdq_rt **rt, pdq_ptq **ptq, pdq_status *st) {
    *ptq = NULL;
    *rt = NULL;
    if (!pdq_ptq_in_dir(dir)) {
        if (max_seq <= 0) return pdq_fail(st, PDQ_ERR_ARG, "static runtime: no max_seq given and no ptq.json in %s", dir);
        return pdq_rt_create(m, B, max_seq, so, rt, st);
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/ptq.json", dir);
    pdq_ptq *p;
    pdq_code rc = pdq_ptq_load(m, path, &p, st);
    if (rc != PDQ_OK) return rc;
    const pdq_static_opts *cs = pdq_ptq_static_opts(p);
    if (so && (so->rope != cs->rope || so->scale != cs->scale || so->layout != cs->layout ||
               so->mask_fill != cs->mask_fill)) {
        /* Format the message before freeing p: cs points into it. */
        pdq_fail(st, PDQ_ERR_ARG, "%s was calibrated with rope %s, scale fusion %s, layout %s, mask fill %g: "
                 "run with the same graph options", path, rope_name(cs->rope), fusion_name(cs->scale),
                 layout_name(cs->layout), (double)cs->mask_fill);
        pdq_ptq_free(p);
        return st ? st->code : PDQ_ERR_ARG;
    }
    if (max_seq <= 0) max_seq = p->max_seq;
    if (max_seq > p->max_seq) {
        int cal = p->max_seq;
        pdq_ptq_free(p);
        return pdq_fail(st, PDQ_ERR_ARG, "max_seq %d exceeds the calibrated max_seq %d of %s", max_seq, cal, path);
    }
    pdq_ptq_quantize_norms(m);
    rc = pdq_rt_create(m, B, max_seq, cs, rt, st);
    if (rc != PDQ_OK) { pdq_ptq_free(p); return rc; }
    pdq_ptq_attach(p, *rt);
    pdq_ptq_set_mode(p, p->o.adtype == PDQ_ADT_FLOAT ? PDQ_PTQ_OFF : PDQ_PTQ_FAKEQUANT);
    *ptq = p;
    return PDQ_OK;
}
