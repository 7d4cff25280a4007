/* pdq ppl --kld FP32DIR: KL divergence against the FP32 model, its logits cached per evaluation
 * file (top-k per token, pdq/eval.h) so that later runs only run the model under test. */
#ifndef PDQ_CLI_KLD_CLI_H
#define PDQ_CLI_KLD_CLI_H

#include <stdint.h>

#include "pdq/eval.h"

#define KLD_USAGE                                                                                         \
    "  --kld FP32DIR        KL divergence against FP32DIR's reference model over the same windows: mean\n"    \
    "                       KLD, top-1 agreement, dp = p(target) change, ln(PPL ratio) (llama.cpp style)\n"  \
    "  --kld-top K          FP32 log-probabilities kept per token (default: all when the cache stays under\n" \
    "                       256 MiB, else as many as fit, at least 64; fewer give a lower bound)\n"         \
    "  --kld-cache DIR      where FP32 logits are cached (default $XDG_CACHE_HOME/pdq or ~/.cache/pdq);\n"   \
    "                       keyed by the FP32 model's files, the token ids and the windows\n"                \
    "  --no-kld-cache       compute the FP32 side every time\n"

typedef struct {
    const char *base_dir, *cache_dir;
    int top_k, no_cache, threads;
    /* the ranks of a distributed job (NULL: one process): the FP32 side and the model side are
     * split over them (collective: every rank calls cli_kld); rank 0 alone reads and writes the
     * cache and broadcasts a cached base */
    const struct pdq_dist *dist;
} kld_opts;

/* Base (cached or computed) then the model side through fn. *reused: 1 when the cache was used.
 * Prints errors; returns 0 on success. */
int cli_kld(const char *cmd, const kld_opts *o, const int32_t *ids, long n, int max_len, int stride,
            pdq_window_logits_fn fn, void *ctx, int vocab, pdq_kld_result *out, pdq_ppl_result *ppl, int *reused,
            char *cache_path, int cache_path_len);

/* The llama.cpp-style block of lines. */
void cli_kld_print(const pdq_kld_result *r);
/* The same as a JSON object's members (no braces), for --json. */
void cli_kld_print_json(const pdq_kld_result *r, int reused);

#endif
