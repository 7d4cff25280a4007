/* safetensors: mmapped, validated reading (single file or sharded index) and writing. */
#ifndef PDQ_SAFETENSORS_H
#define PDQ_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "pdq/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PDQ_ST_MAX_DIMS 8

typedef enum {
    PDQ_DT_F32, PDQ_DT_F16, PDQ_DT_BF16, PDQ_DT_F64,
    PDQ_DT_I8, PDQ_DT_U8, PDQ_DT_I16, PDQ_DT_U16, PDQ_DT_I32, PDQ_DT_I64, PDQ_DT_BOOL
} pdq_dtype;

size_t pdq_dtype_size(pdq_dtype dt);
const char *pdq_dtype_name(pdq_dtype dt); /* safetensors spelling: "F32", "BF16", ... */

typedef struct {
    const char *name;
    pdq_dtype dtype;
    int ndim;
    int64_t shape[PDQ_ST_MAX_DIMS];
    const void *data;   /* points into the mmapped file (reader) or caller memory (writer) */
    size_t nbytes;
    int file_index;     /* which shard (reader only) */
} pdq_st_tensor;

typedef struct pdq_safetensors pdq_safetensors;

/* Opens PATH: a .safetensors file, a model.safetensors.index.json, or a directory holding
 * model.safetensors or model.safetensors.index.json. Every header is validated in full
 * (JSON, dtypes, shapes, offsets inside the data area, no overlaps, byte sizes). */
pdq_code pdq_st_open(const char *path, pdq_safetensors **out, pdq_status *st);
void pdq_st_close(pdq_safetensors *s);

int pdq_st_count(const pdq_safetensors *s);
const pdq_st_tensor *pdq_st_at(const pdq_safetensors *s, int i);
const pdq_st_tensor *pdq_st_find(const pdq_safetensors *s, const char *name);
/* Tensor NAME SUFFIX with dtype dt and shape [a] (ndim 1) or [a, b] (ndim 2). On error, NULL is
 * returned and st names file, the tensor and what was expected. */
const pdq_st_tensor *pdq_st_expect(const pdq_safetensors *s, const char *name, const char *suffix, pdq_dtype dt,
                                   int ndim, int64_t a, int64_t b, const char *file, pdq_status *st);
const char *pdq_st_file_of(const pdq_safetensors *s, const pdq_st_tensor *t);
/* Drops the mapped pages of tensor NAME from this process's resident set (they stay in the page
 * cache; a later read faults them back in), for a tensor whose data has been copied or
 * converted. A missing tensor is ignored. */
void pdq_st_drop_pages(const pdq_safetensors *s, const char *name);
/* The __metadata__ object of the first file as JSON text, or NULL. */
const char *pdq_st_metadata(const pdq_safetensors *s);

/* Converts tensor NAME (F32/F16/BF16) to float32 into dst after checking it has exactly the
 * expected shape; errors name the file and the tensor. */
pdq_code pdq_st_read_f32(const pdq_safetensors *s, const char *name, int ndim,
                         const int64_t *shape, float *dst, pdq_status *st);

/* Validates a header buffer (8-byte length + JSON) against a file of total size file_size;
 * used by the fuzz target. On success fills *out (caller frees with pdq_st_tensors_free). */
pdq_code pdq_st_parse_header(const uint8_t *buf, size_t file_size, const char *file_name,
                             pdq_st_tensor **out, int *n_out, pdq_status *st);
void pdq_st_tensors_free(pdq_st_tensor *t, int n);

/* Writes tensors (data pointers in caller memory) to PATH atomically (temp + rename).
 * metadata_json may be NULL or a JSON object of string values. */
pdq_code pdq_st_write(const char *path, const pdq_st_tensor *tensors, int n,
                      const char *metadata_json, pdq_status *st);

/* Element conversion helpers. */
float pdq_bf16_to_f32(uint16_t h);
float pdq_f16_to_f32(uint16_t h);
uint16_t pdq_f32_to_bf16(float f); /* round to nearest even */
uint16_t pdq_f32_to_f16(float f);  /* round to nearest even */

/* Parses a safetensors dtype name ("F32", "BF16", ...); returns 0 on success, -1 if unknown. */
int pdq_dtype_parse(const char *name, pdq_dtype *out);

/* Streaming writer, for files too large to hold in memory twice: the header is written from
 * `tensors` (names, dtypes, shapes; data ignored), then the tensors' bytes are appended in the
 * same order with any number of pdq_st_writer_put calls, then close renames the temp file onto
 * PATH after checking every byte was written. abort removes the temp file. */
typedef struct pdq_st_writer pdq_st_writer;
pdq_code pdq_st_writer_open(const char *path, const pdq_st_tensor *tensors, int n,
                            const char *metadata_json, pdq_st_writer **out, pdq_status *st);
pdq_code pdq_st_writer_put(pdq_st_writer *w, const void *data, size_t nbytes, pdq_status *st);
pdq_code pdq_st_writer_close(pdq_st_writer *w, pdq_status *st);
void pdq_st_writer_abort(pdq_st_writer *w);

/* Number of distinct files (shards) opened. */
int pdq_st_file_count(const pdq_safetensors *s);

#ifdef __cplusplus
}
#endif
#endif
