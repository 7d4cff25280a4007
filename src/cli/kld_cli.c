/* KLD printing of pdq ppl --kld and pdq quantize --kld (see kld_cli.h). */
#include "kld_cli.h"

#include <stdio.h>

static void note(void *user, pdq_quantize_msg kind, const char *text) {
    if (kind == PDQ_QMSG_NOTE) fprintf(stderr, "pdq %s: %s\n", (const char *)user, text);
    else fputs(text, kind == PDQ_QMSG_RESULT ? stdout : stderr);
}

int cli_kld(const char *cmd, const kld_opts *o, const int32_t *ids, long n, int max_len, int stride,
            pdq_window_logits_fn fn, void *ctx, int vocab, pdq_kld_result *out, pdq_ppl_result *ppl, int *reused,
            char *cache_path, int cache_path_len) {
    pdq_status st = {0};
    pdq_quantize_callbacks cb = {(void *)cmd, note, NULL};
    job_ctx j = {&cb, &st, 0};
    if (!job_kld(&j, o, ids, n, max_len, stride, fn, ctx, vocab, out, ppl, reused, cache_path, cache_path_len)) return 0;
    fprintf(stderr, "pdq %s: %s\n", cmd, st.msg);
    return 1;
}

void cli_kld_print(const pdq_kld_result *r) {
    printf("====== KL divergence against FP32 (%ld tokens) ======\n", r->tokens);
    printf("PPL(FP32)            %10.4f\n", r->ppl_base);
    printf("PPL(model)           %10.4f\n", r->ppl);
    printf("ln(PPL(Q)/PPL(base)) %10.6f +/- %.6f\n", r->ln_ppl_ratio, r->ln_ppl_ratio_se);
    printf("Mean    KLD          %10.6f +/- %.6f\n", r->kld_mean, r->kld_se);
    printf("Median  KLD          %10.6f\n", r->kld_median);
    printf("99.0%%   KLD          %10.6f\n", r->kld_p99);
    printf("Maximum KLD          %10.6f\n", r->kld_max);
    if (r->k < r->vocab)
        printf("(KLD over the FP32 top-%d of %d tokens + one bucket for the rest, which held %.3f%% of its mass: a lower bound)\n",
               r->k, r->vocab, 100 * (1 - r->base_mass));
    printf("Same top-1           %9.3f%% +/- %.3f%%\n", 100 * r->top1, 100 * r->top1_se);
    printf("Mean    dp           %9.3f%% +/- %.3f%%\n", 100 * r->dp_mean, 100 * r->dp_se);
    printf("RMS     dp           %9.3f%%\n", 100 * r->dp_rms);
    printf("dp min / 1%% / 5%% / median / 95%% / 99%% / max: %.3f%% / %.3f%% / %.3f%% / %.3f%% / %.3f%% / %.3f%% / %.3f%%\n",
           100 * r->dp_min, 100 * r->dp_p01, 100 * r->dp_p05, 100 * r->dp_median, 100 * r->dp_p95, 100 * r->dp_p99,
           100 * r->dp_max);
}

void cli_kld_print_json(const pdq_kld_result *r, int reused) {
    printf("\"kld\": {\"tokens\": %ld, \"mean\": %.9g, \"se\": %.9g, \"median\": %.9g, \"p99\": %.9g, \"max\": %.9g, "
           "\"top1\": %.9g, \"top1_se\": %.9g, \"dp_mean\": %.9g, \"dp_se\": %.9g, \"dp_rms\": %.9g, \"dp_min\": %.9g, "
           "\"dp_p01\": %.9g, \"dp_p05\": %.9g, \"dp_median\": %.9g, \"dp_p95\": %.9g, \"dp_p99\": %.9g, \"dp_max\": %.9g, "
           "\"ppl_base\": %.9g, \"ppl\": %.9g, \"ln_ppl_ratio\": %.9g, \"ln_ppl_ratio_se\": %.9g, \"top_k\": %d, \"vocab\": %d, "
           "\"base_mass\": %.9g, \"base_cached\": %s}",
           r->tokens, r->kld_mean, r->kld_se, r->kld_median, r->kld_p99, r->kld_max, r->top1, r->top1_se, r->dp_mean,
           r->dp_se, r->dp_rms, r->dp_min, r->dp_p01, r->dp_p05, r->dp_median, r->dp_p95, r->dp_p99, r->dp_max,
           r->ppl_base, r->ppl, r->ln_ppl_ratio, r->ln_ppl_ratio_se, r->k, r->vocab, r->base_mass, reused ? "true" : "false");
}
