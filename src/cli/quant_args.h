/* Quantizer/GPTQ flags shared by `pdq quantize` and `pdq gptq-matrix`. */
#ifndef PDQ_CLI_QUANT_ARGS_H
#define PDQ_CLI_QUANT_ARGS_H

#include "args.h"
#include "pdq/quant.h"

/* --group in [0, this]; 0 = one grid per output row */
#define QUANT_ARGS_GROUP_LIMIT 65536

#define QUANT_ARGS_USAGE \
    "  --wbits B            weight bits 2..8 (default 4)\n" \
    "  --group G            group size along the input dimension (default: per output row)\n" \
    "  --partial-groups     allow a group that does not divide the input (shorter last group)\n" \
    "  --per-tensor         one grid per tensor\n" \
    "  --sym                symmetric grid (zero point 2^(B-1); with groups no zero points are stored)\n" \
    "  --group-scale T      group scales as f16 (quantize's default), bf16 (f32's range) or f32\n" \
    "                       (gptq-matrix's default); each is rounded to T before codes are chosen\n" \
    "  --mse                shrink search: p = 1 - i/grid, i < maxshrink*grid, minimise sum|err|^norm\n" \
    "  --mse-grid N --mse-maxshrink F --mse-norm F   (defaults 100, 0.8, 2.4)\n" \
    "  --no-actorder        quantize columns in natural order (default: descending diag(H))\n" \
    "  --static-groups      group grids from the original weight up front\n" \
    "  --percdamp P         dampening, fraction of mean(diag H) (default 0.01)\n" \
    "  --blocksize B        lazy-update block (default 128)\n" \
    "  --gptq-ref-groups    group grids as IST-DASLab/AutoGPTQ/TICO: from the weights at the start of the\n" \
    "                       lazy-update block (default: from the error-updated weights, whole groups per block)\n" \
    "  --mse-gptq           per-row grid search measured after GPTQ (per-channel): each row keeps the shrink\n" \
    "                       p = 1 - k*range/steps, k = 0..steps, with the least GPTQ loss\n" \
    "  --mse-gptq-steps N --mse-gptq-range F   (defaults 10, 0.25)\n"

/* Reads the flags into o (defaults first; group_scale: the command's default --group-scale). */
void quant_args_read(pdq_args *a, pdq_gptq_opts *o, pdq_qscale_type group_scale);

#endif
