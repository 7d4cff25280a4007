/* libFuzzer target: the safetensors header parser on arbitrary bytes, then (for inputs that
 * parse) the full reader through a memfd and the f32 conversion of every float tensor. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "pdq/safetensors.h"

static void full_open(const uint8_t *data, size_t size) {
    int fd = memfd_create("fuzz.safetensors", 0);
    if (fd < 0) return;
    if (write(fd, data, size) == (ssize_t)size) {
        char path[64];
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        pdq_safetensors *s;
        pdq_status st = {0};
        if (pdq_st_open(path, &s, &st) == PDQ_OK) {
            for (int i = 0; i < pdq_st_count(s); i++) {
                const pdq_st_tensor *t = pdq_st_at(s, i);
                if (pdq_st_find(s, t->name) != t) abort();
                size_t n = t->nbytes / pdq_dtype_size(t->dtype);
                float *dst = malloc((n ? n : 1) * sizeof *dst);
                if (dst) pdq_st_read_f32(s, t->name, t->ndim, t->shape, dst, &st);
                free(dst);
            }
            pdq_st_close(s);
        }
    }
    close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    pdq_st_tensor *t;
    int n;
    pdq_status st = {0};
    if (pdq_st_parse_header(data, size, "fuzz", &t, &n, &st) != PDQ_OK) return 0;
    /* Every tensor must lie inside the input: touch its first and last byte. */
    volatile uint8_t sink = 0;
    for (int i = 0; i < n; i++) {
        const uint8_t *p = t[i].data;
        if (p < data || p + t[i].nbytes > data + size) abort();
        if (t[i].nbytes) sink ^= p[0] ^ p[t[i].nbytes - 1];
    }
    (void)sink;
    pdq_st_tensors_free(t, n);
    full_open(data, size);
    return 0;
}
