/* NumPy .npy files (format 1.0/2.0/3.0, C order, little endian) for logits and test arrays. */
#ifndef PDQ_NPY_H
#define PDQ_NPY_H

#include <stddef.h>
#include <stdint.h>

#include "pdq/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PDQ_NPY_MAX_DIMS 8

typedef enum { PDQ_NPY_F32, PDQ_NPY_F64, PDQ_NPY_I32, PDQ_NPY_I64, PDQ_NPY_U8, PDQ_NPY_I16, PDQ_NPY_U16, PDQ_NPY_I8 } pdq_npy_dtype;

typedef struct {
    pdq_npy_dtype dtype;
    int ndim;
    int64_t shape[PDQ_NPY_MAX_DIMS];
    size_t count;  /* product of shape */
    void *data;    /* malloc'd, count elements of dtype */
} pdq_npy;

size_t pdq_npy_dtype_size(pdq_npy_dtype dt);

/* Reads a whole .npy file; the caller frees with pdq_npy_free. */
pdq_code pdq_npy_read(const char *path, pdq_npy *out, pdq_status *st);
/* Reads a float32 .npy and converts f64 to f32 when needed. */
pdq_code pdq_npy_read_f32(const char *path, pdq_npy *out, pdq_status *st);
pdq_code pdq_npy_write(const char *path, pdq_npy_dtype dt, int ndim, const int64_t *shape,
                       const void *data, pdq_status *st);
void pdq_npy_free(pdq_npy *a);

#ifdef __cplusplus
}
#endif
#endif
