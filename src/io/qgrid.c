/* Reading a quantized tensor's grids (qgrid.h). */
#include "io/qgrid.h"

#include <string.h>

int pdq_qgrid_scale_type(pdq_dtype dt) {
    return dt == PDQ_DT_F32 ? PDQ_QSCALE_F32 : dt == PDQ_DT_F16 ? PDQ_QSCALE_F16 : dt == PDQ_DT_BF16 ? PDQ_QSCALE_BF16 : -1;
}

static pdq_dtype dtype_of(pdq_qscale_type t) {
    return t == PDQ_QSCALE_F16 ? PDQ_DT_F16 : t == PDQ_QSCALE_BF16 ? PDQ_DT_BF16 : PDQ_DT_F32;
}

pdq_code pdq_qgrid_open(const pdq_safetensors *s, const cJSON *e, const char *name, int rows, int ngroups, int bits,
                        const char *file, pdq_qgrid_view *g, pdq_status *st) {
    memset(g, 0, sizeof *g);
    const cJSON *jt = cJSON_GetObjectItemCaseSensitive(e, "scale_dtype");
    const cJSON *jz = cJSON_GetObjectItemCaseSensitive(e, "zeros");
    if (cJSON_IsString(jt)) {
        if (!strcmp(jt->valuestring, "F16")) g->stype = PDQ_QSCALE_F16;
        else if (!strcmp(jt->valuestring, "BF16")) g->stype = PDQ_QSCALE_BF16;
        else if (strcmp(jt->valuestring, "F32") != 0)
            return pdq_fail(st, PDQ_ERR_FORMAT, "%s: %s: scale_dtype \"%.20s\" is not F32, F16 or BF16", file, name,
                            jt->valuestring);
    }
    const pdq_st_tensor *ts = pdq_st_expect(s, name, ".scales", dtype_of(g->stype), 2, rows, ngroups, file, st);
    if (!ts) return st ? st->code : PDQ_ERR_FORMAT;
    g->scales = ts->data;
    int maxq = (1 << bits) - 1;
    if (cJSON_IsFalse(jz)) {
        const cJSON *sym = cJSON_GetObjectItemCaseSensitive(e, "sym");
        if (!cJSON_IsTrue(sym))
            return pdq_fail(st, PDQ_ERR_FORMAT, "%s: %s stores no zero points but is not symmetric", file, name);
        g->zero = (maxq + 1) / 2;
        return PDQ_OK;
    }
    const pdq_st_tensor *tz = pdq_st_expect(s, name, ".zeros", PDQ_DT_U8, 2, rows, ngroups, file, st);
    if (!tz) return st ? st->code : PDQ_ERR_FORMAT;
    g->zeros = tz->data;
    for (size_t i = 0; i < (size_t)rows * ngroups; i++)
        if (g->zeros[i] > maxq)
            return pdq_fail(st, PDQ_ERR_FORMAT, "%s: %s zero point %d exceeds %d bits", file, name, g->zeros[i], bits);
    return PDQ_OK;
}

int pdq_gidx_group(const int32_t *g_idx, int cols, int ngroups) {
    if (!g_idx) return ngroups == 1 ? cols : 0;
    int G = cols;
    for (int c = 0; c < cols; c++)
        if (g_idx[c] != 0) { G = c; break; }
    if (G < 1 || (cols + G - 1) / G != ngroups) return 0;
    for (int c = 0; c < cols; c++)
        if (g_idx[c] != c / G) return 0;
    return G;
}
