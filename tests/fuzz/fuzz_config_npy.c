/* libFuzzer target: the two small user-file parsers not covered elsewhere, config.json of every
 * family (pdq_config_parse: the common fields and each family's own) and .npy (pdq_npy_read through a memfd). The first input byte picks which. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "pdq/config.h"
#include "pdq/npy.h"

static void fuzz_config(const uint8_t *data, size_t size) {
    pdq_config cfg;
    pdq_status st = {0};
    if (pdq_config_parse((const char *)data, size, "fuzz/config.json", &cfg, &st) != PDQ_OK) return;
    /* A config that parses must be usable: sane sizes and RoPE frequencies. */
    if (cfg.hidden_size <= 0 || cfg.n_heads <= 0 || cfg.n_kv_heads <= 0 || cfg.head_dim <= 0 ||
        cfg.n_heads % cfg.n_kv_heads != 0 || !cfg.family || cfg.rotary_dim < 2 || cfg.rotary_dim > cfg.head_dim ||
        cfg.rotary_dim % 2 || cfg.sliding_window < 0)
        abort();
    if (cfg.head_dim <= 4096) {
        float *inv = malloc((size_t)cfg.head_dim / 2 * sizeof *inv + sizeof *inv);
        if (inv) pdq_rope_inv_freq(&cfg, inv);
        if (inv && cfg.rope_type == PDQ_ROPE_LONGROPE) pdq_rope_inv_freq_longrope(&cfg, 1, inv);
        if (inv && cfg.rope_local_theta > 0) pdq_rope_inv_freq_local(&cfg, inv);
        free(inv);
    }
    (void)pdq_config_param_count(&cfg);
    /* per-layer attention types only where layers exist, each 0 or 1 */
    for (int l = 0; l < PDQ_MAX_LAYERS; l++)
        if (cfg.layer_sliding[l] > 1 || (l >= cfg.n_layers && cfg.layer_sliding[l])) abort();
}

static void fuzz_npy(const uint8_t *data, size_t size) {
    int fd = memfd_create("fuzz.npy", 0);
    if (fd < 0) return;
    if (write(fd, data, size) == (ssize_t)size) {
        char path[64];
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        pdq_npy a;
        pdq_status st = {0};
        if (pdq_npy_read(path, &a, &st) == PDQ_OK) {
            /* The element count must match what was read: touch the last element's bytes. */
            size_t bytes = a.count * pdq_npy_dtype_size(a.dtype);
            volatile uint8_t sink = bytes ? ((const uint8_t *)a.data)[bytes - 1] : 0;
            (void)sink;
            pdq_npy_free(&a);
        }
    }
    close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    if (data[0] & 1)
        fuzz_npy(data + 1, size - 1);
    else
        fuzz_config(data + 1, size - 1);
    return 0;
}
