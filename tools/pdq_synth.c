/* pdq_synth: writes a random Llama checkpoint (config.json + safetensors) for tests and benches. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pdq/synth.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: pdq_synth --out DIR [--hidden 64] [--intermediate 160] [--layers 2] [--heads 4]\n"
            "                 [--kv-heads 2] [--head-dim N] [--vocab 300] [--dtype f32|bf16|f16]\n"
            "                 [--shards N] [--tied] [--rope-llama3 factor,low,high,orig]\n"
            "                 [--rope-theta X] [--seed S] [--max-pos N] [--family MODEL_TYPE|NAME] [--bias]\n"
            "                 [--sliding-window W] [--max-window-layers N (qwen2: layers >= N slide)]\n"
            "                 gemma3: [--window W (4096)] [--window-pattern N (6)] [--rope-local-theta X (10000)]\n"
            "  Gemma-3-1B shape: --family gemma3 --hidden 1152 --intermediate 6912 --layers 26 --heads 4\n"
            "                    --kv-heads 1 --head-dim 256 --vocab 262144 --window 512 --tied --rope-theta 1e6\n");
}

static int parse_long(const char *flag, const char *v, long *out) {
    char *end;
    *out = strtol(v, &end, 10);
    if (!*v || *end) {
        fprintf(stderr, "pdq_synth: %s needs an integer, got '%s'\n", flag, v);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv) {
    pdq_synth_opts o;
    pdq_synth_opts_default(&o);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--bias")) {
            o.bias = 1;
            continue;
        }
        if (!strcmp(a, "--family") && i + 1 < argc) {
            o.family = argv[++i];
            continue;
        }
        if (!strcmp(a, "--tied")) {
            o.tied = 1;
            continue;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "pdq_synth: unknown flag or missing value: %s\n", a);
            usage(stderr);
            return 2;
        }
        const char *v = argv[++i];
        long x = 0;
        int *ip = !strcmp(a, "--hidden") ? &o.hidden
                  : !strcmp(a, "--intermediate") ? &o.intermediate
                  : !strcmp(a, "--layers") ? &o.layers
                  : !strcmp(a, "--heads") ? &o.heads
                  : !strcmp(a, "--kv-heads") ? &o.kv_heads
                  : !strcmp(a, "--head-dim") ? &o.head_dim
                  : !strcmp(a, "--vocab") ? &o.vocab
                  : !strcmp(a, "--shards") ? &o.shards
                  : !strcmp(a, "--max-pos") ? &o.max_pos
                  : !strcmp(a, "--window") ? &o.window
                  : !strcmp(a, "--window-pattern") ? &o.window_pattern
                  : !strcmp(a, "--sliding-window") ? &o.sliding_window
                  : !strcmp(a, "--max-window-layers") ? &o.max_window_layers
                  : NULL;
        if (ip) {
            if (parse_long(a, v, &x) || x < 0 || x > 1000000000) return 2;
            *ip = (int)x;
        } else if (!strcmp(a, "--out")) {
            o.out_dir = v;
        } else if (!strcmp(a, "--seed")) {
            if (parse_long(a, v, &x)) return 2;
            o.seed = (uint64_t)x;
        } else if (!strcmp(a, "--rope-theta")) {
            o.rope_theta = atof(v);
        } else if (!strcmp(a, "--rope-local-theta")) {
            o.rope_local_theta = atof(v);
        } else if (!strcmp(a, "--dtype")) {
            if (!strcmp(v, "f32")) o.dtype = PDQ_DT_F32;
            else if (!strcmp(v, "bf16")) o.dtype = PDQ_DT_BF16;
            else if (!strcmp(v, "f16")) o.dtype = PDQ_DT_F16;
            else {
                fprintf(stderr, "pdq_synth: --dtype must be f32, bf16 or f16\n");
                return 2;
            }
        } else if (!strcmp(a, "--rope-llama3")) {
            if (sscanf(v, "%lf,%lf,%lf,%d", &o.rope_factor, &o.rope_low, &o.rope_high, &o.rope_orig_max_pos) != 4) {
                fprintf(stderr, "pdq_synth: --rope-llama3 needs factor,low,high,orig\n");
                return 2;
            }
            o.rope_llama3 = 1;
        } else {
            fprintf(stderr, "pdq_synth: unknown flag %s\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (!o.out_dir) {
        usage(stderr);
        return 2;
    }
    pdq_status st = {0};
    if (pdq_synth_write(&o, &st) != PDQ_OK) {
        fprintf(stderr, "pdq_synth: %s\n", st.msg);
        return 1;
    }
    return 0;
}
