/* Per-tensor activation grids: int16 symmetric, uint8 asymmetric, int32 (identity check), and
 * the quantize -> dequantize step applied at every edge. Scales are float32 values (Circle stores
 * float32), so the fake-quant computes exactly what an exported file computes. Arithmetic in
 * double so the rounding of x / scale is exact enough for half-to-even ties to be real ties. */
#include <math.h>
#include <string.h>

#include "pdq/ptq.h"
#include "pdq/requant.h"

const char *pdq_adtype_name(pdq_adtype t) {
    switch (t) {
    case PDQ_ADT_FLOAT: return "float";
    case PDQ_ADT_INT16: return "int16";
    case PDQ_ADT_UINT8: return "uint8";
    case PDQ_ADT_INT32: return "int32";
    }
    return "?";
}

int pdq_adtype_parse(const char *s) {
    if (!strcmp(s, "16") || !strcmp(s, "int16")) return PDQ_ADT_INT16;
    if (!strcmp(s, "8") || !strcmp(s, "uint8")) return PDQ_ADT_UINT8;
    if (!strcmp(s, "none") || !strcmp(s, "float")) return PDQ_ADT_FLOAT;
    if (!strcmp(s, "32") || !strcmp(s, "int32")) return PDQ_ADT_INT32;
    return -1;
}

double pdq_agrid_f32(double scale) {
    float f = (float)scale;
    if (!(f > 0) || f > 3.0e38f) return scale; /* underflow / overflow: leave as it is, the caller checks */
    if ((double)f < scale) f = nextafterf(f, INFINITY); /* rounded up: the observed range never clips */
    return (double)f;
}

void pdq_agrid_from_range(pdq_adtype dt, double mn, double mx, pdq_agrid *g) {
    memset(g, 0, sizeof *g);
    g->dt = dt;
    g->scale = 1.0;
    if (!(mn <= 0)) mn = 0; /* also NaN */
    if (!(mx >= 0)) mx = 0;
    switch (dt) {
    case PDQ_ADT_FLOAT:
        return;
    case PDQ_ADT_INT16:
    case PDQ_ADT_INT32: {
        g->qmax = dt == PDQ_ADT_INT16 ? 32767 : 2147483647LL;
        g->qmin = -g->qmax - 1;
        double a = fmax(-mn, mx);
        if (a > 0) g->scale = pdq_agrid_f32(a / (double)g->qmax);
        return;
    }
    case PDQ_ADT_UINT8: {
        g->qmin = 0;
        g->qmax = 255;
        if (mx > mn) {
            g->scale = pdq_agrid_f32((mx - mn) / 255.0);
            double z = nearbyint(-mn / g->scale);
            g->zero_point = z < 0 ? 0 : z > 255 ? 255 : (int64_t)z;
        }
        return;
    }
    }
}

int64_t pdq_agrid_code(const pdq_agrid *g, float x) {
    return pdq_rq_code((double)x, g->scale, g->zero_point, g->qmin, g->qmax);
}

float pdq_agrid_dequant(const pdq_agrid *g, int64_t q) {
    return (float)pdq_rq_value(q, g->scale, g->zero_point);
}

void pdq_agrid_fq(const pdq_agrid *g, float *x, size_t n) {
    if (g->dt == PDQ_ADT_FLOAT) return;
    for (size_t i = 0; i < n; i++)
        x[i] = (float)pdq_rq_value(pdq_rq_code((double)x[i], g->scale, g->zero_point, g->qmin, g->qmax), g->scale,
                                   g->zero_point);
}

size_t pdq_agrid_clipped(const pdq_agrid *g, const float *x, size_t n) {
    if (g->dt == PDQ_ADT_FLOAT) return 0;
    double s = g->scale, zp = (double)g->zero_point, lo = (double)g->qmin, hi = (double)g->qmax;
    size_t c = 0;
    for (size_t i = 0; i < n; i++) {
        double q = nearbyint((double)x[i] / s) + zp;
        c += (q < lo || q > hi);
    }
    return c;
}
