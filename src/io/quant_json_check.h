/* pdq_quant.json, checked before a quantized checkpoint is read: the scheme's and every tensor
 * entry's integers integral and in range (bits 2..8, 0 <= group <= columns, shapes bounded),
 * booleans boolean, packed consistent with bits, scale_dtype one of F32/F16/BF16, zeros: false only
 * with sym; a version newer than PDQ_QUANT_VERSION is refused with a re-quantize message. Independent of the model (fuzzed alone). */
#ifndef PDQ_QUANT_JSON_CHECK_H
#define PDQ_QUANT_JSON_CHECK_H

#include <cjson/cJSON.h>

#include "pdq/status.h"

/* 1: float32 scales and a zero-point byte for every grid. 2: a grouped tensor's scales may be F16
 * or BF16 (its entry's scale_dtype) and a symmetric one may store no zero points (zeros: false);
 * version 1 files read as before. */
#define PDQ_QUANT_VERSION 2
#define PDQ_QUANT_MAX_TENSORS 65536
#define PDQ_QUANT_MAX_DIM (1 << 24)

pdq_code pdq_quant_doc_check(const cJSON *root, const char *path, pdq_status *st);

#endif
