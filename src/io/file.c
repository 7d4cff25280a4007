/* Bounded reads and atomic writes (see pdq/file.h). Bytes reach the temp file only through
 * write(2) in a loop (EINTR, short writes), from the writer's own buffer, as SQLite's os_unix.c
 * does: never through stdio's error path, which in glibc can read past the caller's buffer
 * when a cookie write fails mid-fwrite. The first error (ENOSPC, EFBIG, EIO) is sticky and is
 * reported with the final path; nothing is renamed into place after one. */
#include "pdq/file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define WRITER_BUF ((size_t)1 << 20)

struct pdq_file_writer {
    int fd;
    int err;             /* first errno of a failed write, 0 if none */
    unsigned char *buf;  /* bytes not yet written */
    size_t len;
    FILE *f;             /* pdq_file_stream's stream, made on first use */
    char *path, *tmp;
    pdq_io io;
};

/* All n bytes to the temp file, or the first error recorded in w->err (-1). */
static int write_all(pdq_file_writer *w, const void *p, size_t n) {
    const unsigned char *b = p;
    while (n && !w->err) {
        ssize_t k = w->io.write ? w->io.write(w->io.ctx, w->fd, b, n) : write(w->fd, b, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) w->err = k < 0 ? errno : ENOSPC; /* write(2) returning 0: no room */
        else {
            b += k;
            n -= (size_t)k;
        }
    }
    return w->err ? -1 : 0;
}

static int flush_buf(pdq_file_writer *w) {
    int r = write_all(w, w->buf, w->len);
    w->len = 0;
    return r;
}

/* Buffers small pieces, writes large ones directly; once a write failed, drops the rest. */
static void append(pdq_file_writer *w, const void *p, size_t n) {
    if (w->err) return;
    if (n > WRITER_BUF - w->len && flush_buf(w)) return;
    if (n >= WRITER_BUF) {
        write_all(w, p, n);
        return;
    }
    memcpy(w->buf + w->len, p, n);
    w->len += n;
}

/* The stream's write never fails towards stdio (the error waits in w->err for commit). */
static ssize_t cookie_write(void *cookie, const char *buf, size_t n) {
    append(cookie, buf, n);
    return (ssize_t)n;
}

static void writer_free(pdq_file_writer *w) {
    if (!w) return;
    if (w->f) {
        FILE *f = w->f;
        w->f = NULL;
        if (!w->err) w->err = ECANCELED; /* what fclose still flushes is dropped by append() */
        fclose(f);
    }
    if (w->fd >= 0) close(w->fd);
    free(w->buf);
    free(w->path);
    free(w->tmp);
    free(w);
}

pdq_code pdq_file_begin(const char *path, const pdq_io *io, pdq_file_writer **out, pdq_status *st) {
    *out = NULL;
    pdq_file_writer *w = calloc(1, sizeof *w);
    size_t pl = strlen(path);
    if (w) {
        w->fd = -1;
        w->path = strdup(path);
        w->tmp = malloc(pl + 16);
        w->buf = malloc(WRITER_BUF);
        if (io) w->io = *io;
    }
    if (!w || !w->path || !w->tmp || !w->buf) {
        writer_free(w);
        return pdq_fail(st, PDQ_ERR_NOMEM, "%s: out of memory", path);
    }
    snprintf(w->tmp, pl + 16, "%s.tmp.XXXXXX", path);
    w->fd = mkstemp(w->tmp);
    if (w->fd < 0) {
        pdq_code c = pdq_fail(st, PDQ_ERR_IO, "%s: cannot create a temporary file beside it: %s", path,
                              strerror(errno));
        writer_free(w);
        return c;
    }
    if (fchmod(w->fd, 0644) != 0) { /* mkstemp makes 0600; final files are ordinary 0644 */
        pdq_code c = pdq_fail(st, PDQ_ERR_IO, "%s: chmod: %s", w->tmp, strerror(errno));
        pdq_file_abort(w);
        return c;
    }
    *out = w;
    return PDQ_OK;
}

FILE *pdq_file_stream(pdq_file_writer *w) {
    if (!w->f) {
        cookie_io_functions_t fns = {.write = cookie_write};
        w->f = fopencookie(w, "w", fns);
        if (w->f) setvbuf(w->f, NULL, _IOFBF, 1 << 16);
        else if (!w->err) w->err = ENOMEM; /* reported at commit; writes to NULL are the caller's */
    }
    return w->f;
}

const char *pdq_file_path(const pdq_file_writer *w) { return w->path; }

static pdq_code write_error(pdq_file_writer *w, int e, const char *what, pdq_status *st) {
    return pdq_fail(st, PDQ_ERR_IO, "%s: %s failed: %s (nothing written under this name)", w->path, what,
                    strerror(e ? e : EIO));
}

pdq_code pdq_file_put(pdq_file_writer *w, const void *data, size_t n, pdq_status *st) {
    if (w->f) fflush(w->f); /* the stream's bytes first, in order */
    if (n) append(w, data, n);
    return w->err ? write_error(w, w->err, "write", st) : PDQ_OK;
}

pdq_code pdq_file_fail(pdq_file_writer *w, pdq_status *st) {
    if (w->f) fflush(w->f);
    if (!w->err) flush_buf(w); /* surfaces an error still waiting in the buffer */
    pdq_code c = write_error(w, w->err, "write", st);
    pdq_file_abort(w);
    return c;
}

void pdq_file_abort(pdq_file_writer *w) {
    if (!w) return;
    unlink(w->tmp);
    writer_free(w);
}

/* The rename is durable only once the directory entry is on disk too. */
static void fsync_dir(const char *path) {
    const char *slash = strrchr(path, '/');
    char dir[PATH_MAX];
    if (!slash) snprintf(dir, sizeof dir, ".");
    else if (slash == path) snprintf(dir, sizeof dir, "/");
    else snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd < 0) return;
    (void)fsync(fd); /* some file systems refuse fsync on directories (EINVAL): not an error */
    close(fd);
}

pdq_code pdq_file_commit(pdq_file_writer *w, pdq_status *st) {
    pdq_code c = PDQ_OK;
    if (w->f) fflush(w->f);
    if (flush_buf(w)) c = write_error(w, w->err, "write", st);
    if (!c) {
        int r = w->io.fsync ? w->io.fsync(w->io.ctx, w->fd) : fsync(w->fd);
        if (r != 0) c = write_error(w, errno, "fsync", st);
    }
    int fd = w->fd;
    w->fd = -1;
    if (close(fd) != 0 && !c) c = write_error(w, errno, "close", st);
    if (!c) {
        int r = w->io.rename ? w->io.rename(w->io.ctx, w->tmp, w->path) : rename(w->tmp, w->path);
        if (r != 0) c = write_error(w, errno, "rename into place", st);
    }
    if (c) {
        unlink(w->tmp);
        writer_free(w);
        return c;
    }
    fsync_dir(w->path);
    writer_free(w);
    return PDQ_OK;
}

pdq_code pdq_file_write(const char *path, const void *data, size_t n, const pdq_io *io, pdq_status *st) {
    pdq_file_writer *w;
    pdq_code c = pdq_file_begin(path, io, &w, st);
    if (c) return c;
    if ((c = pdq_file_put(w, data, n, st))) {
        pdq_file_abort(w);
        return c;
    }
    return pdq_file_commit(w, st);
}

pdq_code pdq_file_write_text(const char *path, const char *text, int newline, const pdq_io *io, pdq_status *st) {
    if (!text) return pdq_fail(st, PDQ_ERR_NOMEM, "%s: out of memory", path);
    pdq_file_writer *w;
    pdq_code c = pdq_file_begin(path, io, &w, st);
    if (c) return c;
    c = pdq_file_put(w, text, strlen(text), st);
    if (!c && newline) c = pdq_file_put(w, "\n", 1, st);
    if (c) {
        pdq_file_abort(w);
        return c;
    }
    return pdq_file_commit(w, st);
}

pdq_code pdq_file_copy(const char *src, const char *dst, size_t max, const pdq_io *io, pdq_status *st) {
    char *buf;
    size_t n;
    pdq_code c = pdq_file_read(src, max, &buf, &n, st);
    if (c) return c;
    c = pdq_file_write(dst, buf, n, io, st);
    free(buf);
    return c;
}

static void size_text(size_t n, char *out, size_t cap) {
    if (n >= (1u << 20)) snprintf(out, cap, "%zu bytes (%.1f MiB)", n, (double)n / 1048576.0);
    else snprintf(out, cap, "%zu bytes", n);
}

int pdq_file_exists(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

pdq_code pdq_file_size(const char *path, size_t *size, pdq_status *st) {
    struct stat sb;
    if (stat(path, &sb) != 0) return pdq_fail(st, PDQ_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    if (!S_ISREG(sb.st_mode)) return pdq_fail(st, PDQ_ERR_IO, "%s: not a regular file", path);
    *size = (size_t)sb.st_size;
    return PDQ_OK;
}

pdq_code pdq_file_map_open(const char *path, pdq_file_map **out, pdq_status *st) {
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return pdq_fail(st, PDQ_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return pdq_fail(st, PDQ_ERR_IO, "%s: not a regular file", path);
    }
    pdq_file_map *m = calloc(1, sizeof *m);
    if (!m) {
        close(fd);
        return pdq_fail(st, PDQ_ERR_NOMEM, "%s: out of memory", path);
    }
    m->size = (size_t)sb.st_size;
    if (m->size) {
        void *p = mmap(NULL, m->size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            int e = errno;
            close(fd);
            free(m);
            return pdq_fail(st, PDQ_ERR_IO, "%s: mmap of %zu bytes failed: %s", path, (size_t)sb.st_size, strerror(e));
        }
        m->data = p;
    }
    close(fd);
    *out = m;
    return PDQ_OK;
}

void pdq_file_map_close(pdq_file_map *m) {
    if (!m) return;
    if (m->data) munmap((void *)m->data, m->size);
    free(m);
}

void pdq_file_map_release(void *m) { pdq_file_map_close(m); }

void pdq_file_drop_pages(const void *p, size_t n) {
    long pg = sysconf(_SC_PAGESIZE);
    if (!p || pg <= 0) return;
    uintptr_t a = (uintptr_t)p & ~(uintptr_t)(pg - 1);
    uintptr_t b = ((uintptr_t)p + n) & ~(uintptr_t)(pg - 1);
    if (b > a) madvise((void *)a, b - a, MADV_DONTNEED);
}

pdq_code pdq_file_read(const char *path, size_t max, char **out, size_t *len, pdq_status *st) {
    *out = NULL;
    if (len) *len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return pdq_fail(st, PDQ_ERR_IO, "%s: cannot read: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0 || S_ISDIR(sb.st_mode)) {
        close(fd);
        return pdq_fail(st, PDQ_ERR_IO, "%s: not a regular file", path);
    }
    if (!S_ISREG(sb.st_mode)) sb.st_size = 0; /* a pipe (--file <(...)): read to EOF, still bounded */
    char a[64], b[64];
    if ((unsigned long long)sb.st_size > (unsigned long long)max) {
        close(fd);
        size_text((size_t)sb.st_size, a, sizeof a);
        size_text(max, b, sizeof b);
        return pdq_fail(st, PDQ_ERR_LIMIT, "%s: file size %s exceeds the limit of %s", path, a, b);
    }
    /* The size is a hint only: the file may change under us, so read until EOF and re-check. */
    size_t cap = (size_t)sb.st_size + 1, n = 0;
    char *buf = malloc(cap);
    if (!buf) {
        close(fd);
        return pdq_fail(st, PDQ_ERR_NOMEM, "%s: out of memory for %zu bytes", path, cap);
    }
    for (;;) {
        if (n + 1 == cap) { /* full: grow only if there is more to read */
            char probe;
            ssize_t k = read(fd, &probe, 1);
            if (k < 0 && errno == EINTR) continue;
            if (k == 0) break;
            if (k < 0 || n + 1 > max) {
                int e = k < 0 ? errno : 0;
                free(buf);
                close(fd);
                if (e) return pdq_fail(st, PDQ_ERR_IO, "%s: read error: %s", path, strerror(e));
                size_text(max, b, sizeof b);
                return pdq_fail(st, PDQ_ERR_LIMIT, "%s: more than the limit of %s", path, b);
            }
            size_t nc = cap < 4096 ? 8192 : cap * 2;
            if (nc > max + 1) nc = max + 1; /* max bytes and the NUL: one more byte fails above */
            char *nb = realloc(buf, nc);
            if (!nb) {
                free(buf);
                close(fd);
                return pdq_fail(st, PDQ_ERR_NOMEM, "%s: out of memory", path);
            }
            buf = nb;
            cap = nc;
            buf[n++] = probe;
            continue;
        }
        ssize_t k = read(fd, buf + n, cap - 1 - n);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) {
            int e = errno;
            free(buf);
            close(fd);
            return pdq_fail(st, PDQ_ERR_IO, "%s: read error: %s", path, strerror(e));
        }
        if (k == 0) break;
        n += (size_t)k;
    }
    close(fd);
    buf[n] = '\0';
    *out = buf;
    if (len) *len = n;
    return PDQ_OK;
}
