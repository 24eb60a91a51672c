/* Split execution beyond one caller (issue #13): the library dlopen'ed, many Linux threads sharing
 * one vCPU, a forwarded call that blocks until another thread acts, and signals arriving while a
 * function runs. Prints "ok - ..." / "not ok - ..."; the exit status counts failures. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>
#include <multios/hrt.h>

static int failures;
#define CHECK(cond, ...) do { int c_ = (cond); printf("%s - ", c_ ? "ok" : "not ok"); printf(__VA_ARGS__); printf("\n"); fflush(stdout); if (!c_) failures++; } while (0)

static int (*p_init)(const struct hrt_config *);
static int (*p_call)(hrt_func_t, void *, long *);
static int (*p_invoke)(hrt_func_t, void *, hrt_thread_t *);
static int (*p_join)(hrt_thread_t, long *);
static int (*p_fini)(void);

static long add(void *arg) { return (long)arg + 1; }

static atomic_long shared_counter;
static long bump(void *arg) { (void)arg; return atomic_fetch_add(&shared_counter, 1) + 1; }

#define THREADS 4
#define CALLS 100
static void *caller(void *arg) {
    long bad = 0, ret;
    for (int i = 0; i < CALLS; i++)
        if (p_call(bump, NULL, &ret) != 0 || ret <= 0) bad++;
    *(long *)arg = bad;
    return NULL;
}

static int pipefd[2];
static long blocking_read(void *arg) {
    (void)arg;
    char buf[16] = {0};
    long n = read(pipefd[0], buf, sizeof buf);
    return n == 5 && memcmp(buf, "hello", 5) == 0 ? n : -1;
}

static atomic_int ticks;
static void on_alarm(int sig) { (void)sig; atomic_fetch_add(&ticks, 1); }
static long busy(void *arg) {
    volatile double x = 0;
    long n = (long)arg;
    for (long i = 0; i < n; i++) x += i * 0.5;
    return x > 0 ? n : -1;
}

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: more /path/to/libmultios_hrt.so\n"); return 100; }
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h) { fprintf(stderr, "dlopen: %s\n", dlerror()); return 101; }
    p_init = dlsym(h, "hrt_init"); p_call = dlsym(h, "hrt_call"); p_invoke = dlsym(h, "hrt_invoke_func");
    p_join = dlsym(h, "hrt_join"); p_fini = dlsym(h, "hrt_fini");
    CHECK(p_init && p_call && p_invoke && p_join && p_fini, "dlsym finds the API");
    struct hrt_config cfg = { .max_vcpus = 1, .first_cpu = -1 };
    CHECK(p_init(&cfg) == 0, "hrt_init through dlopen");
    long ret = 0;
    CHECK(p_call(add, (void *)41, &ret) == 0 && ret == 42, "hrt_call through dlopen");

    /* Four Linux threads share one vCPU: calls wait their turn, none is lost. */
    pthread_t t[THREADS];
    long bad[THREADS];
    for (int i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, caller, &bad[i]);
    long allbad = 0;
    for (int i = 0; i < THREADS; i++) { pthread_join(t[i], NULL); allbad += bad[i]; }
    CHECK(allbad == 0 && atomic_load(&shared_counter) == THREADS * CALLS,
          "%d threads x %d calls on one vCPU (%ld counted, %ld failed)", THREADS, CALLS, atomic_load(&shared_counter), allbad);

    /* A forwarded read that blocks until another thread writes. */
    if (pipe(pipefd) != 0) return 102;
    hrt_thread_t r;
    CHECK(p_invoke(blocking_read, NULL, &r) == 0, "invoke a function that blocks in read()");
    usleep(100000);
    if (write(pipefd[1], "hello", 5) != 5) return 103;
    long jr = 0;
    CHECK(p_join(r, &jr) == 0 && jr == 5, "the blocked read returns what the main thread wrote (%ld)", jr);

    /* Signals while a function runs: the handler runs on the Linux side, the function goes on. */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval it = { { 0, 2000 }, { 0, 2000 } };
    setitimer(ITIMER_REAL, &it, NULL);
    long n = 300000000;
    int rc = p_call(busy, (void *)n, &ret);
    struct itimerval off = { { 0, 0 }, { 0, 0 } };
    setitimer(ITIMER_REAL, &off, NULL);
    CHECK(rc == 0 && ret == n && atomic_load(&ticks) > 0, "a 2 ms timer's signals while a function runs (%d delivered, rc=%d)", atomic_load(&ticks), rc);

    CHECK(p_fini() == 0, "hrt_fini");
    CHECK(p_init(&cfg) == 0 && p_call(add, (void *)1, &ret) == 0 && ret == 2, "hrt_init again after hrt_fini");
    CHECK(p_fini() == 0, "hrt_fini again");
    printf("%d failures\n", failures);
    return failures;
}
