/* Shared between the Circle writer, reader and fuzz target. */
#ifndef PDQ_CIRCLE_INTERNAL_H
#define PDQ_CIRCLE_INTERNAL_H

#include <stdio.h>

#include "pdq/circle.h"

/* Checks indices, ranks, buffer sizes against shape x type and qparam lengths; failures are
 * reported with `code` (PDQ_ERR_ARG for the writer, PDQ_ERR_FORMAT for the reader). */
pdq_code circle_validate(const pdq_circle_model *m, pdq_code code, pdq_status *st);
/* Serializes m to f (no temp file); the layout follows opts as pdq_circle_write. */
pdq_code circle_write_stream(FILE *f, const pdq_circle_model *m, const pdq_circle_write_opts *opts,
                             pdq_status *st);

#endif
