/* Mistral (MistralForCausalLM): Llama whose every layer attends to a sliding window of
 * sliding_window keys (itself included), or to all keys when it is null. */
#include "family/families.h"
#include "family/roles_hf.h"
#include "io/config_common.h"

static pdq_code read_config(const void *json, const char *file, pdq_config *cfg, pdq_status *st) {
    return pdq_config_window(json, file, cfg, st);
}

static const pdq_tensor_role k_roles[] = {PDQ_ROLES_HF_LLAMA};
static const char *const k_types[] = {"mistral", NULL};

const pdq_family pdq_family_mistral = {
    .name = "mistral",
    .hf_class = "MistralForCausalLM",
    .model_types = k_types,
    .read_config = read_config,
    .roles = PDQ_FAMILY_ROLES(k_roles),
    .block = PDQ_BLOCK_PRENORM,
};
