/* The one file-access layer (in the spirit of SQLite's os.h): bounded whole-file reads and atomic
 * writes. Every file pdq writes goes through pdq_file_begin/commit: a temp file in the same
 * directory, fsync, rename over the final name, fsync of the directory. On any error the temp
 * is removed and the final name keeps whatever it held before, so a full disk never leaves a
 * truncated file under a final name. */
#ifndef PDQ_FILE_H
#define PDQ_FILE_H

#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

#include "pdq/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Optional system-call hooks for fault injection; NULL (or a NULL member) means the real call.
 * write returns what write(2) would (a short count or -1 with errno, e.g. ENOSPC). */
typedef struct pdq_io {
    ssize_t (*write)(void *ctx, int fd, const void *buf, size_t n);
    int (*fsync)(void *ctx, int fd);
    int (*rename)(void *ctx, const char *from, const char *to);
    void *ctx;
} pdq_io;

/* Limits for bounded reads of pdq's side files (JSON, text). */
#define PDQ_FILE_MAX_JSON ((size_t)256 << 20)
/* Text corpora and prompt files given to the CLI. */
#define PDQ_FILE_MAX_TEXT ((size_t)2 << 30)

typedef struct pdq_file_writer pdq_file_writer;

/* Opens PATH.tmp.XXXXXX beside path (mode 0644). */
pdq_code pdq_file_begin(const char *path, const pdq_io *io, pdq_file_writer **out, pdq_status *st);
/* A stdio stream onto the writer, for text and FlatBuffer writers built on stdio (NULL only when
 * out of memory). Its writes never fail towards stdio: a write error waits in the writer and
 * surfaces at pdq_file_put, pdq_file_fail or pdq_file_commit. */
FILE *pdq_file_stream(pdq_file_writer *w);
/* Appends n bytes (buffered; written with write(2) in a loop). After the first failed write
 * (ENOSPC, EFBIG, ...) every call returns PDQ_ERR_IO naming the final path and its errno text. */
pdq_code pdq_file_put(pdq_file_writer *w, const void *data, size_t n, pdq_status *st);
/* Flushes, fsyncs, renames into place, fsyncs the directory, frees w (also on failure). */
pdq_code pdq_file_commit(pdq_file_writer *w, pdq_status *st);
/* After a failed write to pdq_file_stream(w): records the error (path and errno text), removes
 * the temp file, frees w and returns PDQ_ERR_IO. */
pdq_code pdq_file_fail(pdq_file_writer *w, pdq_status *st);
/* Removes the temp file and frees w; safe with NULL. */
void pdq_file_abort(pdq_file_writer *w);
const char *pdq_file_path(const pdq_file_writer *w);

/* One-shot atomic write of n bytes. */
pdq_code pdq_file_write(const char *path, const void *data, size_t n, const pdq_io *io, pdq_status *st);
/* Text (NUL-terminated), optionally followed by a newline. */
pdq_code pdq_file_write_text(const char *path, const char *text, int newline, const pdq_io *io, pdq_status *st);
/* Copies src to dst atomically; src may be at most max bytes. */
pdq_code pdq_file_copy(const char *src, const char *dst, size_t max, const pdq_io *io, pdq_status *st);

/* Reads a whole regular file of at most max bytes into a malloc'd, NUL-terminated buffer; the
 * size comes from the data read, never from a header. *len may be NULL. */
pdq_code pdq_file_read(const char *path, size_t max, char **out, size_t *len, pdq_status *st);
/* 1 if path is a regular file (or a symlink to one), else 0: for "is it there" probes. */
int pdq_file_exists(const char *path);
/* The size of a regular file (for bounding counts by what is present). */
pdq_code pdq_file_size(const char *path, size_t *size, pdq_status *st);

/* A whole regular file mapped read-only and private (page aligned; data NULL for an empty file).
 * Readers hand out pointers into it, so weights are read from the page cache, not copied. If
 * the file is truncated while mapped, reading the lost part faults (SIGBUS), as with any mmap. */
typedef struct pdq_file_map {
    const unsigned char *data;
    size_t size;
} pdq_file_map;
/* On error NULL is stored in *out and nothing stays mapped. */
pdq_code pdq_file_map_open(const char *path, pdq_file_map **out, pdq_status *st);
void pdq_file_map_close(pdq_file_map *m);   /* NULL is allowed */
void pdq_file_map_release(void *m);         /* pdq_file_map_close for keep-alive lists */
/* Gives back the whole pages inside [p, p + n) of a read-only file mapping (the first page
 * rounded down: a neighbour's bytes there read back from the file if touched). Only for data
 * that lies in such a mapping: on anonymous memory it would zero it. */
void pdq_file_drop_pages(const void *p, size_t n);

/* ---------------- paths and directories ---------------- */

typedef enum { PDQ_PATH_NONE = 0, PDQ_PATH_FILE, PDQ_PATH_DIR, PDQ_PATH_OTHER } pdq_path_kind;
/* What path names, following symlinks (NONE: absent or not stat-able); size and mtime (seconds)
 * may be NULL. */
pdq_path_kind pdq_path_stat(const char *path, long long *size, long long *mtime);
/* 1 if path is a directory (or a symlink to one). */
int pdq_dir_exists(const char *path);
/* access(2) probes: the caller may read path / create files in dir. */
int pdq_path_readable(const char *path);
int pdq_dir_writable(const char *dir);
/* Creates directory path (mode 0777 less the umask), with its missing parents when parents != 0.
 * An existing directory is not an error; an existing non-directory or a failed mkdir is, naming
 * the path and the errno text. */
pdq_code pdq_dir_make(const char *path, int parents, pdq_status *st);
/* The entry names of dir (not "." and ".."), sorted bytewise, as a malloc'd array of malloc'd
 * strings (pdq_dir_names_free); more than max entries is PDQ_ERR_LIMIT naming dir. */
pdq_code pdq_dir_names(const char *dir, int max, char ***names, int *n, pdq_status *st);
void pdq_dir_names_free(char **names, int n);

#ifdef __cplusplus
}
#endif
#endif
