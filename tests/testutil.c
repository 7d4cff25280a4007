#include "testutil.h"

#include "pdq/threadpool.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

char *tu_read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) { free(buf); buf = NULL; }
    fclose(f);
    if (buf) { buf[n] = '\0'; if (len) *len = (size_t)n; }
    return buf;
}

char *tu_mkdtemp(void) {
    char tmpl[] = "/tmp/pdq-test-XXXXXX";
    char *d = mkdtemp(tmpl);
    return d ? strdup(d) : NULL;
}

void tu_rmtree(const char *path) {
    if (!path || strncmp(path, "/tmp/", 5) != 0) return;
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
    if (system(cmd) != 0) fprintf(stderr, "warning: could not remove %s\n", path);
}

int tu_write_file(const char *path, const void *data, size_t len) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    int ok = fwrite(data, 1, len, f) == len;
    return (fclose(f) == 0 && ok) ? 0 : -1;
}

const char *tu_shared_dir(void) {
    struct stat sb;
    const char *env = getenv("PDQ_SHARED");
    if (env && stat(env, &sb) == 0) return env;
    if (stat("../shared/circle", &sb) == 0) return "../shared";
    return NULL;
}

char *tu_flatc_json_text(const char *path, const char *tmpdir) {
    const char *sh = tu_shared_dir();
    if (!sh) return NULL;
    char cmd[2048], *out = NULL;
    snprintf(cmd, sizeof cmd, "flatc --json --strict-json --raw-binary -o %s %s/circle/circle_schema.flatc2.fbs -- %s 2>&1",
             tmpdir, sh, path);
    int rc = tu_run(cmd, &out);
    if (rc != 0) fprintf(stderr, "flatc failed on %s: %s\n", path, out ? out : "");
    free(out);
    if (rc != 0) return NULL;
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t bl = strlen(base), ext = bl >= 7 && !strcmp(base + bl - 7, ".circle") ? 7 : 0;
    char jpath[2048];
    snprintf(jpath, sizeof jpath, "%s/%.*s.json", tmpdir, (int)(bl - ext), base);
    char *txt = tu_read_file(jpath, NULL);
    remove(jpath);
    return txt;
}

int tu_run(const char *cmd, char **out) {
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    size_t r;
    while (buf && (r = fread(buf + n, 1, cap - n - 1, p)) > 0) {
        n += r;
        if (cap - n < 1024) { cap *= 2; buf = realloc(buf, cap); }
    }
    if (buf) buf[n] = '\0';
    int status = pclose(p);
    if (out) *out = buf; else free(buf);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

const char *tu_pdq_bin(void) {
    const char *b = getenv("PDQ_BIN");
    return b ? b : "build/pdq";
}

uint64_t tu_rand(uint64_t *s) {
    uint64_t x = *s += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

double tu_randu(uint64_t *s) { return (double)(tu_rand(s) >> 11) * (1.0 / 9007199254740992.0); }

double tu_randn(uint64_t *s) {
    double u1 = tu_randu(s), u2 = tu_randu(s);
    if (u1 < 1e-300) u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

void tu_pools_create(struct pdq_pool *pools[3]) {
    pdq_status st = {0};
    for (int i = 0; i < 3; i++) {
        pools[i] = pdq_pool_create(i + 1, &st);
        assert_non_null(pools[i]);
    }
}

void tu_pools_free(struct pdq_pool *pools[3]) {
    for (int i = 0; i < 3; i++) pdq_pool_free(pools[i]);
}
