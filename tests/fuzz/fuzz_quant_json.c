/* libFuzzer target: pdq_quant.json's checker (pdq_quant_doc_check), run by the quantized loader
 * and the quantized exporter before any entry is used. Accepted entries must be usable. */
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdlib.h>

#include "io/quant_json_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    cJSON *root = cJSON_ParseWithLength((const char *)data, size);
    if (!root) return 0;
    pdq_status st = {0};
    if (pdq_quant_doc_check(root, "fuzz/pdq_quant.json", &st) == PDQ_OK) {
        const cJSON *e;
        cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(root, "tensors")) {
            /* what checkpoint.c computes from an entry: no overflow, no out-of-range cast */
            int bits = cJSON_GetObjectItemCaseSensitive(e, "bits")->valueint;
            int group = cJSON_GetObjectItemCaseSensitive(e, "group")->valueint;
            const cJSON *sh = cJSON_GetObjectItemCaseSensitive(e, "shape");
            int cols = cJSON_GetArrayItem(sh, 1)->valueint, rows = cJSON_GetArrayItem(sh, 0)->valueint;
            if (bits < 2 || bits > 8 || group < 0 || cols < 1 || rows < 1) abort();
            /* an entry without zero points is symmetric (qgrid.c implies 2^(bits-1)) */
            if (cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(e, "zeros")) &&
                !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "sym")))
                abort();
            volatile int ng = group ? (cols + group - 1) / group : 1;
            (void)ng;
        }
    } else if (st.msg[0] == '\0') {
        abort();
    }
    cJSON_Delete(root);
    return 0;
}
