/* Internals shared by the safetensors reader, header parser and writer. */
#ifndef PDQ_ST_INTERNAL_H
#define PDQ_ST_INTERNAL_H

#include "pdq/safetensors.h"

/* The safetensors reference implementation's limit on the header size. */
#define PDQ_ST_MAX_HEADER (100u << 20)

/* pdq_st_parse_header plus the __metadata__ object as JSON text (malloc'd, NULL when absent)
 * and the offset of the data area. buf must hold file_size bytes. */
pdq_code pdq_st_parse_header_ex(const uint8_t *buf, size_t file_size, const char *file_name,
                                pdq_st_tensor **out, int *n_out, char **metadata_json,
                                pdq_status *st);

#endif
