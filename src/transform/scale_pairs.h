/* Channel scale migration helpers shared by CLE and SmoothQuant (see scale_pairs.c). */
#ifndef PDQ_TRANSFORM_SCALE_PAIRS_H
#define PDQ_TRANSFORM_SCALE_PAIRS_H

#include "pdq/transform.h"

float pdq_absmax_row(const float *w, int n);
/* out[c] = max_r |w[r, c]|. */
void pdq_absmax_cols(const float *w, int rows, int cols, float *out);
void pdq_scale_cols(float *w, int rows, int cols, const float *s);
/* up row j / s[j], down column j * s[j]; s [I]. */
void pdq_migrate_up_down(pdq_layer *L, const pdq_config *c, const float *s);
/* v row (g, d) / s[g*hd+d], o column (h, d) * s[(h/group)*hd+d]; s [KV*hd]. */
void pdq_migrate_v_o(pdq_layer *L, const pdq_config *c, const float *s);
/* max |o column| over the query heads of each kv channel: out [KV*hd]; tmp [H*hd]. */
void pdq_o_cols_absmax_grouped(const pdq_layer *L, const pdq_config *c, float *tmp, float *out);
/* s clamped to [1e-4, 1e4]; 1 for 0, NaN or Inf (a dead channel keeps its weights). */
float pdq_safe_scale(double s);

#endif
