#include "prompts.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* The first QUANTIZE_PROMPT_WORDS words of line[0..len), whitespace runs kept as one space. */
static char *first_words(const char *line, size_t len) {
    char *out = malloc(len + 1);
    if (!out) return NULL;
    size_t o = 0;
    int words = 0;
    for (size_t i = 0; i < len && words < QUANTIZE_PROMPT_WORDS;) {
        while (i < len && isspace((unsigned char)line[i])) i++;
        if (i >= len) break;
        if (words) out[o++] = ' ';
        while (i < len && !isspace((unsigned char)line[i])) out[o++] = line[i++];
        words++;
    }
    out[o] = 0;
    return out;
}

int quantize_prompts_load(const job_ctx *j, const char *file, quantize_prompts *qp, pdq_ptq_run_opts *ro) {
    memset(qp, 0, sizeof *qp);
    if (!file) return 0;
    size_t len;
    char *buf = job_read_text(j, file, &len);
    if (!buf) return 1;
    for (size_t i = 0; i < len && qp->n < QUANTIZE_PROMPTS;) {
        size_t e = i;
        while (e < len && buf[e] != '\n') e++;
        char *t = first_words(buf + i, e - i);
        if (!t) { job_note(j, "out of memory reading %s", file); break; }
        if (*t) qp->text[qp->n++] = t;
        else free(t);
        i = e + 1;
    }
    free(buf);
    if (qp->n) {
        qp->file = file;
        ro->prompts = (const char *const *)qp->text;
        ro->n_prompts = qp->n;
    }
    return 0;
}

void quantize_prompts_free(quantize_prompts *qp) {
    for (int i = 0; i < qp->n; i++) free(qp->text[i]);
    memset(qp, 0, sizeof *qp);
}
