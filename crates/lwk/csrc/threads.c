/* multios LWK function overrides, threads ("lwk-threads", issue #13; Multiverse §III-D, §IV):
 * pthread_create/pthread_join on LWK-native threads.
 *
 * In the LWK every guest thread is a vCPU that the LWK placed on a CPU of its partition. A new
 * thread through glibc costs a stack mapping and its guard (mmap, mprotect), clone (the LWK
 * creates a vCPU and a host thread for it: KVM_CREATE_VCPU, its registers, tables and MSRs),
 * set_robust_list, rseq, and at its end exit, futex wakes and the stack's munmap. Here a thread
 * is made once (through glibc, so its stack, TLS and thread descriptor are glibc's own) and kept:
 * when its function returns it parks on its vCPU, and the next pthread_create hands it the new
 * function — a store and, if it had gone to sleep, one futex wake. The LWK's vCPU ids are not
 * reused, so this also lets a program that makes threads all its life run past the LWK's 128.
 *
 * The handle returned is the worker's real pthread_t, so pthread_self(), pthread_equal,
 * pthread_kill, pthread_setname_np and the like agree with it. pthread_join/detach/tryjoin/
 * timedjoin/clockjoin and pthread_exit know the pool; other handles go to glibc. Differences
 * from fresh threads (the interface semantics Multiverse leaves to the override's author): a
 * job starts with its creator's signal mask and floating-point control state (MXCSR, x87 control
 * word and flags), but with the thread-local variables its worker's
 * previous job left, and thread-specific-data destructors run only when a worker really exits
 * (pthread_exit); gettid() repeats across jobs. Attributes with a caller-provided stack go to
 * glibc; a worker is reused only for jobs that fit its stack size. After fork() the child has no
 * workers (they are the parent's threads): its pool starts empty. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "lwk_syscall.h"
#include "overrides.h"

LWK_SYSCALL(sys_futex, 202)
LWK_SYSCALL(sys_mmap, 9)

/* How long a parked worker or a joiner spins before sleeping in futex (≈ 50 µs), when the
 * process has more than one CPU (on one CPU a spinning thread only delays the one it waits for). */
#define SPINS 2000
static int spins;
#define MAX_WORKERS 4096

enum { W_IDLE, W_RUN, W_DONE };

struct worker {
    int state; /* futex word */
    int detached;
    int has_thread; /* a real thread runs its loop (false after pthread_exit or fork) */
    pthread_t self;
    size_t stacksize;
    void *(*fn)(void *);
    void *arg;
    void *ret;
    sigset_t mask;
    /* The creator's floating-point control state, which clone gives a new thread: MXCSR, the x87
     * control word and exception flags. A job ran with whatever its worker's previous job left
     * (its rounding mode, FTZ, unmasked traps): `issue_13_pooled_threads_start_with_the_creators_floating_point_state`. */
    unsigned mxcsr;
    unsigned short fcw, fsw;
    struct worker *next;
};

static void fp_save(struct worker *w) {
    __asm__ volatile("stmxcsr %0" : "=m"(w->mxcsr));
    __asm__ volatile("fnstcw %0" : "=m"(w->fcw));
    __asm__ volatile("fnstsw %0" : "=m"(w->fsw));
}

/* Loads w's saved state; the x87 register stack is empty at a call boundary (tag 0xffff). */
static void fp_load(const struct worker *w) {
    unsigned env[7] = {w->fcw, w->fsw & 0x7fu, 0xffff, 0, 0, 0, 0};
    __asm__ volatile("fldenv %0" : : "m"(env));
    __asm__ volatile("ldmxcsr %0" : : "m"(w->mxcsr));
}

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
static create_fn real_create;
static int (*real_join)(pthread_t, void **);
static int (*real_detach)(pthread_t);
static int (*real_tryjoin)(pthread_t, void **);
static int (*real_timedjoin)(pthread_t, void **, const struct timespec *);
static int (*real_clockjoin)(pthread_t, void **, clockid_t, const struct timespec *);
typedef void (*exit_fn)(void *) __attribute__((noreturn));
static exit_fn real_exit;

static int on;
static struct worker *workers; /* MAX_WORKERS slots, mapped at start-up */
static int nworkers;
static struct worker *free_list;
static pthread_mutex_t pool = PTHREAD_MUTEX_INITIALIZER;
static __thread struct worker *current;

static void wake(int *word) { sys_futex((long)word, FUTEX_WAKE_PRIVATE, INT_MAX, 0, 0, 0); }

/* Waits while *word == value (spinning first), until `deadline` (CLOCK_MONOTONIC ns, 0: none);
 * false at the deadline. */
static int wait_while(int *word, int value, clockid_t clock, long long deadline) {
    for (int i = 0; i < spins; i++) {
        if (__atomic_load_n(word, __ATOMIC_ACQUIRE) != value) return 1;
        __builtin_ia32_pause();
    }
    while (__atomic_load_n(word, __ATOMIC_ACQUIRE) == value) {
        struct timespec rel, *timeout = NULL;
        if (deadline) {
            struct timespec now;
            clock_gettime(clock, &now);
            long long left = deadline - (now.tv_sec * 1000000000LL + now.tv_nsec);
            if (left <= 0) return 0;
            rel.tv_sec = left / 1000000000LL;
            rel.tv_nsec = left % 1000000000LL;
            timeout = &rel;
        }
        sys_futex((long)word, FUTEX_WAIT_PRIVATE, value, (long)timeout, 0, 0);
    }
    return 1;
}

static void release(struct worker *w);

/* The job's end when its thread really ends inside it: pthread_exit (ret) or a cancellation
 * (PTHREAD_CANCELED) — the job is done, joinable, and the slot takes a new thread next time. */
static void thread_ends(struct worker *w, void *ret) {
    pthread_mutex_lock(&pool);
    w->ret = ret;
    w->has_thread = 0;
    current = NULL;
    if (w->detached)
        release(w);
    else
        __atomic_store_n(&w->state, W_DONE, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&pool);
    wake(&w->state);
}

/* A cleanup handler around the job: glibc runs it when the job is cancelled (pthread_cancel)
 * and when it calls pthread_exit, which has already ended the job (current is then NULL). */
static void job_unwound(void *p) {
    if (current == p) thread_ends(p, PTHREAD_CANCELED);
}

static void *worker_main(void *p) {
    struct worker *w = p;
    current = w;
    for (;;) {
        int s;
        while ((s = __atomic_load_n(&w->state, __ATOMIC_ACQUIRE)) != W_RUN) wait_while(&w->state, s, 0, 0);
        /* A job starts as a fresh thread would: cancellable, deferred. */
        pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
        pthread_setcanceltype(PTHREAD_CANCEL_DEFERRED, NULL);
        pthread_sigmask(SIG_SETMASK, &w->mask, NULL);
        fp_load(w);
        void *ret;
        pthread_cleanup_push(job_unwound, w);
        ret = w->fn(w->arg);
        pthread_cleanup_pop(0);
        if (!w->has_thread) real_exit(ret); /* it forked and is now a child's only thread */
        pthread_mutex_lock(&pool);
        w->ret = ret;
        if (w->detached) {
            w->next = free_list;
            free_list = w;
            __atomic_store_n(&w->state, W_IDLE, __ATOMIC_RELEASE);
        } else {
            __atomic_store_n(&w->state, W_DONE, __ATOMIC_RELEASE);
        }
        pthread_mutex_unlock(&pool);
        wake(&w->state);
    }
    return NULL;
}

static struct worker *find(pthread_t t) {
    int n = __atomic_load_n(&nworkers, __ATOMIC_ACQUIRE);
    for (int i = 0; i < n; i++)
        if (workers[i].self == t && workers[i].fn) return &workers[i];
    return NULL;
}

/* Gives back a joined (or detached and finished) worker (pool lock held). */
static void release(struct worker *w) {
    w->next = free_list;
    free_list = w;
    __atomic_store_n(&w->state, W_IDLE, __ATOMIC_RELEASE);
    if (!w->has_thread) w->fn = NULL; /* its handle is no longer a pool handle */
}

int pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg) {
    if (!on || !workers) return real_create(t, attr, fn, arg);
    size_t stacksize = 0;
    int detached = 0;
    if (attr) {
        void *stack = NULL;
        size_t size = 0;
        if (pthread_attr_getstack(attr, &stack, &size) == 0 && stack) return real_create(t, attr, fn, arg);
        pthread_attr_getstacksize(attr, &stacksize);
        pthread_attr_getdetachstate(attr, &detached);
        detached = detached == PTHREAD_CREATE_DETACHED;
    }
    if (!stacksize) {
        pthread_attr_t d;
        pthread_getattr_default_np(&d);
        pthread_attr_getstacksize(&d, &stacksize);
        pthread_attr_destroy(&d);
    }
    pthread_mutex_lock(&pool);
    struct worker **p = &free_list, *w = NULL;
    for (; *p; p = &(*p)->next)
        if ((*p)->stacksize >= stacksize) {
            w = *p;
            *p = w->next;
            break;
        }
    if (!w && nworkers < MAX_WORKERS) {
        w = &workers[nworkers];
        memset(w, 0, sizeof *w);
        __atomic_store_n(&nworkers, nworkers + 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&pool);
    if (!w) return real_create(t, attr, fn, arg);
    pthread_sigmask(SIG_SETMASK, NULL, &w->mask);
    fp_save(w);
    w->arg = arg;
    w->detached = detached;
    w->ret = NULL;
    __atomic_store_n(&w->fn, fn, __ATOMIC_RELEASE);
    if (w->has_thread) {
        __atomic_store_n(&w->state, W_RUN, __ATOMIC_RELEASE);
        wake(&w->state);
        *t = w->self;
        return 0;
    }
    /* A new worker: a real thread, detached for glibc (the pool joins its jobs, not it). */
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, stacksize);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    w->stacksize = stacksize;
    w->state = W_RUN;
    w->has_thread = 1;
    int r = real_create(&w->self, &a, worker_main, w);
    pthread_attr_destroy(&a);
    if (r) {
        pthread_mutex_lock(&pool);
        w->has_thread = 0;
        release(w);
        pthread_mutex_unlock(&pool);
        return r;
    }
    *t = w->self;
    return 0;
}

/* Joins pool worker `w` when its job is done; `clock`/`deadline` as in wait_while; `try`: do
 * not wait. */
static int join(struct worker *w, void **ret, int try, clockid_t clock, long long deadline) {
    if (w == current) return EDEADLK;
    if (w->detached) return EINVAL;
    for (;;) {
        int s = __atomic_load_n(&w->state, __ATOMIC_ACQUIRE);
        if (s == W_DONE) break;
        if (s != W_RUN) return ESRCH;
        if (try) return EBUSY;
        if (!wait_while(&w->state, W_RUN, clock, deadline)) return ETIMEDOUT;
    }
    pthread_mutex_lock(&pool);
    if (ret) *ret = w->ret;
    release(w);
    pthread_mutex_unlock(&pool);
    return 0;
}

int pthread_join(pthread_t t, void **ret) {
    struct worker *w = on ? find(t) : NULL;
    return w ? join(w, ret, 0, 0, 0) : real_join(t, ret);
}

int pthread_tryjoin_np(pthread_t t, void **ret) {
    struct worker *w = on ? find(t) : NULL;
    return w ? join(w, ret, 1, 0, 0) : real_tryjoin(t, ret);
}

static long long ns_of(const struct timespec *ts) { return ts->tv_sec * 1000000000LL + ts->tv_nsec; }

int pthread_clockjoin_np(pthread_t t, void **ret, clockid_t clock, const struct timespec *abstime) {
    struct worker *w = on ? find(t) : NULL;
    if (!w) return real_clockjoin(t, ret, clock, abstime);
    if (abstime && (abstime->tv_nsec < 0 || abstime->tv_nsec >= 1000000000L)) return EINVAL;
    return join(w, ret, 0, clock, abstime ? (ns_of(abstime) > 0 ? ns_of(abstime) : 1) : 0);
}

int pthread_timedjoin_np(pthread_t t, void **ret, const struct timespec *abstime) {
    struct worker *w = on ? find(t) : NULL;
    if (!w) return real_timedjoin(t, ret, abstime);
    return pthread_clockjoin_np(t, ret, CLOCK_REALTIME, abstime);
}

int pthread_detach(pthread_t t) {
    struct worker *w = on ? find(t) : NULL;
    if (!w) return real_detach(t);
    pthread_mutex_lock(&pool);
    int r = 0;
    if (w->detached)
        r = EINVAL;
    else if (__atomic_load_n(&w->state, __ATOMIC_ACQUIRE) == W_DONE)
        release(w);
    else
        w->detached = 1;
    pthread_mutex_unlock(&pool);
    return r;
}

void pthread_exit(void *ret) {
    struct worker *w = on ? current : NULL;
    /* The worker really ends (glibc runs the cleanup handlers and TSD destructors): its job is
     * done with `ret`, its slot takes a new thread next time. */
    if (w) thread_ends(w, ret);
    real_exit(ret);
}

/* In a forked child only the forking thread exists: no worker has a thread. */
static void forked(void) {
    pthread_mutex_init(&pool, NULL);
    free_list = NULL;
    for (int i = 0; i < nworkers; i++) {
        struct worker *w = &workers[i];
        w->has_thread = 0;
        if (w == current) continue; /* its job ends the child's thread (worker_main) */
        w->fn = NULL;
        w->next = free_list;
        free_list = w;
        w->state = W_IDLE;
    }
}

static void before_fork(void) { pthread_mutex_lock(&pool); }
static void parent_after_fork(void) { pthread_mutex_unlock(&pool); }

void multios_threads_init(const char *list) {
    real_create = (create_fn)multios_next("pthread_create");
    real_join = (int (*)(pthread_t, void **))multios_next("pthread_join");
    real_detach = (int (*)(pthread_t))multios_next("pthread_detach");
    real_tryjoin = (int (*)(pthread_t, void **))multios_next("pthread_tryjoin_np");
    real_timedjoin = (int (*)(pthread_t, void **, const struct timespec *))multios_next("pthread_timedjoin_np");
    real_clockjoin =
        (int (*)(pthread_t, void **, clockid_t, const struct timespec *))multios_next("pthread_clockjoin_np");
    real_exit = (exit_fn)multios_next("pthread_exit");
    if (!(multios_listed(list, "pthread_create") || multios_listed(list, "pthread_join"))) return;
    long m = sys_mmap(0, MAX_WORKERS * sizeof(struct worker), PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m < 0 && m > -4096) return;
    workers = (struct worker *)m;
    cpu_set_t cpus;
    spins = sched_getaffinity(0, sizeof cpus, &cpus) == 0 && CPU_COUNT(&cpus) > 1 ? SPINS : 0;
    pthread_atfork(before_fork, parent_after_fork, forked);
    on = 1;
}
