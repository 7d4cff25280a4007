/* The model's tensors as a checkpoint writer lists them, from the family's role table: names,
 * shapes, and where the model holds each one's data. Writers (the quantized checkpoint, its hf/
 * copy, the transformed checkpoint) iterate this list instead of spelling HF names. */
#ifndef PDQ_MODEL_TENSOR_LIST_H
#define PDQ_MODEL_TENSOR_LIST_H

#include "pdq/model.h"

typedef struct {
    char name[160];     /* without its last part: "model.layers.3.self_attn.qkv_proj" */
    const char *suffix; /* ".weight" or ".bias" */
    pdq_role_kind kind;
    int layer;          /* -1: a whole-model tensor */
    int lin, lin_last;  /* WEIGHT / BIAS / FUSED_WEIGHT: the linears it holds (rows stacked); else -1 */
    long rows, cols;    /* cols 0: 1-D */
} pdq_tensor_entry;

/* The order a writer lists tensors in (each kept as it was before the role tables, so a Llama
 * checkpoint stays byte for byte what it was). */
typedef enum {
    /* the embedding; per layer: attention norm, linears, biases, q/k norms, MLP norm; the final
     * norm, lm_head (the quantized checkpoint and its hf/ copy) */
    PDQ_TORDER_QUANT,
    /* the embedding, lm_head, the final norm; per layer: both norms, linears, biases, q/k norms
     * (the transformed checkpoint, in the order the transform run finishes them) */
    PDQ_TORDER_TRANSFORM
} pdq_tensor_order;

/* Fills out[0 .. max) and returns how many tensors there are (more than max: the rest were left
 * out). tied: no lm_head. stacked: a family's stacked tensor (Phi-3's qkv_proj) is one entry, as
 * the HF checkpoint stores it; else every linear is an entry of its own under pdq_linear_module's
 * name (pdq's quantized checkpoint, whose modules are the linears pdq computes). */
int pdq_tensor_list(const pdq_config *c, int tied, pdq_tensor_order order, int stacked, pdq_tensor_entry *out,
                    int max);

/* Every tensor of m (its config and tying) in a new array *out of *n entries (the caller frees
 * it): pdq_tensor_list with the count checked against max first. */
pdq_code pdq_tensor_list_new(const pdq_model *m, pdq_tensor_order order, int stacked, int max, pdq_tensor_entry **out,
                             int *n, pdq_status *st);

/* Number of linears an entry stacks (1 for every other tensor). */
int pdq_tensor_entry_pieces(const pdq_tensor_entry *e);
/* The data of piece k on m (NULL when m does not hold it, e.g. a lazy model's released layer),
 * its shape in *rows, *cols, and, for a linear's weight, pdq's module name in name (else ""). */
float *pdq_tensor_entry_piece(const pdq_model *m, const pdq_tensor_entry *e, int k, long *rows, long *cols,
                              char *name, size_t cap);

#endif
