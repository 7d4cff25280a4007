/* Paths and directories for the file layer (pdq/file.h): what a path names, access probes,
 * mkdir (-p), and sorted directory listings. Every directory operation of pdq goes here. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pdq/file.h"

pdq_path_kind pdq_path_stat(const char *path, long long *size, long long *mtime) {
    struct stat sb;
    if (!path || stat(path, &sb) != 0) return PDQ_PATH_NONE;
    if (size) *size = (long long)sb.st_size;
    if (mtime) *mtime = (long long)sb.st_mtime;
    return S_ISREG(sb.st_mode) ? PDQ_PATH_FILE : S_ISDIR(sb.st_mode) ? PDQ_PATH_DIR : PDQ_PATH_OTHER;
}

int pdq_dir_exists(const char *path) { return pdq_path_stat(path, NULL, NULL) == PDQ_PATH_DIR; }

int pdq_path_readable(const char *path) { return access(path, R_OK) == 0; }

int pdq_dir_writable(const char *dir) { return pdq_dir_exists(dir) && access(dir, W_OK | X_OK) == 0; }

static pdq_code make_one(const char *path, pdq_status *st) {
    if (mkdir(path, 0777) == 0) return PDQ_OK;
    int e = errno;
    if (e == EEXIST) {
        if (pdq_dir_exists(path)) return PDQ_OK;
        return pdq_fail(st, PDQ_ERR_IO, "%s: not a directory", path);
    }
    return pdq_fail(st, PDQ_ERR_IO, "%s: cannot create directory: %s", path, strerror(e));
}

pdq_code pdq_dir_make(const char *path, int parents, pdq_status *st) {
    if (!path || !*path) return pdq_fail(st, PDQ_ERR_ARG, "empty directory name");
    if (!parents) return make_one(path, st);
    size_t n = strlen(path);
    if (n >= PATH_MAX) return pdq_fail(st, PDQ_ERR_LIMIT, "%.64s...: path longer than %d bytes", path, PATH_MAX);
    char p[PATH_MAX];
    memcpy(p, path, n + 1);
    for (char *s = p + 1; *s; s++) {
        if (*s != '/' || s[-1] == '/') continue;
        *s = 0;
        pdq_code rc = make_one(p, st);
        *s = '/';
        if (rc != PDQ_OK) return rc;
    }
    return make_one(p, st);
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

void pdq_dir_names_free(char **names, int n) {
    for (int i = 0; names && i < n; i++) free(names[i]);
    free(names);
}

pdq_code pdq_dir_names(const char *dir, int max, char ***names, int *n, pdq_status *st) {
    *names = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (!d) return pdq_fail(st, PDQ_ERR_IO, "%s: cannot list: %s", dir, strerror(errno));
    char **v = NULL;
    int k = 0, cap = 0;
    pdq_code rc = PDQ_OK;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        if (k >= max) { rc = pdq_fail(st, PDQ_ERR_LIMIT, "%s: more than %d entries", dir, max); break; }
        if (k == cap) {
            int nc = cap ? cap * 2 : 16;
            char **nv = realloc(v, sizeof *v * (size_t)nc);
            if (!nv) { rc = pdq_fail(st, PDQ_ERR_NOMEM, "%s: listing", dir); break; }
            v = nv, cap = nc;
        }
        if (!(v[k] = strdup(e->d_name))) { rc = pdq_fail(st, PDQ_ERR_NOMEM, "%s: listing", dir); break; }
        k++;
    }
    closedir(d);
    if (rc != PDQ_OK) { pdq_dir_names_free(v, k); return rc; }
    if (k) qsort(v, (size_t)k, sizeof *v, by_name);
    *names = v;
    *n = k;
    return PDQ_OK;
}
