/* The report page's task-accuracy section (report.json "tasks", from pdq quantize --eval-task). */
#ifndef PDQ_REPORT_HTML_TASKS_H
#define PDQ_REPORT_HTML_TASKS_H

#include <cjson/cJSON.h>
#include <stdio.h>

/* One table: a row per task and metric, a column per path (value ± stderr); then the integer vs
 * fake-quant answers against the integer bound. Nothing when report.json has no "tasks". */
void html_tasks(FILE *f, const cJSON *r);

#endif
