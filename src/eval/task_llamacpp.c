/* llama.cpp's choice of HellaSwag tasks (llama-perplexity --hellaswag, hellaswag_score at b4747),
 * reproduced so that pdq scores exactly the tasks llama.cpp scores, in its order. */
#include <stdlib.h>
#include <string.h>

#include "pdq/tasks.h"
#include "task_items.h"

uint32_t pdq_libstdcxx_uniform(pdq_pyrandom *r, uint32_t n) {
    /* libstdc++'s uniform_int_distribution::operator(): the generator's range is exactly 32 bits
     * and larger than n - 1, so it downscales with _S_nd<uint64_t>(gen, n) */
    uint64_t product = (uint64_t)pdq_mt19937_next(r) * n;
    uint32_t low = (uint32_t)product;
    if (low < n) {
        uint32_t threshold = (uint32_t)(0u - n) % n;
        while (low < threshold) {
            product = (uint64_t)pdq_mt19937_next(r) * n;
            low = (uint32_t)product;
        }
    }
    return (uint32_t)(product >> 32);
}

long pdq_llamacpp_hellaswag_order(long n_file, long n_tasks, long *order) {
    long n = n_tasks < n_file ? n_tasks : n_file;
    if (n <= 0) return 0;
    long *left = malloc((size_t)n_file * sizeof *left);
    if (!left) return -1;
    for (long i = 0; i < n_file; i++) left[i] = i;
    pdq_pyrandom rng;
    pdq_mt19937_seed(&rng, 1);
    long n_left = n_file;
    for (long i = 0; i < n; i++) {
        /* a new distribution over the tasks left each time; the pick is erased from the lines */
        long k = (long)pdq_libstdcxx_uniform(&rng, (uint32_t)n_left);
        order[i] = left[k];
        memmove(left + k, left + k + 1, (size_t)(n_left - k - 1) * sizeof *left);
        n_left--;
    }
    free(left);
    return n;
}

pdq_code pdq_task_pick(pdq_task *t, const long *idx, long n, pdq_status *st) {
    if (n < 0 || n > t->n_items) return pdq_fail(st, PDQ_ERR_ARG, "%ld items picked of %d", n, t->n_items);
    char *used = calloc((size_t)t->n_items + 1, 1);
    pdq_task_item *items = malloc(((size_t)n + 1) * sizeof *items);
    if (!used || !items) {
        free(used);
        free(items);
        return pdq_fail(st, PDQ_ERR_NOMEM, "out of memory for %ld items", n);
    }
    for (long i = 0; i < n; i++) {
        if (idx[i] < 0 || idx[i] >= t->n_items || used[idx[i]]) {
            free(used);
            free(items);
            return pdq_fail(st, PDQ_ERR_ARG, "item %ld picked twice or out of range (%d items)", idx[i], t->n_items);
        }
        used[idx[i]] = 1;
        items[i] = t->items[idx[i]];
    }
    for (int i = 0; i < t->n_items; i++)
        if (!used[i]) task_item_free(&t->items[i]);
    free(used);
    free(t->items);
    t->items = items;
    t->n_items = t->cap = (int)n;
    return PDQ_OK;
}
