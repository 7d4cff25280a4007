#include "common.h"

#include "pdq/file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

pdq_model *cli_load_model(const char *cmd, const char *dir, int threads) {
    if (!dir) {
        fprintf(stderr, "pdq %s: --model DIR is required\n", cmd);
        return NULL;
    }
    pdq_status st = {0};
    pdq_model *m = NULL;
    if (pdq_model_load(dir, &m, &st) != PDQ_OK) {
        fprintf(stderr, "pdq %s: %s\n", cmd, st.msg);
        return NULL;
    }
    pdq_set_threads(m, threads);
    return m;
}

pdq_model *cli_load_model_packed(const char *cmd, const char *dir, int threads) {
    if (!dir) {
        fprintf(stderr, "pdq %s: --model DIR is required\n", cmd);
        return NULL;
    }
    pdq_status st = {0};
    pdq_model *m = NULL;
    if (pdq_model_load_packed(dir, &m, &st) != PDQ_OK) {
        fprintf(stderr, "pdq %s: %s\n", cmd, st.msg);
        return NULL;
    }
    pdq_set_threads(m, threads);
    return m;
}

pdq_tokenizer *cli_load_tokenizer(const char *cmd, const char *dir) {
    pdq_status st = {0};
    pdq_tokenizer *t = NULL;
    if (pdq_tokenizer_load(dir, &t, &st) != PDQ_OK) {
        fprintf(stderr, "pdq %s: %s\n", cmd, st.msg);
        return NULL;
    }
    return t;
}

long cli_parse_ids(const char *cmd, const char *s, int32_t **ids) {
    long cap = 64, n = 0;
    int32_t *buf = malloc((size_t)cap * sizeof *buf);
    while (buf && *s) {
        while (*s == ' ' || *s == ',' || *s == '\t' || *s == '\n') s++;
        if (!*s) break;
        char *end;
        errno = 0;
        long v = strtol(s, &end, 10);
        if (end == s || errno || v < 0 || v > INT32_MAX) {
            fprintf(stderr, "pdq %s: bad token id near '%.20s'\n", cmd, s);
            free(buf);
            return -1;
        }
        if (n == cap) {
            cap *= 2;
            int32_t *nb = realloc(buf, (size_t)cap * sizeof *buf);
            if (!nb) { free(buf); buf = NULL; break; }
            buf = nb;
        }
        buf[n++] = (int32_t)v;
        s = end;
    }
    if (!buf) {
        fprintf(stderr, "pdq %s: out of memory\n", cmd);
        return -1;
    }
    if (n == 0) {
        fprintf(stderr, "pdq %s: no token ids given\n", cmd);
        free(buf);
        return -1;
    }
    *ids = buf;
    return n;
}

char *cli_read_text(const char *cmd, const char *path, size_t *len) {
    if (pdq_dir_exists(path)) { /* a directory reads as 0 bytes: say what it is, not "too few tokens" */
        fprintf(stderr, "pdq %s: %s: is a directory, not a file\n", cmd, path);
        return NULL;
    }
    char *buf;
    pdq_status st = {0};
    if (pdq_file_read(path, PDQ_FILE_MAX_TEXT, &buf, len, &st)) {
        fprintf(stderr, "pdq %s: %s\n", cmd, st.msg);
        return NULL;
    }
    return buf;
}

int cli_static_opts(pdq_args *a, pdq_static_opts *o, pdq_padding *pad) {
    pdq_static_opts_default(o);
    const char *rope = args_str(a, "--rope"), *scale = args_str(a, "--scale-fusion"), *layout = args_str(a, "--layout");
    int bad = 0;
    if (rope && (int)(o->rope = (pdq_rope_conv)pdq_rope_conv_parse(rope)) < 0) {
        fprintf(stderr, "pdq %s: --rope must be hf or pre_negated_sin, got '%s'\n", a->cmd, rope);
        bad = 1;
    }
    if (scale && (int)(o->scale = (pdq_scale_fusion)pdq_scale_fusion_parse(scale)) < 0) {
        fprintf(stderr, "pdq %s: --scale-fusion must be none or k_proj, got '%s'\n", a->cmd, scale);
        bad = 1;
    }
    if (layout && (int)(o->layout = (pdq_attn_layout)pdq_attn_layout_parse(layout)) < 0) {
        fprintf(stderr, "pdq %s: --layout must be batched or unrolled, got '%s'\n", a->cmd, layout);
        bad = 1;
    }
    if (pad) {
        const char *p = args_str(a, "--padding");
        *pad = PDQ_PAD_LEFT;
        if (p && !strcmp(p, "right")) {
            *pad = PDQ_PAD_RIGHT;
        } else if (p && strcmp(p, "left")) {
            fprintf(stderr, "pdq %s: --padding must be left or right, got '%s'\n", a->cmd, p);
            bad = 1;
        }
    }
    if (bad) a->bad = 1; /* args_finish fails: a usage error */
    return bad ? -1 : (rope || scale || layout);
}

int cli_check_out_file(const char *cmd, const char *opt, const char *path) {
    if (pdq_dir_exists(path)) {
        fprintf(stderr, "pdq %s: %s %s: is a directory, not a file\n", cmd, opt, path);
        return 1;
    }
    char dir[4096];
    const char *slash = strrchr(path, '/');
    size_t n = slash ? (size_t)(slash - path) : 1;
    if (n >= sizeof dir) n = sizeof dir - 1;
    memcpy(dir, slash ? path : ".", n);
    dir[n] = '\0';
    if (slash && n == 0) snprintf(dir, sizeof dir, "/");
    if (!pdq_dir_exists(dir)) {
        fprintf(stderr, "pdq %s: %s %s: the directory %s does not exist\n", cmd, opt, path, dir);
        return 1;
    }
    if (!pdq_dir_writable(dir)) {
        fprintf(stderr, "pdq %s: %s %s: the directory %s is not writable (%s)\n", cmd, opt, path, dir, strerror(errno));
        return 1;
    }
    return 0;
}

int cli_check_ids(const char *cmd, const char *what, const int32_t *ids, long n, int vocab) {
    for (long i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= vocab) {
            fprintf(stderr, "pdq %s: %s: token id %d at position %ld is outside the vocabulary [0, %d)\n", cmd, what,
                    (int)ids[i], i, vocab);
            return 1;
        }
    return 0;
}

int cli_check_in_file(const char *cmd, const char *opt, const char *path) {
    pdq_path_kind k = pdq_path_stat(path, NULL, NULL);
    if (k == PDQ_PATH_NONE) {
        fprintf(stderr, "pdq %s: %s %s: cannot open (%s)\n", cmd, opt, path, strerror(errno));
        return 1;
    }
    if (k == PDQ_PATH_DIR) {
        fprintf(stderr, "pdq %s: %s %s: is a directory, not a file\n", cmd, opt, path);
        return 1;
    }
    return 0;
}

pdq_code cli_stream_text(const pdq_tokenizer *tok, const int32_t *ids, size_t n, size_t *printed, pdq_status *st) {
    char *text = NULL;
    pdq_code rc = pdq_tokenizer_decode(tok, ids, n, 1, &text, st);
    if (rc) return rc;
    size_t len = strlen(text);
    if (len >= 3 && memcmp(text + len - 3, "\xEF\xBF\xBD", 3) == 0) len -= 3; /* maybe an open sequence */
    if (len > *printed) {
        fwrite(text + *printed, 1, len - *printed, stdout);
        fflush(stdout);
        *printed = len;
    }
    free(text);
    return PDQ_OK;
}
