/* Which path computes which feature of a family. A path that does not yet compute a feature
 * refuses the model up front, naming the feature and the config field that turns it on, so
 * nothing downstream computes a silently different function. */
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
        /* Gemma: the graphs, the quantized checkpoint and the transforms know one pre-norm block of
         * plain-weight norms and a SiLU MLP (a rotation or fold through (1 + w) would also have to
         * move the 1, and the post-norms sit after o_proj / down_proj, where R1 cannot pass) */
        {"the sandwich block (four norms per layer)", "model_type", pdq_family_of(c)->block == PDQ_BLOCK_SANDWICH, REF},
        {"(1 + w) RMSNorm", "model_type", c->norm_offset != 0.0f, REF},
        {"a GELU-tanh MLP", "hidden_activation", c->act == PDQ_ACT_GELU_TANH, REF},
        {"a scaled embedding", "hidden_size (Gemma's sqrt(hidden) scale)", c->embed_scale != 0.0f, REF},
        {"the attention scale query_pre_attn_scalar^-0.5", "query_pre_attn_scalar", c->attn_scale != 0.0f, REF},
        {"logit softcapping", "final_logit_softcapping", c->final_softcap != 0.0f || c->attn_softcap != 0.0f, REF},
        {"a local RoPE base on sliding layers", "rope_local_base_freq", c->rope_local_theta > 0, REF},
        {"biases on linears", "attention_bias / mlp_bias", c->bias_mask != 0, REF | STATIC | QUANT | EXPORT | TRANSFORM},
        {"q/k head norms", "model_type", c->qk_norm, REF | STATIC | QUANT | EXPORT | TRANSFORM},
        {"partial RoPE", "partial_rotary_factor", pdq_cfg_rotary_dim(c) != c->head_dim, REF | STATIC | QUANT | EXPORT},
        /* the static runtime's RoPE table is one: it refuses a max_seq past the original length */
        {"longrope scaling", "rope_scaling.type", c->rope_type == PDQ_ROPE_LONGROPE, REF | STATIC | QUANT | EXPORT},
        /* static graphs and Circle files: a full-length cache and the window in the masks (the
         * manifest's model.sliding_window); a ring of the window's size is issue 25's */
        {"a sliding attention window", "sliding_window", c->sliding_window > 0, REF | STATIC | QUANT | EXPORT},
        /* the quantized checkpoint keeps q/k/v and gate/up split; its hf/ copy would need them stacked */
        {"stacked qkv_proj / gate_up_proj", "model_type", c->fused_qkv || c->fused_gate_up, REF | STATIC | EXPORT},
        /* the manifest names default and llama3 scaling only */
        {"linear RoPE scaling", "rope_scaling.rope_type", c->rope_type == PDQ_ROPE_LINEAR, REF | STATIC | QUANT | TRANSFORM},
    };
    const char *fam = pdq_family_of(c)->name;
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        if (f[i].used && !(f[i].paths >> path & 1u))
            return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "%s model: %s (config.json '%s') not yet supported by %s", fam,
                            f[i].feature, f[i].field, k_path_names[path]);
    return PDQ_OK;
}
