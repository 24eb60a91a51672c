/* Issue #14: real-time signals queue with their si_value, standard signals coalesce, timers
 * signal with their value (SIGEV_SIGNAL, SIGEV_THREAD_ID, SIGEV_THREAD), and a blocking call is
 * interrupted (EINTR) or restarted (SA_RESTART) whichever thread serves it. The output must be the
 * same natively and in the LWK. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAXREC 64
static volatile sig_atomic_t nrec;
static int rec_sig[MAXREC], rec_code[MAXREC], rec_val[MAXREC];

static void record(int sig, siginfo_t *si, void *uc) {
    (void)uc;
    if (nrec < MAXREC) {
        rec_sig[nrec] = sig;
        rec_code[nrec] = si->si_code;
        rec_val[nrec] = si->si_value.sival_int;
        nrec++;
    }
}

static const char *code_name(int c) {
    switch (c) {
    case SI_USER: return "SI_USER";
    case SI_QUEUE: return "SI_QUEUE";
    case SI_TIMER: return "SI_TIMER";
    case SI_TKILL: return "SI_TKILL";
    default: return "other";
    }
}

static void print_records(const char *what) {
    printf("%s:", what);
    for (int k = 0; k < nrec; k++) {
        if (rec_sig[k] >= SIGRTMIN)
            printf(" RTMIN+%d", rec_sig[k] - SIGRTMIN);
        else
            printf(" %d", rec_sig[k]);
        printf("/%s", code_name(rec_code[k]));
        if (rec_code[k] == SI_QUEUE || rec_code[k] == SI_TIMER)
            printf("=%d", rec_val[k]);
    }
    printf("\n");
    nrec = 0;
}

static void handle(int sig, int flags) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = record;
    sa.sa_flags = SA_SIGINFO | flags;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, NULL);
}

static void block(int sig, int how) {
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, sig);
    sigprocmask(how, &s, NULL);
}

static void queue_to_self(int sig, int v) {
    union sigval val = {.sival_int = v};
    if (sigqueue(getpid(), sig, val) != 0)
        printf("sigqueue: %s\n", strerror(errno));
}

/* 1. Several instances of two RT signals and two of a standard one while all are blocked:
 * delivered lowest signal first, each RT instance in order with its value, SIGUSR1 once. */
static void queued_in_order(void) {
    int a = SIGRTMIN + 1, b = SIGRTMIN + 3;
    handle(a, 0);
    handle(b, 0);
    handle(SIGUSR1, 0);
    sigset_t s, old;
    sigemptyset(&s);
    sigaddset(&s, a);
    sigaddset(&s, b);
    sigaddset(&s, SIGUSR1);
    sigprocmask(SIG_BLOCK, &s, &old);
    queue_to_self(b, 30);
    for (int v = 1; v <= 4; v++)
        queue_to_self(a, v);
    queue_to_self(SIGUSR1, 100);
    queue_to_self(SIGUSR1, 101); /* coalesced: the first one's value is kept */
    kill(getpid(), a);           /* SI_USER, queued behind the four */
    sigset_t p;
    sigpending(&p);
    printf("pending: RTMIN+1 %d RTMIN+3 %d USR1 %d\n", sigismember(&p, a), sigismember(&p, b),
           sigismember(&p, SIGUSR1));
    sigprocmask(SIG_SETMASK, &old, NULL);
    print_records("delivered");
}

/* 2. sigwaitinfo takes the queued instances one by one, with their values. */
static void waited_for(void) {
    int sig = SIGRTMIN + 2;
    block(sig, SIG_BLOCK);
    for (int v = 10; v < 13; v++)
        queue_to_self(sig, v);
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, sig);
    printf("sigwaitinfo:");
    for (int k = 0; k < 3; k++) {
        siginfo_t si;
        int r = sigwaitinfo(&s, &si);
        printf(" %s=%d", r == sig ? code_name(si.si_code) : "?", si.si_value.sival_int);
    }
    struct timespec zero = {0, 0};
    siginfo_t si;
    int r = sigtimedwait(&s, &si, &zero);
    printf(" then %s\n", r < 0 && errno == EAGAIN ? "EAGAIN" : "something");
    block(sig, SIG_UNBLOCK);
}

/* 3 and 6. A blocking read interrupted by a signal: EINTR without SA_RESTART, restarted with it.
 * The reader is the only thread (the LWK's proxy serves its read) or a second thread (its own
 * vCPU thread serves it); the signal comes from pthread_sigqueue or a timer. */
static int pipefd[2];
static volatile int reader_tid;

static void *reader(void *arg) {
    (void)arg;
    reader_tid = gettid();
    char c;
    ssize_t r = read(pipefd[0], &c, 1);
    int e = errno;
    static char out[64];
    snprintf(out, sizeof out, "%s", r == 1 ? "read a byte" : r < 0 && e == EINTR ? "EINTR" : "?");
    return out;
}

static void interrupted_thread(int flags) {
    int sig = SIGRTMIN + 4;
    handle(sig, flags);
    if (pipe(pipefd) != 0)
        return;
    pthread_t t;
    reader_tid = 0;
    pthread_create(&t, NULL, reader, NULL);
    while (!reader_tid)
        usleep(1000);
    usleep(50000); /* the reader is in read() by now */
    union sigval v = {.sival_int = 55};
    pthread_sigqueue(t, sig, v);
    usleep(50000);
    if (flags & SA_RESTART) {
        int have = nrec;
        printf("thread read %s before the byte (handler ran %d time)\n", have ? "still waiting" : "?", have);
        if (write(pipefd[1], "x", 1) != 1)
            return;
    }
    void *res;
    pthread_join(t, &res);
    print_records(flags & SA_RESTART ? "thread, SA_RESTART" : "thread, no SA_RESTART");
    printf("  reader: %s\n", (char *)res);
    close(pipefd[0]);
    close(pipefd[1]);
}

static void interrupted_alone(int flags) {
    int sig = SIGRTMIN + 5;
    handle(sig, flags);
    if (pipe(pipefd) != 0)
        return;
    timer_t tm;
    struct sigevent ev;
    memset(&ev, 0, sizeof ev);
    ev.sigev_notify = SIGEV_SIGNAL;
    ev.sigev_signo = sig;
    ev.sigev_value.sival_int = 66;
    timer_create(CLOCK_MONOTONIC, &ev, &tm);
    struct itimerspec its = {{0, 0}, {0, 100 * 1000 * 1000}};
    timer_settime(tm, 0, &its, NULL);
    if (flags & SA_RESTART) {
        /* The restarted read gets the byte a child writes after the timer fired. */
        pid_t c = fork();
        if (c == 0) {
            usleep(300000);
            if (write(pipefd[1], "y", 1) != 1)
                _exit(1);
            _exit(0);
        }
        char b;
        ssize_t r = read(pipefd[0], &b, 1);
        waitpid(c, NULL, 0);
        print_records("alone, SA_RESTART");
        printf("  read: %s\n", r == 1 ? "a byte" : "?");
    } else {
        char b;
        ssize_t r = read(pipefd[0], &b, 1);
        int e = errno;
        print_records("alone, no SA_RESTART");
        printf("  read: %s\n", r < 0 && e == EINTR ? "EINTR" : "?");
    }
    timer_delete(tm);
    close(pipefd[0]);
    close(pipefd[1]);
}

/* 4. A periodic timer with SIGEV_SIGNAL: each expiry carries the value and SI_TIMER. */
static void periodic_timer(void) {
    int sig = SIGRTMIN + 6;
    handle(sig, 0);
    timer_t tm;
    struct sigevent ev;
    memset(&ev, 0, sizeof ev);
    ev.sigev_notify = SIGEV_SIGNAL;
    ev.sigev_signo = sig;
    ev.sigev_value.sival_int = 42;
    if (timer_create(CLOCK_MONOTONIC, &ev, &tm) != 0) {
        printf("timer_create: %s\n", strerror(errno));
        return;
    }
    struct itimerspec its = {{0, 20 * 1000 * 1000}, {0, 20 * 1000 * 1000}};
    timer_settime(tm, 0, &its, NULL);
    sigset_t none;
    sigemptyset(&none);
    while (nrec < 3)
        sigsuspend(&none);
    timer_delete(tm);
    nrec = 3;
    print_records("periodic timer");
}

/* 5. A timer that signals one thread (SIGEV_THREAD_ID), which waits for it with sigwaitinfo. */
static volatile int waiter_tid;
static void *waiter(void *arg) {
    (void)arg;
    int sig = SIGRTMIN + 7;
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, sig);
    waiter_tid = gettid();
    siginfo_t si;
    int r = sigwaitinfo(&s, &si);
    static char out[64];
    snprintf(out, sizeof out, "%s %s=%d", r == sig ? "RTMIN+7" : "?", code_name(si.si_code), si.si_value.sival_int);
    return out;
}

static void thread_timer(void) {
    int sig = SIGRTMIN + 7;
    block(sig, SIG_BLOCK); /* the thread inherits the block */
    pthread_t t;
    waiter_tid = 0;
    pthread_create(&t, NULL, waiter, NULL);
    while (!waiter_tid)
        usleep(1000);
    timer_t tm;
    struct sigevent ev;
    memset(&ev, 0, sizeof ev);
    ev.sigev_notify = SIGEV_THREAD_ID;
    ev._sigev_un._tid = waiter_tid;
    ev.sigev_signo = sig;
    ev.sigev_value.sival_int = 77;
    if (timer_create(CLOCK_MONOTONIC, &ev, &tm) != 0) {
        printf("timer_create(SIGEV_THREAD_ID): %s\n", strerror(errno));
        return;
    }
    struct itimerspec its = {{0, 0}, {0, 30 * 1000 * 1000}};
    timer_settime(tm, 0, &its, NULL);
    void *res;
    pthread_join(t, &res);
    printf("thread timer: %s\n", (char *)res);
    timer_delete(tm);
    block(sig, SIG_UNBLOCK);
}

/* 7. A SIGEV_THREAD timer: glibc's helper thread runs the function with the value. */
static volatile int notified;
static void notify_fn(union sigval v) { notified = v.sival_int; }

static void sigev_thread_timer(void) {
    timer_t tm;
    struct sigevent ev;
    memset(&ev, 0, sizeof ev);
    ev.sigev_notify = SIGEV_THREAD;
    ev.sigev_notify_function = notify_fn;
    ev.sigev_value.sival_int = 88;
    if (timer_create(CLOCK_MONOTONIC, &ev, &tm) != 0) {
        printf("timer_create(SIGEV_THREAD): %s\n", strerror(errno));
        return;
    }
    struct itimerspec its = {{0, 0}, {0, 30 * 1000 * 1000}};
    timer_settime(tm, 0, &its, NULL);
    for (int k = 0; k < 500 && !notified; k++)
        usleep(10000);
    printf("SIGEV_THREAD timer: function called with %d\n", notified);
    timer_delete(tm);
}

/* 8. Another process queues instances to us while we block the signal: they arrive in order
 * with their values (through the host kernel and the VMM). */
static void from_another_process(void) {
    int sig = SIGRTMIN + 8;
    handle(sig, 0);
    block(sig, SIG_BLOCK);
    pid_t parent = getpid();
    pid_t c = fork();
    if (c == 0) {
        for (int v = 1; v <= 5; v++) {
            union sigval val = {.sival_int = 200 + v};
            sigqueue(parent, sig, val);
        }
        _exit(0);
    }
    waitpid(c, NULL, 0);
    /* They reach the LWK's queue asynchronously: wait until all five are pending. */
    for (int k = 0; k < 200; k++) {
        sigset_t p;
        sigpending(&p);
        if (sigismember(&p, sig))
            break;
        usleep(5000);
    }
    usleep(100000);
    block(sig, SIG_UNBLOCK);
    print_records("from another process");
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    queued_in_order();
    waited_for();
    periodic_timer();
    thread_timer();
    interrupted_thread(0);
    interrupted_thread(SA_RESTART);
    interrupted_alone(0);
    interrupted_alone(SA_RESTART);
    sigev_thread_timer();
    from_another_process();
    printf("done\n");
    return 0;
}
