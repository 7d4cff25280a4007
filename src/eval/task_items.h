/* Internal to the task readers: building items and naming the file and line of an error. */
#ifndef PDQ_EVAL_TASK_ITEMS_H
#define PDQ_EVAL_TASK_ITEMS_H

#include "pdq/tasks.h"

/* pdq_fail with "file:line: " before the message. */
pdq_code task_fail(pdq_status *st, pdq_code code, const char *file, long line, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* One context, requests (ctx, " " + choice[j]) (multiple_choice with the target delimiter). */
pdq_code task_add_choice(pdq_task *t, const char *file, long line, const char *ctx, const char *const *choices,
                         int n, int gold, int subject, pdq_status *st);
/* One context per option, one continuation " " + strip(cont) after each (winogrande). */
pdq_code task_add_partial(pdq_task *t, const char *file, long line, const char *const *ctxs, int n,
                          const char *cont, int gold, pdq_status *st);
/* One request (ctx, cont) scored for greedy and log-likelihood (lambada). */
pdq_code task_add_greedy(pdq_task *t, long line, const char *ctx, const char *cont, pdq_status *st);

/* Frees an item's strings and arrays (not the item itself). */
void task_item_free(pdq_task_item *it);

/* Python's str.capitalize() on ASCII letters (other bytes kept). */
char *task_capitalize(const char *s);
/* a + b, malloc'd. */
char *task_strcat(const char *a, const char *b);
/* a + b + c, malloc'd. */
char *task_strcat3(const char *a, const char *b, const char *c);

/* Hendrycks' MMLU CSVs (task_mmlu.c): the subjects' test files under dir/test (dev under dir/dev
 * for shots). */
pdq_code task_read_mmlu_csv(pdq_task *t, const char *dir, long limit, int shots, pdq_status *st);
/* An MMLU record's prompt: question.strip() and the four choices, "Answer:" last. */
char *task_mmlu_question(const char *question, const char *const *choices);
/* The description line of a subject. */
char *task_mmlu_description(const char *subject);

#endif
