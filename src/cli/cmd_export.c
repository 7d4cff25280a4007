/* pdq export: Circle files (whole-model prefill/decode pair and/or per-layer files as TICO names
 * them), RoPE tables and manifest.json from an HF checkpoint or a pdq quantized checkpoint. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "args.h"
#include "commands.h"
#include "common.h"
#include "pdq/circle_export.h"
#include "pdq/file.h"
#include "pdq/ptq.h"
#include "job/export.h"
#include "pdq/quant.h"
#include "dir_defaults.h"
#include <cjson/cJSON.h>

static const char *k_usage =
    "usage: pdq export --model DIR --out OUTDIR [--max-seq N (ptq.json's, else 256)] [--whole] [--per-layer]\n"
    "                  [--append-bucket Q[,Q...]] [--hybrid]\n"
    "                  [--rope pre_negated_sin|hf] [--scale-fusion k_proj|none] [--layout unrolled|batched]\n"
    "                  [--mask-fill X (-120)] [--threads N] [--quiet] [--json]\n"
    "  a quantized checkpoint dir with ptq.json gives the .q.circle files (int16 activations, uint4/uint8 weights)\n"
    "  --hybrid (quantized checkpoint): float activations, packed uint4/uint8 per-channel weights (.w4/.w8.circle)\n"
    "  --append-bucket 1,4,16: decoder_layer_append_prefill_q<Q>_<i> (and model_append_prefill_q<Q>) per bucket\n"
    "  default: both --whole (model_prefill/model_decode) and --per-layer (token_embedding, decoder_layer_*, lm_head)\n";

int cmd_export(int argc, char **argv) {
    pdq_args a;
    args_init(&a, "export", argc, argv);
    if (args_flag(&a, "--help")) { fputs(k_usage, stdout); return 0; }
    pdq_export_opts o;
    pdq_export_opts_default(&o);
    const char *dir = args_required(&a, "--model"), *out = args_required(&a, "--out");
    int max_seq = (int)args_int_range(&a, "--max-seq", 0, 2, ARGS_MAX_SEQ_LIMIT);
    int whole = args_flag(&a, "--whole"), per = args_flag(&a, "--per-layer");
    const char *buckets = args_str(&a, "--append-bucket");
    int hybrid = args_flag(&a, "--hybrid");
    const char *rope = args_str(&a, "--rope"), *sf = args_str(&a, "--scale-fusion"), *lay = args_str(&a, "--layout");
    o.so.mask_fill = (float)args_real(&a, "--mask-fill", -120.0, -HUGE_VAL, 0, ARGS_HI_OPEN);
    int threads = args_threads(&a);
    o.quiet = args_flag(&a, "--quiet");
    int json = args_flag(&a, "--json");
    if (json) o.quiet = 1; /* stdout carries the JSON document only */
    if (whole || per) { o.whole = whole; o.per_layer = per; }
    if (rope && (int)(o.so.rope = (pdq_rope_conv)pdq_rope_conv_parse(rope)) < 0)
        args_error(&a, "--rope must be hf or pre_negated_sin, got '%s'", rope);
    if (sf && (int)(o.so.scale = (pdq_scale_fusion)pdq_scale_fusion_parse(sf)) < 0)
        args_error(&a, "--scale-fusion must be none or k_proj, got '%s'", sf);
    if (lay && (int)(o.so.layout = (pdq_attn_layout)pdq_attn_layout_parse(lay)) < 0)
        args_error(&a, "--layout must be batched or unrolled, got '%s'", lay);
    if (args_finish(&a)) return ARGS_USAGE_EXIT;
    int rc_opts = cli_check_graph_opts("export", dir, rope, sf, lay);
    if (rc_opts) return rc_opts;
    /* a quantized checkpoint exports at the max_seq it was calibrated with unless told otherwise */
    o.max_seq = cli_resolve_max_seq(dir, max_seq);
    int calibrated = pdq_ptq_in_dir(dir) ? cli_stored_max_seq(dir) : 0;
    if (calibrated && o.max_seq > calibrated) { /* as the runtime: grids observed up to that length only */
        fprintf(stderr, "pdq export: --max-seq %d exceeds the max_seq %d %s/ptq.json was calibrated with\n", o.max_seq,
                calibrated, dir);
        return ARGS_USAGE_EXIT;
    }
    pdq_status bst = {0};
    if (buckets && pdq_buckets_parse(buckets, o.max_seq, o.buckets, &o.n_buckets, &bst) != PDQ_OK) {
        fprintf(stderr, "pdq export: --append-bucket: %s\n", bst.msg);
        return ARGS_USAGE_EXIT;
    }
    pdq_model *m = cli_load_model("export", dir, threads);
    if (!m) return 1;
    if (hybrid) { /* weights only: the checkpoint's codes, float activations and norms */
        char qj[4096];
        snprintf(qj, sizeof qj, "%s/pdq_quant.json", dir);
        if (!pdq_file_exists(qj)) {
            fprintf(stderr, "pdq export: --hybrid needs a pdq quantized checkpoint (%s not found)\n", qj);
            pdq_model_free(m);
            return 1;
        }
        o.quant_dir = dir;
        o.hybrid = 1;
    } else if (pdq_ptq_in_dir(dir)) { /* quantized checkpoint with activation grids: .q.circle files */
        o.quant_dir = dir;
        pdq_ptq_quantize_norms(m);
    } else if (pdq_quant_is_checkpoint(dir)) { /* weight-only: no activation grids to export with */
        fprintf(stderr, "pdq export: note: %s has quantized weights but no activation grids (ptq.json): writing float .circle\n"
                        "  files with the dequantized weights. For .q.circle files, quantize activations too:\n"
                        "  pdq quantize --model SRC --calib FILE --abits 16 ... --out %s (or add --export circle-full);\n"
                        "  for packed weights with float activations (.w4/.w8.circle), pdq export --hybrid\n",
                dir, dir);
    }
    pdq_status st = {0};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pdq_code rc = pdq_export_model(m, out, &o, &st);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    pdq_model_free(m);
    if (rc != PDQ_OK) {
        fprintf(stderr, "pdq export: %s\n", st.msg);
        return 1;
    }
    double secs = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    if (!o.quiet) fprintf(stderr, "export: done in %.2f s -> %s/manifest.json\n", secs, out);
    if (json) {
        cJSON *r = cJSON_CreateObject();
        double total;
        cJSON_AddStringToObject(r, "dir", out);
        cJSON_AddBoolToObject(r, "quantized", o.quant_dir != NULL);
        cJSON_AddNumberToObject(r, "max_seq", o.max_seq);
        cJSON_AddBoolToObject(r, "whole", o.whole);
        cJSON_AddBoolToObject(r, "per_layer", o.per_layer);
        cJSON_AddNumberToObject(r, "append_bucket", o.append_q);
        cJSON_AddNumberToObject(r, "seconds", secs);
        cJSON_AddItemToObject(r, "files", job_list_files(out, &total));
        cJSON_AddNumberToObject(r, "total_bytes", total);
        char *s = cJSON_PrintUnformatted(r);
        if (s) puts(s);
        free(s);
        cJSON_Delete(r);
    }
    return 0;
}
