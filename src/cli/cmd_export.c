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
#include "pdq/ptq.h"
#include "pdq/quant.h"
#include "dir_defaults.h"

static const char *k_usage =
    "usage: pdq export --model DIR --out OUTDIR [--max-seq N (ptq.json's, else 256)] [--whole] [--per-layer] [--append-bucket Q]\n"
    "                  [--rope pre_negated_sin|hf] [--scale-fusion k_proj|none] [--layout unrolled|batched]\n"
    "                  [--mask-fill X (-120)] [--threads N] [--quiet]\n"
    "  a quantized checkpoint dir with ptq.json gives the .q.circle files (int16 activations, uint4/uint8 weights)\n"
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
    o.append_q = (int)args_int_range(&a, "--append-bucket", 0, 2, ARGS_MAX_SEQ_LIMIT);
    const char *rope = args_str(&a, "--rope"), *sf = args_str(&a, "--scale-fusion"), *lay = args_str(&a, "--layout");
    o.so.mask_fill = (float)args_real(&a, "--mask-fill", -120.0, -HUGE_VAL, 0, ARGS_HI_OPEN);
    int threads = args_threads(&a);
    o.quiet = args_flag(&a, "--quiet");
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
    if (o.append_q && o.append_q >= o.max_seq) {
        fprintf(stderr, "pdq export: --append-bucket %d must be below max_seq %d\n", o.append_q, o.max_seq);
        return ARGS_USAGE_EXIT;
    }
    pdq_model *m = cli_load_model("export", dir, threads);
    if (!m) return 1;
    if (pdq_ptq_in_dir(dir)) { /* quantized checkpoint with activation grids: .q.circle files */
        o.quant_dir = dir;
        pdq_ptq_quantize_norms(m);
    } else if (pdq_quant_is_checkpoint(dir)) { /* weight-only: no activation grids to export with */
        fprintf(stderr, "pdq export: note: %s has quantized weights but no activation grids (ptq.json): writing float .circle\n"
                        "  files with the dequantized weights. For .q.circle files, quantize activations too:\n"
                        "  pdq quantize --model SRC --calib FILE --abits 16 ... --out %s (or add --export circle-full)\n",
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
    if (!o.quiet)
        fprintf(stderr, "export: done in %.2f s -> %s/manifest.json\n",
                (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec), out);
    return 0;
}
