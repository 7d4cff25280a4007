/* How a weight grid's scales are stored: float32, or compact as f16 / bf16 (two bytes a scale).
 * A compact scale is rounded to its type (round to nearest even) before the quantizer chooses
 * codes, so the value every path computes with is the stored one; widened back to float32 it is
 * exact, so a kernel that converts in registers and one that reads a float32 copy agree bit for
 * bit. */
#ifndef PDQ_QSCALE_H
#define PDQ_QSCALE_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "pdq/safetensors.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { PDQ_QSCALE_F32 = 0, PDQ_QSCALE_F16 = 1, PDQ_QSCALE_BF16 = 2 } pdq_qscale_type;

/* Bytes of one stored scale. */
static inline size_t pdq_qscale_size(pdq_qscale_type t) { return t == PDQ_QSCALE_F32 ? 4 : 2; }
/* "F32", "F16", "BF16" (the safetensors spelling the checkpoint uses). */
static inline const char *pdq_qscale_name(pdq_qscale_type t) {
    return t == PDQ_QSCALE_F16 ? "F16" : t == PDQ_QSCALE_BF16 ? "BF16" : "F32";
}

/* s (> 0, finite) rounded to type t. A positive scale that would round to 0 becomes the type's
 * smallest positive value (a group of near-zero weights still gets a usable grid); one past the
 * type's range becomes +Inf (callers report it: pdq_qscale_fits). */
static inline float pdq_qscale_round(float s, pdq_qscale_type t) {
    if (t == PDQ_QSCALE_F32) return s;
    float r = t == PDQ_QSCALE_F16 ? pdq_f16_to_f32(pdq_f32_to_f16(s)) : pdq_bf16_to_f32(pdq_f32_to_bf16(s));
    if (r == 0.0f && s > 0.0f) r = t == PDQ_QSCALE_F16 ? pdq_f16_to_f32(1) : pdq_bf16_to_f32(1);
    return r;
}

/* Scale i of a stored array of type t (any alignment), as float32 (exact). */
static inline float pdq_qscale_at(const void *scales, pdq_qscale_type t, size_t i) {
    if (t == PDQ_QSCALE_F32) {
        float f;
        memcpy(&f, (const char *)scales + 4 * i, 4);
        return f;
    }
    uint16_t h;
    memcpy(&h, (const char *)scales + 2 * i, 2);
    return t == PDQ_QSCALE_F16 ? pdq_f16_to_f32(h) : pdq_bf16_to_f32(h);
}

/* Stores s (already of type t's precision) as element i of an array of type t. */
static inline void pdq_qscale_put(void *scales, pdq_qscale_type t, size_t i, float s) {
    if (t == PDQ_QSCALE_F32) {
        memcpy((char *)scales + 4 * i, &s, 4);
        return;
    }
    uint16_t h = t == PDQ_QSCALE_F16 ? pdq_f32_to_f16(s) : pdq_f32_to_bf16(s);
    memcpy((char *)scales + 2 * i, &h, 2);
}

/* The group size G when g_idx [cols] puts column c in group c / G for every c (ngroups groups),
 * else 0 (act-order groups, or an inconsistent g_idx). g_idx NULL: ngroups must be 1, G = cols. */
int pdq_gidx_group(const int32_t *g_idx, int cols, int ngroups);

#ifdef __cplusplus
}
#endif
#endif
