/* Model families: one description per architecture, read by every path.
 *
 * A family is what llama.cpp calls an arch and HF splits into a config class and a modeling
 * file: the config.json fields it reads (with their defaults), a table of tensor roles (role,
 * HF name template, shape rule, which config switch makes it present, quantizable or not, which
 * linears share one Hessian) and the reference forward of one decoder layer. Loaders, tensor
 * checks, writers, GPTQ grouping and `pdq info` iterate the table instead of spelling HF names;
 * a path that cannot compute a feature of a family refuses it up front (pdq_family_require). */
#ifndef PDQ_FAMILY_H
#define PDQ_FAMILY_H

#include <stddef.h>

#include "pdq/config.h"
#include "pdq/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The seven decoder linears, in HF order. Weights are row-major [out, in] as HF stores them. */
typedef enum {
    PDQ_LIN_Q, PDQ_LIN_K, PDQ_LIN_V, PDQ_LIN_O, PDQ_LIN_GATE, PDQ_LIN_UP, PDQ_LIN_DOWN, PDQ_LIN_COUNT
} pdq_linear_id;

/* "q_proj", "k_proj", ... and "self_attn" / "mlp" parent of each. */
const char *pdq_linear_name(pdq_linear_id id);
const char *pdq_linear_parent(pdq_linear_id id);
/* Shape [out, in] of a linear for this config. */
void pdq_linear_shape(const pdq_config *cfg, pdq_linear_id id, int *out, int *in);

/* What a tensor is to the model, whatever the family calls it. */
typedef enum {
    PDQ_ROLE_EMBED,          /* [V, D] */
    PDQ_ROLE_LM_HEAD,        /* [V, D]; present when the embedding is not tied */
    PDQ_ROLE_FINAL_NORM,     /* [D] */
    PDQ_ROLE_ATTN_NORM,      /* [D] per layer, before attention */
    PDQ_ROLE_FFN_NORM,       /* [D] per layer, before the MLP */
    PDQ_ROLE_Q_NORM,         /* [head_dim] per layer, on each q head before RoPE (cfg->qk_norm) */
    PDQ_ROLE_K_NORM,         /* [head_dim] per layer, on each k head before RoPE (cfg->qk_norm) */
    PDQ_ROLE_WEIGHT,         /* a decoder linear's weight, `lin` says which */
    PDQ_ROLE_BIAS,           /* its bias [out]; present when cfg->bias_mask has bit `lin` */
    PDQ_ROLE_FUSED_WEIGHT,   /* rows of several linears in one tensor, `lin` .. `lin_last` stacked */
    PDQ_ROLE_POST_ATTN_NORM, /* [D] per layer, on the attention output before the residual add (sandwich) */
    PDQ_ROLE_POST_FFN_NORM,  /* [D] per layer, on the MLP output before the residual add (sandwich) */
    PDQ_ROLE_COUNT
} pdq_role_kind;

/* One row of a family's tensor table. */
typedef struct {
    pdq_role_kind kind;
    int lin;         /* WEIGHT / BIAS: the linear; FUSED_WEIGHT: the first linear stacked */
    int lin_last;    /* FUSED_WEIGHT: the last linear stacked (inclusive); else == lin */
    const char *hf;  /* HF name; "%d" stands for the layer index in per-layer roles */
} pdq_tensor_role;

/* The shape of a decoder block, which picks the reference forward (src/model/) and the static
 * graph builder (src/static/) for it. Families that differ only in config switches (biases, q/k
 * norms, partial or scaled RoPE, fused projections split at load) share one block. */
typedef enum {
    PDQ_BLOCK_PRENORM, /* x += o(attn(norm(x))); x += down(act(gate(norm(x))) * up(norm(x))) */
    PDQ_BLOCK_SANDWICH /* Gemma: x += post_norm(o(attn(norm(x)))); x += post_norm(down(...(norm(x)))) */
} pdq_block_kind;

typedef struct pdq_family {
    const char *name;              /* "llama", "qwen2", ... as `pdq info` prints it */
    const char *hf_class;          /* the HF class that computes it, for messages and docs */
    const char *const *model_types;/* config.json model_type values it reads; NULL-terminated */
    /* The object of config.json holding the model's fields (Gemma3ForConditionalGeneration's
     * "text_config": the text model of a multimodal checkpoint); NULL: the root. Token ids, the
     * dtype and tying absent there are taken from the root. */
    const char *config_object;
    /* Fields only this family reads, after the common ones (io/config_common.h). NULL: none. */
    pdq_code (*read_config)(const void *json_root, const char *file, pdq_config *cfg, pdq_status *st);
    const pdq_tensor_role *roles;
    int n_roles;
    pdq_block_kind block;
    /* The common fields it names its own way (zero: Llama's names). */
    pdq_config_fields fields;
} pdq_family;

/* The family whose model_types hold `model_type`, or NULL. */
const pdq_family *pdq_family_find(const char *model_type);
/* The family called `name` ("gemma3", ...: pdq_family.name), or NULL. */
const pdq_family *pdq_family_named(const char *name);
/* The family of a config: cfg->family, or Llama for a config built in code without one. */
const pdq_family *pdq_family_of(const pdq_config *cfg);
/* "llama, mistral, qwen2, ..." of every model_type read, for messages. */
void pdq_family_model_types(char *buf, size_t cap);

/* Whether the role is present for this config, its shape ([rows] when *cols == 0) and HF name. */
int pdq_role_present(const pdq_config *cfg, const pdq_tensor_role *r);
int pdq_role_per_layer(const pdq_tensor_role *r);
void pdq_role_shape(const pdq_config *cfg, const pdq_tensor_role *r, long *rows, long *cols);
void pdq_role_name(const pdq_tensor_role *r, int layer, char *buf, size_t cap);
/* The HF name of the family's role of `kind` (EMBED, FFN_NORM, ...) for layer l ("" if none). */
void pdq_family_role_name(const pdq_config *cfg, pdq_role_kind kind, int layer, char *buf, size_t cap);
/* Parameters of the tensors the family's table holds for this config (a tied lm_head not
 * counted twice); pdq_config_param_count is the pre-norm block's formula. */
long long pdq_family_param_count(const pdq_config *cfg);
/* The same without its ".weight": the role's module ("model.embed_tokens", "lm_head",
 * "model.layers.3.input_layernorm"); the static graphs name a role's constant and output by it. */
void pdq_family_role_module(const pdq_config *cfg, pdq_role_kind kind, int layer, char *buf, size_t cap);
/* What the family's per-layer names start with in layer l: its ATTN_NORM template up to and
 * including the "%d." ("model.layers.3.", "transformer.h.3."). */
void pdq_family_layer_prefix(const pdq_config *cfg, int layer, char *buf, size_t cap);
/* The module of a linear in layer l, without ".weight", from the family's table:
 * "model.layers.3.self_attn.q_proj". A linear cut from a stacked tensor is named after it, with
 * the part it is ("model.layers.3.self_attn.qkv_proj.q", "...mlp.gate_up_proj.up"). */
void pdq_linear_module(const pdq_config *cfg, int layer, pdq_linear_id id, char *buf, size_t cap);

/* The paths that compute a model, for pdq_family_require. */
typedef enum {
    PDQ_PATH_REFERENCE, /* the FP32 oracle and the weight-only packed model */
    PDQ_PATH_STATIC,    /* in-memory static prefill/decode/append graphs, PTQ, integer mode */
    PDQ_PATH_EXPORT,    /* Circle files, their manifest and the Circle runtime */
    PDQ_PATH_QUANTIZE,  /* GPTQ / RTN and the quantized checkpoint */
    PDQ_PATH_TRANSFORM  /* fold, rotations, CLE, SmoothQuant */
} pdq_path;

/* PDQ_OK when `path` computes every feature cfg uses; else PDQ_ERR_UNSUPPORTED naming the family,
 * the feature and the config field that asks for it. */
pdq_code pdq_family_require(const pdq_config *cfg, pdq_path path, pdq_status *st);

#ifdef __cplusplus
}
#endif
#endif
