/* Task files: where each task's file lies under --data, and its JSON Lines layouts (the README's
 * forms and Hugging Face datasets' exports of the same split), turned into the harness's
 * requests (the yaml files of lm_eval/tasks/<task>/). */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pdq/file.h"
#include "task_items.h"

const char *const pdq_task_names[] = {"arc_easy", "arc_challenge", "piqa", "hellaswag", "winogrande",
                                      "lambada_openai", "mmlu", "boolq", "openbookqa", NULL};

/* Where a task's file is under a data folder: "<folder>/<file>", then "<file>" itself. */
static const struct {
    const char *task, *folder, *file;
} k_files[] = {
    {"arc_easy", "arc", "ARC-Easy-Dev.jsonl"},       {"arc_challenge", "arc", "ARC-Challenge-Dev.jsonl"},
    {"piqa", "piqa", "valid.jsonl"},                 {"hellaswag", "hellaswag", "hellaswag_val_full.txt"},
    {"winogrande", "winogrande", "winogrande.jsonl"}, {"lambada_openai", "lambada_openai", "lambada_test.jsonl"},
    {"mmlu", "mmlu", "test"},                        {"boolq", "boolq", "boolq.jsonl"},
    {"openbookqa", "openbookqa", "openbook_qa.jsonl"},
};

typedef struct {
    pdq_task *t;
    const char *file;
    long line;
    const char *labels; /* piqa: the .lst text, advanced line by line */
    int layout;         /* chosen by the first record, every record must have it */
    pdq_status *st;
    long limit;         /* mmlu: items per subject (the harness limits each subject's task) */
    long *per_subject;  /* mmlu: items kept per subject so far */
} reader;

static pdq_code missing(reader *r, const char *field) {
    return task_fail(r->st, PDQ_ERR_MISSING, r->file, r->line, "missing field '%s'", field);
}

static const char *str_field(reader *r, const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (cJSON_IsString(v)) return v->valuestring;
    if (v) task_fail(r->st, PDQ_ERR_FORMAT, r->file, r->line, "field '%s' is not a string", key);
    else missing(r, key);
    return NULL;
}

/* An array of n strings (n in [1, 16]) into out. */
static int str_array(reader *r, const cJSON *a, const char *key, const char **out) {
    int n = cJSON_IsArray(a) ? cJSON_GetArraySize(a) : -1;
    if (n < 1 || n > 16) {
        if (!a) missing(r, key);
        else task_fail(r->st, PDQ_ERR_FORMAT, r->file, r->line, "field '%s' is not an array of 1 to 16 strings", key);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        const cJSON *v = cJSON_GetArrayItem(a, i);
        if (!cJSON_IsString(v)) {
            task_fail(r->st, PDQ_ERR_FORMAT, r->file, r->line, "%s[%d] is not a string", key, i);
            return -1;
        }
        out[i] = v->valuestring;
    }
    return n;
}

/* An integer field (or a string of one, as HF exports some labels) in [0, hi]. */
static int int_field(reader *r, const cJSON *o, const char *key, int lo, int hi) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    double d = -1;
    char *end = NULL;
    if (!v) return missing(r, key), -1;
    if (cJSON_IsNumber(v)) d = v->valuedouble;
    else if (cJSON_IsBool(v)) d = cJSON_IsTrue(v);
    else if (cJSON_IsString(v) && v->valuestring[0]) {
        d = strtod(v->valuestring, &end);
        if (*end) d = -1e9;
    } else {
        d = -1e9;
    }
    if (!(d >= lo && d <= hi) || d != floor(d)) { /* range first: the cast is defined only inside it */
        task_fail(r->st, PDQ_ERR_FORMAT, r->file, r->line, "field '%s' is not an integer in [%d, %d]", key, lo, hi);
        return -1;
    }
    return (int)d;
}

/* The index of answerKey among labels (AI2 / HF ARC, HF OpenBookQA). */
static int label_index(reader *r, const char *key, const char **labels, int n) {
    for (int i = 0; i < n; i++)
        if (strcmp(labels[i], key) == 0) return i;
    task_fail(r->st, PDQ_ERR_FORMAT, r->file, r->line, "answerKey '%s' is not one of the choices' labels", key);
    return -1;
}

/* Which layout a record has: the first of keys[] (one key per layout) it holds. */
static int pick_layout(reader *r, const cJSON *o, const char *const *keys, int n) {
    if (r->layout >= 0) return r->layout;
    for (int i = 0; i < n; i++)
        if (cJSON_GetObjectItemCaseSensitive(o, keys[i])) return r->layout = i;
    return missing(r, keys[0]), -1;
}

/* "Question: {stem}\nAnswer:" over {text, label} choices; answerKey picks gold. */
static pdq_code arc_record(reader *r, const cJSON *o) {
    static const char *const keys[] = {"choices", "question"}; /* HF (top-level choices), AI2 */
    int lay = pick_layout(r, o, keys, 2);
    if (lay < 0) return r->st->code;
    const cJSON *q = cJSON_GetObjectItemCaseSensitive(o, "question"), *ch;
    const char *stem = lay == 0 ? str_field(r, o, "question") : NULL;
    if (lay == 1) {
        if (!cJSON_IsObject(q)) return missing(r, "question.stem");
        stem = str_field(r, q, "stem");
        ch = cJSON_GetObjectItemCaseSensitive(q, "choices");
        if (!stem) return r->st->code;
    } else {
        ch = cJSON_GetObjectItemCaseSensitive(o, "choices");
    }
    const char *key = str_field(r, o, "answerKey");
    if (!stem || !key) return r->st->code;
    const char *text[16], *label[16];
    int n;
    if (lay == 0) {
        if (!cJSON_IsObject(ch)) return missing(r, "choices.text");
        n = str_array(r, cJSON_GetObjectItemCaseSensitive(ch, "text"), "choices.text", text);
        if (n < 0 || str_array(r, cJSON_GetObjectItemCaseSensitive(ch, "label"), "choices.label", label) != n)
            return n < 0 || r->st->code ? r->st->code : task_fail(r->st, PDQ_ERR_FORMAT, r->file, r->line, "choices.text and choices.label differ in length");
    } else {
        n = cJSON_IsArray(ch) ? cJSON_GetArraySize(ch) : -1;
        if (n < 1 || n > 16) return ch ? task_fail(r->st, PDQ_ERR_FORMAT, r->file, r->line, "question.choices is not an array of 1 to 16 choices") : missing(r, "question.choices");
        for (int i = 0; i < n; i++) {
            const cJSON *c = cJSON_GetArrayItem(ch, i);
            if (!(text[i] = str_field(r, c, "text")) || !(label[i] = str_field(r, c, "label"))) return r->st->code;
        }
    }
    int gold = label_index(r, key, label, n);
    if (gold < 0) return r->st->code;
    char *ctx = task_strcat3("Question: ", stem, "\nAnswer:");
    pdq_code rc = ctx ? task_add_choice(r->t, r->file, r->line, ctx, text, n, gold, -1, r->st) : pdq_fail(r->st, PDQ_ERR_NOMEM, "out of memory");
    free(ctx);
    return rc;
}

/* "Question: {goal}\nAnswer:" over [sol1, sol2]; the label inline (HF) or from the .lst file. */
static pdq_code piqa_record(reader *r, const cJSON *o) {
    const char *goal = str_field(r, o, "goal"), *sol[2] = {NULL, NULL};
    if (goal) sol[0] = str_field(r, o, "sol1");
    if (sol[0]) sol[1] = str_field(r, o, "sol2");
    if (!sol[1]) return r->st->code;
    int gold;
    if (!r->labels) {
        if ((gold = int_field(r, o, "label", 0, 1)) < 0) return r->st->code;
    } else {
        if (!*r->labels) return task_fail(r->st, PDQ_ERR_MISSING, r->file, r->line, "the labels file ends before this record");
        gold = r->labels[0] == '0' ? 0 : r->labels[0] == '1' ? 1 : -1;
        if (gold < 0 || (r->labels[1] && r->labels[1] != '\n' && r->labels[1] != '\r'))
            return task_fail(r->st, PDQ_ERR_FORMAT, r->file, r->line, "the labels file's line for this record is not 0 or 1");
        const char *nl = strchr(r->labels, '\n');
        r->labels = nl ? nl + 1 : r->labels + strlen(r->labels);
    }
    char *ctx = task_strcat3("Question: ", goal, "\nAnswer:");
    pdq_code rc = ctx ? task_add_choice(r->t, r->file, r->line, ctx, sol, 2, gold, -1, r->st) : pdq_fail(r->st, PDQ_ERR_NOMEM, "out of memory");
    free(ctx);
    return rc;
}

/* HF hellaswag: preprocess(activity_label + ": " + ctx_a + " " + ctx_b.capitalize()). */
static pdq_code hellaswag_record(reader *r, const cJSON *o) {
    const char *act = str_field(r, o, "activity_label"), *a = act ? str_field(r, o, "ctx_a") : NULL;
    const char *b = a ? str_field(r, o, "ctx_b") : NULL, *end[16];
    if (!b) return r->st->code;
    int n = str_array(r, cJSON_GetObjectItemCaseSensitive(o, "endings"), "endings", end);
    int gold = n > 0 ? int_field(r, o, "label", 0, n - 1) : -1;
    if (gold < 0) return r->st->code;
    char *cap = task_capitalize(b), *ab = cap ? task_strcat3(a, " ", cap) : NULL;
    char *raw = ab ? task_strcat3(act, ": ", ab) : NULL, *ctx = raw ? pdq_task_hellaswag_preprocess(raw) : NULL;
    char *pre[16] = {0};
    int ok = ctx != NULL;
    for (int i = 0; i < n && ok; i++) ok = (pre[i] = pdq_task_hellaswag_preprocess(end[i])) != NULL;
    pdq_code rc = ok ? task_add_choice(r->t, r->file, r->line, ctx, (const char *const *)pre, n, gold, -1, r->st)
                     : pdq_fail(r->st, PDQ_ERR_NOMEM, "out of memory");
    for (int i = 0; i < n; i++) free(pre[i]);
    free(cap), free(ab), free(raw), free(ctx);
    return rc;
}

/* Partial scoring: contexts sentence[:i] + option, continuation sentence[i+1:] (i = '_'). */
static pdq_code winogrande_record(reader *r, const cJSON *o) {
    static const char *const keys[] = {"context_options", "sentence"};
    int lay = pick_layout(r, o, keys, 2);
    if (lay < 0) return r->st->code;
    if (lay == 0) {
        const char *ctx[16], *cont;
        int n = str_array(r, cJSON_GetObjectItemCaseSensitive(o, "context_options"), "context_options", ctx);
        if (n < 0 || !(cont = str_field(r, o, "continuation"))) return r->st->code;
        int gold = int_field(r, o, "gold", 0, n - 1);
        return gold < 0 ? r->st->code : task_add_partial(r->t, r->file, r->line, ctx, n, cont, gold, r->st);
    }
    const char *s = str_field(r, o, "sentence"), *o1 = s ? str_field(r, o, "option1") : NULL;
    const char *o2 = o1 ? str_field(r, o, "option2") : NULL;
    int ans = o2 ? int_field(r, o, "answer", 1, 2) : -1;
    if (ans < 0) return r->st->code;
    const char *blank = strchr(s, '_');
    if (!blank) return task_fail(r->st, PDQ_ERR_FORMAT, r->file, r->line, "the sentence has no '_' to fill");
    size_t i = (size_t)(blank - s);
    char *head = strndup(s, i), *c1 = head ? task_strcat3(head, o1, "") : NULL, *c2 = head ? task_strcat3(head, o2, "") : NULL;
    const char *ctx[2] = {c1, c2};
    pdq_code rc = c1 && c2 ? task_add_partial(r->t, r->file, r->line, ctx, 2, blank + 1, ans - 1, r->st)
                           : pdq_fail(r->st, PDQ_ERR_NOMEM, "out of memory");
    free(head), free(c1), free(c2);
    return rc;
}

/* text.split(' '): context = all words but the last joined by ' ', target = ' ' + last word. */
static pdq_code lambada_record(reader *r, const cJSON *o) {
    const char *text = str_field(r, o, "text");
    if (!text) return r->st->code;
    const char *sp = strrchr(text, ' ');
    char *ctx = strndup(text, sp ? (size_t)(sp - text) : 0);
    char *cont = task_strcat3(" ", sp ? sp + 1 : text, "");
    pdq_code rc = ctx && cont ? task_add_greedy(r->t, r->line, ctx, cont, r->st) : pdq_fail(r->st, PDQ_ERR_NOMEM, "out of memory");
    free(ctx), free(cont);
    return rc;
}

/* HF cais/mmlu export: question, subject, choices[4], answer (0-3). */
static pdq_code mmlu_record(reader *r, const cJSON *o) {
    const char *q = str_field(r, o, "question"), *subject = q ? str_field(r, o, "subject") : NULL, *ch[16];
    if (!subject) return r->st->code;
    int n = str_array(r, cJSON_GetObjectItemCaseSensitive(o, "choices"), "choices", ch);
    if (n < 0) return r->st->code;
    if (n != 4) return task_fail(r->st, PDQ_ERR_FORMAT, r->file, r->line, "choices has %d entries, MMLU has 4", n);
    int gold = int_field(r, o, "answer", 0, 3);
    if (gold < 0) return r->st->code;
    pdq_task *t = r->t;
    int s = 0;
    while (s < t->n_subjects && strcmp(t->subjects[s], subject) != 0) s++;
    if (s == t->n_subjects) {
        char **ns = realloc(t->subjects, (size_t)(s + 1) * sizeof *ns);
        long *np = ns ? realloc(r->per_subject, (size_t)(s + 1) * sizeof *np) : NULL;
        if (ns) t->subjects = ns;
        if (!np) return pdq_fail(r->st, PDQ_ERR_NOMEM, "out of memory");
        r->per_subject = np;
        np[s] = 0;
        if (!(ns[s] = strdup(subject))) return pdq_fail(r->st, PDQ_ERR_NOMEM, "out of memory");
        t->n_subjects++;
    }
    if (r->limit > 0 && r->per_subject[s] >= r->limit) return PDQ_OK;
    r->per_subject[s]++;
    static const char *const letters[4] = {"A", "B", "C", "D"};
    char *d = task_mmlu_description(subject), *qq = task_mmlu_question(q, ch);
    char *ctx = d && qq ? task_strcat3(d, qq, "") : NULL;
    pdq_code rc = ctx ? task_add_choice(t, r->file, r->line, ctx, letters, 4, gold, s, r->st) : pdq_fail(r->st, PDQ_ERR_NOMEM, "out of memory");
    free(d), free(qq), free(ctx);
    return rc;
}

/* "{passage}\nQuestion: {question}?\nAnswer:" over " no", " yes". The reshaped file's query is
 * "Passage: {passage}\nQuestion: {question}?": the same text after its "Passage: ". */
static pdq_code boolq_record(reader *r, const cJSON *o) {
    static const char *const keys[] = {"query", "passage"};
    static const char *const yn[2] = {"no", "yes"};
    int lay = pick_layout(r, o, keys, 2);
    if (lay < 0) return r->st->code;
    char *ctx = NULL;
    int gold;
    if (lay == 0) {
        const char *q = str_field(r, o, "query"), *ch[16];
        if (!q) return r->st->code;
        int n = str_array(r, cJSON_GetObjectItemCaseSensitive(o, "choices"), "choices", ch);
        if (n < 0) return r->st->code;
        if (n != 2 || strcmp(ch[0], "no") || strcmp(ch[1], "yes"))
            return task_fail(r->st, PDQ_ERR_FORMAT, r->file, r->line, "choices are not [\"no\", \"yes\"]");
        if (strncmp(q, "Passage: ", 9) != 0 || !strstr(q, "\nQuestion: "))
            return task_fail(r->st, PDQ_ERR_FORMAT, r->file, r->line, "query is not \"Passage: ...\\nQuestion: ...\"");
        if ((gold = int_field(r, o, "gold", 0, 1)) < 0) return r->st->code;
        ctx = task_strcat3(q + 9, "\nAnswer:", "");
    } else {
        const char *p = str_field(r, o, "passage"), *q = p ? str_field(r, o, "question") : NULL;
        if (!q) return r->st->code;
        gold = int_field(r, o, cJSON_GetObjectItemCaseSensitive(o, "label") ? "label" : "answer", 0, 1);
        if (gold < 0) return r->st->code;
        char *pq = task_strcat3(p, "\nQuestion: ", q);
        ctx = pq ? task_strcat3(pq, "?\nAnswer:", "") : NULL;
        free(pq);
    }
    pdq_code rc = ctx ? task_add_choice(r->t, r->file, r->line, ctx, yn, 2, gold, -1, r->st) : pdq_fail(r->st, PDQ_ERR_NOMEM, "out of memory");
    free(ctx);
    return rc;
}

/* The question stem over the choices' texts. */
static pdq_code openbookqa_record(reader *r, const cJSON *o) {
    static const char *const keys[] = {"query", "question_stem"};
    int lay = pick_layout(r, o, keys, 2);
    if (lay < 0) return r->st->code;
    const char *text[16], *label[16], *stem;
    int n, gold;
    if (lay == 0) {
        if (!(stem = str_field(r, o, "query"))) return r->st->code;
        if ((n = str_array(r, cJSON_GetObjectItemCaseSensitive(o, "choices"), "choices", text)) < 0) return r->st->code;
        if ((gold = int_field(r, o, "gold", 0, n - 1)) < 0) return r->st->code;
    } else {
        const cJSON *ch = cJSON_GetObjectItemCaseSensitive(o, "choices");
        const char *key;
        if (!(stem = str_field(r, o, "question_stem")) || !(key = str_field(r, o, "answerKey"))) return r->st->code;
        if (!cJSON_IsObject(ch)) return missing(r, "choices.text");
        n = str_array(r, cJSON_GetObjectItemCaseSensitive(ch, "text"), "choices.text", text);
        if (n < 0 || str_array(r, cJSON_GetObjectItemCaseSensitive(ch, "label"), "choices.label", label) != n)
            return n < 0 || r->st->code ? r->st->code : task_fail(r->st, PDQ_ERR_FORMAT, r->file, r->line, "choices.text and choices.label differ in length");
        while (*key == ' ') key++; /* answerKey.lstrip() */
        if ((gold = label_index(r, key, label, n)) < 0) return r->st->code;
    }
    return task_add_choice(r->t, r->file, r->line, stem, text, n, gold, -1, r->st);
}

typedef pdq_code (*record_fn)(reader *r, const cJSON *o);

/* The whole file as text (NULL after an error: unreadable, or a NUL byte inside). */
static char *read_text(reader *r) {
    char *buf;
    size_t len;
    if (pdq_file_read(r->file, PDQ_FILE_MAX_TEXT, &buf, &len, r->st) != PDQ_OK) return NULL;
    if (memchr(buf, 0, len)) {
        free(buf);
        pdq_fail(r->st, PDQ_ERR_FORMAT, "%s: holds a NUL byte: not a text file", r->file);
        return NULL;
    }
    return buf;
}

/* Every non-empty line one JSON object, up to limit records. */
static pdq_code read_jsonl(reader *r, record_fn fn, long limit) {
    char *buf = read_text(r);
    if (!buf) return r->st->code;
    pdq_code rc = PDQ_OK;
    long records = 0;
    r->line = 0;
    for (char *p = buf; *p && rc == PDQ_OK && (limit <= 0 || records < limit);) {
        char *nl = strchr(p, '\n');
        if (nl) *nl = 0;
        r->line++;
        const char *q = p;
        while (*q == ' ' || *q == '\t' || *q == '\r') q++;
        if (*q) {
            cJSON *o = cJSON_Parse(q);
            if (!cJSON_IsObject(o)) rc = task_fail(r->st, PDQ_ERR_FORMAT, r->file, r->line, "not a JSON object");
            else if ((rc = fn(r, o)) == PDQ_OK) records++;
            cJSON_Delete(o);
        }
        if (!nl) break;
        p = nl + 1;
    }
    free(buf);
    if (rc == PDQ_OK && records == 0) rc = pdq_fail(r->st, PDQ_ERR_FORMAT, "%s: no records", r->file);
    return rc;
}

/* llama.cpp's hellaswag text: per task the context, the gold index, four endings. */
static pdq_code read_hellaswag_txt(reader *r, long limit) {
    char *buf = read_text(r);
    if (!buf) return r->st->code;
    static const char *const what[6] = {"context", "gold index", "ending 1", "ending 2", "ending 3", "ending 4"};
    char *lines[6];
    pdq_code rc = PDQ_OK;
    long line = 0;
    char *p = buf;
    while (rc == PDQ_OK && *p && (limit <= 0 || r->t->n_items < limit)) {
        long first = line + 1;
        for (int k = 0; k < 6; k++) {
            if (!*p) { rc = task_fail(r->st, PDQ_ERR_MISSING, r->file, line + 1, "missing field '%s' (a task is 6 lines)", what[k]); break; }
            char *nl = strchr(p, '\n');
            if (nl) *nl = 0;
            if (nl && nl > p && nl[-1] == '\r') nl[-1] = 0;
            lines[k] = p;
            line++;
            p = nl ? nl + 1 : p + strlen(p);
        }
        if (rc != PDQ_OK) break;
        char *end;
        long gold = strtol(lines[1], &end, 10);
        if (end == lines[1] || *end || gold < 0 || gold > 3) {
            rc = task_fail(r->st, PDQ_ERR_FORMAT, r->file, first + 1, "the gold index '%.20s' is not 0 to 3", lines[1]);
            break;
        }
        rc = task_add_choice(r->t, r->file, first, lines[0], (const char *const *)&lines[2], 4, (int)gold, -1, r->st);
    }
    free(buf);
    if (rc == PDQ_OK && r->t->n_items == 0) rc = pdq_fail(r->st, PDQ_ERR_FORMAT, "%s: no tasks", r->file);
    r->t->llamacpp_rule = 1;
    return rc;
}

static int is_file(const char *path) {
    size_t sz;
    pdq_status st = {0};
    return pdq_file_size(path, &sz, &st) == PDQ_OK;
}

/* The piqa labels beside its data: "<name>-labels.lst" for "<name>.jsonl" (NULL if absent). */
static char *piqa_labels(const char *file, pdq_status *st) {
    char path[4096];
    size_t n = strlen(file);
    if (n > 6 && strcmp(file + n - 6, ".jsonl") == 0) n -= 6;
    snprintf(path, sizeof path, "%.*s-labels.lst", (int)n, file);
    char *text = NULL;
    if (is_file(path) && pdq_file_read(path, PDQ_FILE_MAX_TEXT, &text, NULL, st) != PDQ_OK) return NULL;
    return text;
}

/* Resolves the task's file (or, for mmlu, folder) under path into out. */
static pdq_code locate(const char *name, const char *path, char *out, size_t cap, pdq_status *st) {
    size_t i = 0;
    while (i < sizeof k_files / sizeof k_files[0] && strcmp(k_files[i].task, name) != 0) i++;
    if (is_file(path)) { snprintf(out, cap, "%s", path); return PDQ_OK; }
    const char *folder = k_files[i].folder, *file = k_files[i].file;
    int mmlu = strcmp(name, "mmlu") == 0;
    char cand[2][2048];
    if (snprintf(cand[0], sizeof cand[0], "%s/%s/%s", path, folder, file) >= (int)sizeof cand[0] ||
        snprintf(cand[1], sizeof cand[1], "%s/%s", path, file) >= (int)sizeof cand[1])
        return pdq_fail(st, PDQ_ERR_ARG, "%.200s...: the data path is too long", path);
    for (int c = 0; c < 2; c++) {
        char probe[2200 + 64];
        /* an MMLU folder is the one whose test/ holds the first subject's file */
        if (snprintf(probe, sizeof probe, "%s/%s_test.csv", cand[c], pdq_mmlu_subject(0)) >= (int)sizeof probe) continue;
        if (is_file(mmlu ? probe : cand[c])) {
            snprintf(out, cap, "%.*s", mmlu ? (int)(strlen(cand[c]) - 5) : (int)strlen(cand[c]), cand[c]);
            return PDQ_OK;
        }
    }
    return pdq_fail(st, PDQ_ERR_IO, "%s: no %s data: neither %s nor %s exists", path, name, cand[0], cand[1]);
}

pdq_code pdq_task_load(const char *name, const char *path, long limit, int shots, pdq_task **out, pdq_status *st) {
    *out = NULL;
    int known = 0;
    for (int i = 0; pdq_task_names[i]; i++) known |= strcmp(name, pdq_task_names[i]) == 0;
    if (!known) return pdq_fail(st, PDQ_ERR_ARG, "unknown task '%s'", name);
    int mmlu = strcmp(name, "mmlu") == 0;
    if (shots < 0 || (shots > 0 && !mmlu)) return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "%s: --shots is for mmlu (its dev split); the other tasks run 0-shot", name);
    char file[4096];
    if (locate(name, path, file, sizeof file, st) != PDQ_OK) return st->code;
    pdq_task *t = calloc(1, sizeof *t);
    if (!t) return pdq_fail(st, PDQ_ERR_NOMEM, "out of memory");
    snprintf(t->name, sizeof t->name, "%s", name);
    t->kind = strcmp(name, "winogrande") == 0 ? PDQ_TASK_PARTIAL : strcmp(name, "lambada_openai") == 0 ? PDQ_TASK_GREEDY : PDQ_TASK_CHOICE;
    t->has_acc_norm = strcmp(name, "arc_easy") == 0 || strcmp(name, "arc_challenge") == 0 || strcmp(name, "piqa") == 0 ||
                      strcmp(name, "hellaswag") == 0 || strcmp(name, "openbookqa") == 0;
    t->has_perplexity = t->kind == PDQ_TASK_GREEDY;
    t->shots = shots;
    reader r = {t, file, 0, NULL, -1, st, mmlu ? limit : 0, NULL};
    size_t fl = strlen(file);
    int txt = fl > 4 && strcmp(file + fl - 4, ".txt") == 0;
    pdq_code rc;
    char *labels = NULL;
    if (mmlu && !is_file(file)) rc = task_read_mmlu_csv(t, file, limit, shots, st);
    else if (mmlu && fl > 4 && strcmp(file + fl - 4, ".csv") == 0) rc = pdq_fail(st, PDQ_ERR_UNSUPPORTED, "%s: give the MMLU folder holding test/ (and dev/), not one subject's CSV", file);
    else if (mmlu && shots > 0) rc = pdq_fail(st, PDQ_ERR_UNSUPPORTED, "%s: k-shot MMLU takes its shots from Hendrycks' dev CSVs: give the folder holding test/ and dev/", file);
    else if (strcmp(name, "hellaswag") == 0 && txt) rc = read_hellaswag_txt(&r, limit);
    else {
        record_fn fn = mmlu ? mmlu_record : strcmp(name, "piqa") == 0 ? piqa_record : strcmp(name, "hellaswag") == 0 ? hellaswag_record
                     : strcmp(name, "winogrande") == 0 ? winogrande_record : strcmp(name, "lambada_openai") == 0 ? lambada_record
                     : strcmp(name, "boolq") == 0 ? boolq_record : strcmp(name, "openbookqa") == 0 ? openbookqa_record : arc_record;
        int labels_failed = 0;
        if (fn == piqa_record) {
            pdq_status_clear(st);
            labels = piqa_labels(file, st);
            labels_failed = st->code != PDQ_OK;
            r.labels = labels;
        }
        rc = labels_failed ? st->code : read_jsonl(&r, fn, mmlu ? 0 : limit);
    }
    free(r.per_subject);
    free(labels);
    if (rc != PDQ_OK) { pdq_task_free(t); return rc; }
    *out = t;
    return PDQ_OK;
}
