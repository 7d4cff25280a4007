/* libFuzzer target: ptq.json's checker (pdq_ptq_doc_check), the part of pdq_ptq_load that runs
 * before any graph is built. Whatever it accepts must be usable as it stands. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "pdq/ptq.h"
#include "ptq/store_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    cJSON *root = cJSON_ParseWithLength((const char *)data, size);
    if (!root) return 0;
    ptq_doc d;
    pdq_status st = {0};
    if (pdq_ptq_doc_check(root, "fuzz/ptq.json", PDQ_PTQ_MAX_SEQ_LIMIT, &d, &st) == PDQ_OK) {
        if (d.max_seq < 2 || d.max_seq > PDQ_PTQ_MAX_SEQ_LIMIT || d.adtype < 0 || d.adtype > PDQ_ADT_INT32 ||
            !(d.ema_momentum >= 0 && d.ema_momentum <= 1) || !isfinite(d.mask_fill))
            abort();
        for (int i = 0; i < d.n_groups; i++) {
            ptq_group_doc g;
            if (pdq_ptq_group_check(cJSON_GetArrayItem(d.groups, i), i, "fuzz/ptq.json", &g, &st) != PDQ_OK) abort();
            /* a grid that passed: normal float32 scale, zero point inside [qmin, qmax] */
            if (!((float)g.scale > 0) || !isfinite((float)g.scale) || g.zero_point < g.qmin ||
                g.zero_point > g.qmax || g.min > g.max)
                abort();
        }
    } else if (st.msg[0] == '\0') {
        abort(); /* every rejection says why */
    }
    cJSON_Delete(root);
    return 0;
}
