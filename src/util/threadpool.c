/* Worker pool: a generation counter under one mutex wakes the workers for each run; tasks are
 * taken from an atomic counter. Workers spin briefly before sleeping, since decode issues a few
 * hundred short runs per token and a condition-variable wake-up costs tens of microseconds. */
#include "pdq/threadpool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#define SPIN_ITERS 20000

struct pdq_pool {
    int n;                    /* workers counting the caller */
    pthread_t *tid;           /* [n - 1] */
    pthread_mutex_t mu;
    pthread_cond_t wake, done;
    atomic_uint generation;   /* bumped once per run (and once to stop) */
    int stop;
    /* the current run */
    pdq_pool_fn fn;
    void *ctx;
    int n_tasks;
    atomic_int next;          /* next task to take */
    atomic_int busy;          /* workers still inside the current run */
};

typedef struct {
    pdq_pool *p;
    int index;
} worker_arg;

static void drain(pdq_pool *p, int thread) {
    for (;;) {
        int t = atomic_fetch_add_explicit(&p->next, 1, memory_order_relaxed);
        if (t >= p->n_tasks) return;
        p->fn(p->ctx, t, thread);
    }
}

static void *worker(void *arg) {
    worker_arg a = *(worker_arg *)arg;
    free(arg);
    pdq_pool *p = a.p;
    unsigned seen = 0;
    for (;;) {
        unsigned g = 0;
        for (int i = 0; i < SPIN_ITERS; i++) {
            g = atomic_load_explicit(&p->generation, memory_order_acquire);
            if (g != seen) break;
        }
        if (g == seen) {
            pthread_mutex_lock(&p->mu);
            while ((g = atomic_load_explicit(&p->generation, memory_order_acquire)) == seen)
                pthread_cond_wait(&p->wake, &p->mu);
            pthread_mutex_unlock(&p->mu);
        }
        seen = g;
        pthread_mutex_lock(&p->mu);
        int stop = p->stop;
        pthread_mutex_unlock(&p->mu);
        if (stop) return NULL;
        drain(p, a.index);
        if (atomic_fetch_sub_explicit(&p->busy, 1, memory_order_acq_rel) == 1) {
            pthread_mutex_lock(&p->mu);
            pthread_cond_signal(&p->done);
            pthread_mutex_unlock(&p->mu);
        }
    }
}

static void stop_workers(pdq_pool *p, int started) {
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    atomic_fetch_add_explicit(&p->generation, 1, memory_order_release);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < started; i++) pthread_join(p->tid[i], NULL);
}

pdq_pool *pdq_pool_create(int n_threads, pdq_status *st) {
    if (n_threads <= 0) {
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        n_threads = c > 0 ? (int)c : 1;
    }
    if (n_threads > 256) {
        pdq_fail(st, PDQ_ERR_LIMIT, "thread pool: %d threads (limit 256)", n_threads);
        return NULL;
    }
    pdq_pool *p = calloc(1, sizeof *p);
    if (!p) {
        pdq_fail(st, PDQ_ERR_NOMEM, "thread pool: out of memory");
        return NULL;
    }
    p->n = n_threads;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
    if (n_threads > 1) {
        p->tid = calloc((size_t)n_threads - 1, sizeof *p->tid);
        if (!p->tid) {
            pdq_pool_free(p);
            pdq_fail(st, PDQ_ERR_NOMEM, "thread pool: out of memory");
            return NULL;
        }
        for (int i = 0; i < n_threads - 1; i++) {
            worker_arg *a = malloc(sizeof *a);
            if (a) {
                a->p = p;
                a->index = i + 1;
            }
            if (!a || pthread_create(&p->tid[i], NULL, worker, a) != 0) {
                free(a);
                stop_workers(p, i);
                p->n = 1; /* nothing left to join in pdq_pool_free */
                pdq_pool_free(p);
                pdq_fail(st, PDQ_ERR_NOMEM, "thread pool: cannot start thread %d of %d", i + 2, n_threads);
                return NULL;
            }
        }
    }
    return p;
}

void pdq_pool_free(pdq_pool *p) {
    if (!p) return;
    if (p->n > 1 && p->tid) stop_workers(p, p->n - 1);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->done);
    free(p->tid);
    free(p);
}

int pdq_pool_threads(const pdq_pool *p) { return p ? p->n : 1; }

void pdq_pool_run(pdq_pool *p, int n_tasks, pdq_pool_fn fn, void *ctx) {
    if (n_tasks <= 0) return;
    if (!p || p->n == 1 || n_tasks == 1) {
        for (int t = 0; t < n_tasks; t++) fn(ctx, t, 0);
        return;
    }
    p->fn = fn;
    p->ctx = ctx;
    p->n_tasks = n_tasks;
    atomic_store_explicit(&p->next, 0, memory_order_relaxed);
    atomic_store_explicit(&p->busy, p->n - 1, memory_order_relaxed);
    pthread_mutex_lock(&p->mu);
    atomic_fetch_add_explicit(&p->generation, 1, memory_order_release);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    drain(p, 0);
    for (int i = 0; i < SPIN_ITERS && atomic_load_explicit(&p->busy, memory_order_acquire) > 0; i++) {
    }
    pthread_mutex_lock(&p->mu);
    while (atomic_load_explicit(&p->busy, memory_order_acquire) > 0) pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
}
