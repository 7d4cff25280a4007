/* libFuzzer target: manifest.json's checker (pdq_manifest_check), run by the Circle runtime and
 * verify --circle before anything is sized from the manifest. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "circle/manifest_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    cJSON *root = cJSON_ParseWithLength((const char *)data, size);
    if (!root) return 0;
    pdq_manifest m;
    pdq_status st = {0};
    if (pdq_manifest_check(root, "fuzz/manifest.json", &m, &st) == PDQ_OK) {
        /* the runtime's buffers: S*D hidden floats and KV*(S-1)*hd per layer must not overflow */
        if (m.max_seq < 2 || m.layers < 1 || m.kv_heads < 1 || m.head_dim < 2 || m.hidden < 1 || m.vocab < 1 ||
            !isfinite(m.fill))
            abort();
        volatile size_t hid = (size_t)m.max_seq * (size_t)m.hidden, kv = (size_t)m.kv_heads * (size_t)m.max_seq * m.head_dim;
        (void)hid;
        (void)kv;
        /* layer types: a sliding layer only with a window; the rings are the contract's */
        for (int l = 0; l < m.layers; l++)
            if (m.sliding[l] > 1 || (m.sliding[l] && m.sliding_window < 1)) abort();
    } else if (st.msg[0] == '\0') {
        abort();
    }
    cJSON_Delete(root);
    return 0;
}
