#include "pdq/progress.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

double pdq_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void draw(pdq_progress *p) {
    double el = pdq_now() - p->t_start;
    double frac = p->total > 0 ? (double)p->done / (double)p->total : 1.0;
    int width = 30, fill = (int)(frac * width + 0.5);
    char bar[64];
    for (int i = 0; i < width; i++) bar[i] = i < fill ? '#' : '.';
    bar[width] = '\0';
    double eta = frac > 0 ? el / frac - el : 0;
    fprintf(stderr, "\r%-18s [%s] %ld/%ld  %5.1fs  ETA %5.1fs ", p->label, bar, p->done, p->total, el, eta);
    fflush(stderr);
    p->t_last_draw = pdq_now();
}

void pdq_progress_start(pdq_progress *p, const char *label, long total) {
    memset(p, 0, sizeof *p);
    p->label = label;
    p->total = total;
    p->t_start = pdq_now();
    const char *env = getenv("PDQ_PROGRESS");
    p->enabled = env ? atoi(env) != 0 : isatty(2);
    if (p->enabled) draw(p);
}

void pdq_progress_update(pdq_progress *p, long done) {
    p->done = done;
    if (p->enabled && (pdq_now() - p->t_last_draw > 0.1 || done >= p->total)) draw(p);
}

void pdq_progress_finish(pdq_progress *p) {
    p->done = p->total;
    if (p->enabled) {
        draw(p);
        fputc('\n', stderr);
    }
}

void pdq_progress_on(void *ctx, long done, long total) {
    (void)total;
    pdq_progress_update(ctx, done);
}
