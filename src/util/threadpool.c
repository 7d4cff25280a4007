/* Worker pool: a generation counter wakes the workers for each run (through a mutex and a
 * condition variable only for a worker that went to sleep); tasks are
 * claimed from one atomic word holding the run's generation and the next task index, and the
 * caller waits for the run's tasks to be done, not for every worker to check in. A worker that
 * wakes late (preempted on a loaded machine, or still asleep) then costs nothing: it finds the
 * run closed, instead of holding the caller for a scheduler time slice (measured on a loaded
 * 2-core machine before: the caller waited 21 % of a 2-thread decode). Workers spin briefly
 * before sleeping, since decode issues a few hundred short runs per token and a
 * condition-variable wake-up costs tens of microseconds. */
#include "pdq/threadpool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

/* About 0.3 ms of polling: the integer executor's decode has serial stretches of that order
 * between its parallel FCs (element-wise ops, data moves), and a worker that slept through one
 * cost a futex wake per FC (Circle integer decode on the 1.1B shape, 2 threads: 13.2-13.8 ->
 * 14.9-15.8 tok/s against 20000 iterations; the weight-only path unchanged). */
#define SPIN_ITERS 200000
#define CLOSED 0xFFFFFFFFu /* task index of a run being set up: no task can be claimed */

struct pdq_pool {
    int n;                    /* workers counting the caller */
    pthread_t *tid;           /* [n - 1] */
    pthread_mutex_t mu;
    pthread_cond_t wake, done;
    atomic_uint generation;   /* bumped once per run (and once to stop) */
    atomic_int stop;
    /* who is asleep on a condition variable: the mutex and a wake-up are paid only then (each
     * side publishes its count, then re-checks the word the other side changes; seq_cst on both
     * words, so one of the two sees the other) */
    atomic_int sleeping;      /* workers in wait(wake) */
    atomic_int caller_asleep; /* the caller in wait(done) */
    /* the current run: written while `claim` is CLOSED, read by whoever claims a task of it */
    _Atomic(pdq_pool_fn) fn;
    _Atomic(void *) ctx;
    atomic_uint n_tasks;
    atomic_uint_least64_t claim; /* generation << 32 | next task index */
    atomic_uint finished;     /* tasks of the current run done */
};

typedef struct {
    pdq_pool *p;
    int index;
} worker_arg;

/* Claims and runs tasks of run `gen` until none is left; a claim succeeds only while the run is
 * open and the word still names it, so a late worker never runs a task of another run. */
static void drain(pdq_pool *p, unsigned gen, int thread) {
    for (;;) {
        uint64_t c = atomic_load_explicit(&p->claim, memory_order_acquire);
        unsigned idx = (unsigned)c;
        if ((unsigned)(c >> 32) != gen || idx == CLOSED) return;
        unsigned n = atomic_load_explicit(&p->n_tasks, memory_order_acquire);
        if (idx >= n) return;
        if (!atomic_compare_exchange_weak_explicit(&p->claim, &c, c + 1, memory_order_acq_rel, memory_order_relaxed))
            continue;
        /* the task is claimed: the run stays current (its caller waits for it), so fn and ctx are its */
        pdq_pool_fn fn = atomic_load_explicit(&p->fn, memory_order_relaxed);
        fn(atomic_load_explicit(&p->ctx, memory_order_relaxed), (int)idx, thread);
        if (atomic_fetch_add(&p->finished, 1) + 1 == n && atomic_load(&p->caller_asleep)) {
            pthread_mutex_lock(&p->mu);
            pthread_cond_signal(&p->done);
            pthread_mutex_unlock(&p->mu);
        }
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
            atomic_fetch_add(&p->sleeping, 1);
            while ((g = atomic_load(&p->generation)) == seen) pthread_cond_wait(&p->wake, &p->mu);
            atomic_fetch_sub(&p->sleeping, 1);
            pthread_mutex_unlock(&p->mu);
        }
        seen = g;
        if (atomic_load(&p->stop)) return NULL;
        drain(p, g, a.index);
    }
}

static void stop_workers(pdq_pool *p, int started) {
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->stop, 1);
    atomic_fetch_add(&p->generation, 1);
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
    unsigned gen = atomic_load_explicit(&p->generation, memory_order_relaxed) + 1;
    /* close the claim word first: a worker still looking at the previous run must not claim an
     * index of this one before its parameters are in place */
    atomic_store_explicit(&p->claim, (uint64_t)gen << 32 | CLOSED, memory_order_seq_cst);
    atomic_store_explicit(&p->fn, fn, memory_order_relaxed);
    atomic_store_explicit(&p->ctx, ctx, memory_order_relaxed);
    /* release: a worker that reads the new count (acquire, in drain) then sees the claim closed */
    atomic_store_explicit(&p->n_tasks, (unsigned)n_tasks, memory_order_release);
    atomic_store_explicit(&p->finished, 0, memory_order_relaxed);
    atomic_store_explicit(&p->claim, (uint64_t)gen << 32, memory_order_release);
    atomic_store(&p->generation, gen);
    if (atomic_load(&p->sleeping)) {
        pthread_mutex_lock(&p->mu);
        pthread_cond_broadcast(&p->wake);
        pthread_mutex_unlock(&p->mu);
    }
    drain(p, gen, 0);
    unsigned n = (unsigned)n_tasks;
    for (int i = 0; i < SPIN_ITERS && atomic_load_explicit(&p->finished, memory_order_acquire) < n; i++) {
    }
    if (atomic_load_explicit(&p->finished, memory_order_acquire) >= n) return;
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->caller_asleep, 1);
    while (atomic_load(&p->finished) < n) pthread_cond_wait(&p->done, &p->mu);
    atomic_store(&p->caller_asleep, 0);
    pthread_mutex_unlock(&p->mu);
}
