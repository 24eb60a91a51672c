/* Issue #14: POSIX timers that fire faster than the program takes their signals (stress-ng's
 * timer stressor runs one at 100 kHz). Linux keeps at most one signal pending per timer and
 * counts the expiries it merged as si_overrun; the program must keep running, take its signals
 * and end. The output must be the same natively and in the LWK (no counts that depend on timing
 * are printed, only whether they are zero). */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t handled;
static volatile long overruns;
static volatile int last_value;
static volatile long first_overrun = -1;

static void on_timer(int sig, siginfo_t *si, void *uc) {
    (void)sig;
    (void)uc;
    if (handled == 0)
        first_overrun = si->si_overrun;
    handled++;
    overruns += si->si_overrun;
    last_value = si->si_value.sival_int;
}

static timer_t start(int sig, int value, long interval_ns) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_timer;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, NULL);
    struct sigevent ev;
    memset(&ev, 0, sizeof ev);
    ev.sigev_notify = SIGEV_SIGNAL;
    ev.sigev_signo = sig;
    ev.sigev_value.sival_int = value;
    timer_t tm;
    if (timer_create(CLOCK_MONOTONIC, &ev, &tm) != 0) {
        printf("timer_create: %s\n", strerror(errno));
        _exit(1);
    }
    struct itimerspec its = {{0, interval_ns}, {0, interval_ns}};
    timer_settime(tm, 0, &its, NULL);
    return tm;
}

static void block(int sig, int how) {
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, sig);
    sigprocmask(how, &s, NULL);
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    int sig = SIGRTMIN + 2;

    /* 1. A 10 µs timer while the program waits in sigsuspend: it takes 300 of them. */
    handled = 0;
    timer_t tm = start(sig, 5, 10 * 1000);
    sigset_t none;
    sigemptyset(&none);
    while (handled < 300)
        sigsuspend(&none);
    timer_delete(tm);
    printf("sigsuspend: took %d signals with value %d\n", handled >= 300 ? 300 : -1, last_value);

    /* 2. The same timer while the program makes system calls and computes: it still ends. */
    handled = 0;
    tm = start(sig, 6, 10 * 1000);
    FILE *null = fopen("/dev/null", "w");
    volatile unsigned long x = 0;
    for (int k = 0; k < 5000; k++) {
        if (null)
            fputc('x', null), fflush(null);
        for (int j = 0; j < 1000; j++)
            x += j;
    }
    while (handled < 10)
        for (int j = 0; j < 100000; j++)
            x += j;
    timer_delete(tm);
    if (null)
        fclose(null);
    printf("busy: signals taken: %s, value %d\n", handled >= 10 ? "yes" : "no", last_value);

    /* 3. Blocked while thousands of expiries happen: one signal is pending; the first one taken
     * after the unblock counts the merged expiries as its overrun. */
    handled = 0;
    first_overrun = -1;
    block(sig, SIG_BLOCK);
    tm = start(sig, 7, 10 * 1000);
    struct timespec wait = {0, 100 * 1000 * 1000};
    while (nanosleep(&wait, &wait) != 0 && errno == EINTR) {
    }
    sigset_t p;
    sigpending(&p);
    int pending = sigismember(&p, sig);
    block(sig, SIG_UNBLOCK);
    while (handled < 1)
        sigsuspend(&none);
    timer_delete(tm);
    printf("blocked: pending %d, first signal's overrun %s, value %d\n", pending,
           first_overrun > 0 ? "> 0" : "0", last_value);

    /* 4. A 20 ms timer interrupting a loop without system calls: 10 signals. */
    handled = 0;
    tm = start(sig, 8, 20 * 1000 * 1000);
    while (handled < 10)
        x++;
    timer_delete(tm);
    printf("compute loop: %s\n", handled >= 10 ? "10 signals" : "?");
    printf("done\n");
    return 0;
}
