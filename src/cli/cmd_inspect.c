/* pdq inspect: what a quantized artefact holds.
 *   pdq inspect --model OUTDIR [--edge NAME] [--json]: the activation grids of OUTDIR/ptq.json, one
 *     line per edge (dtype, scale, zero point, observed range, clipped fraction during calibration,
 *     and the group whose grid it shares).
 *   pdq inspect FILE.circle: Circle files (dispatched here; handled by the export step).
 *   pdq inspect EXPORT_DIR: a Circle export's per-layer attention types and K/V input shapes. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "commands.h"
#include "common.h"
#include "pdq/file.h"

static const char *k_usage =
    "usage: pdq inspect --model OUTDIR [--edge NAME] [--json]\n"
    "       pdq inspect FILE.circle [--json]\n"
    "       pdq inspect EXPORT_DIR [--json]   (a Circle export: per-layer attention types, K/V shapes)\n";

static int ends_with(const char *s, const char *suf) {
    size_t n = strlen(s), k = strlen(suf);
    return n >= k && strcmp(s + n - k, suf) == 0;
}

static double num(const cJSON *o, const char *k) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

static const char *str(const cJSON *o, const char *k) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : "?";
}

static int inspect_circle(const char *path) { return cli_inspect_circle(path); }

static void print_edge(const char *name, const cJSON *g, int json, int *first) {
    double counted = num(g, "counted"), clip = counted > 0 ? num(g, "clipped") / counted : 0;
    const char *gname = str(g, "name");
    int shared = strcmp(gname, name) != 0;
    if (json) {
        printf("%s\n  {\"edge\": \"%s\", \"dtype\": \"%s\", \"scale\": %.9g, \"zero_point\": %.0f, \"min\": %.9g, "
               "\"max\": %.9g, \"clipped_fraction\": %.6g, \"fixed\": %s, \"group\": \"%s\"}",
               *first ? "" : ",", name, str(g, "dtype"), num(g, "scale"), num(g, "zero_point"), num(g, "min"),
               num(g, "max"), clip, cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(g, "fixed")) ? "true" : "false", gname);
    } else {
        printf("%-58s %-6s %12.6g %6.0f %11.5g %11.5g %9.3g%%%s%s%s\n", name, str(g, "dtype"), num(g, "scale"),
               num(g, "zero_point"), num(g, "min"), num(g, "max"), 100 * clip,
               cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(g, "fixed")) ? "  fixed" : "",
               shared ? "  shares " : "", shared ? gname : "");
    }
    *first = 0;
}

int cmd_inspect(int argc, char **argv) {
    pdq_args a;
    args_init(&a, "inspect", argc, argv);
    if (args_flag(&a, "--help")) { fputs(k_usage, stdout); return 0; }
    const char *dir = args_str(&a, "--model"), *edge = args_str(&a, "--edge");
    int json = args_flag(&a, "--json");
    const char *file = args_pos(&a, 0);
    if (!dir == !file) args_error(&a, "give either --model OUTDIR or FILE.circle");
    if (args_finish(&a)) return ARGS_USAGE_EXIT;
    if (file) {
        if (ends_with(file, ".circle")) return json ? cli_inspect_circle_json(file) : inspect_circle(file);
        char mp[4096];
        snprintf(mp, sizeof mp, "%s/manifest.json", file);
        if (pdq_file_exists(mp)) return cli_inspect_export(file, json);
        fprintf(stderr, "pdq inspect: %s: expected a .circle file, an export directory or --model OUTDIR\n", file);
        return 2;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/ptq.json", dir);
    size_t len;
    char *txt = cli_read_text("inspect", path, &len);
    if (!txt) return 1;
    cJSON *root = cJSON_Parse(txt);
    free(txt);
    const cJSON *groups = root ? cJSON_GetObjectItemCaseSensitive(root, "groups") : NULL;
    const cJSON *edges = root ? cJSON_GetObjectItemCaseSensitive(root, "edges") : NULL;
    if (!cJSON_IsArray(groups) || !cJSON_IsObject(edges)) {
        fprintf(stderr, "pdq inspect: %s: not a pdq activation table (groups/edges missing)\n", path);
        cJSON_Delete(root);
        return 1;
    }
    int ng = cJSON_GetArraySize(groups), n = 0, first = 1, status = 0;
    const cJSON *e;
    if (json) printf("{\"activation_dtype\": \"%s\", \"edges\": [", str(root, "activation_dtype"));
    else {
        printf("activations %s, observer %s, max_seq %.0f; %d edges in %d groups\n", str(root, "activation_dtype"),
               str(root, "observer"), num(root, "max_seq"), cJSON_GetArraySize(edges), ng);
        printf("%-58s %-6s %12s %6s %11s %11s %10s\n", "edge", "dtype", "scale", "zp", "min", "max", "clipped");
    }
    cJSON_ArrayForEach(e, edges) {
        if (edge && strcmp(edge, e->string)) continue;
        int gi = cJSON_IsNumber(e) ? e->valueint : -1;
        if (gi < 0 || gi >= ng) {
            fprintf(stderr, "pdq inspect: %s: edge %s has a bad group index\n", path, e->string);
            status = 1;
            break;
        }
        print_edge(e->string, cJSON_GetArrayItem(groups, gi), json, &first);
        n++;
    }
    if (json) printf("\n]}\n");
    if (edge && !n && !status) {
        fprintf(stderr, "pdq inspect: no edge named '%s' in %s\n", edge, path);
        status = 1;
    }
    cJSON_Delete(root);
    return status;
}
