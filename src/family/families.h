/* The family descriptions pdq knows (one file each in this folder) and the bias groups their
 * config switches turn on. */
#ifndef PDQ_FAMILIES_H
#define PDQ_FAMILIES_H

#include "pdq/family.h"

#define PDQ_BIAS_QKV ((1u << PDQ_LIN_Q) | (1u << PDQ_LIN_K) | (1u << PDQ_LIN_V))
#define PDQ_BIAS_O (1u << PDQ_LIN_O)
#define PDQ_BIAS_MLP ((1u << PDQ_LIN_GATE) | (1u << PDQ_LIN_UP) | (1u << PDQ_LIN_DOWN))

extern const pdq_family pdq_family_llama;
extern const pdq_family pdq_family_qwen2;
extern const pdq_family pdq_family_qwen3;
extern const pdq_family pdq_family_phi3;
extern const pdq_family pdq_family_mistral;
extern const pdq_family pdq_family_gemma3;
extern const pdq_family pdq_family_gemma3_mm;
extern const pdq_family pdq_family_exaone;

#endif
