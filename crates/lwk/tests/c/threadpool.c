/* Issue #13: pthread semantics a program sees, for the lwk-threads override (LWK-native threads
 * kept in a pool) against glibc's threads: return values through join, pthread_self equal to the
 * handle, joins in any order, detached threads, pthread_exit, tryjoin/timedjoin, thread-local
 * storage, the creator's signal mask, and 300 threads over the process's life (more than the
 * LWK's 128 vCPU ids). The output is the same natively and in the LWK, with or without it. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static __thread long tls_counter;
static int detached_done;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;

static void *twice(void *arg) {
    tls_counter += (long)arg;
    return (void *)(2 * (intptr_t)arg);
}

static void *self_check(void *arg) {
    pthread_t *handle = arg;
    /* The creator stored the handle before the thread may look: wait for it. */
    while (!__atomic_load_n((long *)handle, __ATOMIC_ACQUIRE)) sched_yield();
    return (void *)(intptr_t)pthread_equal(pthread_self(), *handle);
}

static void *detached(void *arg) {
    (void)arg;
    pthread_mutex_lock(&m);
    detached_done++;
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&m);
    return NULL;
}

static void *exits(void *arg) {
    pthread_exit((void *)((intptr_t)arg + 1000));
    return NULL;
}

static void *slow(void *arg) {
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
    return arg;
}

static void *mask_of(void *arg) {
    (void)arg;
    sigset_t s;
    pthread_sigmask(SIG_SETMASK, NULL, &s);
    return (void *)(intptr_t)sigismember(&s, SIGUSR1);
}

int main(void) {
    long sum = 0;
    for (long i = 0; i < 300; i++) {
        pthread_t t;
        void *r;
        if (pthread_create(&t, NULL, twice, (void *)i) || pthread_join(t, &r)) {
            printf("create/join %ld failed\n", i);
            return 1;
        }
        sum += (intptr_t)r;
    }
    printf("300 sequential threads: sum of returns %ld\n", sum);

    pthread_t ts[8];
    for (long i = 0; i < 8; i++) pthread_create(&ts[i], NULL, twice, (void *)(i + 1));
    long par = 0;
    for (int i = 7; i >= 0; i--) {
        void *r;
        pthread_join(ts[i], &r);
        par += (intptr_t)r;
    }
    printf("8 at once, joined in reverse: %ld\n", par);

    static pthread_t handle;
    pthread_t t;
    pthread_create(&t, NULL, self_check, &handle);
    __atomic_store_n((long *)&handle, (long)t, __ATOMIC_RELEASE);
    void *eq;
    pthread_join(t, &eq);
    printf("pthread_self() equals the handle: %s\n", eq ? "yes" : "no");

    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    for (int i = 0; i < 20; i++) pthread_create(&t, &a, detached, NULL);
    for (int i = 0; i < 20; i++) {
        pthread_create(&t, NULL, detached, NULL);
        pthread_detach(t);
    }
    pthread_mutex_lock(&m);
    while (detached_done < 40) pthread_cond_wait(&cv, &m);
    pthread_mutex_unlock(&m);
    printf("40 detached threads ran\n");

    void *r;
    pthread_create(&t, NULL, exits, (void *)7);
    pthread_join(t, &r);
    printf("pthread_exit value: %ld\n", (long)(intptr_t)r);

    pthread_create(&t, NULL, slow, (void *)5);
    int busy = pthread_tryjoin_np(t, &r);
    struct timespec when;
    clock_gettime(CLOCK_REALTIME, &when);
    when.tv_sec += 10;
    int timed = pthread_timedjoin_np(t, &r, &when);
    printf("tryjoin while running: %s; timedjoin: %d, value %ld\n", busy == EBUSY ? "EBUSY" : strerror(busy),
           timed, (long)(intptr_t)r);

    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &block, &old);
    pthread_create(&t, NULL, mask_of, NULL);
    pthread_join(t, &r);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    void *r2;
    pthread_create(&t, NULL, mask_of, NULL);
    pthread_join(t, &r2);
    printf("creator's mask: blocked %ld, then unblocked %ld\n", (long)(intptr_t)r, (long)(intptr_t)r2);
    printf("main thread's tls_counter %ld\n", tls_counter);
    return 0;
}
