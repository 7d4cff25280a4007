/* Permuted transposes (transpose_map.h). Both directions go through the same 8 x 8 tile: eight
 * rows of eight floats loaded from eight pointers, stored transposed through eight others, so
 * every load and store is 32 contiguous bytes. Tiles are walked a band of BAND rows by SPAN
 * columns at a time: a band's destination lines are written whole while they sit in L1, and the
 * permuted side reads (or writes) BAND contiguous values per row. The strided side is a power of
 * two apart at common widths (every line in one cache set), which is why the element-by-element
 * walk is several times slower. */
#include "kernels/transpose_map.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

enum { BAND = 64, SPAN = 16 };

static void tile_scalar(float *const *d, const float *const *s) {
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 8; j++) d[j][i] = s[i][j];
}

#if defined(__x86_64__) || defined(__i386__)
__attribute__((target("avx2"))) static void tile_avx2(float *const *d, const float *const *s) {
    __m256 a[8], t[8], u[8];
    for (int i = 0; i < 8; i++) a[i] = _mm256_loadu_ps(s[i]);
    for (int i = 0; i < 4; i++) {
        t[2 * i] = _mm256_unpacklo_ps(a[2 * i], a[2 * i + 1]);
        t[2 * i + 1] = _mm256_unpackhi_ps(a[2 * i], a[2 * i + 1]);
    }
    for (int h = 0; h < 2; h++) { /* u[4h + k]: element k (low lane), k + 4 (high) of rows 4h..4h+3 */
        u[4 * h] = _mm256_shuffle_ps(t[4 * h], t[4 * h + 2], 0x44);
        u[4 * h + 1] = _mm256_shuffle_ps(t[4 * h], t[4 * h + 2], 0xEE);
        u[4 * h + 2] = _mm256_shuffle_ps(t[4 * h + 1], t[4 * h + 3], 0x44);
        u[4 * h + 3] = _mm256_shuffle_ps(t[4 * h + 1], t[4 * h + 3], 0xEE);
    }
    for (int j = 0; j < 4; j++) {
        _mm256_storeu_ps(d[j], _mm256_permute2f128_ps(u[j], u[j + 4], 0x20));
        _mm256_storeu_ps(d[j + 4], _mm256_permute2f128_ps(u[j], u[j + 4], 0x31));
    }
}
#endif

typedef void (*tile_fn)(float *const *d, const float *const *s);

static tile_fn pick(pdq_level level) {
#if defined(__x86_64__) || defined(__i386__)
    if (level != PDQ_LEVEL_SCALAR) return tile_avx2;
#else
    (void)level;
#endif
    return tile_scalar;
}

/* The bands of 8 x 8 tiles, then the edges element by element. gather: dst [rows][cols] from
 * src [cols][rows] (dst[r][c] = src[map[c]][r]); else scatter: dst [cols][rows] from
 * src [rows][cols] (dst[map[c]][r] = src[r][c]). */
static void walk_f32(pdq_level level, float *dst, const float *src, size_t rows, size_t cols, const int *map,
                     int gather) {
    tile_fn tile = pick(level);
    size_t r8 = rows / 8 * 8, c8 = cols / 8 * 8;
    const float *s[8];
    float *d[8];
    for (size_t r0 = 0; r0 < r8; r0 += BAND) {
        size_t r1 = r0 + BAND < r8 ? r0 + BAND : r8;
        for (size_t c0 = 0; c0 < c8; c0 += SPAN) {
            size_t c1 = c0 + SPAN < c8 ? c0 + SPAN : c8;
            for (size_t c = c0; c < c1; c += 8)
                for (size_t r = r0; r < r1; r += 8) {
                    for (int i = 0; i < 8; i++) {
                        size_t mapped = (size_t)map[c + i] * rows + r, plain = (r + i) * cols + c;
                        s[i] = src + (gather ? mapped : plain);
                        d[i] = dst + (gather ? plain : mapped);
                    }
                    tile(d, s);
                }
        }
    }
    for (size_t r = 0; r < rows; r++)
        for (size_t c = r < r8 ? c8 : 0; c < cols; c++) {
            size_t mapped = (size_t)map[c] * rows + r, plain = r * cols + c;
            if (gather) dst[plain] = src[mapped];
            else dst[mapped] = src[plain];
        }
}

void pdq_k_transpose_gather_f32(pdq_level level, float *dst, const float *src, size_t rows, size_t cols,
                                const int *map) {
    walk_f32(level, dst, src, rows, cols, map, 1);
}

void pdq_k_transpose_scatter_f32(pdq_level level, float *dst, const float *src, size_t rows, size_t cols,
                                 const int *map) {
    walk_f32(level, dst, src, rows, cols, map, 0);
}

/* Bytes: a band's destination rows written SPAN_U8 contiguous codes at a time, each read from
 * its own source row (scalar: a quarter of the floats' bytes). */
enum { SPAN_U8 = 16 };

void pdq_k_transpose_gather_u8(uint8_t *dst, const uint8_t *src, size_t rows, size_t cols, const int *map) {
    const uint8_t *s[SPAN_U8];
    for (size_t r0 = 0; r0 < rows; r0 += BAND) {
        size_t r1 = r0 + BAND < rows ? r0 + BAND : rows;
        for (size_t c0 = 0; c0 < cols; c0 += SPAN_U8) {
            size_t n = cols - c0 < SPAN_U8 ? cols - c0 : SPAN_U8;
            for (size_t i = 0; i < n; i++) s[i] = src + (size_t)map[c0 + i] * rows;
            for (size_t r = r0; r < r1; r++) {
                uint8_t *o = dst + r * cols + c0;
                for (size_t i = 0; i < n; i++) o[i] = s[i][r];
            }
        }
    }
}
