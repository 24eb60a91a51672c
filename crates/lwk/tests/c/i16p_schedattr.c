/* Issue #16: sched_setattr/sched_getattr (ENOSYS in the LWK) about the calling thread, another
 * thread of the process (by tid) and with bad arguments. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

struct attr {
    uint32_t size, policy;
    uint64_t flags;
    int32_t nice;
    uint32_t priority;
    uint64_t runtime, deadline, period;
    uint32_t util_min, util_max;
};

static long set(pid_t tid, struct attr *a) { return syscall(SYS_sched_setattr, tid, a, 0) ? -errno : 0; }
static long get(pid_t tid, struct attr *a, unsigned size) {
    memset(a, 0, sizeof *a);
    return syscall(SYS_sched_getattr, tid, a, size, 0) ? -errno : 0;
}

static pid_t worker_tid;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static int stage;

static void *worker(void *arg) {
    (void)arg;
    struct attr a = {.size = 48, .policy = SCHED_IDLE};
    long r = set(0, &a);
    pthread_mutex_lock(&m);
    worker_tid = (pid_t)syscall(SYS_gettid);
    printf("thread: set SCHED_IDLE %ld\n", r);
    stage = 1;
    pthread_cond_broadcast(&c);
    while (stage < 2) pthread_cond_wait(&c, &m);
    pthread_mutex_unlock(&m);
    return 0;
}

int main(void) {
    struct attr a;
    long r = get(0, &a, sizeof a);
    printf("get: %ld policy %u nice %d\n", r, a.policy, a.nice);
    struct attr b = {.size = 48, .policy = SCHED_BATCH, .nice = 5};
    printf("set SCHED_BATCH nice 5: %ld\n", set(0, &b));
    r = get(0, &a, sizeof a);
    printf("get: %ld policy %u nice %d; getscheduler %d getpriority %d\n", r, a.policy, a.nice,
           sched_getscheduler(0), getpriority(PRIO_PROCESS, 0));
    r = get(getpid(), &a, sizeof a);
    printf("get by pid: %ld policy %u nice %d\n", r, a.policy, a.nice);
    pthread_t t;
    pthread_create(&t, 0, worker, 0);
    pthread_mutex_lock(&m);
    while (stage < 1) pthread_cond_wait(&c, &m);
    r = get(worker_tid, &a, sizeof a);
    printf("get thread by tid: %ld policy %u\n", r, a.policy);
    r = get(0, &a, sizeof a);
    printf("get self again: %ld policy %u\n", r, a.policy);
    stage = 2;
    pthread_cond_broadcast(&c);
    pthread_mutex_unlock(&m);
    pthread_join(t, 0);
    printf("set bad pointer: %ld\n", set(0, (struct attr *)8));
    printf("set NULL: %ld\n", set(0, 0));
    struct attr small = {.size = 20};
    printf("set size 20: %ld, size now %u\n", set(0, &small), small.size);
    printf("get size 10: %ld\n", get(0, &a, 10));
    printf("get bad pointer: %ld\n", syscall(SYS_sched_getattr, 0, (void *)8, 56, 0) ? -errno : 0L);
    printf("get unknown tid: %ld\n", get(0x3fffff00, &a, sizeof a));
    return 0;
}
