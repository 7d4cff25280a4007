/* ptq.json, checked field by field before anything is built from it: enums, integral counts,
 * finite scales in range, integer grids inside their dtype, max_seq bounded. Independent of the
 * model, so the fuzz target runs it alone; the caller then matches groups and edges to graphs. */
#ifndef PDQ_PTQ_STORE_CHECK_H
#define PDQ_PTQ_STORE_CHECK_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "pdq/status.h"

/* Documented limits (README "Files pdq reads"). */
#define PDQ_PTQ_MAX_SEQ_LIMIT 65536
#define PDQ_PTQ_MAX_GROUPS (1 << 20)
#define PDQ_PTQ_MIN_SCALE 1e-30
#define PDQ_PTQ_MAX_SCALE 1e30

typedef struct {
    const char *name;
    int dtype; /* pdq_adtype */
    double scale, min, max, clipped, counted;
    int64_t zero_point, qmin, qmax, steps;
    int fixed, has_steps, has_clipped, has_counted;
} ptq_group_doc;

typedef struct {
    int adtype, observer, rope, scale_fusion, layout; /* enum values */
    double ema_momentum, mask_fill;
    int max_seq;
    int has_samples, has_decode_steps;
    int samples, decode_steps;
    const cJSON *groups, *edges; /* borrowed from root */
    int n_groups, n_edges;
} ptq_doc;

/* Checks the whole document (every group and edge entry); max_seq must be in [2, max_seq_limit]. */
pdq_code pdq_ptq_doc_check(const cJSON *root, const char *path, int max_seq_limit, ptq_doc *d, pdq_status *st);
/* One entry of groups (i is its index, for messages). */
pdq_code pdq_ptq_group_check(const cJSON *o, int i, const char *path, ptq_group_doc *g, pdq_status *st);

#endif
