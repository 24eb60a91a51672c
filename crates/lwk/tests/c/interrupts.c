/* Signals that interrupt blocking calls (issue #16), one scenario per argument:
 *   pselect N     block SIGCHLD, fork N children, wait for them in pselect with a mask that
 *                 unblocks SIGCHLD (what make -j does)
 *   read          a blocking read interrupted by a handled SIGALRM: EINTR without SA_RESTART,
 *                 restarted with it (the handler writes the byte the read then returns)
 *   fault         print "ready", then wait for a SIGSEGV sent by another process (handler)
 *   wait          print "ready", then sleep up to 10 s (a signal sent from outside should end it)
 *   term          block SIGCHLD, fork a sleeping child, print "ready" and wait in pselect; the
 *                 SIGTERM handler kills and reaps the child and exits 3
 *   sigwait       sigtimedwait for a blocked SIGALRM (timer), sigwaitinfo for a blocked SIGUSR1
 *                 sent to itself, and a sigtimedwait that times out */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t chld, alarms, fault_code = 99, fault_from_parent;
static int pipefd[2];
static pid_t child;

static void on_chld(int sig) { (void)sig; chld++; }
static void on_alrm(int sig) {
    (void)sig;
    alarms++;
    if (write(pipefd[1], "x", 1) != 1) _exit(90);
}
static void on_segv(int sig, siginfo_t *si, void *uc) {
    (void)sig;
    (void)uc;
    fault_code = si->si_code;
    fault_from_parent = si->si_pid == getppid();
}
static void on_term(int sig) {
    (void)sig;
    int st = 0;
    kill(child, SIGTERM);
    pid_t p = waitpid(child, &st, 0);
    printf("terminated, child reaped %d, killed by %d\n", p == child, WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    fflush(stdout);
    _exit(3);
}

static void nap(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static void handle(int sig, void (*h)(int), int flags) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = h;
    sa.sa_flags = flags;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, NULL);
}

static sigset_t block_chld(void) {
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGCHLD);
    sigprocmask(SIG_BLOCK, &block, &old);
    return old; /* SIGCHLD unblocked */
}

static int pselect_children(int n) {
    handle(SIGCHLD, on_chld, 0);
    sigset_t waitmask = block_chld();
    for (int i = 0; i < n; i++) {
        pid_t p = fork();
        if (p == 0) {
            nap(30L * (i + 1));
            _exit(i + 1);
        }
    }
    int reaped = 0, sum = 0, eintr = 0;
    while (reaped < n) {
        int st;
        pid_t p;
        while ((p = waitpid(-1, &st, WNOHANG)) > 0) {
            reaped++;
            sum += WEXITSTATUS(st);
        }
        if (reaped == n) break;
        int r = pselect(0, NULL, NULL, NULL, NULL, &waitmask);
        if (r == -1 && errno == EINTR) eintr = 1;
        else {
            printf("pselect returned %d (%s)\n", r, strerror(errno));
            return 1;
        }
    }
    sigset_t now;
    sigprocmask(SIG_BLOCK, NULL, &now);
    printf("pselect: reaped %d children, exit codes sum %d, woken by SIGCHLD %d, SIGCHLD still blocked %d\n",
           reaped, sum, eintr && chld > 0, sigismember(&now, SIGCHLD));
    return 0;
}

static void read_once(int flags, const char *what) {
    alarms = 0;
    handle(SIGALRM, on_alrm, flags);
    struct itimerval it = {{0, 0}, {0, 100000}};
    setitimer(ITIMER_REAL, &it, NULL);
    char c = 0;
    ssize_t r = read(pipefd[0], &c, 1);
    int e = errno;
    if (r < 0) {
        printf("%s: read -1 (%s), handler ran %d", what, strerror(e), alarms);
        r = read(pipefd[0], &c, 1);
        printf(", then read %zd '%c'\n", r, c);
    } else {
        printf("%s: read %zd '%c', handler ran %d\n", what, r, c, alarms);
    }
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *mode = argc > 1 ? argv[1] : "";
    if (!strcmp(mode, "pselect")) return pselect_children(argc > 2 ? atoi(argv[2]) : 3);
    if (!strcmp(mode, "read")) {
        if (pipe(pipefd)) return 1;
        read_once(0, "without SA_RESTART");
        read_once(SA_RESTART, "with SA_RESTART");
        return 0;
    }
    if (!strcmp(mode, "fault")) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_segv;
        sa.sa_flags = SA_SIGINFO;
        sigaction(SIGSEGV, &sa, NULL);
        printf("ready\n");
        for (int i = 0; i < 1000 && fault_code == 99; i++) nap(10);
        printf("SIGSEGV handled: si_code %d (SI_USER 0), from my parent %d\n", fault_code, fault_from_parent);
        return 0;
    }
    if (!strcmp(mode, "wait")) {
        printf("ready\n");
        for (int i = 0; i < 1000; i++) nap(10);
        printf("not killed\n");
        return 0;
    }
    if (!strcmp(mode, "term")) {
        handle(SIGCHLD, on_chld, 0);
        sigset_t waitmask = block_chld();
        child = fork();
        if (child == 0) {
            nap(20000);
            _exit(0);
        }
        handle(SIGTERM, on_term, 0);
        printf("ready\n");
        for (;;) pselect(0, NULL, NULL, NULL, NULL, &waitmask);
    }
    if (!strcmp(mode, "sigwait")) {
        sigset_t s, usr2;
        sigemptyset(&s);
        sigaddset(&s, SIGALRM);
        sigaddset(&s, SIGUSR1);
        sigprocmask(SIG_BLOCK, &s, NULL);
        struct itimerval it = {{0, 0}, {0, 50000}};
        setitimer(ITIMER_REAL, &it, NULL);
        siginfo_t si;
        struct timespec ts = {10, 0};
        int r = sigtimedwait(&s, &si, &ts);
        printf("sigtimedwait: signal %d (SIGALRM %d), si_code %d\n", r, SIGALRM, si.si_code);
        kill(getpid(), SIGUSR1);
        r = sigwaitinfo(&s, &si);
        printf("sigwaitinfo: signal %d (SIGUSR1 %d), from myself %d\n", r, SIGUSR1, si.si_pid == getpid());
        sigemptyset(&usr2);
        sigaddset(&usr2, SIGUSR2);
        sigprocmask(SIG_BLOCK, &usr2, NULL);
        struct timespec short_ts = {0, 50000000};
        r = sigtimedwait(&usr2, &si, &short_ts);
        printf("timeout: %d (%s)\n", r, strerror(errno));
        return 0;
    }
    fprintf(stderr, "usage: interrupts pselect N | read | fault | wait | term | sigwait\n");
    return 2;
}
