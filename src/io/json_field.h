/* Checked reads of JSON fields (cJSON): integers must be integral numbers in a range (4.5, 1e30
 * and out-of-range values are rejected before any cast), floats finite and in a range, strings
 * from an enum. Errors name the file, the field's path, the value and the limit:
 *   "out/ptq.json: groups[12].scale = 1e-60: must be in [1e-30, 1e+30]". */
#ifndef PDQ_JSON_FIELD_H
#define PDQ_JSON_FIELD_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "pdq/status.h"

/* Where a field lives: the file and the path of the enclosing object ("" for the top). */
typedef struct {
    const char *file;
    const char *at;
} pdq_jctx;

/* Absent (or null) fields: PDQ_JF_REQUIRED fails with PDQ_ERR_MISSING, PDQ_JF_OPTIONAL keeps *out
 * (the caller's default). */
enum { PDQ_JF_OPTIONAL = 0, PDQ_JF_REQUIRED = 1 };

pdq_code pdq_jf_int(const pdq_jctx *c, const cJSON *obj, const char *key, int required, int64_t lo, int64_t hi,
                    int64_t *out, pdq_status *st);
/* The same for an int destination (lo/hi must fit an int). */
pdq_code pdq_jf_i32(const pdq_jctx *c, const cJSON *obj, const char *key, int required, int lo, int hi, int *out,
                    pdq_status *st);
/* A finite number in [lo, hi]. */
pdq_code pdq_jf_num(const pdq_jctx *c, const cJSON *obj, const char *key, int required, double lo, double hi,
                    double *out, pdq_status *st);
pdq_code pdq_jf_bool(const pdq_jctx *c, const cJSON *obj, const char *key, int required, int *out, pdq_status *st);
/* A string that is one of names[0..n); *out is its index. */
pdq_code pdq_jf_enum(const pdq_jctx *c, const cJSON *obj, const char *key, int required, const char *const *names,
                     int n, int *out, pdq_status *st);
/* A string, any value (borrowed from obj). */
pdq_code pdq_jf_str(const pdq_jctx *c, const cJSON *obj, const char *key, int required, const char **out,
                    pdq_status *st);
/* An object / array member (NULL when optional and absent). */
pdq_code pdq_jf_object(const pdq_jctx *c, const cJSON *obj, const char *key, int required, const cJSON **out,
                       pdq_status *st);
pdq_code pdq_jf_array(const pdq_jctx *c, const cJSON *obj, const char *key, int required, int max_items,
                      const cJSON **out, pdq_status *st);

/* Checks one array element or standalone value v (named by at + key) as an integer in [lo, hi]. */
pdq_code pdq_jf_int_value(const pdq_jctx *c, const cJSON *v, const char *name, int64_t lo, int64_t hi, int64_t *out,
                          pdq_status *st);

/* Formats "at.key" / "at[i]" paths for nested contexts. */
void pdq_jf_path(char *buf, size_t cap, const char *at, const char *key);
void pdq_jf_index(char *buf, size_t cap, const char *at, int i);

/* obj[a][b][c] (b or c NULL: fewer levels), NULL when a level is missing: reading back a
 * document pdq wrote (report.json), not checking one. */
const cJSON *pdq_jf_get(const cJSON *obj, const char *a, const char *b, const char *c);
/* Its number, or fallback when it is missing or not a number. */
double pdq_jf_get_num(const cJSON *obj, const char *a, const char *b, const char *c, double fallback);

#endif
