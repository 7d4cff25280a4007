/* pdq inspect EXPORT_DIR: the attention type of every layer of a Circle export (manifest.json,
 * checked as the Circle runtime checks it) and the shapes of its decode graphs' K/V inputs and
 * mask under the static contract (src/contract/rt_contract.h). */
#include <stdio.h>
#include <stdlib.h>

#include <cjson/cJSON.h>

#include "circle/manifest_check.h"
#include "commands.h"
#include "contract/rt_contract.h"
#include "pdq/file.h"

int cli_inspect_export(const char *dir, int json) {
    char path[4096];
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    char *txt;
    pdq_status st = {0};
    if (pdq_file_read(path, PDQ_FILE_MAX_JSON, &txt, NULL, &st)) {
        fprintf(stderr, "pdq inspect: %s\n", st.msg);
        return 1;
    }
    cJSON *root = cJSON_Parse(txt);
    free(txt);
    pdq_manifest *m = malloc(sizeof *m);
    if (!root || !m || pdq_manifest_check(root, path, m, &st)) {
        fprintf(stderr, "pdq inspect: %s\n", root ? st.msg : "manifest.json is not JSON");
        cJSON_Delete(root);
        free(m);
        return 1;
    }
    cJSON_Delete(root);
    int S = m->max_seq, KV = m->kv_heads, hd = m->head_dim;
    if (json) printf("{\"max_seq\": %d, \"sliding_window\": %d, \"layers\": [", S, m->sliding_window);
    else
        printf("%s: max_seq %d, sliding_window %d, %d layers\n%-6s %-18s %8s  %-22s %s%s\n", dir, S, m->sliding_window,
               m->layers, "layer", "type", "slots", "decode past_key/value", "decode mask",
               m->local_rope ? "  rope table" : "");
    for (int l = 0; l < m->layers; l++) {
        int ring = pdq_ctr_ring_of(m->sliding[l] ? m->sliding_window : 0, S), P = pdq_ctr_past_slots(ring, S, 1);
        const char *type = ring ? "sliding (ring)" : m->sliding[l] ? "sliding (W>=max_seq)" : "full";
        if (json)
            printf("%s\n  {\"layer\": %d, \"type\": \"%s\", \"window\": %d, \"cache_slots\": %d, \"past_key\": [1, %d, %d, %d], "
                   "\"decode_mask\": [1, 1, %d]%s%s%s}",
                   l ? "," : "", l, m->sliding[l] ? "sliding_attention" : "full_attention",
                   m->sliding[l] ? m->sliding_window : 0, pdq_ctr_cache_slots(ring, S), KV, P, hd, P + 1,
                   m->local_rope ? ", \"rope_table\": \"" : "", m->local_rope ? (m->rope_local[l] ? "local" : "global") : "",
                   m->local_rope ? "\"" : "");
        else
            printf("%-6d %-18s %8d  (1,%d,%d,%d)%*s (1,1,%d)%s%s\n", l, type, pdq_ctr_cache_slots(ring, S), KV, P, hd, 8, "",
                   P + 1, m->local_rope ? "         " : "", m->local_rope ? (m->rope_local[l] ? "local" : "global") : "");
    }
    if (json) printf("\n]}\n");
    free(m);
    return 0;
}
