/* Issue #16: a thread's own CPU clock, getrusage(RUSAGE_THREAD) and a timer on the thread's CPU
 * clock, read by a thread that computed ≈ 0.2 s, right after a system call that woke the proxy.
 * Prints "ok" lines natively; in the LWK the proxy answered with its own thread's numbers. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;
static volatile sig_atomic_t fired;
static volatile int burnt, read_done;

static double now(clockid_t c) {
    struct timespec t;
    clock_gettime(c, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void burn(double s) {
    double t0 = now(CLOCK_THREAD_CPUTIME_ID);
    while (now(CLOCK_MONOTONIC) < 0) /* never: keeps the loop's reads honest */
        ;
    double start = now(CLOCK_MONOTONIC);
    while (now(CLOCK_MONOTONIC) - start < s)
        for (int i = 0; i < 100000; i++)
            sink += i;
    (void)t0;
}

static void on_alarm(int s) {
    (void)s;
    fired = 1;
}

static double thread_usage(void) {
    struct rusage ru;
    getrusage(RUSAGE_THREAD, &ru);
    return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

static void *worker(void *a) {
    (void)a;
    burn(0.25);
    burnt = 1;
    while (!read_done)
        usleep(1000);
    /* Read with the proxy parked (no call for 0.25 s), then again after a call woke it: a thread's
     * own clock and usage never go backwards. */
    double c0 = now(CLOCK_THREAD_CPUTIME_ID), u0 = thread_usage();
    for (int k = 0; k < 3; k++) /* delegated calls: the proxy is awake for the next ones */
        close(open("/dev/null", O_RDONLY));
    double c1 = now(CLOCK_THREAD_CPUTIME_ID), u1 = thread_usage();
    printf("thread clock: %s\n", c0 > 0 && c1 >= c0 ? "ok" : "went backwards");
    printf("RUSAGE_THREAD: %s\n", u1 + 0.0105 >= u0 ? "ok" : "went backwards");
    /* A timer on this thread's CPU clock fires after 0.1 s of its compute. */
    signal(SIGALRM, on_alarm);
    timer_t t;
    struct sigevent ev = {.sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGALRM};
    if (timer_create(CLOCK_THREAD_CPUTIME_ID, &ev, &t) != 0) {
        printf("thread CPU timer: timer_create failed\n");
        return NULL;
    }
    struct itimerspec its = {.it_value = {0, 100000000}};
    timer_settime(t, 0, &its, NULL);
    double start = now(CLOCK_MONOTONIC);
    while (!fired && now(CLOCK_MONOTONIC) - start < 3.0)
        for (int i = 0; i < 100000; i++)
            sink += i;
    printf("thread CPU timer: %s\n", fired ? "fired" : "did not fire in 3 s");
    return NULL;
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    pthread_t w;
    pthread_create(&w, NULL, worker, NULL);
    while (!burnt)
        usleep(1000);
    /* Another thread's CPU clock (the clock id carries its tid). */
    clockid_t c;
    struct timespec ts;
    int e = pthread_getcpuclockid(w, &c);
    int r = e ? -1 : clock_gettime(c, &ts);
    printf("another thread's clock: %s\n", r == 0 && ts.tv_sec + ts.tv_nsec / 1e9 > 0 ? "ok" : "refused");
    read_done = 1;
    pthread_join(w, NULL);
    return 0;
}
