/* The steps shared by the bench sections that export their own quantized model: an RTN w4
 * checkpoint, then int16 grids calibrated on `windows` deterministic windows of S ids (right
 * padding, no decode steps) saved as QDIR/ptq.json. A header, not a .c file: each .c under
 * bench/ is its own executable. */
#ifndef PDQ_BENCH_PTQ_H
#define PDQ_BENCH_PTQ_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pdq/ptq.h"
#include "pdq/quant.h"
#include "pdq/runtime.h"

/* RTN 4-bit per-channel weights of m (uint8 embedding/lm_head), saved as a quantized checkpoint
 * in qdir next to the copies from src; on error st says why. */
static inline pdq_code bench_rtn_w4(pdq_model *m, const char *src, const char *qdir, pdq_status *st) {
    pdq_quant_opts qo;
    pdq_quant_opts_default(&qo, 4);
    qo.method = PDQ_QM_RTN;
    qo.quiet = 1;
    pdq_qmodel q;
    memset(&q, 0, sizeof q);
    pdq_code rc = pdq_quantize_model(m, &qo, NULL, 0, 0, &q, st);
    if (rc == PDQ_OK) rc = pdq_quant_save(qdir, src, m, &q, st);
    pdq_qmodel_free(&q);
    return rc;
}

/* On success *out is the calibrated PTQ state (the caller frees it); on error st says why and
 * *out may still need pdq_ptq_free. */
static inline pdq_code bench_calibrate(pdq_model *m, int S, const pdq_static_opts *so, int windows, const char *qdir,
                                       pdq_ptq **out, pdq_status *st) {
    pdq_ptq_opts po;
    pdq_ptq_opts_default(&po);
    pdq_rt *rt = NULL;
    pdq_code rc = PDQ_OK;
    int32_t *ids = malloc(sizeof(int32_t) * (size_t)S * windows);
    if (!ids) rc = pdq_fail(st, PDQ_ERR_NOMEM, "ids");
    for (int i = 0; rc == PDQ_OK && i < S * windows; i++) ids[i] = i % S ? 1 + (int32_t)((i * 7919L) % (m->cfg.vocab_size - 1)) : 1;
    if (rc == PDQ_OK) {
        pdq_ptq_quantize_norms(m);
        rc = pdq_ptq_create(m, S, so, &po, out, st);
    }
    if (rc == PDQ_OK) rc = pdq_rt_create(m, 1, S, so, &rt, st);
    pdq_ptq_calib_opts co = {.decode_steps = 0, .pad = PDQ_PAD_RIGHT};
    if (rc == PDQ_OK) rc = pdq_ptq_calibrate(*out, rt, ids, windows, &co, st);
    pdq_rt_free(rt);
    free(ids);
    char path[4400];
    snprintf(path, sizeof path, "%s/ptq.json", qdir);
    if (rc == PDQ_OK) rc = pdq_ptq_save(*out, path, NULL, st);
    return rc;
}

#endif
