/* The grids of one quantized tensor as model.q.safetensors stores them (format versions 1 and 2,
 * quant_json_check.h): NAME.scales of the entry's scale_dtype (F32 when absent) and NAME.zeros,
 * or no zeros for a symmetric entry with zeros: false (every zero point 2^(bits-1)). One reader
 * for the dequantizing loader, the packed loader and the quantized export. */
#ifndef PDQ_IO_QGRID_H
#define PDQ_IO_QGRID_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "pdq/qscale.h"
#include "pdq/safetensors.h"
#include "pdq/status.h"

typedef struct {
    pdq_qscale_type stype;
    const void *scales;    /* [rows * ngroups] of stype, in the mapped file (any alignment) */
    const uint8_t *zeros;  /* [rows * ngroups], or NULL: every zero point is `zero` */
    int zero;
} pdq_qgrid_view;

/* The grids of tensor `name` (entry e of pdq_quant.json, already checked), [rows, ngroups],
 * bits wide: dtypes and shapes as the entry says, every stored zero point <= 2^bits - 1.
 * Errors name file and tensor. */
pdq_code pdq_qgrid_open(const pdq_safetensors *s, const cJSON *e, const char *name, int rows, int ngroups, int bits,
                        const char *file, pdq_qgrid_view *g, pdq_status *st);

static inline float pdq_qgrid_scale(const pdq_qgrid_view *g, size_t i) { return pdq_qscale_at(g->scales, g->stype, i); }
static inline int pdq_qgrid_zero(const pdq_qgrid_view *g, size_t i) { return g->zeros ? g->zeros[i] : g->zero; }

/* 1 when a tensor with ngroups > 1 stores NAME.g_idx: the entry's g_idx, or (absent) always, as
 * version 1 did. Without it column c is in group c / group. */
static inline int pdq_qgrid_has_gidx(const cJSON *e, int ngroups) {
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(e, "g_idx");
    return ngroups > 1 && (!j || cJSON_IsTrue(j));
}

/* The scale type of a stored scales tensor's dtype; -1 for any other dtype. */
int pdq_qgrid_scale_type(pdq_dtype dt);

#endif
