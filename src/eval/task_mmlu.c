/* MMLU from Hendrycks' CSVs (no header: question, A, B, C, D, answer letter), with the harness's
 * prompt (mmlu/default/_default_template_yaml) and k-shot from the dev file (first_n). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pdq/file.h"
#include "task_items.h"

enum { CSV_FIELDS = 6 };

typedef struct {
    char *f[CSV_FIELDS];
    long line;
} csv_row;

static void rows_free(csv_row *r, int n) {
    for (int i = 0; i < n; i++)
        for (int j = 0; j < CSV_FIELDS; j++) free(r[i].f[j]);
    free(r);
}

/* RFC 4180 records of exactly six fields ("" escapes a quote; quoted fields may hold newlines). */
static pdq_code read_csv(const char *path, csv_row **out, int *n_out, pdq_status *st) {
    char *buf;
    size_t len;
    *out = NULL;
    *n_out = 0;
    if (pdq_file_read(path, PDQ_FILE_MAX_TEXT, &buf, &len, st) != PDQ_OK) return st->code;
    csv_row *rows = NULL;
    int n = 0, cap = 0;
    long line = 1;
    size_t i = 0;
    char *field = malloc(len + 1);
    pdq_code rc = field ? PDQ_OK : pdq_fail(st, PDQ_ERR_NOMEM, "%s: out of memory", path);
    while (rc == PDQ_OK && i < len) {
        if (buf[i] == '\n' || buf[i] == '\r') { line += buf[i] == '\n'; i++; continue; } /* blank lines */
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            csv_row *r = realloc(rows, (size_t)cap * sizeof *r);
            if (!r) { rc = pdq_fail(st, PDQ_ERR_NOMEM, "%s: out of memory", path); break; }
            rows = r;
        }
        csv_row *row = &rows[n++];
        memset(row, 0, sizeof *row);
        row->line = line;
        int nf = 0;
        for (;;) { /* one field */
            size_t w = 0;
            if (i < len && buf[i] == '"') {
                i++;
                for (;;) {
                    if (i >= len) { rc = task_fail(st, PDQ_ERR_FORMAT, path, row->line, "a quoted field is not closed"); break; }
                    if (buf[i] == '"' && i + 1 < len && buf[i + 1] == '"') { field[w++] = '"'; i += 2; continue; }
                    if (buf[i] == '"') { i++; break; }
                    if (buf[i] == '\n') line++;
                    field[w++] = buf[i++];
                }
                if (rc != PDQ_OK) break;
                if (i < len && buf[i] != ',' && buf[i] != '\n' && buf[i] != '\r') {
                    rc = task_fail(st, PDQ_ERR_FORMAT, path, line, "text after a closing quote");
                    break;
                }
            } else {
                while (i < len && buf[i] != ',' && buf[i] != '\n' && buf[i] != '\r') field[w++] = buf[i++];
            }
            field[w] = 0;
            if (nf == CSV_FIELDS) { rc = task_fail(st, PDQ_ERR_FORMAT, path, row->line, "more than 6 fields (question, A, B, C, D, answer)"); break; }
            if (!(row->f[nf++] = strdup(field))) { rc = pdq_fail(st, PDQ_ERR_NOMEM, "%s: out of memory", path); break; }
            if (i < len && buf[i] == ',') { i++; continue; }
            break;
        }
        if (rc == PDQ_OK && nf < CSV_FIELDS) {
            static const char *const names[CSV_FIELDS] = {"question", "A", "B", "C", "D", "answer"};
            rc = task_fail(st, PDQ_ERR_MISSING, path, row->line, "missing field '%s' (%d of 6 fields)", names[nf], nf);
        }
        if (i < len && buf[i] == '\r') i++;
        if (i < len && buf[i] == '\n') { i++; line++; }
    }
    free(field);
    free(buf);
    if (rc != PDQ_OK) { rows_free(rows, n); return rc; }
    *out = rows;
    *n_out = n;
    return PDQ_OK;
}

char *task_mmlu_question(const char *question, const char *const *c) {
    char *q = pdq_task_strip(question, strlen(question));
    if (!q) return NULL;
    size_t n = strlen(q) + strlen(c[0]) + strlen(c[1]) + strlen(c[2]) + strlen(c[3]) + 64;
    char *o = malloc(n);
    if (o) snprintf(o, n, "%s\nA. %s\nB. %s\nC. %s\nD. %s\nAnswer:", q, c[0], c[1], c[2], c[3]);
    free(q);
    return o;
}

char *task_mmlu_description(const char *subject) {
    char *s = strdup(subject);
    if (!s) return NULL;
    for (char *p = s; *p; p++)
        if (*p == '_') *p = ' ';
    char *o = task_strcat3("The following are multiple choice questions (with answers) about ", s, ".\n\n");
    free(s);
    return o;
}

static int answer_index(const char *a) {
    return strlen(a) == 1 && a[0] >= 'A' && a[0] <= 'D' ? a[0] - 'A' : -1;
}

/* description + the first shots dev questions with their answers, each followed by "\n\n". */
static char *shots_prefix(const char *subject, const char *dev_path, int shots, pdq_status *st) {
    char *p = task_mmlu_description(subject);
    if (!p) return pdq_fail(st, PDQ_ERR_NOMEM, "out of memory"), NULL;
    if (shots == 0) return p;
    csv_row *rows;
    int n;
    if (read_csv(dev_path, &rows, &n, st) != PDQ_OK) { free(p); return NULL; }
    if (n < shots) {
        pdq_fail(st, PDQ_ERR_ARG, "%s: --shots %d but the dev file has %d questions", dev_path, shots, n);
        rows_free(rows, n);
        free(p);
        return NULL;
    }
    for (int i = 0; i < shots && p; i++) {
        int a = answer_index(rows[i].f[5]);
        if (a < 0) {
            task_fail(st, PDQ_ERR_FORMAT, dev_path, rows[i].line, "answer '%s' is not A, B, C or D", rows[i].f[5]);
            free(p);
            p = NULL;
            break;
        }
        char *q = task_mmlu_question(rows[i].f[0], (const char *const *)&rows[i].f[1]);
        char ans[8];
        snprintf(ans, sizeof ans, " %c\n\n", 'A' + a);
        char *np = q ? task_strcat3(p, q, ans) : NULL;
        free(q);
        free(p);
        p = np;
        if (!p) pdq_fail(st, PDQ_ERR_NOMEM, "out of memory");
    }
    rows_free(rows, n);
    return p;
}

static const char *const k_letters[4] = {"A", "B", "C", "D"};

static pdq_code read_subject(pdq_task *t, const char *dir, int s, long limit, int shots, pdq_status *st) {
    const char *subject = t->subjects[s];
    char test[4096], dev[4096];
    snprintf(test, sizeof test, "%s/test/%s_test.csv", dir, subject);
    snprintf(dev, sizeof dev, "%s/dev/%s_dev.csv", dir, subject);
    char *prefix = shots_prefix(subject, dev, shots, st);
    if (!prefix) return st->code;
    csv_row *rows;
    int n;
    if (read_csv(test, &rows, &n, st) != PDQ_OK) { free(prefix); return st->code; }
    pdq_code rc = PDQ_OK;
    for (int i = 0; i < n && (limit <= 0 || i < limit) && rc == PDQ_OK; i++) {
        int a = answer_index(rows[i].f[5]);
        if (a < 0) { rc = task_fail(st, PDQ_ERR_FORMAT, test, rows[i].line, "answer '%s' is not A, B, C or D", rows[i].f[5]); break; }
        char *q = task_mmlu_question(rows[i].f[0], (const char *const *)&rows[i].f[1]);
        char *ctx = q ? task_strcat3(prefix, q, "") : NULL;
        rc = ctx ? task_add_choice(t, test, rows[i].line, ctx, k_letters, 4, a, s, st) : pdq_fail(st, PDQ_ERR_NOMEM, "out of memory");
        free(q);
        free(ctx);
    }
    rows_free(rows, n);
    free(prefix);
    return rc;
}

pdq_code task_read_mmlu_csv(pdq_task *t, const char *dir, long limit, int shots, pdq_status *st) {
    int k = 0;
    while (pdq_mmlu_subject(k)) k++;
    t->subjects = calloc((size_t)k, sizeof *t->subjects);
    if (!t->subjects) return pdq_fail(st, PDQ_ERR_NOMEM, "out of memory");
    for (int s = 0; s < k; s++) {
        if (!(t->subjects[s] = strdup(pdq_mmlu_subject(s)))) return pdq_fail(st, PDQ_ERR_NOMEM, "out of memory");
        t->n_subjects++;
    }
    for (int s = 0; s < k; s++)
        if (read_subject(t, dir, s, limit, shots, st) != PDQ_OK) return st->code;
    return PDQ_OK;
}
