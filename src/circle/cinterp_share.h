/* Files of one export hold the same weights (prefill, decode, append buckets). In fake-quant and
 * float mode each file's quantized constants become float32 copies; a file opened "like" an
 * earlier one borrows that file's copy of every constant equal to its own (name, dtype, shape,
 * qparams and stored bytes) instead of making another. `like` must outlive the new cgraph.
 * Integer mode keeps the files' codes and ignores `like`. Internal. */
#ifndef PDQ_CIRCLE_CINTERP_SHARE_H
#define PDQ_CIRCLE_CINTERP_SHARE_H

#include "pdq/circle_export.h"

pdq_code pdq_cg_open_like(const char *path, const pdq_exec_opts *eo, const pdq_cgraph *like, pdq_cgraph **out,
                          pdq_status *st);
/* The data of constant `name` as the cgraph runs it (its float copy in fake / float mode), or NULL. */
const void *pdq_cg_const_data(const pdq_cgraph *cg, const char *name);

#endif
