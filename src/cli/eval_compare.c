/* pdq eval --compare DIR: the same tasks through two models side by side, with the difference
 * of each metric and how many items changed answer. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval_compare.h"

static pdq_metric metric_of(const pdq_task_result *r, int which) {
    return which == 0 ? r->acc : which == 1 ? r->acc_norm : r->perplexity;
}

/* Items scored by both whose answer differs: the prediction for acc (lambada: the greedy flag,
 * the perplexity row too), the normalized prediction for acc_norm. */
static long changed(const pdq_task *t, const pdq_task_result *a, const pdq_task_result *b, int which) {
    long n = 0;
    for (int i = 0; i < t->n_items; i++) {
        const pdq_item_result *x = &a->items[i], *y = &b->items[i];
        if (x->refused || y->refused) continue;
        if (t->kind == PDQ_TASK_GREEDY) n += x->acc != y->acc;
        else n += which == 1 ? x->pred_norm != y->pred_norm : x->pred != y->pred;
    }
    return n;
}

static void print_rows(const pdq_task *t, const pdq_task_result *a, const pdq_task_result *b, int json, int *first) {
    static const char *const names[3] = {"acc", "acc_norm", "perplexity"};
    for (int w = 0; w < 3; w++) {
        pdq_metric x = metric_of(a, w), y = metric_of(b, w);
        if (isnan(x.value) || isnan(y.value)) continue;
        long ch = changed(t, a, b, w);
        if (json) {
            printf("%s{\"task\": \"%s\", \"metric\": \"%s\", \"a\": %.17g, \"a_stderr\": ", *first ? "" : ", ", t->name, names[w], x.value);
            if (isnan(x.stderr_)) printf("null"); else printf("%.17g", x.stderr_);
            printf(", \"b\": %.17g, \"b_stderr\": ", y.value);
            if (isnan(y.stderr_)) printf("null"); else printf("%.17g", y.stderr_);
            printf(", \"diff\": %.17g, \"changed\": %ld, \"n_a\": %ld, \"n_b\": %ld}", y.value - x.value, ch, a->n, b->n);
        } else {
            printf("| %-16s | %-10s | %10.4f ± %-8.4f | %10.4f ± %-8.4f | %+10.4f | %7ld | %5ld | %5ld |\n", t->name, names[w], x.value,
                   isnan(x.stderr_) ? 0 : x.stderr_, y.value, isnan(y.stderr_) ? 0 : y.stderr_, y.value - x.value, ch, a->n, b->n);
        }
        *first = 0;
    }
}

int eval_compare(const eval_side *a, const eval_side *b, const char *tasks, const char *data, long limit, int shots,
                 int add_bos, int json) {
    char *list = strdup(tasks);
    if (!list) return 1;
    if (json) {
        printf("{\"a\": ");
        eval_json_str(stdout, a->name);
        printf(", \"b\": ");
        eval_json_str(stdout, b->name);
        printf(", \"add_bos\": %s, \"rows\": [", add_bos ? "true" : "false");
    } else {
        printf("a: %s\nb: %s\n", a->name, b->name);
        printf("| %-16s | %-10s | %21s | %21s | %10s | %7s | %5s | %5s |\n", "task", "metric", "a ± stderr", "b ± stderr", "b - a",
               "changed", "n a", "n b");
        printf("|------------------|------------|-----------------------|-----------------------|------------|---------|-------|-------|\n");
    }
    int status = 0, first = 1;
    for (char *save = NULL, *name = strtok_r(list, ",", &save); name && !status; name = strtok_r(NULL, ",", &save)) {
        pdq_task *t;
        pdq_status st = {0};
        pdq_task_result ra, rb;
        if (pdq_task_load(name, data, limit, shots, &t, &st) != PDQ_OK) {
            fprintf(stderr, "pdq eval: %s\n", st.msg);
            status = 1;
            break;
        }
        if (pdq_task_eval(t, a->tok, add_bos, a->fn, a->ctx, NULL, NULL, &ra, NULL, &st) != PDQ_OK) {
            fprintf(stderr, "pdq eval: %s: %s\n", a->name, st.msg);
            status = 1;
        } else {
            if (pdq_task_eval(t, b->tok, add_bos, b->fn, b->ctx, NULL, NULL, &rb, NULL, &st) != PDQ_OK) {
                fprintf(stderr, "pdq eval: %s: %s\n", b->name, st.msg);
                status = 1;
            } else {
                print_rows(t, &ra, &rb, json, &first);
                pdq_task_result_free(t, &rb, NULL);
            }
            pdq_task_result_free(t, &ra, NULL);
        }
        pdq_task_free(t);
    }
    if (json && !status) printf("]}\n");
    free(list);
    return status;
}
