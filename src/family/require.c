/* Which path computes which feature of a family. A path that does not yet compute a feature
 * refuses the model up front, naming the feature and the config field that turns it on, so
 * nothing downstream computes a silently different function. */
#include <string.h>

#include "pdq/family.h"

typedef struct {
    const char *feature, *field;
    int used;
    unsigned paths; /* bit p: path p computes it */
} feature;

#define REF (1u << PDQ_PATH_REFERENCE)
#define STATIC (1u << PDQ_PATH_STATIC)
#define QUANT (1u << PDQ_PATH_QUANTIZE)
#define EXPORT (1u << PDQ_PATH_EXPORT)
#define TRANSFORM (1u << PDQ_PATH_TRANSFORM)

static const char *const k_path_names[] = {"the reference model", "the static graphs (verify, PTQ)",
                                           "the Circle export", "quantization", "the transforms"};

pdq_code pdq_family_require(const pdq_config *c, pdq_path path, pdq_status *st) {
    const feature f[] = {
        /* Gemma: every path computes its block. The transforms fold and smooth the factor
         * (1 + w) (transform/fold.c), CLE and R2 act inside attention and the MLP; R1 alone
         * cannot pass the post-branch norms, refused by pdq_transform_supported. The embedding
         * scale, attention scale, GELU and softcap are untouched by weight-space rewrites. */
        {"the sandwich block (four norms per layer)", "model_type", pdq_family_of(c)->block == PDQ_BLOCK_SANDWICH, REF | STATIC | QUANT | EXPORT | TRANSFORM},
        {"(1 + w) RMSNorm", "model_type", c->norm_offset != 0.0f, REF | STATIC | QUANT | EXPORT | TRANSFORM},
        {"a GELU-tanh MLP", "hidden_activation", c->act == PDQ_ACT_GELU_TANH, REF | STATIC | QUANT | EXPORT | TRANSFORM},
        {"a scaled embedding", "hidden_size (Gemma's sqrt(hidden) scale)", c->embed_scale != 0.0f, REF | STATIC | QUANT | EXPORT | TRANSFORM},
        {"the attention scale query_pre_attn_scalar^-0.5", "query_pre_attn_scalar", c->attn_scale != 0.0f, REF | STATIC | QUANT | EXPORT | TRANSFORM},
        {"final logit softcapping", "final_logit_softcapping", c->final_softcap != 0.0f, REF | STATIC | QUANT | EXPORT | TRANSFORM},
        {"attention logit softcapping", "attn_logit_softcapping", c->attn_softcap != 0.0f, REF},
        /* the static contract: a layer type is (window, RoPE table); sliding layers take the local
         * table's cos/sin (src/contract/rt_contract.h) */
        {"a local RoPE table on sliding layers", "rope_local_base_freq", pdq_rope_local_differs(c), REF | STATIC | QUANT | EXPORT | TRANSFORM},
        /* the quantized checkpoint and its hf/ copy are written under the text model's names */
        {"the text model of a multimodal checkpoint", "model_type", pdq_family_of(c)->config_object != NULL, REF | STATIC},
        {"biases on linears", "attention_bias / mlp_bias", c->bias_mask != 0, REF | STATIC | QUANT | EXPORT | TRANSFORM},
        {"q/k head norms", "model_type", c->qk_norm, REF | STATIC | QUANT | EXPORT | TRANSFORM},
        /* the transforms never touch what RoPE rotates (q/k outputs), so RoPE's form is theirs too */
        {"partial RoPE", "partial_rotary_factor", pdq_cfg_rotary_dim(c) != c->head_dim, REF | STATIC | QUANT | EXPORT | TRANSFORM},
        /* the static runtime's RoPE table is one: it refuses a max_seq past the original length */
        {"longrope scaling", "rope_scaling.type", c->rope_type == PDQ_ROPE_LONGROPE, REF | STATIC | QUANT | EXPORT | TRANSFORM},
        /* static graphs and Circle files: a ring of W-1 slots per sliding layer (W < max_seq) with
         * its own mask (src/contract/rt_contract.h); the transforms work in weight space, where the
         * window changes nothing */
        {"a sliding attention window", "sliding_window", c->sliding_window > 0, REF | STATIC | QUANT | EXPORT | TRANSFORM},
        /* split at load; the quantized checkpoint keeps them split (pdq's modules), its hf/ copy and
         * the transformed checkpoint stack them again as the source does (model/tensor_list.h) */
        {"stacked qkv_proj / gate_up_proj", "model_type", c->fused_qkv || c->fused_gate_up, REF | STATIC | EXPORT | QUANT | TRANSFORM},
    };
    const char *fam = pdq_family_of(c)->name;
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        if (f[i].used && !(f[i].paths >> path & 1u))
            return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "%s model: %s (config.json '%s') not yet supported by %s", fam,
                            f[i].feature, f[i].field, k_path_names[path]);
    return PDQ_OK;
}
