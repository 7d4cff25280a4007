/* Internal to src/model/: the scratch a model's forward keeps between calls (pdq_model.work),
 * so a steady-state prefill or decode step allocates no large buffer: the layer activations,
 * the head's normed rows, the forward's hidden state and the packed kernels' prepared rows and
 * panels. Each grows to the largest call seen and is freed with the model. */
#ifndef PDQ_MODEL_WORK_H
#define PDQ_MODEL_WORK_H

#include "pdq/model.h"
#include "util/scratch.h"

struct pdq_fwd_work {
    pdq_scratch layer;  /* layer_forward's activations */
    pdq_scratch hidden; /* the forward's residual stream and positions */
    pdq_scratch head;   /* the final norm's output */
    pdq_scratch kern;   /* pdq_qmatmul's (pdq_qctx.work) */
};

/* A model's work, empty (NULL: out of memory; the forward then allocates per call). */
struct pdq_fwd_work *pdq_fwd_work_new(void);
void pdq_fwd_work_free(struct pdq_fwd_work *w);

#endif
