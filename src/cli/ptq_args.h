/* Activation-quantization flags of `pdq quantize` (library: pdq/ptq.h). */
#ifndef PDQ_CLI_PTQ_ARGS_H
#define PDQ_CLI_PTQ_ARGS_H

#include "args.h"
#include "pdq/ptq.h"

#define PTQ_ARGS_USAGE \
    "activation quantization (static prefill/decode graphs; needs --calib):\n" \
    "  --abits 16|8|none    int16 symmetric (default with --calib), uint8 asymmetric, or float\n" \
    "  --max-seq N          static graph length, calibration/eval window (default 256)\n" \
    "  --act-nsamples N     calibration windows of max_seq ids (default 32)\n" \
    "  --decode-calib-steps K  greedy decode steps observed after each window (default 0)\n" \
    "  --observer minmax|ema   range observer (default minmax); --ema-momentum M (default 0.9)\n" \
    "  --compare-calib      also calibrate/evaluate prefill-only vs prefill+decode (report both)\n" \
    "  --rope hf|pre_negated_sin  --scale-fusion none|k_proj  --layout batched|unrolled\n" \
    "  --verify-steps N     decode steps compared with the FP32 reference (default 32)\n"

/* Fills o; returns the activation dtype (PDQ_ADT_*), or -1 after printing an error. */
int ptq_args_read(pdq_args *a, pdq_ptq_run_opts *o, int have_calib);

/* The static runtime for a model dir: fake-quant activations when dir holds ptq.json (a note on
 * stderr), else plain float. so_given: the user chose graph options (else a ptq.json's own apply).
 * max_seq <= 0 takes the calibrated one. Returns 0, or 1 after printing the error. Free *ptq after
 * the runtime. */
int cli_static_runtime(const char *cmd, const char *dir, pdq_model *m, int B, int max_seq,
                       const pdq_static_opts *so, int so_given, pdq_rt **rt, pdq_ptq **ptq);

#endif
