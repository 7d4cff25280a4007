/* Affine uint grids (GPTQ reference Quantizer semantics), RTN, 4-bit packing, bit overrides. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pdq/quant.h"

void pdq_qscheme_default(pdq_qscheme *s, int bits) {
    memset(s, 0, sizeof *s);
    s->bits = bits;
    s->grid = 100;
    s->maxshrink = 0.8f;
    s->norm = 2.4f;
}

pdq_code pdq_qscheme_check(const pdq_qscheme *s, int rows, int cols, const char *name, pdq_status *st) {
    if (!name) name = "weight";
    if (s->bits < 2 || s->bits > 8)
        return pdq_fail(st, PDQ_ERR_ARG, "%s: bits %d out of range (2..8)", name, s->bits);
    if (s->group < 0) return pdq_fail(st, PDQ_ERR_ARG, "%s: negative group size %d", name, s->group);
    if (s->group > 0 && s->per_tensor)
        return pdq_fail(st, PDQ_ERR_ARG, "%s: per-tensor grids cannot have groups", name);
    if (s->group > 0 && cols % s->group != 0 && !s->partial_groups)
        return pdq_fail(st, PDQ_ERR_ARG,
                        "%s: group size %d does not divide the input dimension %d (--partial-groups allows a "
                        "shorter last group)", name, s->group, cols);
    if (rows <= 0 || cols <= 0) return pdq_fail(st, PDQ_ERR_SHAPE, "%s: empty weight [%d, %d]", name, rows, cols);
    if (s->group_scale != PDQ_QSCALE_F32 && s->group_scale != PDQ_QSCALE_F16 && s->group_scale != PDQ_QSCALE_BF16)
        return pdq_fail(st, PDQ_ERR_ARG, "%s: unknown group scale type %d", name, (int)s->group_scale);
    if (s->mse && (s->grid <= 0 || !(s->maxshrink > 0.0f && s->maxshrink <= 1.0f) || !(s->norm > 0.0f)))
        return pdq_fail(st, PDQ_ERR_ARG, "%s: bad MSE search (grid %d, maxshrink %g, norm %g)", name,
                        s->grid, (double)s->maxshrink, (double)s->norm);
    return PDQ_OK;
}

int pdq_qscheme_ngroups(const pdq_qscheme *s, int cols) {
    return s->group > 0 ? (cols + s->group - 1) / s->group : 1;
}

float pdq_qdequant(float x, float scale, float zero, int maxq) {
    return scale * ((float)pdq_qcode(x, scale, zero, maxq) - zero);
}

/* Grid of one range [xmin, xmax] (xmin <= 0 <= xmax), its scale rounded to the stored type
 * first: the zero point and every code are chosen with the value the checkpoint keeps. */
static void grid_of(float xmin, float xmax, int maxq, int sym, pdq_qscale_type st, float *scale, float *zero) {
    *scale = pdq_qscale_round((xmax - xmin) / (float)maxq, st);
    *zero = sym ? (float)((maxq + 1) / 2) : rintf(-xmin / *scale);
}

void pdq_qparams_find(const pdq_qscheme *s, const float *x, int nvec, int n, ptrdiff_t vstride,
                      ptrdiff_t estride, float *scale, float *zero) {
    int maxq = (1 << s->bits) - 1;
    int steps = s->mse ? (int)((double)s->maxshrink * s->grid) : 0;
    pdq_qscale_type stype = pdq_qscheme_scale_type(s);
    for (int v = 0; v < nvec; v++) {
        const float *xv = x + (ptrdiff_t)v * vstride;
        float xmin = 0.0f, xmax = 0.0f;
        for (int k = 0; k < n; k++) {
            float e = xv[(ptrdiff_t)k * estride];
            if (e < xmin) xmin = e;
            if (e > xmax) xmax = e;
        }
        if (s->sym) {
            xmax = fmaxf(-xmin, xmax);
            xmin = -xmax;
        }
        if (xmin == 0.0f && xmax == 0.0f) { xmin = -1.0f; xmax = 1.0f; }
        grid_of(xmin, xmax, maxq, s->sym, stype, &scale[v], &zero[v]);
        /* MSE: shrink the range; p = 1 (i = 0) is the plain grid, so it never gets worse. */
        float best = INFINITY;
        for (int i = 0; i < steps; i++) {
            float p = (float)(1.0 - (double)i / s->grid);
            float sc, ze;
            grid_of(p * xmin, p * xmax, maxq, s->sym, stype, &sc, &ze);
            float err = 0.0f;
            for (int k = 0; k < n; k++) {
                float e = xv[(ptrdiff_t)k * estride];
                float d = fabsf(pdq_qdequant(e, sc, ze, maxq) - e);
                err += s->norm == 2.0f ? d * d : powf(d, s->norm);
            }
            if (err < best) {
                best = err;
                scale[v] = sc;
                zero[v] = ze;
            }
        }
    }
}

pdq_code pdq_qscale_check(const pdq_qscheme *s, const float *scale, size_t n, const char *name, pdq_status *st) {
    return pdq_qscale_check_range(s, scale, 0, n, name, st);
}

pdq_code pdq_qscale_check_range(const pdq_qscheme *s, const float *scale, size_t i0, size_t i1, const char *name,
                                pdq_status *st) {
    pdq_qscale_type t = pdq_qscheme_scale_type(s);
    for (size_t i = i0; t != PDQ_QSCALE_F32 && i < i1; i++)
        if (!isfinite(scale[i]))
            return pdq_fail(st, PDQ_ERR_NUMERIC, "%s: grid %zu needs a scale beyond the %s range (try --group-scale %s)",
                            name ? name : "weight", i, pdq_qscale_name(t), t == PDQ_QSCALE_F16 ? "bf16" : "f32");
    return PDQ_OK;
}

static int all_finite(const float *x, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i])) return 0;
    return 1;
}

pdq_code pdq_quant_rtn(const pdq_qscheme *s, const float *w, int rows, int cols, uint8_t *codes,
                       float *deq, float *scale, float *zero, const char *name, pdq_status *st) {
    pdq_code rc = pdq_qscheme_check(s, rows, cols, name, st);
    if (rc) return rc;
    if (!all_finite(w, (size_t)rows * cols))
        return pdq_fail(st, PDQ_ERR_NUMERIC, "%s: NaN or Inf in the weight", name ? name : "weight");
    int ng = pdq_qscheme_ngroups(s, cols), gs = s->group > 0 ? s->group : cols, maxq = (1 << s->bits) - 1;
    if (s->per_tensor) {
        pdq_qparams_find(s, w, 1, rows * cols, 0, 1, &scale[0], &zero[0]);
        for (int r = 1; r < rows; r++) { scale[r] = scale[0]; zero[r] = zero[0]; }
    } else {
        for (int g = 0; g < ng; g++) {
            /* vectors: rows; elements: the group's columns. Results go to a column of [rows, ng]. */
            float *sc = malloc(sizeof(float) * 2 * (size_t)rows);
            if (!sc) return pdq_fail(st, PDQ_ERR_NOMEM, "%s: out of memory", name ? name : "weight");
            int width = cols - g * gs < gs ? cols - g * gs : gs;
            pdq_qparams_find(s, w + (size_t)g * gs, rows, width, cols, 1, sc, sc + rows);
            for (int r = 0; r < rows; r++) {
                scale[(size_t)r * ng + g] = sc[r];
                zero[(size_t)r * ng + g] = sc[rows + r];
            }
            free(sc);
        }
    }
    if ((rc = pdq_qscale_check(s, scale, (size_t)rows * ng, name, st))) return rc;
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) {
            size_t i = (size_t)r * cols + c, gi = (size_t)r * ng + c / gs;
            int q = pdq_qcode(w[i], scale[gi], zero[gi], maxq);
            if (codes) codes[i] = (uint8_t)q;
            if (deq) deq[i] = scale[gi] * ((float)q - zero[gi]);
        }
    return PDQ_OK;
}

pdq_code pdq_qoverride_parse(const char *spec, pdq_qoverride *out, pdq_status *st) {
    memset(out, 0, sizeof *out);
    const char *eq = strrchr(spec, '=');
    if (!eq || eq == spec)
        return pdq_fail(st, PDQ_ERR_ARG, "override '%s': expected NAME=BITS (e.g. down_proj=8)", spec);
    size_t len = (size_t)(eq - spec);
    if (len >= sizeof out->name) return pdq_fail(st, PDQ_ERR_ARG, "override '%s': name too long", spec);
    char *end;
    long b = strtol(eq + 1, &end, 10);
    if (end == eq + 1 || *end != '\0' || b < 2 || b > 8)
        return pdq_fail(st, PDQ_ERR_ARG, "override '%s': bits must be an integer in 2..8", spec);
    memcpy(out->name, spec, len);
    out->name[len] = '\0';
    out->bits = (int)b;
    return PDQ_OK;
}

/* "model.layers.N.rest" (any family's layer prefix: "transformer.h.N.rest") -> "rest": what
 * follows the first ".N." of the name, else NULL. */
static const char *layer_local(const char *full) {
    for (const char *p = strchr(full, '.'); p; p = strchr(p + 1, '.')) {
        const char *d = p + 1;
        if (*d < '0' || *d > '9') continue;
        while (*d >= '0' && *d <= '9') d++;
        if (*d == '.') return d + 1;
    }
    return NULL;
}

int pdq_qoverride_bits(pdq_qoverride *ov, int n, const char *full_name, int def) {
    const char *local = layer_local(full_name);
    const char *suffix = strrchr(full_name, '.');
    suffix = suffix ? suffix + 1 : full_name;
    int best_level = 0, bits = def;
    for (int i = 0; i < n; i++) {
        int level = 0;
        if (strcmp(ov[i].name, full_name) == 0) level = 3;
        else if (local && strcmp(ov[i].name, local) == 0) level = 2;
        else if (strcmp(ov[i].name, suffix) == 0) level = 1;
        if (!level) continue;
        ov[i].used = 1; /* a shadowed override still named a real module */
        if (level >= best_level) { best_level = level; bits = ov[i].bits; }
    }
    return bits;
}
