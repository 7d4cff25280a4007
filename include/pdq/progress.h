/* A one-line progress bar with ETA on stderr (only when stderr is a terminal or forced). */
#ifndef PDQ_PROGRESS_H
#define PDQ_PROGRESS_H

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    const char *label;
    long total;
    long done;
    double t_start;
    double t_last_draw;
    int enabled;
} pdq_progress;

/* Enabled when stderr is a tty, or when PDQ_PROGRESS=1; PDQ_PROGRESS=0 disables. */
void pdq_progress_start(pdq_progress *p, const char *label, long total);
void pdq_progress_update(pdq_progress *p, long done);
void pdq_progress_finish(pdq_progress *p);
/* A (ctx, done, total) callback for long calls that report progress: ctx is a started
 * pdq_progress, updated to done (its total was given at the start). */
void pdq_progress_on(void *ctx, long done, long total);

/* Monotonic seconds. */
double pdq_now(void);

#ifdef __cplusplus
}
#endif
#endif
