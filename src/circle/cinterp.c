/* Interpreter of Circle graphs: the imported graph is turned into a float graph (constants
 * dequantized, quantized activations carried as their dequantized values) and run by the IR
 * interpreter with an edge hook that requantizes every op output (and every graph input) to the
 * tensor's own grid, so a quantized file computes exactly the fake-quant in-memory numbers. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "circle/cinterp_share.h"
#include "pdq/circle_export.h"
#include "pdq/file.h"
#include "pdq/qexec.h"
#include "pdq/requant.h"

struct pdq_cgraph {
    pdq_graph *file;     /* as imported */
    pdq_graph *exec;     /* float version */
    pdq_interp *ip;
    pdq_tdtype *qdt;     /* [n_tensors] stored dtype of quantized tensors */
    void **in_buf, **out_buf;
    int quantized;
    pdq_exec_opts eo;
    pdq_qexec *qx;       /* integer mode: runs `file` itself */
    const pdq_cgraph *like; /* while made: a float graph whose float copies of equal constants are borrowed */
    char *in_codes;      /* [n_inputs] 1: input fed as codes (pdq_cg_input_codes) */
};

/* The codes a dtype holds. A float tensor's qparams are informational (any zero point is
 * accepted on import), so its grid is bounded only by int64. */
static void qrange(pdq_tdtype dt, int64_t *lo, int64_t *hi) {
    switch (dt) {
    case PDQ_TI16: *lo = -32768; *hi = 32767; return;
    case PDQ_TU8: *lo = 0; *hi = 255; return;
    case PDQ_TU4: *lo = 0; *hi = 15; return;
    case PDQ_TI32: *lo = INT32_MIN; *hi = INT32_MAX; return;
    default: *lo = INT64_MIN; *hi = INT64_MAX; return;
    }
}

int64_t pdq_cg_quantize_value(const pdq_tensor *t, float x) {
    int64_t lo, hi;
    qrange(t->dtype, &lo, &hi);
    return pdq_rq_code((double)x, (double)t->q->scale[0], t->q->zero_point[0], lo, hi);
}

float pdq_cg_dequantize_value(const pdq_tensor *t, int64_t q) {
    return (float)(((double)q - (double)t->q->zero_point[0]) * (double)t->q->scale[0]); /* no int64 overflow */
}

/* Requantizes one produced edge in place. */
static pdq_code requant_hook(void *ctx, const pdq_graph *g, int op_index, int tid, float *data, pdq_status *st) {
    pdq_cgraph *cg = ctx;
    const pdq_tensor *t = &g->tensors[tid];
    (void)op_index;
    if (!t->q) return PDQ_OK;
    int64_t lo, hi, zp = t->q->zero_point[0];
    qrange(cg->qdt[tid], &lo, &hi);
    double s = (double)t->q->scale[0];
    size_t n = pdq_tensor_count(t);
    if (!(s > 0)) return pdq_fail(st, PDQ_ERR_FORMAT, "tensor %s: scale %g", t->name, s);
    for (size_t i = 0; i < n; i++) data[i] = (float)pdq_rq_value(pdq_rq_code((double)data[i], s, zp, lo, hi), s, zp);
    return PDQ_OK;
}

/* Dequantized float copy of a constant: scale[c] * (q - zp[c]) along quantized_dim. */
static float *dequant_const(const pdq_tensor *t, pdq_status *st) {
    size_t n = pdq_tensor_count(t);
    float *out = malloc(sizeof(float) * (n ? n : 1));
    if (!out) { pdq_fail(st, PDQ_ERR_NOMEM, "dequantizing %s", t->name); return NULL; }
    const pdq_qparams *q = t->q;
    size_t inner = 1, cols = q->block ? (size_t)t->shape[1] : 1;
    size_t groups = q->block ? (cols + (size_t)q->block - 1) / (size_t)q->block : 1;
    int qd = q->n > 1 ? q->quantized_dim : 0;
    for (int d = qd + 1; d < t->ndim; d++) inner *= (size_t)t->shape[d];
    for (size_t i = 0; i < n; i++) {
        int64_t v;
        switch (t->dtype) {
        case PDQ_TI16: v = ((const int16_t *)t->data)[i]; break;
        case PDQ_TU8: v = ((const uint8_t *)t->data)[i]; break;
        case PDQ_TU4: v = pdq_u4_at(t->data, i); break;
        case PDQ_TI32: v = ((const int32_t *)t->data)[i]; break;
        case PDQ_TI64: v = ((const int64_t *)t->data)[i]; break;
        default: v = 0; break;
        }
        size_t c = q->n > 1 ? (i / inner) % (size_t)q->n : 0;
        if (q->block) c = i / cols * groups + i % cols / (size_t)q->block; /* [row][group] */
        out[i] = (float)(((double)v - (double)q->zero_point[c]) * (double)q->scale[c]);
    }
    return out;
}

/* The float copy `like` already made of a constant equal to t (same name, dtype, shape, qparams
 * and stored bytes: the files of one export hold the same weights), or NULL. */
static const float *shared_copy(const pdq_cgraph *like, const pdq_tensor *t) {
    if (!like || !like->exec) return NULL;
    int j = pdq_graph_find(like->file, t->name), k = pdq_graph_find(like->exec, t->name);
    if (j < 0 || k < 0) return NULL;
    const pdq_tensor *u = &like->file->tensors[j];
    if (u->kind != PDQ_TK_CONST || u->dtype != t->dtype || u->ndim != t->ndim || !u->q || u->q->n != t->q->n ||
        u->q->quantized_dim != t->q->quantized_dim || u->q->block != t->q->block || like->exec->tensors[k].dtype != PDQ_TF32)
        return NULL;
    for (int d = 0; d < t->ndim; d++)
        if (u->shape[d] != t->shape[d]) return NULL;
    if (memcmp(u->q->scale, t->q->scale, sizeof(float) * (size_t)t->q->n) ||
        memcmp(u->q->zero_point, t->q->zero_point, sizeof(int64_t) * (size_t)t->q->n) ||
        memcmp(u->data, t->data, pdq_tensor_bytes(t)))
        return NULL;
    if (u->file_backed) pdq_file_drop_pages(u->data, pdq_tensor_bytes(u)); /* read back for the comparison */
    return like->exec->tensors[k].data;
}

/* The float graph: same structure, quantized constants dequantized, activations float. */
static pdq_code make_exec(pdq_cgraph *cg, pdq_status *st) {
    const pdq_graph *f = cg->file;
    pdq_graph *e;
    pdq_code rc = pdq_graph_new(f->name, &e, st);
    if (rc != PDQ_OK) return rc;
    cg->exec = e;
    cg->qdt = calloc((size_t)f->n_tensors + 1, sizeof(pdq_tdtype));
    if (!cg->qdt) return pdq_fail(st, PDQ_ERR_NOMEM, "circle interpreter");
    int *ids = malloc(sizeof(int) * (size_t)(f->n_tensors ? f->n_tensors : 1));
    if (!ids) return pdq_fail(st, PDQ_ERR_NOMEM, "circle interpreter");
    for (int i = 0; i < f->n_tensors; i++) ids[i] = -1;
    for (int k = 0; k < f->n_inputs && rc == PDQ_OK; k++) {
        const pdq_tensor *t = &f->tensors[f->inputs[k]];
        pdq_tdtype dt = t->q ? PDQ_TF32 : t->dtype;
        if (t->q && t->q->n != 1) rc = pdq_fail(st, PDQ_ERR_UNSUPPORTED, "input %s: per-channel activation qparams", t->name);
        else if (dt != PDQ_TF32 && dt != PDQ_TI32) /* pdq_cg_input promises int32 ids or float values */
            rc = pdq_fail(st, PDQ_ERR_UNSUPPORTED, "input %s: %s without quantization parameters (float32, int32 or quantized)",
                          t->name, pdq_tdtype_name(dt));
        else if ((ids[f->inputs[k]] = pdq_graph_input(e, t->name, dt, t->ndim, t->shape, st)) < 0) rc = st->code;
    }
    for (int i = 0; i < f->n_tensors && rc == PDQ_OK; i++) {
        const pdq_tensor *t = &f->tensors[i];
        if (t->kind != PDQ_TK_CONST) continue;
        int floaty = t->q && t->dtype != PDQ_TF32;
        /* integer operands (shapes, perms, indices) stay as they are */
        const float *shared = floaty ? shared_copy(cg->like, t) : NULL;
        if (shared) {
            ids[i] = pdq_graph_const(e, t->name, PDQ_TF32, t->ndim, t->shape, shared, 0, st);
        } else if (floaty) {
            float *d = dequant_const(t, st);
            if (!d) { rc = st->code; break; }
            ids[i] = pdq_graph_const_owned(e, t->name, PDQ_TF32, t->ndim, t->shape, d, st);
        } else {
            ids[i] = pdq_graph_const(e, t->name, t->dtype, t->ndim, t->shape, t->data, 0, st);
        }
        if (ids[i] < 0) rc = st->code;
        /* the file's bytes are read again only by an equal constant of a later file */
        else if (floaty && t->file_backed) pdq_file_drop_pages(t->data, pdq_tensor_bytes(t));
    }
    int in[PDQ_CIRCLE_MAX_IO + 1];
    for (int o = 0; o < f->n_ops && rc == PDQ_OK; o++) {
        const pdq_op *op = &f->ops[o];
        for (int i = 0; i < op->n_in; i++) in[i] = ids[op->in[i]];
        const pdq_tensor *y = &f->tensors[op->out[0]];
        int id = pdq_graph_op(e, op->type, in, op->n_in, op, y->name, st);
        if (id < 0) { rc = st->code; break; }
        if (y->q && y->q->n != 1) { rc = pdq_fail(st, PDQ_ERR_UNSUPPORTED, "tensor %s: per-channel activation qparams", y->name); break; }
        if (y->q && e->tensors[id].dtype != PDQ_TF32)
            rc = pdq_fail(st, PDQ_ERR_UNSUPPORTED, "tensor %s: quantized output of a non-float op", y->name);
        ids[op->out[0]] = id;
    }
    for (int k = 0; k < f->n_outputs && rc == PDQ_OK; k++) {
        const pdq_tensor *y = &e->tensors[ids[f->outputs[k]]];
        if (y->dtype != PDQ_TF32) /* pdq_cg_output promises float values */
            rc = pdq_fail(st, PDQ_ERR_UNSUPPORTED, "output %s: computes %s, the interpreter returns float32", y->name,
                          pdq_tdtype_name(y->dtype));
        else rc = pdq_graph_mark_output(e, ids[f->outputs[k]], st);
    }
    /* qparams of activations ride along for the hook */
    for (int i = 0; i < f->n_tensors && rc == PDQ_OK; i++) {
        const pdq_tensor *t = &f->tensors[i];
        if (!t->q || t->kind == PDQ_TK_CONST || ids[i] < 0) continue;
        if (t->dtype == PDQ_TF32) continue; /* float tensor with informational qparams */
        pdq_qparams *q = calloc(1, sizeof *q);
        if (q) { q->scale = malloc(sizeof(float)); q->zero_point = malloc(sizeof(int64_t)); }
        if (!q || !q->scale || !q->zero_point) {
            if (q) { free(q->scale); free(q->zero_point); free(q); }
            rc = pdq_fail(st, PDQ_ERR_NOMEM, "circle interpreter");
            break;
        }
        q->n = 1;
        q->scale[0] = t->q->scale[0];
        q->zero_point[0] = t->q->zero_point[0];
        e->tensors[ids[i]].q = q;
        cg->qdt[ids[i]] = t->dtype;
        cg->quantized = 1;
    }
    free(ids);
    return rc;
}

void pdq_cg_free(pdq_cgraph *cg) {
    if (!cg) return;
    if (cg->file) {
        for (int i = 0; i < cg->file->n_inputs && cg->in_buf; i++) free(cg->in_buf[i]);
        for (int i = 0; i < cg->file->n_outputs && cg->out_buf; i++) free(cg->out_buf[i]);
    }
    pdq_qexec_free(cg->qx);
    free(cg->in_codes);
    free(cg->in_buf);
    free(cg->out_buf);
    pdq_interp_free(cg->ip);
    pdq_graph_free(cg->exec);
    pdq_graph_free(cg->file);
    free(cg->qdt);
    free(cg);
}

static int file_quantized(const pdq_graph *g) {
    for (int i = 0; i < g->n_tensors; i++) {
        const pdq_tensor *t = &g->tensors[i];
        if (t->kind != PDQ_TK_CONST && t->q && t->dtype != PDQ_TF32) return 1;
    }
    return 0;
}

/* Integer mode: the executor runs the file's graph; float I/O buffers bound to it. */
static pdq_code make_int(pdq_cgraph *cg, pdq_status *st) {
    const pdq_graph *f = cg->file;
    cg->quantized = 1;
    pdq_code rc = pdq_qexec_create(f, &cg->eo, &cg->qx, st);
    if (rc != PDQ_OK) return rc;
    cg->in_buf = calloc((size_t)f->n_inputs + 1, sizeof(void *));
    cg->out_buf = calloc((size_t)f->n_outputs + 1, sizeof(void *));
    cg->in_codes = calloc((size_t)f->n_inputs + 1, 1);
    if (!cg->in_buf || !cg->out_buf || !cg->in_codes) return pdq_fail(st, PDQ_ERR_NOMEM, "circle interpreter");
    for (int k = 0; k < f->n_inputs + f->n_outputs && rc == PDQ_OK; k++) {
        int is_out = k >= f->n_inputs, i = is_out ? k - f->n_inputs : k;
        int tid = is_out ? f->outputs[i] : f->inputs[i];
        const pdq_tensor *t = &f->tensors[tid];
        if (t->q && t->q->n != 1) return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "%s: per-channel activation qparams", t->name);
        size_t es = t->q && t->dtype != PDQ_TF32 ? sizeof(float) : pdq_tdtype_size(t->dtype);
        size_t nb = pdq_tensor_count(t) * es;
        void *b = calloc(nb ? nb : 1, 1);
        if (!b) return pdq_fail(st, PDQ_ERR_NOMEM, "%s %s", is_out ? "output" : "input", t->name);
        if (is_out) cg->out_buf[i] = b;
        else cg->in_buf[i] = b;
        rc = pdq_qexec_bind(cg->qx, tid, b, st);
    }
    return rc;
}

static pdq_code from_graph(pdq_graph *g, const pdq_exec_opts *eo, const pdq_cgraph *like, pdq_cgraph **out,
                           pdq_status *st) {
    pdq_cgraph *cg = calloc(1, sizeof *cg);
    if (!cg) { pdq_graph_free(g); return pdq_fail(st, PDQ_ERR_NOMEM, "circle interpreter"); }
    cg->file = g;
    cg->like = like;
    if (eo) cg->eo = *eo;
    else pdq_exec_opts_default(&cg->eo);
    pdq_code rc = pdq_graph_validate(g, st); /* graphs from anywhere, not only the importer */
    if (rc != PDQ_OK) { pdq_cg_free(cg); return rc; }
    if (cg->eo.mode == PDQ_EXEC_INT && file_quantized(g)) {
        rc = make_int(cg, st);
        if (rc != PDQ_OK) { pdq_cg_free(cg); return rc; }
        *out = cg;
        return PDQ_OK;
    }
    rc = make_exec(cg, st);
    cg->like = NULL;
    if (rc == PDQ_OK) rc = pdq_interp_create(cg->exec, &cg->ip, st);
    if (rc == PDQ_OK) {
        cg->in_buf = calloc((size_t)cg->exec->n_inputs + 1, sizeof(void *));
        cg->out_buf = calloc((size_t)cg->exec->n_outputs + 1, sizeof(void *));
        if (!cg->in_buf || !cg->out_buf) rc = pdq_fail(st, PDQ_ERR_NOMEM, "circle interpreter");
    }
    for (int i = 0; rc == PDQ_OK && i < cg->exec->n_inputs; i++) {
        const pdq_tensor *t = &cg->exec->tensors[cg->exec->inputs[i]];
        size_t nb = pdq_tensor_count(t) * pdq_tdtype_size(t->dtype);
        if (!(cg->in_buf[i] = calloc(nb ? nb : 1, 1))) rc = pdq_fail(st, PDQ_ERR_NOMEM, "input %s", t->name);
        else rc = pdq_interp_bind(cg->ip, cg->exec->inputs[i], cg->in_buf[i], st);
    }
    for (int i = 0; rc == PDQ_OK && i < cg->exec->n_outputs; i++) {
        const pdq_tensor *t = &cg->exec->tensors[cg->exec->outputs[i]];
        size_t nb = pdq_tensor_count(t) * pdq_tdtype_size(t->dtype);
        if (!(cg->out_buf[i] = calloc(nb ? nb : 1, 1))) rc = pdq_fail(st, PDQ_ERR_NOMEM, "output %s", t->name);
        else rc = pdq_interp_bind(cg->ip, cg->exec->outputs[i], cg->out_buf[i], st);
    }
    /* float mode: dequantized constants, float activations (no requantization) */
    if (rc == PDQ_OK && cg->quantized && cg->eo.mode != PDQ_EXEC_FLOAT) pdq_interp_set_hook(cg->ip, requant_hook, cg);
    if (rc != PDQ_OK) { pdq_cg_free(cg); return rc; }
    *out = cg;
    return PDQ_OK;
}

pdq_code pdq_cg_from_graph_opts(pdq_graph *g, const pdq_exec_opts *eo, pdq_cgraph **out, pdq_status *st) {
    return from_graph(g, eo, NULL, out, st);
}

pdq_code pdq_cg_from_graph(pdq_graph *g, pdq_cgraph **out, pdq_status *st) {
    return pdq_cg_from_graph_opts(g, NULL, out, st);
}

pdq_code pdq_cg_open_like(const char *path, const pdq_exec_opts *eo, const pdq_cgraph *like, pdq_cgraph **out,
                          pdq_status *st) {
    pdq_graph *g;
    pdq_code rc = pdq_circle_load_graph(path, &g, st);
    if (rc != PDQ_OK) return rc;
    rc = from_graph(g, eo, like, out, st);
    if (rc != PDQ_OK) return pdq_wrap(st, "%s", path);
    return PDQ_OK;
}

pdq_code pdq_cg_open_opts(const char *path, const pdq_exec_opts *eo, pdq_cgraph **out, pdq_status *st) {
    return pdq_cg_open_like(path, eo, NULL, out, st);
}

const void *pdq_cg_const_data(const pdq_cgraph *cg, const char *name) {
    const pdq_graph *g = cg->exec ? cg->exec : cg->file;
    int k = pdq_graph_find(g, name);
    return k < 0 ? NULL : g->tensors[k].data;
}

void *pdq_cg_input_codes(pdq_cgraph *cg, int i) {
    if (!cg->qx || i < 0 || i >= cg->file->n_inputs) return NULL;
    int tid = cg->file->inputs[i];
    const pdq_tensor *t = &cg->file->tensors[tid];
    if (!t->q || t->dtype == PDQ_TF32) return NULL;
    cg->in_codes[i] = 1;
    pdq_qexec_bind(cg->qx, tid, NULL, NULL);
    return pdq_qexec_codes(cg->qx, tid);
}

const void *pdq_cg_output_codes(pdq_cgraph *cg, int i) {
    if (!cg->qx || i < 0 || i >= cg->file->n_outputs) return NULL;
    int tid = cg->file->outputs[i];
    const pdq_tensor *t = &cg->file->tensors[tid];
    if (!t->q || t->dtype == PDQ_TF32) return NULL;
    return pdq_qexec_codes(cg->qx, tid);
}

pdq_exec_mode pdq_cg_mode(const pdq_cgraph *cg) { return cg->qx ? PDQ_EXEC_INT : cg->eo.mode == PDQ_EXEC_INT ? PDQ_EXEC_FAKE : cg->eo.mode; }

pdq_code pdq_cg_open(const char *path, pdq_cgraph **out, pdq_status *st) {
    return pdq_cg_open_opts(path, NULL, out, st);
}

size_t pdq_cg_weight_bytes(const pdq_cgraph *cg) {
    const pdq_graph *g = cg->qx ? cg->file : cg->exec;
    unsigned char *table = calloc((size_t)g->n_tensors + 1, 1);
    if (!table) return 0;
    for (int i = 0; i < g->n_ops; i++)
        if (g->ops[i].type == PDQ_OP_GATHER) table[g->ops[i].in[0]] = 1;
    size_t n = 0;
    for (int t = 0; t < g->n_tensors; t++)
        if (g->tensors[t].kind == PDQ_TK_CONST && !table[t]) n += pdq_tensor_bytes(&g->tensors[t]);
    free(table);
    return n;
}

const pdq_graph *pdq_cg_graph(const pdq_cgraph *cg) { return cg->file; }
int pdq_cg_quantized(const pdq_cgraph *cg) { return cg->quantized; }
int pdq_cg_n_inputs(const pdq_cgraph *cg) { return cg->file->n_inputs; }
int pdq_cg_n_outputs(const pdq_cgraph *cg) { return cg->file->n_outputs; }
void *pdq_cg_input(pdq_cgraph *cg, int i) { return (i >= 0 && i < cg->file->n_inputs) ? cg->in_buf[i] : NULL; }
const float *pdq_cg_output(pdq_cgraph *cg, int i) {
    return (i >= 0 && i < cg->file->n_outputs) ? cg->out_buf[i] : NULL;
}
const pdq_tensor *pdq_cg_input_tensor(const pdq_cgraph *cg, int i) {
    return &cg->file->tensors[cg->file->inputs[i]];
}
const pdq_tensor *pdq_cg_output_tensor(const pdq_cgraph *cg, int i) {
    return &cg->file->tensors[cg->file->outputs[i]];
}

pdq_code pdq_cg_run(pdq_cgraph *cg, pdq_status *st) {
    pdq_code rc = cg->qx ? pdq_qexec_run(cg->qx, st) : pdq_interp_run(cg->ip, st);
    if (rc != PDQ_OK) return pdq_wrap(st, "running %s", cg->file->name);
    return PDQ_OK;
}
