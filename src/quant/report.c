/* report.json of a quantization run. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>

#include "pdq/file.h"
#include "pdq/quant.h"
#include "pdq/transform.h"

pdq_code pdq_quant_write_report(const char *path, const pdq_qmodel *q, const pdq_quant_eval *ev, pdq_status *st) {
    const pdq_quant_opts *o = &q->opts;
    const pdq_qscheme *s = &o->gptq.scheme;
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "method", o->method == PDQ_QM_GPTQ ? "gptq" : "rtn");
    cJSON_AddNumberToObject(j, "wbits", s->bits);
    cJSON_AddNumberToObject(j, "group", s->group);
    cJSON_AddBoolToObject(j, "partial_groups", s->partial_groups);
    cJSON_AddBoolToObject(j, "sym", s->sym);
    cJSON_AddBoolToObject(j, "per_tensor", s->per_tensor);
    cJSON_AddBoolToObject(j, "mse", s->mse);
    cJSON_AddBoolToObject(j, "actorder", o->gptq.actorder);
    cJSON_AddBoolToObject(j, "static_groups", o->gptq.static_groups);
    cJSON_AddNumberToObject(j, "percdamp", o->gptq.percdamp);
    cJSON_AddBoolToObject(j, "ref_groups", o->gptq.ref_groups);
    cJSON_AddBoolToObject(j, "mse_gptq", o->gptq.mse_gptq);
    if (o->gptq.mse_gptq) {
        cJSON_AddNumberToObject(j, "mse_gptq_steps", o->gptq.mse_gptq_steps);
        cJSON_AddNumberToObject(j, "mse_gptq_range", o->gptq.mse_gptq_range);
    }
    cJSON_AddBoolToObject(j, "orig_inputs", o->orig_inputs);
    cJSON_AddNumberToObject(j, "nsamples", q->nsamples);
    cJSON_AddNumberToObject(j, "seq_len", q->seq_len);
    cJSON_AddNumberToObject(j, "seed", (double)o->seed);
    if (o->embed_bits) cJSON_AddNumberToObject(j, "embed_bits", o->embed_bits);
    else cJSON_AddStringToObject(j, "embed_bits", "none");
    if (o->lm_head_bits) cJSON_AddNumberToObject(j, "lm_head_bits", o->lm_head_bits);
    else cJSON_AddStringToObject(j, "lm_head_bits", "none");
    cJSON_AddStringToObject(j, "lm_head_method", o->lm_head_gptq ? "gptq" : "rtn");
    if (o->transforms) cJSON_AddItemToObject(j, "transforms", pdq_transform_json(o->transforms));
    cJSON_AddNumberToObject(j, "seconds", q->seconds);
    double tl = 0, tr = 0;
    cJSON *mods = cJSON_AddArrayToObject(j, "modules");
    for (int i = 0; i < q->n; i++) {
        const pdq_qmodule *m = &q->mods[i];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "name", m->name);
        cJSON_AddNumberToObject(e, "bits", m->bits);
        cJSON_AddNumberToObject(e, "group", m->group);
        cJSON_AddNumberToObject(e, "rows", m->r.rows);
        cJSON_AddNumberToObject(e, "cols", m->r.cols);
        if (m->r.rtn_loss > 0) {
            cJSON_AddNumberToObject(e, "gptq_loss", m->r.loss);
            cJSON_AddNumberToObject(e, "rtn_loss", m->r.rtn_loss);
            tl += m->r.loss;
            tr += m->r.rtn_loss;
        }
        cJSON_AddNumberToObject(e, "seconds", m->seconds);
        cJSON_AddItemToArray(mods, e);
    }
    if (tr > 0) {
        cJSON_AddNumberToObject(j, "total_gptq_loss", tl);
        cJSON_AddNumberToObject(j, "total_rtn_loss", tr);
    }
    if (ev && ev->has) {
        cJSON *e = cJSON_AddObjectToObject(j, "eval");
        cJSON_AddStringToObject(e, "file", ev->file);
        cJSON_AddNumberToObject(e, "max_len", ev->max_len);
        cJSON_AddNumberToObject(e, "stride", ev->stride);
        cJSON_AddNumberToObject(e, "tokens", (double)ev->tokens);
        cJSON_AddNumberToObject(e, "fp32_ppl", ev->fp32_ppl);
        cJSON_AddNumberToObject(e, "quant_ppl", ev->quant_ppl);
        cJSON_AddNumberToObject(e, "ppl_increase", ev->quant_ppl - ev->fp32_ppl);
    }
    char *txt = cJSON_Print(j);
    cJSON_Delete(j);
    if (!txt) return pdq_fail(st, PDQ_ERR_NOMEM, "out of memory");
    pdq_code rc = pdq_file_write_text(path, txt, 1, NULL, st); /* atomic: pdq/file.h */
    free(txt);
    return rc;
}
