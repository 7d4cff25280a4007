/* Internal to src/model/: the tensors of a model read by their roles in the family's table
 * (pdq/family.h), shared by the eager, lazy and packed loaders. */
#ifndef PDQ_MODEL_LOAD_ROLES_H
#define PDQ_MODEL_LOAD_ROLES_H

#include "pdq/model.h"
#include "pdq/safetensors.h"

/* The model's small f32 buffers for m->cfg: final norm, per-layer norms, biases, q/k norms and
 * the RoPE tables (filled), and its forward's (empty) work. Linears, embedding and lm_head are left NULL. */
pdq_code pdq_model_alloc_small(pdq_model *m, pdq_status *st);
/* Reads every present small role (norms, biases, q/k norms) into the buffers above. */
pdq_code pdq_model_read_small(const pdq_safetensors *s, pdq_model *m, pdq_status *st);
/* Reads layer l's linear weights into m->layers[l].w[*] (allocated), splitting stacked ones;
 * drop: the mapped pages of the tensors read are dropped after. */
pdq_code pdq_model_read_linears(const pdq_safetensors *s, pdq_model *m, int l, int drop, pdq_status *st);
/* Checks layer l's linear tensors by name and shape without reading them. */
pdq_code pdq_model_check_linears(const pdq_safetensors *s, const pdq_config *cfg, int l, pdq_status *st);
/* The HF name of the table role of `kind` (EMBED, LM_HEAD, ...) for layer l. */
void pdq_model_role_name(const pdq_config *cfg, pdq_role_kind kind, int l, char *buf, size_t cap);
/* The same without its ".weight": the module a quantized checkpoint names ("model.embed_tokens"). */
void pdq_model_role_module(const pdq_config *cfg, pdq_role_kind kind, int l, char *buf, size_t cap);

#endif
