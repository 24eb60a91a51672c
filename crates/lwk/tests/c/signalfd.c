/* Issue #14: signalfd as Linux gives it — run natively and in the LWK, the output must be the
 * same. The usual pattern (block the signals, read them from a signalfd): a blocking read woken
 * by a kill() from another thread, sigqueue'd real-time signals with their si_value (several
 * records in one read), EAGAIN on a non-blocking fd and EINVAL for a short buffer, readiness in
 * epoll, poll and select (and not once read), a new mask for an existing fd, a forked child whose
 * signalfd reports its own signals (not the parent's), SIGCHLD through a signalfd, a handled
 * signal interrupting a blocking read, readv across buffers, 600 signalfds made and dropped, and
 * the fd surviving exec with its pending signal. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/signalfd.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *code_name(int code) {
    switch (code) {
    case SI_USER: return "SI_USER";
    case SI_QUEUE: return "SI_QUEUE";
    case SI_TKILL: return "SI_TKILL";
    case CLD_EXITED: return "CLD_EXITED";
    default: return "other";
    }
}

static void show(const char *what, const struct signalfd_siginfo *s) {
    printf("%s: signo=%u code=%s pid=%s", what, s->ssi_signo, code_name(s->ssi_code),
           s->ssi_pid == (unsigned)getpid() ? "self" : "other");
    if (s->ssi_code == SI_QUEUE) printf(" int=%d", s->ssi_int);
    printf("\n");
}

static void *killer(void *arg) {
    (void)arg;
    usleep(50000);
    kill(getpid(), SIGUSR1);
    return NULL;
}

static volatile sig_atomic_t handled;
static void on_alarm(int sig) { handled = sig; }

static int ready_in_epoll(int ep) {
    struct epoll_event ev;
    return epoll_wait(ep, &ev, 1, 0);
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc == 3 && strcmp(argv[1], "after-exec") == 0) {
        int fd = atoi(argv[2]);
        struct signalfd_siginfo s;
        ssize_t n = read(fd, &s, sizeof s);
        printf("after exec: read %zd\n", n);
        if (n == sizeof s) show("after exec", &s);
        return 0;
    }
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    sigaddset(&set, SIGRTMIN + 1);
    sigaddset(&set, SIGRTMIN + 2);
    sigprocmask(SIG_BLOCK, &set, NULL);

    /* 1. A blocking read woken by a kill() from another thread. */
    int fd = signalfd(-1, &set, SFD_CLOEXEC);
    printf("signalfd: %s cloexec=%d\n", fd >= 0 ? "ok" : strerror(errno),
           (fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0);
    pthread_t t;
    pthread_create(&t, NULL, killer, NULL);
    struct signalfd_siginfo s[8];
    ssize_t n = read(fd, s, sizeof s);
    printf("blocking read: %zd bytes\n", n);
    if (n > 0) show("  kill", &s[0]);
    pthread_join(t, NULL);

    /* 2. Real-time signals with their values, several records in one read, in order. */
    for (int k = 1; k <= 3; k++) {
        union sigval v = {.sival_int = 100 + k};
        sigqueue(getpid(), SIGRTMIN + 2, v);
    }
    union sigval v = {.sival_int = 7};
    sigqueue(getpid(), SIGRTMIN + 1, v);
    n = read(fd, s, sizeof s);
    printf("sigqueue read: %zd records\n", n / (ssize_t)sizeof s[0]);
    for (int k = 0; k < n / (ssize_t)sizeof s[0]; k++) {
        char what[32];
        snprintf(what, sizeof what, "  RTMIN+%d", (int)s[k].ssi_signo - SIGRTMIN);
        show(what, &s[k]);
    }
    /* readv: records split across buffers. */
    for (int k = 1; k <= 2; k++) {
        union sigval w = {.sival_int = 200 + k};
        sigqueue(getpid(), SIGRTMIN + 2, w);
    }
    char head[100], tail[300];
    struct iovec iov[2] = {{head, sizeof head}, {tail, sizeof tail}};
    n = readv(fd, iov, 2);
    struct signalfd_siginfo r2[2];
    memcpy(r2, head, sizeof head);
    memcpy((char *)r2 + sizeof head, tail, sizeof r2 - sizeof head);
    printf("readv: %zd bytes, ints %d %d\n", n, r2[0].ssi_int, r2[1].ssi_int);
    sigset_t pend;
    sigpending(&pend);
    printf("still pending after the read: %d\n", sigismember(&pend, SIGRTMIN + 2));

    /* 3. Non-blocking: EAGAIN with nothing pending; a short buffer is EINVAL. */
    int nb = signalfd(-1, &set, SFD_NONBLOCK);
    n = read(nb, s, sizeof s);
    printf("nonblocking empty: %zd %s\n", n, n < 0 ? strerror(errno) : "");
    raise(SIGUSR1);
    n = read(nb, s, 16);
    printf("short buffer: %zd %s\n", n, n < 0 ? strerror(errno) : "");

    /* 4. Readiness: epoll, poll, select; none once read. */
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = nb};
    epoll_ctl(ep, EPOLL_CTL_ADD, nb, &ev);
    printf("epoll with SIGUSR1 pending: %d\n", ready_in_epoll(ep));
    struct pollfd p = {.fd = nb, .events = POLLIN};
    int pr = poll(&p, 1, 0);
    printf("poll: %d revents=%#x\n", pr, p.revents);
    n = read(nb, s, sizeof s);
    printf("read: %zd records, signo=%u\n", n / (ssize_t)sizeof s[0], s[0].ssi_signo);
    printf("epoll after the read: %d\n", ready_in_epoll(ep));
    fd_set rd;
    FD_ZERO(&rd);
    FD_SET(nb, &rd);
    struct timeval tv = {0, 0};
    int sr = select(nb + 1, &rd, NULL, NULL, &tv);
    printf("select after the read: %d\n", sr);
    /* Another thread's epoll_wait wakes when a signal comes. */
    pthread_create(&t, NULL, killer, NULL);
    struct epoll_event got;
    int w = epoll_wait(ep, &got, 1, 5000);
    printf("epoll_wait woken: %d fd=%s\n", w, got.data.fd == nb ? "signalfd" : "?");
    pthread_join(t, NULL);
    read(nb, s, sizeof s);

    /* 5. A new mask for the same fd. */
    sigset_t two;
    sigemptyset(&two);
    sigaddset(&two, SIGUSR2);
    sigprocmask(SIG_BLOCK, &two, NULL);
    raise(SIGUSR2);
    printf("SIGUSR2 before the new mask: %zd\n", read(nb, s, sizeof s));
    printf("new mask: same fd %d\n", signalfd(nb, &two, 0) == nb);
    n = read(nb, s, sizeof s);
    printf("SIGUSR2 after the new mask: %zd signo=%u\n", n, n > 0 ? s[0].ssi_signo : 0);
    int r = signalfd(ep, &two, 0);
    printf("not a signalfd: %d %s\n", r, strerror(errno));
    r = signalfd(999, &two, 0);
    printf("bad fd: %d %s\n", r, strerror(errno));

    /* 6. A forked child's signalfd reports the child's signals; SIGCHLD through a signalfd. */
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, NULL);
    int cfd = signalfd(-1, &chld, 0);
    pid_t child = fork();
    if (child == 0) {
        raise(SIGUSR2);
        n = read(nb, s, sizeof s);
        printf("child: %zd bytes signo=%u pid=%s\n", n, n > 0 ? s[0].ssi_signo : 0,
               n > 0 && s[0].ssi_pid == (unsigned)getpid() ? "child" : "other");
        _exit(7);
    }
    n = read(cfd, s, sizeof s);
    printf("parent: SIGCHLD %zd bytes signo=%u code=%s status=%d from the child=%d\n", n, s[0].ssi_signo,
           code_name(s[0].ssi_code), s[0].ssi_status, s[0].ssi_pid == (unsigned)child);
    int st;
    waitpid(child, &st, 0);
    n = read(nb, s, sizeof s);
    printf("parent's signalfd after the child's signal: %zd %s\n", n, n < 0 ? strerror(errno) : "");
    close(cfd);

    /* 7. A handled signal interrupts a blocking read (EINTR without SA_RESTART). */
    struct sigaction sa = {0};
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, NULL);
    ualarm(100000, 0);
    n = read(fd, s, sizeof s);
    printf("read interrupted: %zd %s handled=%d\n", n, n < 0 ? strerror(errno) : "", handled == SIGALRM);

    /* 8. Many made and dropped (closed, or replaced by dup2): none is lost. */
    int made = 0;
    for (int k = 0; k < 600; k++) {
        int x = signalfd(-1, &set, 0);
        if (x < 0) break;
        made++;
        if (k & 1) close(x);
        else { dup2(0, x); close(x); }
    }
    printf("made and dropped: %d\n", made);

    /* 9. Closed: the number is free again; the fd survives exec (not close-on-exec). */
    close(fd);
    n = read(fd, s, sizeof s);
    printf("closed: read %zd %s\n", n, strerror(errno));
    int keep = signalfd(-1, &set, 0);
    raise(SIGUSR1);
    char arg[16];
    snprintf(arg, sizeof arg, "%d", keep);
    execl("/proc/self/exe", argv[0], "after-exec", arg, (char *)NULL);
    printf("exec: %s\n", strerror(errno));
    return 1;
}
