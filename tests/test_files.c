/* The file-access layer: atomic writes under injected faults (short writes, ENOSPC, fsync and
 * rename failures) and under a real file-size limit (RLIMIT_FSIZE in a child process, the
 * "disk" filling mid-file) for pdq's actual writers; bounded reads. After every failure the
 * previous file must survive byte for byte and no temporary file may be left. */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pdq/circle.h"
#include "pdq/eval.h"
#include "pdq/file.h"
#include "pdq/report.h"
#include "pdq/model.h"
#include "pdq/npy.h"
#include "pdq/ptq.h"
#include "pdq/safetensors.h"
#include "testutil.h"


/* Entries of dir whose name contains ".tmp." (the layer's temp files). */
static int temp_files(const char *dir) {
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strstr(e->d_name, ".tmp.")) n++;
    closedir(d);
    return n;
}

static void assert_file_is(const char *path, const char *want, size_t n) {
    size_t len = 0;
    char *got = tu_read_file(path, &len);
    assert_non_null(got);
    assert_int_equal(len, n);
    assert_memory_equal(got, want, n);
    free(got);
}

/* Fault hooks: write lets `budget` bytes through, then fails with `err` (0: returns 0). */
typedef struct {
    size_t budget;
    int err, fail_fsync, fail_rename;
} faults;

static ssize_t f_write(void *ctx, int fd, const void *buf, size_t n) {
    faults *f = ctx;
    if (f->budget == 0) {
        if (!f->err) return 0;
        errno = f->err;
        return -1;
    }
    size_t k = n < f->budget ? n : f->budget; /* a short write first, as a filling disk does */
    ssize_t w = write(fd, buf, k);
    if (w > 0) f->budget -= (size_t)w;
    return w;
}

static int f_fsync(void *ctx, int fd) {
    faults *f = ctx;
    if (f->fail_fsync) {
        errno = EIO;
        return -1;
    }
    return fsync(fd);
}

static int f_rename(void *ctx, const char *a, const char *b) {
    faults *f = ctx;
    if (f->fail_rename) {
        errno = EXDEV;
        return -1;
    }
    return rename(a, b);
}

static void test_atomic_write_faults(void **state) {
    (void)state;
    char *dir = tu_mkdtemp(), path[512];
    snprintf(path, sizeof path, "%s/ptq.json", dir);
    pdq_status st = {0};
    const char *good = "{\"version\": 1}\n";
    assert_int_equal(pdq_file_write_text(path, good, 0, NULL, &st), PDQ_OK);
    assert_file_is(path, good, strlen(good));
    size_t big = 3u << 20; /* larger than the 1 MiB stream buffer: faults hit mid-file */
    char *data = malloc(big);
    assert_non_null(data);
    memset(data, 'x', big);
    static const struct { size_t budget; int err, fail_fsync, fail_rename; const char *needle; } cases[] = {
        {0, ENOSPC, 0, 0, "No space left on device"},
        {1000, ENOSPC, 0, 0, "No space left on device"},
        {(1u << 20) + 17, EFBIG, 0, 0, "File too large"},
        {5000, 0, 0, 0, "No space left on device"}, /* write(2) returning 0 */
        {(size_t)-1, 0, 1, 0, "fsync"},
        {(size_t)-1, 0, 0, 1, "rename"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        faults f = {cases[i].budget, cases[i].err, cases[i].fail_fsync, cases[i].fail_rename};
        pdq_io io = {.write = f_write, .fsync = f_fsync, .rename = f_rename, .ctx = &f};
        pdq_status_clear(&st);
        assert_int_equal(pdq_file_write(path, data, big, &io, &st), PDQ_ERR_IO);
        if (!strstr(st.msg, path) || !strstr(st.msg, cases[i].needle))
            fail_msg("case %zu: message '%s' lacks the path or '%s'", i, st.msg, cases[i].needle);
        assert_file_is(path, good, strlen(good)); /* the previous file survives */
        assert_int_equal(temp_files(dir), 0);     /* and no temp is left behind */
    }
    /* the same hooks with room enough: the new content lands whole */
    faults ok = {(size_t)-1, 0, 0, 0};
    pdq_io io = {.write = f_write, .fsync = f_fsync, .rename = f_rename, .ctx = &ok};
    assert_int_equal(pdq_file_write(path, data, big, &io, &st), PDQ_OK);
    assert_file_is(path, data, big);
    assert_int_equal(temp_files(dir), 0);
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0644);
    /* a directory that does not exist: no file, a message naming it */
    snprintf(path, sizeof path, "%s/no/such/dir/x.json", dir);
    assert_int_equal(pdq_file_write_text(path, good, 0, NULL, &st), PDQ_ERR_IO);
    assert_non_null(strstr(st.msg, path));
    free(data);
    tu_rmtree(dir);
    free(dir);
}

/* A put larger than the buffer that fails mid-way must read only its own bytes: the data ends
 * at a PROT_NONE page, so a read past it (glibc's fwrite after a failed cookie write did, with
 * the 8 MB lm_head on a full disk) faults here in every build, not only under ASan. Every put
 * after the failure repeats the error; the stream shares it; nothing is left behind. */
static void test_failed_put_stays_in_bounds(void **state) {
    (void)state;
    char *dir = tu_mkdtemp(), path[512];
    snprintf(path, sizeof path, "%s/model.q.safetensors", dir);
    long pg = sysconf(_SC_PAGESIZE);
    size_t n = (size_t)3 << 20; /* a multiple of the page size */
    unsigned char *map = mmap(NULL, n + (size_t)pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(map != MAP_FAILED);
    assert_int_equal(mprotect(map + n, (size_t)pg, PROT_NONE), 0);
    memset(map, 'q', n);
    static const size_t budgets[] = {0, 1000, (1u << 20) - 5, (1u << 20) + 17, (2u << 20) + 1};
    for (size_t i = 0; i < sizeof budgets / sizeof budgets[0]; i++) {
        for (int small_first = 0; small_first < 2; small_first++) {
            faults f = {budgets[i], ENOSPC, 0, 0};
            pdq_io io = {.write = f_write, .ctx = &f};
            pdq_status st = {0};
            pdq_file_writer *w;
            assert_int_equal(pdq_file_begin(path, &io, &w, &st), PDQ_OK);
            if (small_first) assert_int_equal(pdq_file_put(w, map, 100, &st), PDQ_OK); /* a partly full buffer */
            pdq_code c = pdq_file_put(w, map, n, &st);
            if (c == PDQ_OK) c = pdq_file_put(w, map, n, &st);
            assert_int_equal(c, PDQ_ERR_IO);
            if (!strstr(st.msg, path) || !strstr(st.msg, "No space left on device"))
                fail_msg("budget %zu: '%s'", budgets[i], st.msg);
            pdq_status_clear(&st);
            assert_int_equal(pdq_file_put(w, "x", 1, &st), PDQ_ERR_IO); /* sticky */
            fputs("more", pdq_file_stream(w));                           /* dropped, never a crash */
            assert_int_equal(pdq_file_commit(w, &st), PDQ_ERR_IO);
            assert_non_null(strstr(st.msg, "No space left on device"));
            assert_int_equal(access(path, F_OK), -1);
            assert_int_equal(temp_files(dir), 0);
        }
    }
    munmap(map, n + (size_t)pg);
    tu_rmtree(dir);
    free(dir);
}

/* Text through the stream and bytes through put land in order, whole. */
static void test_stream_and_put_interleave(void **state) {
    (void)state;
    char *dir = tu_mkdtemp(), path[512];
    snprintf(path, sizeof path, "%s/report.html", dir);
    pdq_status st = {0};
    pdq_file_writer *w;
    assert_int_equal(pdq_file_begin(path, NULL, &w, &st), PDQ_OK);
    fprintf(pdq_file_stream(w), "<a %d>", 1);
    assert_int_equal(pdq_file_put(w, "b", 1, &st), PDQ_OK);
    fputs("<c>", pdq_file_stream(w));
    assert_int_equal(pdq_file_commit(w, &st), PDQ_OK);
    assert_file_is(path, "<a 1>b<c>", 9);
    tu_rmtree(dir);
    free(dir);
}

/* Resident kB of the mapping that starts at p (/proc/self/smaps), or -1 when unreadable. */
static long mapping_rss_kb(const void *p) {
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f) return -1;
    char line[512];
    long kb = -1;
    int in = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long a, b;
        if (sscanf(line, "%lx-%lx ", &a, &b) == 2 && strchr(line, '-') < strchr(line, ' ')) in = a == (unsigned long)p;
        else if (in && sscanf(line, "Rss: %ld kB", &kb) == 1) break;
    }
    fclose(f);
    return kb;
}

/* Mapped reads: the bytes of the file; dropped pages leave this process's memory (its Rss in
 * smaps) and read back the same; empty files, directories and missing files. */
static void test_file_map(void **state) {
    (void)state;
    char *dir = tu_mkdtemp(), path[512];
    snprintf(path, sizeof path, "%s/w.bin", dir);
    long pg = sysconf(_SC_PAGESIZE);
    size_t n = (size_t)pg * 5 + 123;
    unsigned char *body = malloc(n);
    for (size_t i = 0; i < n; i++) body[i] = (unsigned char)(i * 131 + 7);
    assert_int_equal(tu_write_file(path, body, n), 0);
    pdq_status st = {0};
    pdq_file_map *m = NULL;
    assert_int_equal(pdq_file_map_open(path, &m, &st), PDQ_OK);
    assert_int_equal(m->size, n);
    assert_memory_equal(m->data, body, n);
    long pkb = pg / 1024, rss = mapping_rss_kb(m->data);
    if (rss >= 0) assert_int_equal(rss, 6 * pkb); /* all 6 pages just read */
    /* from the middle of page 1 to the middle of page 4: pages 1 to 3 go (the start rounds down,
     * the partial page 4 stays), 0, 4 and 5 stay */
    pdq_file_drop_pages(m->data + pg + 100, (size_t)pg * 3);
    if (rss >= 0) assert_int_equal(mapping_rss_kb(m->data), 3 * pkb);
    assert_memory_equal(m->data, body, n); /* read back from the file */
    if (rss >= 0) assert_int_equal(mapping_rss_kb(m->data), 6 * pkb);
    pdq_file_map_close(m);
    pdq_file_map_close(NULL);
    free(body);
    assert_int_equal(tu_write_file(path, "", 0), 0);
    assert_int_equal(pdq_file_map_open(path, &m, &st), PDQ_OK);
    assert_int_equal(m->size, 0);
    assert_null(m->data);
    pdq_file_map_release(m);
    assert_int_equal(pdq_file_map_open(dir, &m, &st), PDQ_ERR_IO);
    assert_null(m);
    assert_non_null(strstr(st.msg, "not a regular file"));
    snprintf(path, sizeof path, "%s/missing.bin", dir);
    assert_int_equal(pdq_file_map_open(path, &m, &st), PDQ_ERR_IO);
    assert_non_null(strstr(st.msg, path));
    tu_rmtree(dir);
    free(dir);
}

static void test_bounded_read(void **state) {
    (void)state;
    char *dir = tu_mkdtemp(), path[512];
    snprintf(path, sizeof path, "%s/config.json", dir);
    pdq_status st = {0};
    char body[5000];
    memset(body, 'a', sizeof body);
    assert_int_equal(tu_write_file(path, body, sizeof body), 0);
    char *buf = NULL;
    size_t n = 0;
    assert_int_equal(pdq_file_read(path, sizeof body, &buf, &n, &st), PDQ_OK);
    assert_int_equal(n, sizeof body);
    assert_memory_equal(buf, body, n);
    assert_int_equal(buf[n], '\0');
    free(buf);
    /* one byte over the limit: refused before reading, naming the file, its size and the limit */
    assert_int_equal(pdq_file_read(path, sizeof body - 1, &buf, &n, &st), PDQ_ERR_LIMIT);
    assert_null(buf);
    assert_non_null(strstr(st.msg, path));
    assert_non_null(strstr(st.msg, "5000 bytes"));
    assert_non_null(strstr(st.msg, "4999 bytes"));
    /* empty file, directory, missing file */
    assert_int_equal(tu_write_file(path, "", 0), 0);
    assert_int_equal(pdq_file_read(path, 10, &buf, &n, &st), PDQ_OK);
    assert_int_equal(n, 0);
    free(buf);
    assert_int_equal(pdq_file_read(dir, 10, &buf, &n, &st), PDQ_ERR_IO);
    assert_non_null(strstr(st.msg, "not a regular file"));
    snprintf(path, sizeof path, "%s/missing.json", dir);
    assert_int_equal(pdq_file_read(path, 10, &buf, &n, &st), PDQ_ERR_IO);
    assert_non_null(strstr(st.msg, path));
    /* a pipe has no size to check up front: it is read to EOF, still bounded */
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    assert_int_equal(write(fds[1], body, 3000), 3000);
    close(fds[1]);
    snprintf(path, sizeof path, "/proc/self/fd/%d", fds[0]);
    assert_int_equal(pdq_file_read(path, 2999, &buf, &n, &st), PDQ_ERR_LIMIT);
    assert_non_null(strstr(st.msg, "more than the limit of 2999 bytes"));
    close(fds[0]);
    assert_int_equal(pipe(fds), 0);
    assert_int_equal(write(fds[1], body, 3000), 3000);
    close(fds[1]);
    snprintf(path, sizeof path, "/proc/self/fd/%d", fds[0]);
    assert_int_equal(pdq_file_read(path, 3000, &buf, &n, &st), PDQ_OK);
    assert_int_equal(n, 3000);
    assert_memory_equal(buf, body, 3000);
    free(buf);
    close(fds[0]);
    tu_rmtree(dir);
    free(dir);
}

/* Runs fn in a child whose files may not grow past limit bytes (SIGXFSZ ignored, so writes fail
 * with EFBIG as on a full disk); returns the child's exit status (fn's pdq_code). */
typedef pdq_code (*writer_fn)(const char *path, void *arg, pdq_status *st);

static int write_limited(writer_fn fn, const char *path, void *arg, rlim_t limit, char *msg, size_t cap) {
    int pipefd[2];
    assert_int_equal(pipe(pipefd), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(pipefd[0]);
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit rl = {limit, limit};
        if (setrlimit(RLIMIT_FSIZE, &rl) != 0) _exit(100);
        pdq_status st = {0};
        pdq_code c = fn(path, arg, &st);
        ssize_t w = write(pipefd[1], st.msg, strlen(st.msg) + 1);
        (void)w;
        _exit((int)c);
    }
    close(pipefd[1]);
    ssize_t r = read(pipefd[0], msg, cap - 1);
    msg[r > 0 ? r : 0] = '\0';
    close(pipefd[0]);
    int ws;
    assert_int_equal(waitpid(pid, &ws, 0), pid);
    assert_true(WIFEXITED(ws));
    return WEXITSTATUS(ws);
}

static pdq_code w_npy(const char *path, void *arg, pdq_status *st) {
    int64_t shape[2] = {256, 256};
    return pdq_npy_write(path, PDQ_NPY_F32, 2, shape, arg, st);
}

static pdq_code w_st(const char *path, void *arg, pdq_status *st) {
    pdq_st_tensor t = {.name = "w", .dtype = PDQ_DT_F32, .ndim = 2, .shape = {256, 256}, .data = arg,
                       .nbytes = 256 * 256 * 4};
    return pdq_st_write(path, &t, 1, NULL, st);
}

static pdq_code w_ptq(const char *path, void *arg, pdq_status *st) { return pdq_ptq_save(arg, path, NULL, st); }

static pdq_code w_copy(const char *path, void *arg, pdq_status *st) {
    return pdq_file_copy(arg, path, PDQ_FILE_MAX_JSON, NULL, st);
}

static pdq_code w_kld(const char *path, void *arg, pdq_status *st) { return pdq_kld_base_save(path, arg, 7, st); }

static pdq_code w_circle(const char *path, void *arg, pdq_status *st) { return pdq_circle_write(path, arg, NULL, st); }

static pdq_code w_html(const char *path, void *arg, pdq_status *st) { return pdq_report_html(arg, path, st); }

static pdq_code w_text(const char *path, void *arg, pdq_status *st) { return pdq_file_write_text(path, arg, 1, NULL, st); }

/* Writes a good file with fn, then again under a 4 KiB limit with different content: the
 * rewrite must fail with an I/O error and leave the good file and no temp. */
static void check_writer(const char *dir, const char *name, writer_fn fn, void *good_arg, void *new_arg) {
    char path[512], msg[600];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    pdq_status st = {0};
    pdq_code c = fn(path, good_arg, &st);
    if (c) fail_msg("%s: %s", name, st.msg);
    size_t n = 0;
    char *before = tu_read_file(path, &n);
    assert_non_null(before);
    if (n <= 4096) fail_msg("%s: %zu bytes, not over the 4 KiB limit", name, n);
    int rc = write_limited(fn, path, new_arg, 4096, msg, sizeof msg);
    if (rc != PDQ_ERR_IO || !strstr(msg, name) || !strstr(msg, "File too large"))
        fail_msg("%s under a 4 KiB limit: exit %d, '%s'", name, rc, msg);
    assert_file_is(path, before, n);
    assert_int_equal(temp_files(dir), 0);
    free(before);
}

static void test_writers_on_a_full_disk(void **state) {
    (void)state;
    char *dir = tu_mkdtemp();
    float *a = malloc(256 * 256 * sizeof(float)), *b = malloc(256 * 256 * sizeof(float));
    assert_true(a && b);
    for (int i = 0; i < 256 * 256; i++) {
        a[i] = (float)i;
        b[i] = -(float)i;
    }
    check_writer(dir, "logits.npy", w_npy, a, b);
    check_writer(dir, "model.safetensors", w_st, a, b);
    check_writer(dir, "tokenizer.json", w_copy, PDQ_TEST_MODEL "/tokenizer.json", PDQ_TEST_MODEL "/tokenizer.json");
    /* a .circle file (one constant tensor), a KLD cache, an HTML report and a text file */
    pdq_status cst = {0};
    pdq_circle_model c1, c2;
    int32_t shape[2] = {256, 256};
    assert_int_equal(pdq_circle_model_init(&c1, &cst), PDQ_OK);
    assert_int_equal(pdq_circle_model_init(&c2, &cst), PDQ_OK);
    assert_true(pdq_circle_add_buffer(&c1, a, sizeof(float) * 256 * 256, 0, &cst) == 1);
    assert_true(pdq_circle_add_buffer(&c2, b, sizeof(float) * 256 * 256, 0, &cst) == 1);
    assert_true(pdq_circle_add_tensor(&c1, "w", 0, 2, shape, 1, &cst) == 0);
    assert_true(pdq_circle_add_tensor(&c2, "w", 0, 2, shape, 1, &cst) == 0);
    check_writer(dir, "model.circle", w_circle, &c1, &c2);
    pdq_circle_model_free(&c1);
    pdq_circle_model_free(&c2);
    int32_t ids[2 * 600];
    for (int i = 0; i < 2 * 600; i++) ids[i] = i % 512;
    pdq_kld_base k1 = {512, 2, 600, ids, a, a}, k2 = {512, 2, 600, ids, b, b};
    check_writer(dir, "kld-0123.bin", w_kld, &k1, &k2);
    char rdir[600];
    snprintf(rdir, sizeof rdir, "%s/run", dir);
    assert_int_equal(mkdir(rdir, 0755), 0);
    snprintf(rdir, sizeof rdir, "%s/run/report.json", dir);
    char rj[4096] = "{\"modules\": [";
    for (int i = 0; i < 40; i++) /* 40 bars: a page well over the limit */
        snprintf(rj + strlen(rj), sizeof rj - strlen(rj), "%s{\"name\": \"m%d\", \"gptq_loss\": %d, \"rtn_loss\": %d}",
                 i ? ", " : "", i, i + 1, i + 2);
    strcat(rj, "]}");
    assert_int_equal(tu_write_file(rdir, rj, strlen(rj)), 0);
    snprintf(rdir, sizeof rdir, "%s/run", dir);
    check_writer(dir, "report.html", w_html, rdir, rdir);
    char *t1 = malloc(9000), *t2 = malloc(9000);
    assert_true(t1 && t2);
    memset(t1, 'a', 8999);
    memset(t2, 'b', 8999);
    t1[8999] = t2[8999] = '\0';
    check_writer(dir, "report.json", w_text, t1, t2);
    free(t1);
    free(t2);

    pdq_status st = {0};
    pdq_model *m;
    assert_int_equal(pdq_model_load(PDQ_TEST_MODEL, &m, &st), PDQ_OK);
    pdq_static_opts so;
    pdq_static_opts_default(&so);
    pdq_ptq_opts po;
    pdq_ptq_opts_default(&po);
    pdq_ptq *p1, *p2;
    assert_int_equal(pdq_ptq_create(m, 16, &so, &po, &p1, &st), PDQ_OK);
    po.adtype = PDQ_ADT_UINT8;
    assert_int_equal(pdq_ptq_create(m, 16, &so, &po, &p2, &st), PDQ_OK);
    check_writer(dir, "ptq.json", w_ptq, p1, p2);
    pdq_ptq_free(p1);
    pdq_ptq_free(p2);
    pdq_model_free(m);
    free(a);
    free(b);
    tu_rmtree(dir);
    free(dir);
}

/* Directories through the file layer, against what stat(2) and opendir(3) say directly. */
static void test_directories(void **state) {
    (void)state;
    char *dir = tu_mkdtemp(), path[512], deep[512];
    pdq_status st = {0};
    long long size = -1, mtime = -1;
    assert_int_equal(pdq_path_stat(dir, NULL, NULL), PDQ_PATH_DIR);
    assert_true(pdq_dir_exists(dir) && pdq_dir_writable(dir));
    snprintf(path, sizeof path, "%s/missing", dir);
    assert_int_equal(pdq_path_stat(path, &size, &mtime), PDQ_PATH_NONE);
    assert_false(pdq_dir_exists(path) || pdq_path_readable(path) || pdq_dir_writable(path));
    /* mkdir -p: every missing parent, doubled slashes, an existing directory is fine */
    snprintf(deep, sizeof deep, "%s/a//b/c", dir);
    assert_int_equal(pdq_dir_make(deep, 0, &st), PDQ_ERR_IO); /* parents missing */
    assert_non_null(strstr(st.msg, "cannot create directory"));
    assert_int_equal(pdq_dir_make(deep, 1, &st), PDQ_OK);
    assert_int_equal(pdq_dir_make(deep, 1, &st), PDQ_OK);
    struct stat sb;
    assert_int_equal(stat(deep, &sb), 0);
    assert_true(S_ISDIR(sb.st_mode));
    /* a file in the way is named */
    snprintf(path, sizeof path, "%s/afile", dir);
    assert_int_equal(tu_write_file(path, "12345", 5), 0);
    assert_int_equal(pdq_path_stat(path, &size, &mtime), PDQ_PATH_FILE);
    assert_int_equal(size, 5);
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal(mtime, (long long)sb.st_mtime);
    assert_true(pdq_path_readable(path));
    assert_int_equal(pdq_dir_make(path, 0, &st), PDQ_ERR_IO);
    assert_non_null(strstr(st.msg, "afile: not a directory"));
    snprintf(deep, sizeof deep, "%s/afile/x", dir);
    assert_int_equal(pdq_dir_make(deep, 1, &st), PDQ_ERR_IO);
    /* listings are sorted bytewise, without . and .., bounded */
    const char *want[] = {"B", "a", "afile", "b"};
    snprintf(path, sizeof path, "%s/b", dir);
    assert_int_equal(pdq_dir_make(path, 0, &st), PDQ_OK);
    snprintf(path, sizeof path, "%s/B", dir);
    assert_int_equal(tu_write_file(path, "", 0), 0);
    char **names = NULL;
    int n = -1;
    assert_int_equal(pdq_dir_names(dir, 100, &names, &n, &st), PDQ_OK);
    assert_int_equal(n, 4);
    for (int i = 0; i < n; i++) assert_string_equal(names[i], want[i]);
    pdq_dir_names_free(names, n);
    assert_int_equal(pdq_dir_names(dir, 3, &names, &n, &st), PDQ_ERR_LIMIT);
    assert_null(names);
    assert_non_null(strstr(st.msg, "more than 3 entries"));
    snprintf(path, sizeof path, "%s/none", dir);
    assert_int_equal(pdq_dir_names(path, 3, &names, &n, &st), PDQ_ERR_IO);
    assert_non_null(strstr(st.msg, "none: cannot list"));
    tu_rmtree(dir);
    free(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_atomic_write_faults),
        cmocka_unit_test(test_failed_put_stays_in_bounds),
        cmocka_unit_test(test_stream_and_put_interleave),
        cmocka_unit_test(test_bounded_read),
        cmocka_unit_test(test_file_map),
        cmocka_unit_test(test_writers_on_a_full_disk),
        cmocka_unit_test(test_directories),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
