/* pdq_quant.json, checked before a quantized checkpoint is read: the scheme's and every tensor
 * entry's integers integral and in range (bits 2..8, 0 <= group <= columns, shapes bounded),
 * booleans boolean, packed consistent with bits. Independent of the model (fuzzed alone). */
#ifndef PDQ_QUANT_JSON_CHECK_H
#define PDQ_QUANT_JSON_CHECK_H

#include <cjson/cJSON.h>

#include "pdq/status.h"

#define PDQ_QUANT_MAX_TENSORS 65536
#define PDQ_QUANT_MAX_DIM (1 << 24)

pdq_code pdq_quant_doc_check(const cJSON *root, const char *path, pdq_status *st);

#endif
