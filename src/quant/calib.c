/* Calibration windows for GPTQ: the text is tokenized once; each sample is BOS followed by
 * seq_len-1 consecutive tokens starting at a seeded random offset (the GPTQ/TICO wikitext-2
 * recipe, with BOS first so every window looks like the start of a sequence). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pdq/file.h"
#include "pdq/quant.h"
#include "pdq/tokenizer.h"

/* splitmix64: small, seedable, platform independent. */
static uint64_t next_u64(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

pdq_code pdq_calib_windows(const int32_t *ids, long n, int nsamples, int seq_len, int bos,
                           uint64_t seed, int32_t **out, pdq_status *st) {
    *out = NULL;
    if (nsamples <= 0 || seq_len < 2)
        return pdq_fail(st, PDQ_ERR_ARG, "calibration: need nsamples >= 1 and seq_len >= 2 (got %d, %d)", nsamples, seq_len);
    int body = bos >= 0 ? seq_len - 1 : seq_len;
    if (n < (long)body)
        return pdq_fail(st, PDQ_ERR_ARG,
                        "calibration text too short: %ld tokens, windows of %d need at least %d", n, seq_len, body);
    int32_t *w = malloc((size_t)nsamples * seq_len * sizeof(int32_t));
    if (!w) return pdq_fail(st, PDQ_ERR_NOMEM, "calibration: out of memory");
    uint64_t s = seed;
    uint64_t span = (uint64_t)(n - body) + 1; /* offsets 0 .. n-body */
    for (int i = 0; i < nsamples; i++) {
        long off = (long)(next_u64(&s) % span);
        int32_t *row = w + (size_t)i * seq_len;
        int k = 0;
        if (bos >= 0) row[k++] = bos;
        memcpy(row + k, ids + off, (size_t)body * sizeof(int32_t));
    }
    *out = w;
    return PDQ_OK;
}

pdq_code pdq_calib_tokenize(const char *model_dir, const char *path, int32_t **ids, long *n, int *bos,
                            pdq_status *st) {
    *ids = NULL;
    *n = 0;
    char *buf;
    size_t len;
    pdq_code frc = pdq_file_read(path, PDQ_FILE_MAX_TEXT, &buf, &len, st);
    if (frc) return pdq_wrap(st, "calibration text");
    pdq_tokenizer *t;
    pdq_code rc = pdq_tokenizer_load(model_dir, &t, st);
    if (rc) { free(buf); return rc; }
    size_t nn = 0;
    rc = pdq_tokenizer_encode(t, buf, len, 0, ids, &nn, st);
    *bos = pdq_tokenizer_bos_id(t);
    pdq_tokenizer_free(t);
    free(buf);
    if (rc) return pdq_wrap(st, "tokenizing %s", path);
    *n = (long)nn;
    return PDQ_OK;
}
