/* Config against data: before a model is allocated from config.json's sizes, every tensor those
 * sizes imply must be present in the safetensors with that shape. A 2-layer file with
 * num_hidden_layers 100000 fails at once, naming the first missing tensor and the layers the
 * file holds, instead of allocating gigabytes first. */
#ifndef PDQ_CHECK_TENSORS_H
#define PDQ_CHECK_TENSORS_H

#include "pdq/config.h"
#include "pdq/safetensors.h"

/* quantized: a pdq checkpoint (model.q.safetensors), where a matrix may be stored as
 * NAME.qweight [rows, cols or ceil(cols/2)] instead of NAME.weight [rows, cols].
 * cfg_file names config.json in messages. */
pdq_code pdq_check_tensors(const pdq_config *cfg, const pdq_safetensors *s, int quantized, const char *cfg_file,
                           pdq_status *st);

#endif
