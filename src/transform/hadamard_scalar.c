/* Scalar randomized Hadamard kernels: the reference every SIMD version must match bit for bit. */
#include "hadamard.h"

#include "pdq/transform.h"

void pdq_had_rows_scalar(float *x, int rows, size_t ld, int n, const float *pre, float post) {
    for (int r = 0; r < rows; r++) {
        float *v = x + (size_t)r * ld;
        for (int i = 0; i < n; i++) v[i] *= pre[i];
        pdq_fwht(v, n);
        for (int i = 0; i < n; i++) v[i] *= post;
    }
}

void pdq_had_cols_scalar(float *s, int n, int w, size_t lds, const float *pre) {
    for (int i = 0; i < n; i++) {
        float *row = s + (size_t)i * lds, f = pre[i];
        for (int c = 0; c < w; c++) row[c] *= f;
    }
    for (int h = 1; h < n; h *= 2)
        for (int i = 0; i < n; i += 2 * h)
            for (int j = i; j < i + h; j++) {
                float *a = s + (size_t)j * lds, *b = s + (size_t)(j + h) * lds;
                for (int c = 0; c < w; c++) {
                    float p = a[c], q = b[c];
                    a[c] = p + q;
                    b[c] = p - q;
                }
            }
}
