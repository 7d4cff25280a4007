/* Internal to src/model/: the owner of a packed model's mapped checkpoint and matrices. */
#ifndef PDQ_MODEL_PACKED_INTERNAL_H
#define PDQ_MODEL_PACKED_INTERNAL_H

struct pdq_packed;
void pdq_packed_free(struct pdq_packed *p);

#endif
