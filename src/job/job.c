/* The quantize job's messages and first error (job.h). */
#include "job.h"

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdlib.h>

#include "pdq/file.h"

static void emit(const job_ctx *j, pdq_quantize_msg kind, const char *fmt, va_list ap) {
    if (!j->cb || !j->cb->message) return;
    char buf[4096];
    vsnprintf(buf, sizeof buf, fmt, ap);
    j->cb->message(j->cb->user, kind, buf);
}

void job_note(const job_ctx *j, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    emit(j, PDQ_QMSG_NOTE, fmt, ap);
    va_end(ap);
}

void job_text(const job_ctx *j, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    emit(j, PDQ_QMSG_TEXT, fmt, ap);
    va_end(ap);
}

void job_result(const job_ctx *j, const char *fmt, ...) {
    if (j->quiet_results) return;
    va_list ap;
    va_start(ap, fmt);
    emit(j, PDQ_QMSG_RESULT, fmt, ap);
    va_end(ap);
}

int job_fail(const job_ctx *j, pdq_code code, const char *fmt, ...) {
    if (j->st && j->st->code == PDQ_OK) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(j->st->msg, sizeof j->st->msg, fmt, ap);
        va_end(ap);
        j->st->code = code;
    }
    return 1;
}

FILE *job_stream_open(job_stream *s) {
    s->buf = NULL;
    s->len = 0;
    s->f = open_memstream(&s->buf, &s->len);
    return s->f;
}

void job_stream_close(const job_ctx *j, job_stream *s) {
    if (!s->f) return;
    fclose(s->f);
    s->f = NULL;
    if (s->len && !j->quiet_results && j->cb && j->cb->message) j->cb->message(j->cb->user, PDQ_QMSG_RESULT, s->buf);
    free(s->buf);
    s->buf = NULL;
}

static pdq_model *load_model(const job_ctx *j, const char *dir, int threads, int packed) {
    pdq_status st = {0};
    pdq_model *m = NULL;
    if ((packed ? pdq_model_load_packed(dir, &m, &st) : pdq_model_load(dir, &m, &st)) != PDQ_OK) {
        job_fail(j, st.code, "%s", st.msg);
        return NULL;
    }
    pdq_set_threads(m, threads);
    return m;
}

pdq_model *job_load_model(const job_ctx *j, const char *dir, int threads) { return load_model(j, dir, threads, 0); }

pdq_model *job_load_model_packed(const job_ctx *j, const char *dir, int threads) {
    return load_model(j, dir, threads, 1);
}

pdq_tokenizer *job_load_tokenizer(const job_ctx *j, const char *dir) {
    pdq_status st = {0};
    pdq_tokenizer *t = NULL;
    if (pdq_tokenizer_load(dir, &t, &st) != PDQ_OK) {
        job_fail(j, st.code, "%s", st.msg);
        return NULL;
    }
    return t;
}

char *job_read_text(const job_ctx *j, const char *path, size_t *len) {
    if (pdq_dir_exists(path)) { /* a directory reads as 0 bytes: say what it is, not "too few tokens" */
        job_fail(j, PDQ_ERR_IO, "%s: is a directory, not a file", path);
        return NULL;
    }
    char *buf;
    pdq_status st = {0};
    if (pdq_file_read(path, PDQ_FILE_MAX_TEXT, &buf, len, &st)) {
        job_fail(j, st.code, "%s", st.msg);
        return NULL;
    }
    return buf;
}

cJSON *job_read_json(const job_ctx *j, const char *path, int absent_ok) {
    if (absent_ok && pdq_path_stat(path, NULL, NULL) == PDQ_PATH_NONE) return NULL;
    size_t len;
    char *txt = NULL;
    pdq_status st = {0};
    if (pdq_dir_exists(path)) job_note(j, "%s: is a directory, not a file", path);
    else if (pdq_file_read(path, PDQ_FILE_MAX_TEXT, &txt, &len, &st)) job_note(j, "%s", st.msg);
    cJSON *r = txt ? cJSON_ParseWithLength(txt, len) : NULL;
    free(txt);
    return r;
}
