/* The one requantization rule of pdq. Every path that puts a real value on an affine grid uses
 * it: the PTQ fake-quant hook (src/ptq/grid.c), the Circle interpreter's requantizing hook
 * (src/circle/cinterp.c) and every kernel of the integer executor (src/exec/).
 *
 *   code(y)  = clamp(round_half_even(y / scale) + zero_point, lo, hi), NaN -> zero_point
 *   value(q) = (q - zero_point) * scale
 *
 * in double, with the float32 scale a Circle file stores. y is the op's exact result where the
 * op is integer (an int64 accumulator times the input scales, one rounding of the double
 * product) and the double-precision result of the dequantized inputs otherwise. The default
 * floating-point rounding mode (to nearest, ties to even) is assumed; nearbyint follows it. */
#ifndef PDQ_REQUANT_H
#define PDQ_REQUANT_H

#include <math.h>
#include <stdint.h>

/* round half to even: nearbyint in the default rounding mode, without a library call. Below 2^51
 * in magnitude, v + 1.5 * 2^52 lands where the spacing of doubles is 1, so the addition itself
 * rounds v to an integer, ties to even; larger values are integers already (NaN passes through). */
static inline double pdq_rq_rint(double v) {
    const double big = 6755399441055744.0; /* 1.5 * 2^52 */
    if (fabs(v) < 2251799813685248.0) return (v + big) - big; /* 2^51 */
    return v;
}

static inline int64_t pdq_rq_code(double y, double scale, int64_t zero_point, int64_t lo, int64_t hi) {
    double q = pdq_rq_rint(y / scale) + (double)zero_point;
    if (!(q >= (double)lo)) return q != q ? zero_point : lo;
    if (q >= (double)hi) return hi; /* >=: (double)INT64_MAX is 2^63, which no int64 holds */
    return (int64_t)q;
}

static inline double pdq_rq_value(int64_t q, double scale, int64_t zero_point) {
    return ((double)q - (double)zero_point) * scale; /* in double: q - zero_point may not fit int64 */
}

#endif
