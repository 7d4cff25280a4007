/* KL divergence against the FP32 model with its logits cached per evaluation file (see kld.h). */
#include "kld.h"

#include "pdq/file.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dist/dist.h"

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ULL;
    return h;
}

/* The base model's identity: its real path and every weight/config file's name, size and mtime. */
static uint64_t model_key(const char *dir, uint64_t h) {
    char real[PATH_MAX];
    if (realpath(dir, real)) h = fnv(h, real, strlen(real));
    char **names;
    int n;
    pdq_status st = {0};
    if (pdq_dir_names(dir, 4096, &names, &n, &st) != PDQ_OK) return h;
    for (int i = 0; i < n; i++) {
        size_t k = strlen(names[i]);
        if (!((k > 12 && strcmp(names[i] + k - 12, ".safetensors") == 0) || (k > 5 && strcmp(names[i] + k - 5, ".json") == 0)))
            continue;
        char p[PATH_MAX + 256];
        long long v[2];
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        h = fnv(h, names[i], k + 1);
        if (pdq_path_stat(p, &v[0], &v[1]) != PDQ_PATH_NONE) h = fnv(h, v, sizeof v);
    }
    pdq_dir_names_free(names, n);
    return h;
}

static pdq_code base_window(void *ctx, const int32_t *ids, int T, float *logits, pdq_status *st) {
    return pdq_model_forward((const pdq_model *)ctx, NULL, 1, T, ids, NULL, NULL, logits, 0, st);
}

int job_kld(const job_ctx *j, const kld_opts *o, const int32_t *ids, long n, int max_len, int stride,
            pdq_window_logits_fn fn, void *ctx, int vocab, pdq_kld_result *out, pdq_ppl_result *ppl, int *reused,
            char *cache_path, int cache_path_len) {
    pdq_status st = {0};
    pdq_kld_base base = {0};
    /* auto: as many as keep the cache near 256 MiB (8 bytes an entry), at least 64: exact for
     * small vocabularies or short corpora */
    long per_tok = (256L << 20) / 8 / (n > 1 ? n : 1);
    int k = o->top_k > 0 ? o->top_k : per_tok < 64 ? 64 : per_tok > vocab ? vocab : (int)per_tok;
    if (k > vocab) k = vocab;
    *reused = 0;
    cache_path[0] = 0;
    uint64_t key = fnv(14695981039346656037ULL, "pdq-kld-1", 9);
    key = model_key(o->base_dir, key);
    int32_t hdr[4] = {max_len, stride, k, vocab};
    key = fnv(key, hdr, sizeof hdr);
    key = fnv(key, ids, sizeof *ids * (size_t)n);
    int rank = pdq_dist_rank(o->dist);
    if (!o->no_cache && rank == 0) {
        const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
        char dir[PATH_MAX];
        if (o->cache_dir) snprintf(dir, sizeof dir, "%s", o->cache_dir);
        else if (xdg && *xdg) snprintf(dir, sizeof dir, "%s/pdq", xdg);
        else snprintf(dir, sizeof dir, "%s/.cache/pdq", home && *home ? home : "/tmp");
        pdq_status dst = {0};
        if (pdq_dir_make(dir, 1, &dst) != PDQ_OK) job_note(j, "warning: cache: %s", dst.msg);
        snprintf(cache_path, (size_t)cache_path_len, "%s/kld-%016llx.bin", dir, (unsigned long long)key);
        if (pdq_kld_base_load(cache_path, key, &base, &st) == PDQ_OK) *reused = 1;
        else if (st.code != PDQ_ERR_MISSING) job_note(j, "warning: ignoring cache: %s", st.msg);
    }
    if (pdq_dist_size(o->dist) > 1) { /* rank 0's cached base, if any, to every rank */
        int32_t r = *reused;
        if (pdq_dist_bcast(o->dist, &r, sizeof r, 0, &st) || (r && pdq_kld_base_bcast(o->dist, &base, &st))) {
            pdq_kld_base_free(&base);
            return job_fail(j, st.code, "kld base: %s", st.msg);
        }
        *reused = r;
    }
    if (!*reused) {
        pdq_model *bm = job_load_model(j, o->base_dir, o->threads);
        if (!bm) return 1;
        if (bm->cfg.vocab_size != vocab) {
            job_fail(j, PDQ_ERR_SHAPE, "--kld %s has vocabulary %d, the model %d", o->base_dir, bm->cfg.vocab_size, vocab);
            pdq_model_free(bm);
            return 1;
        }
        pdq_code rc = pdq_kld_base_compute_split(o->dist, base_window, bm, vocab, ids, n, max_len, stride, k,
                                                 "fp32 logits (kld base)", &base, &st);
        pdq_model_free(bm);
        if (rc != PDQ_OK) return job_fail(j, st.code, "kld base: %s", st.msg);
        if (cache_path[0] && pdq_kld_base_save(cache_path, &base, key, &st) != PDQ_OK) {
            job_note(j, "warning: %s", st.msg);
            cache_path[0] = 0;
        }
    }
    pdq_code rc = pdq_kld_windows_split(o->dist, fn, ctx, ids, n, max_len, stride, &base, "perplexity + kld", out, ppl, &st);
    pdq_kld_base_free(&base);
    if (rc != PDQ_OK) return job_fail(j, st.code, "kld: %s", st.msg);
    return 0;
}
