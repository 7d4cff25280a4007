/* pdq export: Circle files (whole-model prefill/decode pair and/or per-layer files as TICO names
 * them), RoPE tables and manifest.json from an HF checkpoint or a pdq quantized checkpoint. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "args.h"
#include "commands.h"
#include "common.h"
#include "pdq/circle_export.h"
#include "pdq/ptq.h"
#include "quantize_export.h"
#include <cjson/cJSON.h>

static const char *k_usage =
    "usage: pdq export --model DIR --out OUTDIR [--max-seq N (64)] [--whole] [--per-layer] [--append-bucket Q[,Q...]]\n"
    "                  [--hybrid]\n"
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
    const char *dir = args_str(&a, "--model"), *out = args_str(&a, "--out");
    o.max_seq = (int)args_int(&a, "--max-seq", 64);
    int whole = args_flag(&a, "--whole"), per = args_flag(&a, "--per-layer");
    const char *buckets = args_str(&a, "--append-bucket");
    int hybrid = args_flag(&a, "--hybrid");
    const char *rope = args_str(&a, "--rope"), *sf = args_str(&a, "--scale-fusion"), *lay = args_str(&a, "--layout");
    o.so.mask_fill = (float)args_double(&a, "--mask-fill", -120.0);
    int threads = (int)args_int(&a, "--threads", 0);
    o.quiet = args_flag(&a, "--quiet");
    int json = args_flag(&a, "--json");
    if (json) o.quiet = 1; /* stdout carries the JSON document only */
    if (args_finish(&a) || !dir || !out) { fputs(k_usage, stderr); return 2; }
    if (whole || per) { o.whole = whole; o.per_layer = per; }
    pdq_status bst = {0};
    if (buckets && pdq_buckets_parse(buckets, o.max_seq, o.buckets, &o.n_buckets, &bst) != PDQ_OK) {
        fprintf(stderr, "pdq export: --append-bucket: %s\n", bst.msg);
        return 2;
    }
    if (rope && (int)(o.so.rope = (pdq_rope_conv)pdq_rope_conv_parse(rope)) < 0) {
        fprintf(stderr, "pdq export: unknown --rope %s\n", rope);
        return 2;
    }
    if (sf && (int)(o.so.scale = (pdq_scale_fusion)pdq_scale_fusion_parse(sf)) < 0) {
        fprintf(stderr, "pdq export: unknown --scale-fusion %s\n", sf);
        return 2;
    }
    if (lay && (int)(o.so.layout = (pdq_attn_layout)pdq_attn_layout_parse(lay)) < 0) {
        fprintf(stderr, "pdq export: unknown --layout %s\n", lay);
        return 2;
    }
    pdq_model *m = cli_load_model("export", dir, threads);
    if (!m) return 1;
    if (hybrid) { /* weights only: the checkpoint's codes, float activations and norms */
        char qj[4096];
        snprintf(qj, sizeof qj, "%s/pdq_quant.json", dir);
        FILE *qf = fopen(qj, "rb");
        if (!qf) {
            fprintf(stderr, "pdq export: --hybrid needs a pdq quantized checkpoint (%s not found)\n", qj);
            pdq_model_free(m);
            return 1;
        }
        fclose(qf);
        o.quant_dir = dir;
        o.hybrid = 1;
    } else if (pdq_ptq_in_dir(dir)) { /* quantized checkpoint with activation grids: .q.circle files */
        o.quant_dir = dir;
        pdq_ptq_quantize_norms(m);
        if (rope || sf || lay) fprintf(stderr, "pdq export: note: graph options come from %s/ptq.json\n", dir);
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
        cJSON_AddItemToObject(r, "files", list_files(out, &total));
        cJSON_AddNumberToObject(r, "total_bytes", total);
        char *s = cJSON_PrintUnformatted(r);
        if (s) puts(s);
        free(s);
        cJSON_Delete(r);
    }
    return 0;
}
