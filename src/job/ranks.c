/* The quantize job as one rank of an MPI job: the up-front agreement check, the job-wide failure and
 * the per-rank peak RSS (ranks.h). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "pdq/file.h"
#include "ranks.h"

int quantize_job_start(quantize_job *j, const job_ctx *ctx) {
    pdq_status st = {0};
    memset(j, 0, sizeof *j);
    j->ctx = ctx;
    if (pdq_dist_init(&j->d, &st)) return job_fail(ctx, st.code, "%s", st.msg);
    j->rank = pdq_dist_rank(j->d);
    j->size = pdq_dist_size(j->d);
    j->lead = j->rank == 0;
    if (!j->lead) { /* results and tables once, from rank 0; errors still on stderr */
        fflush(stdout);
        int fd = open("/dev/null", O_WRONLY);
        if (fd >= 0) { dup2(fd, 1); close(fd); }
    }
    return 0;
}

/* FNV-1a, 64 bits. */
static uint64_t fnv(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

/* Hash of a file's first `max` bytes and its size; 0 when it cannot be read. */
static uint64_t hash_file(uint64_t h, const char *path, size_t max) {
    pdq_status st = {0};
    pdq_file_map *m;
    if (pdq_file_map_open(path, &m, &st)) return fnv(h, "?", 1);
    h = fnv(h, &m->size, sizeof m->size);
    h = fnv(h, m->data, m->size < max ? m->size : max);
    pdq_file_map_close(m);
    return h;
}

/* config.json, then every *.safetensors by name: its size and header (not the weights). */
static uint64_t hash_model(const char *dir) {
    char path[4096];
    snprintf(path, sizeof path, "%s/config.json", dir);
    uint64_t h = hash_file(0xcbf29ce484222325ull, path, PDQ_FILE_MAX_JSON);
    char **names;
    int n;
    pdq_status lst = {0};
    if (pdq_dir_names(dir, 4096, &names, &n, &lst) != PDQ_OK) return fnv(h, "no dir", 6);
    for (int i = 0; i < n; i++) {
        size_t len = strlen(names[i]);
        if (!(len > 12 && strcmp(names[i] + len - 12, ".safetensors") == 0)) continue;
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        h = fnv(h, names[i], strlen(names[i]));
        pdq_status st = {0};
        pdq_file_map *m;
        if (pdq_file_map_open(path, &m, &st) == PDQ_OK) {
            uint64_t hl = 0;
            if (m->size >= 8) memcpy(&hl, m->data, 8); /* little-endian header length */
            size_t take = m->size >= 8 && hl <= m->size - 8 ? (size_t)hl + 8 : m->size;
            h = fnv(h, &m->size, sizeof m->size);
            h = fnv(h, m->data, take);
            pdq_file_map_close(m);
        } else {
            h = fnv(h, "?", 1);
        }
    }
    pdq_dir_names_free(names, n);
    return h;
}

void quantize_job_check(quantize_job *j, int argc, char **argv, const char *model_dir, const char *calib,
                        const char *eval) {
    if (j->size == 1) return;
    enum { BIN, ARGS, MODEL, CALIB, EVAL, N };
    static const char *what[N] = {"the pdq-mpi executable", "the command-line arguments",
                                  ("the model (config.json, safetensors headers or sizes)"), "the calibration text",
                                  "the evaluation text"};
    uint64_t mine[N];
    mine[BIN] = hash_file(0xcbf29ce484222325ull, "/proc/self/exe", (size_t)-1);
    mine[ARGS] = 0xcbf29ce484222325ull;
    for (int i = 0; i < argc; i++) mine[ARGS] = fnv(mine[ARGS], argv[i], strlen(argv[i]) + 1);
    mine[MODEL] = hash_model(model_dir);
    mine[CALIB] = calib ? hash_file(0xcbf29ce484222325ull, calib, (size_t)-1) : 0;
    mine[EVAL] = eval ? hash_file(0xcbf29ce484222325ull, eval, (size_t)-1) : 0;
    uint64_t *all = malloc(sizeof(uint64_t) * N * (size_t)j->size);
    pdq_status st = {0};
    if (!all || pdq_dist_allgather_u64(j->d, mine, N, all, &st)) {
        free(all);
        quantize_job_fail(j, all ? st.msg : "out of memory");
        return;
    }
    for (int r = 1; r < j->size; r++)
        for (int k = 0; k < N; k++)
            if (all[(size_t)r * N + k] != all[k]) {
                free(all);
                if (j->lead) { /* one message, from rank 0, naming the rank that differs */
                    char msg[512];
                    snprintf(msg, sizeof msg, "rank %d of %d runs with %s different from rank 0's (model %s%s%s)", r,
                             j->size, what[k], model_dir, calib ? ", calibration " : "", calib ? calib : "");
                    job_note(j->ctx, "%s", msg);
                    pdq_dist_abort(j->d, "pdq quantize", NULL);
                }
                pdq_dist_barrier(j->d, &st); /* rank 0 ends the job */
                return;
            }
    free(all);
}

void quantize_job_fail(quantize_job *j, const char *msg) { pdq_dist_abort(j->d, "pdq quantize", msg); }

void quantize_job_report(quantize_job *j, long comm_bytes, double comm_seconds) {
    if (j->size == 1) return;
    struct rusage ru;
    uint64_t mine[3] = {getrusage(RUSAGE_SELF, &ru) == 0 ? (uint64_t)ru.ru_maxrss : 0, (uint64_t)comm_bytes,
                        (uint64_t)(comm_seconds * 1e3)};
    uint64_t *all = malloc(sizeof(uint64_t) * 3 * (size_t)j->size);
    pdq_status st = {0};
    if (!all || pdq_dist_allgather_u64(j->d, mine, 3, all, &st)) {
        free(all);
        quantize_job_fail(j, all ? st.msg : "out of memory");
        return;
    }
    if (j->lead) {
        char *line = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&line, &len);
        if (f) {
            fprintf(f, "%d ranks, after calibration: peak RSS MiB", j->size);
            for (int r = 0; r < j->size; r++) fprintf(f, " %s%d: %.1f", r ? "| " : "", r, (double)all[3 * r] / 1024.0);
            fprintf(f, "; calibration traffic MiB (seconds in it)");
            for (int r = 0; r < j->size; r++)
                fprintf(f, " %s%d: %.1f (%.2f)", r ? "| " : "", r, (double)all[3 * r + 1] / 1048576.0,
                        (double)all[3 * r + 2] / 1e3);
            fclose(f);
            job_note(j->ctx, "%s", line);
        }
        free(line);
    }
    free(all);
}

void quantize_job_end(quantize_job *j) {
    pdq_dist_finish(j->d);
    j->d = NULL;
}
