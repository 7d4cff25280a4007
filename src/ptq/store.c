/* ptq.json: the activation grids of a quantized checkpoint, by edge name, plus what is needed to
 * rebuild the same graphs (max_seq, static options) and the calibration record. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "pdq/file.h"
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

static const char *jstr(const cJSON *o, const char *k) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int jnum(const cJSON *o, const char *k, double *out) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!cJSON_IsNumber(v)) return 0;
    *out = v->valuedouble;
    return 1;
}

static pdq_code apply_groups(pdq_ptq *p, const cJSON *groups, const cJSON *edges, const char *path,
                             pdq_status *st) {
    int n = cJSON_GetArraySize(groups);
    int *map = malloc(sizeof(int) * (size_t)(n ? n : 1)), *seen = calloc((size_t)p->n_groups, sizeof(int));
    pdq_code rc = PDQ_OK;
    if (!map || !seen) rc = pdq_fail(st, PDQ_ERR_NOMEM, "ptq: %s", path);
    for (int i = 0; i < n && rc == PDQ_OK; i++) {
        const cJSON *o = cJSON_GetArrayItem(groups, i);
        const char *name = jstr(o, "name"), *dts = jstr(o, "dtype");
        double scale, zp, qmin, qmax, mn, mx;
        int dt = dts ? pdq_adtype_parse(dts) : -1;
        if (!name || dt < 0 || !jnum(o, "scale", &scale) || !jnum(o, "zero_point", &zp) || !jnum(o, "min", &mn) ||
            !jnum(o, "max", &mx) || !jnum(o, "qmin", &qmin) || !jnum(o, "qmax", &qmax) || !(scale > 0)) {
            rc = pdq_fail(st, PDQ_ERR_FORMAT, "ptq: %s: group %d is malformed", path, i);
            break;
        }
        int gi = pdq_ptq_find(p, name);
        if (gi < 0 || seen[gi]) {
            rc = pdq_fail(st, PDQ_ERR_FORMAT, "ptq: %s: group %s does not match the model's graphs", path, name);
            break;
        }
        seen[gi] = 1;
        map[i] = gi;
        pdq_ptq_group *G = &p->groups[gi];
        G->grid.dt = (pdq_adtype)dt;
        G->grid.scale = pdq_agrid_f32(scale); /* tables written before scales were float32 */
        G->grid.zero_point = (int64_t)zp;
        G->grid.qmin = (int64_t)qmin;
        G->grid.qmax = (int64_t)qmax;
        G->obs.min = mn;
        G->obs.max = mx;
        G->obs.have = 1;
        double v;
        if (jnum(o, "steps", &v)) G->obs.steps = (long)v;
        if (jnum(o, "clipped", &v)) G->clipped = v;
        if (jnum(o, "counted", &v)) G->counted = v;
    }
    for (int i = 0; i < p->n_groups && rc == PDQ_OK; i++)
        if (!seen[i]) rc = pdq_fail(st, PDQ_ERR_FORMAT, "ptq: %s has no grid for edge %s", path, p->groups[i].name);
    /* Every stored edge must sit in the group the graphs give it. */
    const cJSON *e;
    cJSON_ArrayForEach(e, edges) {
        if (rc != PDQ_OK) break;
        int gi = pdq_ptq_find(p, e->string), fi = cJSON_IsNumber(e) ? e->valueint : -1;
        if (gi < 0 || fi < 0 || fi >= n || map[fi] != gi)
            rc = pdq_fail(st, PDQ_ERR_FORMAT, "ptq: %s: edge %s does not match the model's graphs", path, e->string);
    }
    if (rc == PDQ_OK && cJSON_GetArraySize(edges) != p->n_edges)
        rc = pdq_fail(st, PDQ_ERR_FORMAT, "ptq: %s lists %d edges, the graphs have %d", path,
                      cJSON_GetArraySize(edges), p->n_edges);
    free(map);
    free(seen);
    return rc;
}

pdq_code pdq_ptq_load(const pdq_model *m, const char *path, pdq_ptq **out, pdq_status *st) {
    char *txt = slurp(path, st);
    if (!txt) return st->code;
    cJSON *root = cJSON_Parse(txt);
    free(txt);
    if (!root) return pdq_fail(st, PDQ_ERR_FORMAT, "ptq: %s is not valid JSON", path);
    pdq_code rc = PDQ_OK;
    const char *fmt = jstr(root, "format"), *dts = jstr(root, "activation_dtype"), *obs = jstr(root, "observer");
    const cJSON *sj = cJSON_GetObjectItemCaseSensitive(root, "static_opts");
    const cJSON *groups = cJSON_GetObjectItemCaseSensitive(root, "groups");
    const cJSON *edges = cJSON_GetObjectItemCaseSensitive(root, "edges");
    double max_seq = 0, mom = 0.9, fill = -120;
    pdq_static_opts so;
    pdq_static_opts_default(&so);
    pdq_ptq_opts po;
    pdq_ptq_opts_default(&po);
    const char *r = sj ? jstr(sj, "rope") : NULL, *f = sj ? jstr(sj, "scale_fusion") : NULL,
               *l = sj ? jstr(sj, "layout") : NULL;
    int ri = r ? pdq_rope_conv_parse(r) : -1, fi = f ? pdq_scale_fusion_parse(f) : -1,
        li = l ? pdq_attn_layout_parse(l) : -1, di = dts ? pdq_adtype_parse(dts) : -1,
        oi = obs ? pdq_obs_parse(obs) : -1;
    if (!fmt || strcmp(fmt, "pdq-ptq") || !jnum(root, "max_seq", &max_seq) || ri < 0 || fi < 0 || li < 0 ||
        !jnum(sj, "mask_fill", &fill) || di < 0 || oi < 0 || !cJSON_IsArray(groups) || !cJSON_IsObject(edges))
        rc = pdq_fail(st, PDQ_ERR_FORMAT, "ptq: %s: missing or bad format/max_seq/static_opts/dtype/groups/edges", path);
    pdq_ptq *p = NULL;
    if (rc == PDQ_OK) {
        jnum(root, "ema_momentum", &mom);
        so.rope = (pdq_rope_conv)ri;
        so.scale = (pdq_scale_fusion)fi;
        so.layout = (pdq_attn_layout)li;
        so.mask_fill = (float)fill;
        po.adtype = (pdq_adtype)di;
        po.observer = (pdq_obs_kind)oi;
        po.ema_momentum = mom;
        rc = pdq_ptq_create(m, (int)max_seq, &so, &po, &p, st);
    }
    if (rc == PDQ_OK) rc = apply_groups(p, groups, edges, path, st);
    if (rc == PDQ_OK) {
        const cJSON *cal = cJSON_GetObjectItemCaseSensitive(root, "calibration");
        double v;
        if (cal && jnum(cal, "samples", &v)) p->calib_samples = (int)v;
        if (cal && jnum(cal, "decode_steps", &v)) p->calib_decode_steps = (int)v;
    }
    cJSON_Delete(root);
    if (rc != PDQ_OK) { pdq_ptq_free(p); return rc; }
    *out = p;
    return PDQ_OK;
}

int pdq_ptq_in_dir(const char *dir) {
    char path[4096];
    snprintf(path, sizeof path, "%s/ptq.json", dir);
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
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
