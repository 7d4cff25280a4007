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
        /* the static runtimes hold one RoPE table (cos/sin inputs); a second, local one for the
         * sliding layers (Gemma 3's rope_local_base_freq) is not in the contract yet */
        {"a local RoPE base on sliding layers", "rope_local_base_freq", c->rope_local_theta > 0, REF},
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
