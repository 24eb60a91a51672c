/* pidfd_send_signal to the caller's own process (issue #16): any si_code from the leader thread
 * (si_code >= 0 was EPERM in the LWK), Linux's checks (si_signo, EFAULT, EPERM from another
 * thread), PIDFD_SIGNAL_THREAD, pending when the call returns, and fault signals with a kernel
 * si_code, handled or by their default action (they must not reach the VMM's fault handler). */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef PIDFD_SIGNAL_THREAD
#define PIDFD_SIGNAL_THREAD 1
#endif

static volatile int hits, code, val, signo;
static volatile uintptr_t addr;

static void h(int s, siginfo_t *si, void *u) {
    (void)u;
    hits++;
    signo = s;
    code = si->si_code;
    val = si->si_value.sival_int;
    addr = (uintptr_t)si->si_addr;
}

static int pfd;

static long send(int sig, int c, int v, unsigned flags) {
    siginfo_t si;
    memset(&si, 0, sizeof si);
    si.si_signo = sig;
    si.si_code = c;
    si.si_pid = getpid();
    si.si_uid = getuid();
    si.si_value.sival_int = v;
    hits = 0;
    long r = syscall(SYS_pidfd_send_signal, pfd, sig, &si, flags);
    return r < 0 ? -errno : r;
}

static void *other_thread(void *arg) {
    long *r = arg;
    r[0] = send(SIGUSR1, SI_USER, 1, 0);
    r[1] = send(SIGUSR1, SI_QUEUE, 2, 0);
    return 0;
}

int main(void) {
    setvbuf(stdout, 0, _IONBF, 0);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = h;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGUSR1, &sa, 0);
    pfd = syscall(SYS_pidfd_open, getpid(), 0);

    int codes[] = {SI_QUEUE, SI_USER, 7, SI_TKILL, -60};
    for (int i = 0; i < 5; i++) {
        long r = send(SIGUSR1, codes[i], 40 + i, 0);
        printf("code %d: r %ld hits %d code %d value %d\n", codes[i], r, hits, code, val);
    }
    long r = send(SIGUSR1, 3, 50, PIDFD_SIGNAL_THREAD);
    printf("PIDFD_SIGNAL_THREAD code 3: r %ld hits %d code %d value %d\n", r, hits, code, val);

    hits = 0;
    r = syscall(SYS_pidfd_send_signal, pfd, SIGUSR1, 0, 0);
    printf("no siginfo: r %ld hits %d code %d\n", r, hits, code);

    siginfo_t si;
    memset(&si, 0, sizeof si);
    si.si_signo = SIGUSR2;
    si.si_code = SI_QUEUE;
    r = syscall(SYS_pidfd_send_signal, pfd, SIGUSR1, &si, 0);
    printf("si_signo not the signal: r %ld errno %d\n", r, r < 0 ? errno : 0);
    void *none = mmap(0, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    r = syscall(SYS_pidfd_send_signal, pfd, SIGUSR1, none, 0);
    printf("siginfo on a PROT_NONE page: r %ld errno %d\n", r, r < 0 ? errno : 0);
    r = syscall(SYS_pidfd_send_signal, pfd, SIGUSR1, 0, 8);
    printf("unknown flag: r %ld errno %d\n", r, r < 0 ? errno : 0);

    /* Pending when the call returns. */
    sigset_t set, old, pend;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    sigprocmask(SIG_BLOCK, &set, &old);
    r = send(SIGUSR1, 7, 60, 0);
    sigpending(&pend);
    printf("blocked: r %ld pending at return %d hits %d\n", r, sigismember(&pend, SIGUSR1), hits);
    sigprocmask(SIG_SETMASK, &old, 0);
    printf("unblocked: hits %d code %d value %d\n", hits, code, val);

    /* Another thread: Linux compares the caller's pid with the pidfd's. */
    long tr[2];
    pthread_t t;
    pthread_create(&t, 0, other_thread, tr);
    pthread_join(t, 0);
    printf("from another thread: SI_USER %ld, SI_QUEUE %ld\n", tr[0], tr[1]);

    /* Fault signals with a kernel's si_code, to a handler. */
    int faults[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP};
    for (int i = 0; i < 5; i++) {
        sigaction(faults[i], &sa, 0);
        memset(&si, 0, sizeof si);
        si.si_signo = faults[i];
        si.si_code = 1;
        si.si_addr = (void *)0x1234;
        hits = 0;
        r = syscall(SYS_pidfd_send_signal, pfd, faults[i], &si, 0);
        printf("signal %d code 1: r %ld hits %d signo %d code %d addr %#lx\n", faults[i], r, hits, signo,
               code, (unsigned long)addr);
    }

    /* And by their default action, in a child. */
    for (int i = 0; i < 2; i++) {
        pid_t c = fork();
        if (c == 0) {
            signal(faults[i], SIG_DFL);
            pfd = syscall(SYS_pidfd_open, getpid(), 0);
            memset(&si, 0, sizeof si);
            si.si_signo = faults[i];
            si.si_code = 2;
            syscall(SYS_pidfd_send_signal, pfd, faults[i], &si, 0);
            _exit(3);
        }
        int st = 0;
        waitpid(c, &st, 0);
        printf("child sending itself signal %d code 2: %s %d\n", faults[i],
               WIFSIGNALED(st) ? "killed by" : "exited", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
    }
    return 0;
}
