/* manifest.json validation (see manifest_check.h). */
#include "circle/manifest_check.h"

#include <stdint.h>
#include <string.h>

#include "contract/rt_contract.h"
#include "io/json_field.h"

static const char *const k_rope[] = {"hf", "pre_negated_sin"};
static const char *const k_fusion[] = {"none", "k_proj"};
static const char *const k_layout[] = {"batched", "unrolled"};

static const char *const k_types[] = {"full_attention", "sliding_attention"};

/* model.layer_types (one per layer; absent: every layer slides when model.sliding_window is set)
 * and kv_cache.ring_slots, which must be the contract's ring for the window at max_seq. */
static pdq_code layer_types(const cJSON *root, const cJSON *mo, const char *path, pdq_manifest *m, pdq_status *st) {
    pdq_jctx cm = {path, "model"}, ck = {path, "kv_cache"};
    const cJSON *lt, *kv, *x;
    pdq_code rc = pdq_jf_array(&cm, mo, "layer_types", PDQ_JF_OPTIONAL, PDQ_MANIFEST_MAX_LAYERS, &lt, st);
    if (!rc) rc = pdq_jf_object(&ck, root, "kv_cache", PDQ_JF_OPTIONAL, &kv, st);
    if (rc) return rc;
    for (int l = 0; l < m->layers; l++) m->sliding[l] = m->sliding_window > 0;
    if (lt) {
        if (cJSON_GetArraySize(lt) != m->layers)
            return pdq_fail(st, PDQ_ERR_FORMAT, "%s: model.layer_types has %d entries, num_hidden_layers is %d", path,
                            cJSON_GetArraySize(lt), m->layers);
        int l = 0, any = 0;
        cJSON_ArrayForEach(x, lt) {
            int t = -1;
            for (int k = 0; k < 2 && cJSON_IsString(x); k++)
                if (!strcmp(x->valuestring, k_types[k])) t = k;
            if (t < 0)
                return pdq_fail(st, PDQ_ERR_FORMAT, "%s: model.layer_types[%d]: must be \"full_attention\" or "
                                "\"sliding_attention\"", path, l);
            any |= t;
            m->sliding[l++] = (unsigned char)t;
        }
        if (any && !m->sliding_window)
            return pdq_fail(st, PDQ_ERR_FORMAT, "%s: model.layer_types has sliding layers but model.sliding_window is absent",
                            path);
    }
    int ring = 0;
    for (int l = 0; l < m->layers; l++)
        if (m->sliding[l]) ring = pdq_ctr_ring_of(m->sliding_window, m->max_seq);
    const cJSON *ls = NULL;
    if (kv && (rc = pdq_jf_array(&ck, kv, "layer_slots", PDQ_JF_OPTIONAL, PDQ_MANIFEST_MAX_LAYERS, &ls, st))) return rc;
    if (ls && cJSON_GetArraySize(ls) != m->layers)
        return pdq_fail(st, PDQ_ERR_FORMAT, "%s: kv_cache.layer_slots has %d entries, num_hidden_layers is %d", path,
                        cJSON_GetArraySize(ls), m->layers);
    int l = 0;
    cJSON_ArrayForEach(x, ls) {
        int want = pdq_ctr_cache_slots(m->sliding[l] ? ring : 0, m->max_seq);
        if (!cJSON_IsNumber(x) || x->valuedouble != (double)want)
            return pdq_fail(st, PDQ_ERR_FORMAT, "%s: kv_cache.layer_slots[%d]: the contract's cache of this %s layer has %d "
                            "slots", path, l, m->sliding[l] ? "sliding" : "full", want);
        l++;
    }
    if (kv && cJSON_GetObjectItemCaseSensitive(kv, "ring_slots")) {
        int given = 0;
        if ((rc = pdq_jf_i32(&ck, kv, "ring_slots", PDQ_JF_REQUIRED, 0, PDQ_MANIFEST_MAX_SEQ, &given, st))) return rc;
        if (given != ring)
            return pdq_fail(st, PDQ_ERR_FORMAT, "%s: kv_cache.ring_slots = %d: the contract's ring for window %d at max_seq "
                            "%d is %d", path, given, m->sliding_window, m->max_seq, ring);
    }
    return PDQ_OK;
}

static const char *const k_tables[] = {"global", "local"};

/* rope.layer_tables (optional): one per layer, "local" exactly on the sliding layers (a layer type
 * is its window and its RoPE table; the local table is the sliding layers'). */
static pdq_code layer_tables(const cJSON *rp, const char *path, pdq_manifest *m, pdq_status *st) {
    pdq_jctx cr = {path, "rope"};
    const cJSON *lt, *x;
    pdq_code rc = pdq_jf_array(&cr, rp, "layer_tables", PDQ_JF_OPTIONAL, PDQ_MANIFEST_MAX_LAYERS, &lt, st);
    if (rc || !lt) return rc;
    if (cJSON_GetArraySize(lt) != m->layers)
        return pdq_fail(st, PDQ_ERR_FORMAT, "%s: rope.layer_tables has %d entries, num_hidden_layers is %d", path,
                        cJSON_GetArraySize(lt), m->layers);
    int l = 0;
    cJSON_ArrayForEach(x, lt) {
        int t = -1;
        for (int k = 0; k < 2 && cJSON_IsString(x); k++)
            if (!strcmp(x->valuestring, k_tables[k])) t = k;
        if (t < 0) return pdq_fail(st, PDQ_ERR_FORMAT, "%s: rope.layer_tables[%d]: must be \"global\" or \"local\"", path, l);
        if (t != m->sliding[l])
            return pdq_fail(st, PDQ_ERR_FORMAT, "%s: rope.layer_tables[%d] = \"%s\": the local table is the sliding "
                            "layers' (model.layer_types[%d] is %s)", path, l, k_tables[t], l, k_types[m->sliding[l]]);
        m->rope_local[l++] = (unsigned char)t;
        m->local_rope |= t;
    }
    if (!m->local_rope)
        return pdq_fail(st, PDQ_ERR_FORMAT, "%s: rope.layer_tables names no \"local\" layer (written only with a local table)",
                        path);
    return PDQ_OK;
}

pdq_code pdq_manifest_check(const cJSON *root, const char *path, pdq_manifest *m, pdq_status *st) {
    memset(m, 0, sizeof *m);
    m->fill = -120.0;
    pdq_jctx c = {path, ""};
    if (!cJSON_IsObject(root)) return pdq_fail(st, PDQ_ERR_FORMAT, "%s: not a JSON object", path);
    const char *fmt = NULL;
    pdq_code rc = pdq_jf_str(&c, root, "format", PDQ_JF_OPTIONAL, &fmt, st);
    if (rc) return rc;
    if (fmt && strcmp(fmt, "pdq-circle-export") != 0)
        return pdq_fail(st, PDQ_ERR_FORMAT, "%s: format = \"%.40s\": must be \"pdq-circle-export\"", path, fmt);
    int64_t v = 1;
    const cJSON *mo, *mk, *rp;
    if ((rc = pdq_jf_int(&c, root, "version", PDQ_JF_OPTIONAL, 1, 1, &v, st)) ||
        (rc = pdq_jf_bool(&c, root, "quantized", PDQ_JF_OPTIONAL, &m->quantized, st)) ||
        (rc = pdq_jf_i32(&c, root, "max_seq", PDQ_JF_REQUIRED, 2, PDQ_MANIFEST_MAX_SEQ, &m->max_seq, st)) ||
        (rc = pdq_jf_int(&c, root, "batch", PDQ_JF_OPTIONAL, 1, 1, &v, st)) ||
        (rc = pdq_jf_enum(&c, root, "scale_fusion", PDQ_JF_OPTIONAL, k_fusion, 2, &m->scale_fusion, st)) ||
        (rc = pdq_jf_enum(&c, root, "attention_layout", PDQ_JF_OPTIONAL, k_layout, 2, &m->layout, st)) ||
        (rc = pdq_jf_object(&c, root, "model", PDQ_JF_REQUIRED, &mo, st)) ||
        (rc = pdq_jf_object(&c, root, "attention_mask", PDQ_JF_OPTIONAL, &mk, st)) ||
        (rc = pdq_jf_object(&c, root, "rope", PDQ_JF_OPTIONAL, &rp, st)))
        return rc;
    pdq_jctx cm = {path, "model"}, ck = {path, "attention_mask"}, cr = {path, "rope"};
    /* the limits of config.json (src/io/config.c) */
    if ((rc = pdq_jf_i32(&cm, mo, "num_hidden_layers", PDQ_JF_REQUIRED, 1, 1024, &m->layers, st)) ||
        (rc = pdq_jf_i32(&cm, mo, "num_attention_heads", PDQ_JF_OPTIONAL, 1, 1024, &m->heads, st)) ||
        (rc = pdq_jf_i32(&cm, mo, "num_key_value_heads", PDQ_JF_REQUIRED, 1, 1024, &m->kv_heads, st)) ||
        (rc = pdq_jf_i32(&cm, mo, "head_dim", PDQ_JF_REQUIRED, 2, 1024, &m->head_dim, st)) ||
        (rc = pdq_jf_i32(&cm, mo, "hidden_size", PDQ_JF_REQUIRED, 1, 1 << 16, &m->hidden, st)) ||
        (rc = pdq_jf_i32(&cm, mo, "vocab_size", PDQ_JF_REQUIRED, 1, 1 << 24, &m->vocab, st)) ||
        (rc = pdq_jf_num(&ck, mk, "fill", PDQ_JF_OPTIONAL, -1e9, 0, &m->fill, st)) ||
        (rc = pdq_jf_enum(&cr, rp, "convention", PDQ_JF_OPTIONAL, k_rope, 2, &m->rope, st)))
        return rc;
    if (m->head_dim % 2)
        return pdq_fail(st, PDQ_ERR_FORMAT, "%s: model.head_dim = %d: must be even for RoPE", path, m->head_dim);
    m->sliding_window = 0;
    m->rotary_dim = m->head_dim;
    if ((rc = pdq_jf_i32(&cm, mo, "sliding_window", PDQ_JF_OPTIONAL, 1, 1 << 24, &m->sliding_window, st)) ||
        (rc = pdq_jf_i32(&cm, mo, "rotary_dim", PDQ_JF_OPTIONAL, 2, m->head_dim, &m->rotary_dim, st)))
        return rc;
    if ((rc = layer_types(root, mo, path, m, st)) || (rc = layer_tables(rp, path, m, st))) return rc;
    if (m->rotary_dim % 2)
        return pdq_fail(st, PDQ_ERR_FORMAT, "%s: model.rotary_dim = %d: must be even", path, m->rotary_dim);
    if (m->heads && m->heads % m->kv_heads)
        return pdq_fail(st, PDQ_ERR_FORMAT, "%s: model.num_attention_heads = %d: not divisible by num_key_value_heads %d",
                        path, m->heads, m->kv_heads);
    return PDQ_OK;
}
