/* pdq ppl --kld FP32DIR: KL divergence against the FP32 model (computed by job/kld.h), printed. */
#ifndef PDQ_CLI_KLD_CLI_H
#define PDQ_CLI_KLD_CLI_H

#include <stdint.h>

#include "job/kld.h"
#include "pdq/eval.h"

#define KLD_USAGE                                                                                         \
    "  --kld FP32DIR        KL divergence against FP32DIR's reference model over the same windows: mean\n"    \
    "                       KLD, top-1 agreement, dp = p(target) change, ln(PPL ratio) (llama.cpp style)\n"  \
    "  --kld-top K          FP32 log-probabilities kept per token (default: all when the cache stays under\n" \
    "                       256 MiB, else as many as fit, at least 64; fewer give a lower bound)\n"         \
    "  --kld-cache DIR      where FP32 logits are cached (default $XDG_CACHE_HOME/pdq or ~/.cache/pdq);\n"   \
    "                       keyed by the FP32 model's files, the token ids and the windows\n"                \
    "  --no-kld-cache       compute the FP32 side every time\n"

/* job_kld with its notes and error on stderr as "pdq CMD: ...". Returns 0 on success. */
int cli_kld(const char *cmd, const kld_opts *o, const int32_t *ids, long n, int max_len, int stride,
            pdq_window_logits_fn fn, void *ctx, int vocab, pdq_kld_result *out, pdq_ppl_result *ppl, int *reused,
            char *cache_path, int cache_path_len);

/* The llama.cpp-style block of lines. */
void cli_kld_print(const pdq_kld_result *r);
/* The same as a JSON object's members (no braces), for --json. */
void cli_kld_print_json(const pdq_kld_result *r, int reused);

#endif
