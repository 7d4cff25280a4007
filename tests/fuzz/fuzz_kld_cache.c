/* libFuzzer target: the KLD base cache file (pdq_kld_base_load through a memfd). The key is
 * taken from the input's own header so that inputs get past the key check into the arrays. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "pdq/eval.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint64_t key = 0;
    if (size >= 16) memcpy(&key, data + 8, sizeof key);
    int fd = memfd_create("fuzz.kld", 0);
    if (fd < 0) return 0;
    if (write(fd, data, size) == (ssize_t)size) {
        char path[64];
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        pdq_kld_base b;
        pdq_status st = {0};
        if (pdq_kld_base_load(path, key, &b, &st) == PDQ_OK) {
            /* a loaded base must be indexable as the model side indexes it */
            volatile double sink = 0;
            for (long t = 0; t < b.n; t++) sink += b.top_id[t * b.k + b.k - 1] + (double)b.target_lp[t];
            (void)sink;
            pdq_kld_base_free(&b);
        }
    }
    close(fd);
    return 0;
}
