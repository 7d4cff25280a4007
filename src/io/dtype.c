/* safetensors dtypes and the half-precision <-> f32 conversions (bit exact, round to nearest even). */
#include <string.h>

#include "pdq/safetensors.h"

static const struct {
    const char *name;
    size_t size;
} k_dtypes[] = {
    [PDQ_DT_F32] = {"F32", 4}, [PDQ_DT_F16] = {"F16", 2}, [PDQ_DT_BF16] = {"BF16", 2},
    [PDQ_DT_F64] = {"F64", 8}, [PDQ_DT_I8] = {"I8", 1},   [PDQ_DT_U8] = {"U8", 1},
    [PDQ_DT_I16] = {"I16", 2}, [PDQ_DT_U16] = {"U16", 2}, [PDQ_DT_I32] = {"I32", 4},
    [PDQ_DT_I64] = {"I64", 8}, [PDQ_DT_BOOL] = {"BOOL", 1},
};
#define N_DTYPES ((int)(sizeof k_dtypes / sizeof k_dtypes[0]))

size_t pdq_dtype_size(pdq_dtype dt) {
    return (int)dt >= 0 && (int)dt < N_DTYPES ? k_dtypes[dt].size : 0;
}

const char *pdq_dtype_name(pdq_dtype dt) {
    return (int)dt >= 0 && (int)dt < N_DTYPES ? k_dtypes[dt].name : "?";
}

int pdq_dtype_parse(const char *name, pdq_dtype *out) {
    for (int i = 0; i < N_DTYPES; i++)
        if (strcmp(name, k_dtypes[i].name) == 0) {
            *out = (pdq_dtype)i;
            return 0;
        }
    return -1;
}

static float bits_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static uint32_t f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

float pdq_bf16_to_f32(uint16_t h) { return bits_f32((uint32_t)h << 16); }

uint16_t pdq_f32_to_bf16(float f) {
    uint32_t x = f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40); /* quiet NaN, keep sign */
    x += 0x7fffu + ((x >> 16) & 1);  /* overflow past the max finite carries into inf, as it should */
    return (uint16_t)(x >> 16);
}

float pdq_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t e = (h >> 10) & 0x1f, m = h & 0x3ff;
    if (e == 0x1f) return bits_f32(sign | 0x7f800000u | (m << 13));
    if (e == 0) {
        if (m == 0) return bits_f32(sign);
        /* subnormal: normalize the mantissa */
        int ex = 1;
        while (!(m & 0x400)) {
            m <<= 1;
            ex--;
        }
        m &= 0x3ff;
        return bits_f32(sign | ((uint32_t)(ex + 112) << 23) | (m << 13));
    }
    return bits_f32(sign | ((e + 112) << 23) | (m << 13));
}

uint16_t pdq_f32_to_f16(float f) {
    uint32_t x = f32_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    uint32_t ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) return sign | 0x7e00;          /* NaN */
    if (ax >= 0x477ff000u) return sign | 0x7c00;         /* >= 65520 rounds to inf */
    if (ax < 0x38800000u) {                              /* below 2^-14: subnormal half */
        if (ax <= 0x33000000u) return sign;              /* <= 2^-25: ties to even give 0 */
        uint32_t e = ax >> 23, m = (ax & 0x7fffff) | 0x800000;
        uint32_t shift = 126 - e;                        /* value * 2^24 = m >> shift */
        uint32_t r = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (r & 1))) r++;
        return sign | (uint16_t)r;
    }
    uint32_t h = (ax >> 13) - (112u << 10), rem = ax & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) h++;
    return sign | (uint16_t)h;
}
