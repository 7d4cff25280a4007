/* pdq: prefill/decode quantizer. Dispatches to subcommands. */
#include <stdio.h>
#include <string.h>

#include "args.h"
#include "commands.h"
#include "version.h"

static const pdq_command k_commands[] = {
    {"info", cmd_info, "config summary, parameter count, dtypes, tokenizer family"},
    {"tokenize", cmd_tokenize, "text -> token ids"},
    {"generate", cmd_generate, "generate text (reference model)"},
    {"logits", cmd_logits, "logits for every position as .npy"},
    {"ppl", cmd_ppl, "perplexity with strided sliding windows"},
    {"quantize", cmd_quantize, "GPTQ/RTN weight quantization of a model (quantized + dequantized HF checkpoints)"},
    {"gptq-matrix", cmd_gptq_matrix, "GPTQ and RTN on one weight matrix (.npy in, .npy + result.json out)"},
    {"verify", cmd_verify, "static prefill/decode/append graphs vs the reference, step by step"},
    {"chat", cmd_chat, "interactive multi-turn chat through the static runtime (append)"},
    {"inspect", cmd_inspect, "activation grids of a quantized checkpoint (ptq.json), per edge"},
    {"export", cmd_export, "Circle export: prefill/decode pair and per-layer files, manifest.json"},
    {"circle-run", cmd_circle_run, "run one .circle graph on .npy inputs, outputs as .npy"},
    {"bench", cmd_bench, "prefill/decode tokens/s of the f32 reference or packed weight-only path (llama-bench style)"},
    {"report", cmd_report, "one self-contained HTML report of a quantize OUTDIR (inline SVG)"},
    {"eval", cmd_eval, "task accuracy (ARC, PIQA, HellaSwag, WinoGrande, LAMBADA, MMLU, ...) as lm-evaluation-harness scores it"},
};

static void usage(FILE *f) {
    fprintf(f, "usage: pdq <command> [options]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof k_commands / sizeof k_commands[0]; i++)
        fprintf(f, "  %-12s %s\n", k_commands[i].name, k_commands[i].summary);
    fprintf(f, "\nrun 'pdq <command> --help' or 'pdq help <command>' for a command's options; pdq --version\n");
}

static const pdq_command *find(const char *name) {
    for (size_t i = 0; i < sizeof k_commands / sizeof k_commands[0]; i++)
        if (strcmp(name, k_commands[i].name) == 0) return &k_commands[i];
    return NULL;
}

int main(int argc, char **argv) {
    if (argc >= 2 && (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0)) {
        printf("pdq %s\n", PDQ_CLI_VERSION);
        return 0;
    }
    if (argc >= 2 && strcmp(argv[1], "help") == 0) { /* pdq help [CMD] */
        if (argc == 2) { usage(stdout); return 0; }
        const pdq_command *c = find(argv[2]);
        if (!c || argc > 3) {
            if (c) fprintf(stderr, "pdq help: one command at a time\n");
            else fprintf(stderr, "pdq help: unknown command '%s' (pdq --help lists them)\n", argv[2]);
            return 2;
        }
        char help[] = "--help";
        char *hv[] = {help, NULL};
        return c->fn(1, hv);
    }
    if (argc < 2) fprintf(stderr, "pdq: no command given\n");
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    for (size_t i = 0; i < sizeof k_commands / sizeof k_commands[0]; i++)
        if (strcmp(argv[1], k_commands[i].name) == 0) return k_commands[i].fn(argc - 2, argv + 2);
    const char *names[sizeof k_commands / sizeof k_commands[0]];
    for (size_t i = 0; i < sizeof k_commands / sizeof k_commands[0]; i++) names[i] = k_commands[i].name;
    const char *near = args_suggest(argv[1], names, (int)(sizeof names / sizeof names[0]));
    if (near) fprintf(stderr, "pdq: unknown command '%s' (did you mean %s?)\n", argv[1], near);
    else fprintf(stderr, "pdq: unknown command '%s' (pdq --help lists them)\n", argv[1]);
    return 2;
}
