/* Integer FULLY_CONNECTED: int16 (or uint8) activations x uint4/uint8 weight codes, per-row or
 * per-tensor scale and zero point, or one per row and group of columns.
 *   acc[m][r] = sum_k x[m][k] * w[r][k] - zw[r] * sum_k x[m][k]      (exact, int64)
 *   y[m][r]   = acc * (sx * sw[r]) (+ bias[r]), requantized to the output grid.
 * Groups: acc[m][r][g] the same over group g's columns, and y[m][r] = sum over g, in group order
 * from 0.0, of acc[m][r][g] * (sx * sw[r][g]) in double (+ bias[r]); with one group this is the
 * per-row rule, bit for bit.
 * The exact sums come from src/kernels/qx_fc_i16_*.c (each variant's overflow bound is there);
 * this file plans the tiles and applies the rule. */
#include <stdlib.h>
#include <string.h>

#include "kernels/qmatmul.h"
#include "kernels/qx_kernels.h"
#include "kernels/rows4.h"
#include "ops/qx_kernel.h"
#include "pdq/file.h"
#include "pdq/graph.h"
#include "pdq/safetensors.h"

#define GROUP_ROWS 64   /* weight rows per call of the grouped exact sums (decode) */

/* The decode form of a uint4 or uint8 weight for the packed kernels: the 4-row layout where the
 * shape allows, zero points 0 and scales 1 (the executor applies its own), and room for the
 * prepared activation rows. Rows of whole bytes are the graph's own bytes (uint4 with an even
 * width is already packed per row); an odd uint4 width is repacked a row at a time. When the 4-row
 * layout copied the codes and the graph's lie in a file mapping, their pages are given back. */
static pdq_code packed_decode(qx_prep *p, const pdq_tensor *w, pdq_status *st) {
    int u4 = w->dtype == PDQ_TU4;
    size_t rb = u4 ? (size_t)(p->fin + 1) / 2 : (size_t)p->fin;
    uint8_t *codes = NULL;
    unsigned char *grid = malloc((sizeof(float) + 1) * (size_t)p->fout);
    p->qm = calloc(1, sizeof *p->qm);
    if (u4 && p->fin % 2) codes = malloc(rb * (size_t)p->fout + p->fin);
    if (!grid || !p->qm || (u4 && p->fin % 2 && !codes)) {
        free(codes);
        free(grid);
        return pdq_fail(st, PDQ_ERR_NOMEM, "integer mode: packed copy of %s", w->name);
    }
    if (codes) {
        uint8_t *row = codes + rb * (size_t)p->fout; /* one row of codes, scratch */
        for (int r = 0; r < p->fout; r++) {
            pdq_unpack4_at(w->data, (size_t)r * p->fin, (size_t)p->fin, row);
            pdq_pack4(row, (size_t)p->fin, codes + (size_t)r * rb);
        }
    }
    float *scales = (float *)(void *)grid;
    uint8_t *zeros = grid + sizeof(float) * (size_t)p->fout;
    for (int r = 0; r < p->fout; r++) {
        scales[r] = 1.0f;
        zeros[r] = 0;
    }
    pdq_code rc = pdq_qmatrix_init(p->qm, u4 ? PDQ_QT_U4 : PDQ_QT_U8, p->fout, p->fin, 0, codes ? codes : w->data, scales,
                                   zeros, NULL, w->name, st);
    if (rc) {
        free(codes);
        free(grid);
        return rc;
    }
    p->qm->owned = grid;
    p->qm->owned_codes = codes; /* replaced (and freed) by the 4-row copy */
    if ((rc = pdq_qmatrix_pack_rows4(p->qm, st))) return rc;
    if (w->file_backed && p->qm->codes != (const uint8_t *)w->data) pdq_file_drop_pages(w->data, pdq_tensor_bytes(w));
    p->xbytes = (pdq_qexact_bytes(p->qm) + 63) / 64 * 64;
    if (!(p->xbuf = aligned_alloc(64, p->xbytes * (size_t)(p->rows ? p->rows : 1))))
        return pdq_fail(st, PDQ_ERR_NOMEM, "integer mode: activation rows of %s", w->name);
    return PDQ_OK;
}

/* The packed kernels' context at the executor's level: its switches, which pick the same level. */
static pdq_qctx packed_ctx(const pdq_qexec *x) {
    return (pdq_qctx){.force_scalar = x->force_scalar, .no_avx512 = x->no_avx512};
}

pdq_code pdq_qx_fc_prepare(pdq_qexec *x, int oi, pdq_status *st) {
    const pdq_graph *g = x->g;
    const pdq_op *op = &g->ops[oi];
    qx_prep *p = &x->prep[oi];
    const pdq_tensor *xt = &g->tensors[op->in[0]], *w = &g->tensors[op->in[1]];
    if (w->kind != PDQ_TK_CONST || w->ndim != 2)
        return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "integer mode: weight %s must be a 2-d constant", w->name);
    if (xt->kind == PDQ_TK_CONST)
        return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "integer mode: constant FC input %s", xt->name);
    p->fout = w->shape[0];
    p->fin = w->shape[1];
    p->rows = (int)(pdq_tensor_count(xt) / (size_t)p->fin);
    if (op->n_in == 3) {
        const pdq_tensor *b = &g->tensors[op->in[2]];
        if (b->kind != PDQ_TK_CONST || b->dtype != PDQ_TF32 || b->q || (int)pdq_tensor_count(b) != p->fout)
            return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "integer mode: bias %s must be a float32 constant of %d values", b->name,
                            p->fout);
        p->bias = b->data;
    }
    const qx_t *xq = &x->t[op->in[0]];
    int wq = (w->dtype == PDQ_TU4 || w->dtype == PDQ_TU8) && w->q;
    if (w->dtype == PDQ_TF32 && !w->q) {
        p->wf = w->data;
        return PDQ_OK; /* double fallback */
    }
    if (!wq)
        return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "integer mode: weight %s of dtype %s%s", w->name, pdq_tdtype_name(w->dtype),
                        w->q ? "" : " without qparams");
    p->group = w->q->block ? w->q->block : p->fin;
    p->ngroups = (p->fin + p->group - 1) / p->group;
    /* a group's 4 x 4 tile sums fit int32: |sum| <= group * max code * 32768 */
    p->group_i32 = p->ngroups > 1 && (int64_t)p->group * (w->dtype == PDQ_TU4 ? 15 : 255) * 32768 < INT32_MAX;
    if (w->q->block ? w->q->n != p->fout * p->ngroups : w->q->n != 1 && (w->q->n != p->fout || w->q->quantized_dim != 0))
        return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "integer mode: weight %s: %d scales, need 1, one per output row (%d) or "
                        "one per row and group", w->name, w->q->n, p->fout);
    if (!xq->quant) {
        /* float activations with a quantized weight: dequantized weight, double fallback */
        return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "integer mode: float input %s of a quantized weight %s", xt->name, w->name);
    }
    if (xq->dt == PDQ_TI16 && xq->zp != 0)
        return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "integer mode: int16 input %s with zero point %lld (symmetric only)",
                        xt->name, (long long)xq->zp);
    p->int_path = 1;
    p->w = w->data;
    size_t ng = (size_t)p->ngroups, nq = (size_t)p->fout * ng;
    p->sx = xq->s;
    if (ng > 1) { /* compact grids where the values allow (group_grids reads either form; n == out * ng) */
        int shared = 1, f16 = 1;
        for (size_t i = 0; i < nq && (shared || f16); i++) {
            shared &= w->q->zero_point[i] == w->q->zero_point[i % ng];
            f16 &= w->q->scale[i] >= 0.0f && pdq_f16_to_f32(pdq_f32_to_f16(w->q->scale[i])) == w->q->scale[i];
        }
        p->gz_stride = shared ? 0 : ng;
        p->gz = malloc(shared ? GROUP_ROWS * ng : nq); /* shared: its row repeated for the kernels' [rows][ngroups] */
        if (f16 && (p->gs16 = malloc(sizeof(uint16_t) * nq)))
            for (size_t i = 0; i < nq; i++) p->gs16[i] = pdq_f32_to_f16(w->q->scale[i]);
        else p->gs = w->q->scale;
        size_t wide = (size_t)pdq_pool_threads(x->pool) * GROUP_ROWS * ng * sizeof(float);
        if (p->gs16 && !(p->gwide = malloc(wide))) return pdq_fail(st, PDQ_ERR_NOMEM, "integer mode: FC %s", w->name);
    } else {
        p->zw = malloc(sizeof(int32_t) * nq);
        p->sw = malloc(sizeof(double) * nq);
    }
    p->sumx = malloc(sizeof(int64_t) * (size_t)(p->rows ? p->rows : 1) * ng);
    if (xq->dt == PDQ_TU8) p->xs = malloc(sizeof(int16_t) * pdq_tensor_count(xt));
    if ((ng > 1 ? !p->gz : !p->zw || !p->sw) || !p->sumx || (xq->dt == PDQ_TU8 && !p->xs))
        return pdq_fail(st, PDQ_ERR_NOMEM, "integer mode: FC %s", w->name);
    int hi = w->dtype == PDQ_TU4 ? 15 : 255;
    for (size_t i = 0; i < nq; i++) {
        size_t c = w->q->n == 1 ? 0 : i;
        int64_t z = w->q->zero_point[c];
        double s = (double)w->q->scale[c];
        if (z < 0 || z > hi || !(s >= 0))
            return pdq_fail(st, PDQ_ERR_FORMAT, "integer mode: weight %s row %zu group %zu: zero point %lld / scale %g",
                            w->name, i / ng, i % ng, (long long)z, s);
        p->any_zw |= z != 0;
        if (ng > 1) {
            if (p->gz_stride || i < ng) p->gz[i] = (uint8_t)z;
        } else {
            p->zw[i] = (int32_t)z;
            p->sw[i] = xq->s * s; /* the one double product sx * sw[r] */
        }
    }
    if (ng > 1 && !p->gz_stride)
        for (int k = 1; k < GROUP_ROWS; k++) memcpy(p->gz + (size_t)k * ng, p->gz, ng);
    /* grouped decode: the packed exact sums per group where a SIMD kernel has them (uint4, groups
     * of 32k columns, AVX2 or AVX-512 VNNI), else the tiles group by group; the scalar level
     * keeps to the reference loops */
    int simd = x->level != PDQ_LEVEL_SCALAR;
    pdq_qctx kc = packed_ctx(x);
    if (simd && p->rows < 4 && p->ngroups > 1 &&
        pdq_qexact_groups_fast(&kc, w->dtype == PDQ_TU4 ? PDQ_QT_U4 : PDQ_QT_U8, p->group)) {
        size_t n = (size_t)pdq_pool_threads(x->pool) * GROUP_ROWS * ng;
        if (!(p->gsum = malloc(sizeof(int64_t) * n))) return pdq_fail(st, PDQ_ERR_NOMEM, "integer mode: FC %s", w->name);
        return packed_decode(p, w, st);
    }
    if (simd && p->rows < 4 && p->ngroups == 1) return packed_decode(p, w, st);
    if (w->dtype == PDQ_TU4) { /* rows of codes unpacked per task: 4 rows per thread */
        p->u4 = 1;
        size_t n = (size_t)pdq_pool_threads(x->pool) * 4 * (size_t)p->fin;
        if (!(p->wrows = malloc(n ? n : 1))) return pdq_fail(st, PDQ_ERR_NOMEM, "integer mode: FC %s", w->name);
    }
    return PDQ_OK;
}

typedef struct {
    pdq_qexec *x;
    const pdq_op *op;
    const qx_prep *p;
    const int16_t *xs;
    int chunk;
    pdq_qctx kctx; /* the packed kernels' paths, as the executor's SIMD level allows */
} fc_ctx;

/* y[m, r] from its value before the bias: the bias, then the output's rule. */
static inline void fc_put_v(const qx_prep *p, const qx_t *yq, void *y, int m, int r, double v) {
    if (p->bias) v += (double)p->bias[r];
    qx_st(yq, y, (size_t)m * p->fout + r, v);
}

/* y[m, r] from a, the exact sum with the zero point's share taken out: the one double product and
 * the bias, then the output's rule. */
static inline void fc_put(const qx_prep *p, const qx_t *yq, void *y, int m, int r, int64_t a) {
    fc_put_v(p, yq, y, m, r, (double)a * p->sw[r]);
}

/* Rows r .. r + n - 1's (n <= GROUP_ROWS) zero points and float32 scales as [n][ngroups] arrays,
 * what the grouped kernels read: stored so, or the shared row's GROUP_ROWS copies, and f16
 * scales widened (exactly) into the thread's scratch. */
static void group_grids(const qx_prep *p, int r, int n, int thread, const uint8_t **zw, const float **sw) {
    size_t ng = (size_t)p->ngroups;
    *zw = p->gz + (size_t)(p->gz_stride ? r : 0) * ng;
    if (!p->gs16) {
        *sw = p->gs + (size_t)r * ng;
        return;
    }
    float *fs = p->gwide + (size_t)thread * GROUP_ROWS * ng;
    pdq_qscale_widen(p->gs16 + (size_t)r * ng, PDQ_QSCALE_F16, (size_t)n * ng, fs);
    *sw = fs;
}

/* Group g's term of y[m, r] in the grouped rule, from the exact sum a over the group's columns
 * (zw, sw: row r's grids). */
static inline double group_term(const qx_prep *p, int m, int g, const uint8_t *zw, const float *sw, int64_t a) {
    return qx_group_term(a, zw[g], p->sumx[(size_t)m * p->ngroups + g], sw[g], p->sx);
}

/* y[m + i][r + j] from v[i * nr + j], values before the bias (nm x nr, row stride nr): each
 * activation row's int16 outputs several at a time where there is no bias and the level has a
 * store (codes), the rest by fc_put_v. */
static void fc_put_tile(const qx_prep *p, const qx_t *yq, void *y, const pdq_qx_traits *k, int m, int nm, int r,
                        int nr, const double *v) {
    pdq_qx_grid yg = qx_grid(yq);
    for (int i = 0; i < nm; i++) {
        int j = k->codes_i16 && !p->bias && yq->dt == PDQ_TI16
                    ? k->codes_i16(v + (size_t)i * nr, &yg, (int16_t *)y + (size_t)(m + i) * p->fout + r, nr)
                    : 0;
        for (; j < nr; j++) fc_put_v(p, yq, y, m + i, r + j, v[(size_t)i * nr + j]);
    }
}

/* ... from the exact sum a = sum x * code of row r, taking the zero point's share out first. */
static inline void fc_store(const qx_prep *p, const qx_t *yq, void *y, int m, int r, int64_t a) {
    if (p->zw[r]) a -= (int64_t)p->zw[r] * p->sumx[m];
    fc_put(p, yq, y, m, r, a);
}

/* Codes of weight rows r .. r + n - 1 (n <= 4), one per byte: the graph's bytes (uint8), or
 * unpacked into the thread's rows (uint4; once per row group, shared by every activation row). */
static const uint8_t *w_rows(const qx_prep *p, int r, int n, int thread) {
    if (!p->u4) return p->w + (size_t)r * p->fin;
    uint8_t *d = p->wrows + (size_t)thread * 4 * (size_t)p->fin;
    pdq_unpack4_at(p->w, (size_t)r * p->fin, (size_t)n * p->fin, d);
    return d;
}

/* Exact sums over K columns of nm activation rows (x, stride ldx) against nr weight rows (w,
 * stride ldw): acc[i * nr + j], by the level's tile of that shape (fc_task only asks for the
 * shapes k has: 4 x 4, 4 x 2, 1 x 4, else dots of 1). */
static void tile_sums(const pdq_qx_traits *k, const int16_t *x, size_t ldx, const uint8_t *w, size_t ldw, int K,
                      int nm, int nr, int64_t *acc) {
    if (nm == 4 && nr == 4) k->tile4x4(x, ldx, w, ldw, K, acc);
    else if (nm == 4) k->tile4x2(x, ldx, w, ldw, K, acc);
    else if (nr == 4) k->dot4(x, w, ldw, K, acc);
    else
        for (int j = 0; j < nr; j++) acc[j] = k->dot(x, w + (size_t)j * ldw, K);
}

static void fc_task(void *vc, int task, int thread) {
    const fc_ctx *c = vc;
    const qx_prep *p = c->p;
    const qx_t *yq = &c->x->t[c->op->out[0]];
    void *y = c->x->ptrs[c->op->out[0]];
    int r0 = task * c->chunk, r1 = r0 + c->chunk < p->fout ? r0 + c->chunk : p->fout;
    int in = p->fin;
    const pdq_qx_traits *k = &c->x->k;
    if (p->qm && p->ngroups > 1) { /* grouped decode: exact sums per row and group, GROUP_ROWS rows a call */
        int ng = p->ngroups;
        int64_t *s = p->gsum + (size_t)thread * GROUP_ROWS * ng;
        for (int m = 0; m < p->rows; m++)
            for (int a = r0; a < r1; a += GROUP_ROWS) {
                int b = a + GROUP_ROWS < r1 ? a + GROUP_ROWS : r1;
                pdq_qexact_groups(&c->kctx, p->qm, p->xbuf + (size_t)m * p->xbytes, p->group, a, b, r1, s);
                double v[GROUP_ROWS];
                const uint8_t *zw;
                const float *sw;
                group_grids(p, a, b - a, thread, &zw, &sw);
                if (k->group_rows && p->group < 65536) {
                    k->group_rows(s, ng, b - a, zw, p->sumx + (size_t)m * ng,
                                                                                  sw, p->sx, v);
                } else {
                    for (int r = a; r < b; r++) {
                        v[r - a] = 0.0;
                        for (int g = 0; g < ng; g++)
                            v[r - a] += group_term(p, m, g, zw + (size_t)(r - a) * ng, sw + (size_t)(r - a) * ng,
                                                   s[(size_t)(r - a) * ng + g]);
                    }
                }
                fc_put_tile(p, yq, y, k, m, 1, a, b - a, v);
            }
        return;
    }
    if (p->qm) { /* decode: the packed kernels' exact sums, 256 rows at a time */
        int64_t s[256];
        for (int m = 0; m < p->rows; m++)
            for (int a = r0; a < r1; a += 256) {
                int b = a + 256 < r1 ? a + 256 : r1;
                pdq_qexact_rows(&c->kctx, p->qm, p->xbuf + (size_t)m * p->xbytes, a, b, r1, s);
                if (p->any_zw)
                    for (int j = a; j < b; j++) s[j - a] -= (int64_t)p->zw[j] * p->sumx[m];
                int r = a; /* int16 outputs four at a time, the rest by fc_put */
                pdq_qx_grid yg = qx_grid(yq);
                if (yq->dt == PDQ_TI16 && k->sums_i16)
                    r += k->sums_i16(s, p->sw + a, 1, p->bias ? p->bias + a : NULL, &yg,
                                              (int16_t *)y + (size_t)m * p->fout + a, b - a);
                for (; r < b; r++) fc_put(p, yq, y, m, r, s[r - a]);
            }
        return;
    }
    int ng = p->ngroups;
    /* grouped decode (no packed form): dots of 4 rows with SIMD */
    int dot4 = k->dot4 && ng > 1 && p->rows < 4;
    for (int r = r0; r < r1;) {
        /* the widest tile the level has: prefill 4 x 4 or 4 x 2, grouped decode dots of 4, else
         * row by row */
        int nr = ((k->tile4x4 && p->rows >= 4) || dot4) && r + 3 < r1 ? 4
                 : k->tile4x2 && p->rows >= 4 && r + 1 < r1             ? 2
                                                                        : 1;
        const uint8_t *wr = w_rows(p, r, nr, thread), *zw = NULL;
        const float *sw = NULL;
        if (ng > 1) group_grids(p, r, nr, thread, &zw, &sw);
        for (int m = 0; m < p->rows;) {
            int64_t acc[16];
            int nm = nr >= 2 && p->rows >= 4 && m + 4 <= p->rows ? 4 : 1;
            const int16_t *xm = c->xs + (size_t)m * in;
            if (ng == 1) {
                tile_sums(k, xm, (size_t)in, wr, (size_t)in, in, nm, nr, acc);
                for (int i = 0; i < nm; i++)
                    for (int j = 0; j < nr; j++) fc_store(p, yq, y, m + i, r + j, acc[i * nr + j]);
            } else if (nm == 4 && nr == 4 && p->group_i32) { /* 4 x 4: every group in one call */
                double v[16] = {0};
                k->tile4x4_groups(xm, (size_t)in, wr, (size_t)in, in, p->group, zw, p->sumx + (size_t)m * ng, sw,
                                           p->sx, v);
                fc_put_tile(p, yq, y, k, m, 4, r, 4, v);
            } else if (nm == 4 && nr == 2 && p->group_i32) { /* 4 x 2: every group in one call */
                double v[8] = {0};
                k->tile4x2_groups(xm, (size_t)in, wr, (size_t)in, in, p->group, zw, p->sumx + (size_t)m * ng, sw,
                                           p->sx, v);
                fc_put_tile(p, yq, y, k, m, 4, r, 2, v);
            } else {
                double v[16] = {0};
                for (int g = 0; g < ng; g++) {
                    int k0 = g * p->group, K = in - k0 < p->group ? in - k0 : p->group;
                    tile_sums(k, xm + k0, (size_t)in, wr + k0, (size_t)in, K, nm, nr, acc);
                    for (int i = 0; i < nm; i++)
                        for (int j = 0; j < nr; j++)
                            v[i * nr + j] += group_term(p, m + i, g, zw + (size_t)j * ng, sw + (size_t)j * ng, acc[i * nr + j]);
                }
                fc_put_tile(p, yq, y, k, m, nm, r, nr, v);
            }
            m += nm;
        }
        r += nr;
    }
}

/* A float operand: sum in double in index order (scalar, the same on every thread). */
static void fc_float_task(void *vc, int task, int thread) {
    (void)thread;
    const fc_ctx *c = vc;
    const qx_prep *p = c->p;
    const qx_t *xq = &c->x->t[c->op->in[0]], *yq = &c->x->t[c->op->out[0]];
    const void *xd = c->x->ptrs[c->op->in[0]];
    void *y = c->x->ptrs[c->op->out[0]];
    int r0 = task * c->chunk, r1 = r0 + c->chunk < p->fout ? r0 + c->chunk : p->fout;
    int in = p->fin, out = p->fout;
    for (int r = r0; r < r1; r++)
        for (int m = 0; m < p->rows; m++) {
            double v = p->bias ? (double)p->bias[r] : 0.0;
            for (int k = 0; k < in; k++) v += qx_ld(xq, xd, (size_t)m * in + k) * (double)p->wf[(size_t)r * in + k];
            qx_st(yq, y, (size_t)m * out + r, v);
        }
}

pdq_code pdq_qx_fc_run(pdq_qexec *x, int oi, pdq_status *st) {
    (void)st;
    const pdq_op *op = &x->g->ops[oi];
    qx_prep *p = &x->prep[oi];
    fc_ctx c = {.x = x, .op = op, .p = p, .chunk = 16};
    int threads = pdq_pool_threads(x->pool);
    /* decode streams the weight: contiguous shares per thread, as the packed GEMVs split it;
     * prefill: enough tasks to balance, few enough that each streams a useful slice */
    if (p->rows < 4) c.chunk = qk_gemv_rows_per_task(p->fout, threads);
    else
        while (c.chunk < 256 && (p->fout + c.chunk - 1) / c.chunk > 16 * threads) c.chunk *= 2;
    int tasks = (p->fout + c.chunk - 1) / c.chunk;
    if (!p->int_path) {
        pdq_qx_par(x, tasks, fc_float_task, &c);
        return PDQ_OK;
    }
    const qx_t *xq = &x->t[op->in[0]];
    size_t nx = (size_t)p->rows * p->fin;
    if (xq->dt == PDQ_TU8) {
        const uint8_t *src = x->ptrs[op->in[0]];
        for (size_t i = 0; i < nx; i++) p->xs[i] = (int16_t)((int)src[i] - (int)xq->zp);
        c.xs = p->xs;
    } else {
        c.xs = x->ptrs[op->in[0]];
    }
    if (p->any_zw)
        for (int m = 0; m < p->rows; m++)
            for (int g = 0; g < p->ngroups; g++) {
                int64_t s = 0;
                const int16_t *xm = c.xs + (size_t)m * p->fin;
                int k1 = (g + 1) * p->group < p->fin ? (g + 1) * p->group : p->fin;
                for (int k = g * p->group; k < k1; k++) s += xm[k];
                p->sumx[(size_t)m * p->ngroups + g] = s;
            }
    if (p->qm)
        for (int m = 0; m < p->rows; m++) pdq_qexact_prepare(p->qm, c.xs + (size_t)m * p->fin, p->xbuf + (size_t)m * p->xbytes);
    c.kctx = packed_ctx(x); /* the scalar level never reaches the packed kernels */
    pdq_qx_par(x, tasks, fc_task, &c);
    return PDQ_OK;
}
