/* manifest.json validation (see manifest_check.h). */
#include "circle/manifest_check.h"

#include <stdint.h>
#include <string.h>

#include "io/json_field.h"

static const char *const k_rope[] = {"hf", "pre_negated_sin"};
static const char *const k_fusion[] = {"none", "k_proj"};
static const char *const k_layout[] = {"batched", "unrolled"};

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
    if (m->rotary_dim % 2)
        return pdq_fail(st, PDQ_ERR_FORMAT, "%s: model.rotary_dim = %d: must be even", path, m->rotary_dim);
    if (m->heads && m->heads % m->kv_heads)
        return pdq_fail(st, PDQ_ERR_FORMAT, "%s: model.num_attention_heads = %d: not divisible by num_key_value_heads %d",
                        path, m->heads, m->kv_heads);
    return PDQ_OK;
}
