/* Signals with handlers: raise with SA_SIGINFO, blocked then unblocked, a timer interrupting a
 * compute loop, siglongjmp out of a handler, FPU state kept across a handler, SIGPIPE caught,
 * pthread_kill to a computing thread, and (with argument "wait") a signal sent from outside. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

static volatile sig_atomic_t got, code_seen, alarms, worker_hits, outside;
static sigjmp_buf jb;

static void on_usr1(int sig, siginfo_t *si, void *uc) {
    (void)uc;
    got = sig;
    code_seen = si->si_code;
    /* Floating point inside the handler must not disturb the interrupted code. */
    volatile double x = 3.0;
    for (int i = 0; i < 10; i++) x = x * 1.5 - 0.25;
}
static void on_alrm(int sig) { (void)sig; alarms++; }
static void on_term(int sig) { siglongjmp(jb, sig); }
static void on_pipe(int sig) { got = sig; }
static void on_worker(int sig) { (void)sig; worker_hits++; }
static void on_outside(int sig) { outside = sig; }

static void *worker(void *p) {
    (void)p;
    volatile unsigned long spin = 0;
    while (!worker_hits) spin++; /* no system calls: only a kick can interrupt it */
    return NULL;
}

int main(int argc, char **argv) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_usr1;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGUSR1, &sa, NULL);

    volatile double before = 1.0 / 3.0;
    raise(SIGUSR1);
    printf("raise: sig %d code %s fpu %s\n", got, code_seen == SI_TKILL ? "SI_TKILL" : "other",
           before == 1.0 / 3.0 ? "kept" : "lost");

    sigset_t set, old;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    got = 0;
    sigprocmask(SIG_BLOCK, &set, &old);
    kill(getpid(), SIGUSR1);
    int while_blocked = got;
    sigpending(&set);
    int pending = sigismember(&set, SIGUSR1);
    sigprocmask(SIG_SETMASK, &old, NULL);
    printf("blocked: delivered while blocked %d, pending %d, after unblock %d\n", while_blocked != 0, pending,
           got);

    signal(SIGALRM, on_alrm);
    struct itimerval it = {{0, 20000}, {0, 20000}};
    setitimer(ITIMER_REAL, &it, NULL);
    volatile unsigned long n = 0;
    while (alarms < 3) n++; /* compute loop: the timer's signal interrupts it */
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    printf("timer: %d alarms interrupted a compute loop\n", alarms >= 3);

    signal(SIGTERM, on_term);
    int j = sigsetjmp(jb, 1);
    if (j == 0) {
        raise(SIGTERM);
        printf("siglongjmp: not taken\n");
    } else {
        sigset_t now;
        sigprocmask(SIG_BLOCK, NULL, &now);
        printf("siglongjmp: back with %d, SIGTERM blocked after %d\n", j, sigismember(&now, SIGTERM));
    }

    signal(SIGPIPE, on_pipe);
    int fds[2];
    if (pipe(fds) != 0) return 1;
    close(fds[0]);
    got = 0;
    ssize_t w = write(fds[1], "x", 1);
    printf("sigpipe: write %zd %s, handler %d\n", w, w < 0 && errno == EPIPE ? "EPIPE" : "?", got);

    signal(SIGUSR2, on_worker);
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    usleep(20000);
    pthread_kill(t, SIGUSR2);
    pthread_join(t, NULL);
    printf("pthread_kill: worker interrupted %d\n", worker_hits);

    if (argc > 1 && strcmp(argv[1], "wait") == 0) {
        signal(SIGHUP, on_outside);
        printf("ready\n");
        fflush(stdout);
        volatile unsigned long k = 0;
        while (!outside) k++;
        printf("outside: got %d\n", outside);
    }
    return 0;
}
