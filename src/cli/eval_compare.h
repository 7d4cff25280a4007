/* pdq eval --compare: two models over the same tasks (src/cli/eval_compare.c). */
#ifndef PDQ_CLI_EVAL_COMPARE_H
#define PDQ_CLI_EVAL_COMPARE_H

#include <stdio.h>

#include "pdq/tasks.h"

/* s as a JSON string literal (cmd_eval.c). */
void eval_json_str(FILE *f, const char *s);

typedef struct {
    const char *name;         /* the model's directory, for the output */
    const pdq_tokenizer *tok; /* its own tokenizer */
    pdq_ll_fn fn;
    void *ctx;
} eval_side;

/* Prints, per task and metric, a's and b's values with stderr, b - a and the items whose answer
 * changed (table or --json); returns the exit status. */
int eval_compare(const eval_side *a, const eval_side *b, const char *tasks, const char *data, long limit, int shots,
                 int add_bos, int json);

#endif
