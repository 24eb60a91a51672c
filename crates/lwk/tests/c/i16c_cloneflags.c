/* clone and clone3 with process-creation flags (issue #16): `served` prints what must equal the
 * native run (CLONE_PIDFD, CLONE_CLEAR_SIGHAND, clone3's size and argument checks, a struct on a
 * PROT_NONE page, a pidfd past RLIMIT_NOFILE); `refused` prints what the LWK refuses (namespaces,
 * CLONE_INTO_CGROUP, set_tid, CLONE_FILES/CLONE_PARENT/exit signal 0 for a process, a thread
 * without CLONE_FILES, a thread's pidfd): never a child, never a silent success. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

static long c3(void *a, size_t sz) { return syscall(SYS_clone3, a, sz); }

static void say(const char *what, long r) {
    printf("%s: %s", what, r < 0 ? "fails" : "child");
    if (r < 0) printf(" errno %d", errno);
    printf("\n");
}

/* No child left behind by a refused or failed clone. */
static void no_child(const char *what) {
    int st = 0;
    long w = waitpid(-1, &st, WNOHANG | __WALL);
    if (w < 0 && errno == ECHILD)
        printf("%s: no child left: yes\n", what);
    else
        printf("%s: no child left: NO (waitpid %ld, errno %d, status 0x%x)\n", what, w, w < 0 ? errno : 0, st);
}

static void reap(long r) {
    if (r > 0) waitpid(r, 0, __WALL);
}

static int status_by_pidfd(int pidfd) {
    siginfo_t si;
    memset(&si, 0, sizeof si);
    if (syscall(SYS_waitid, P_PIDFD, pidfd, &si, WEXITED, 0) < 0) return -errno;
    return si.si_status;
}

static void served(void) {
    struct clone_args a;
    long r;
    int pidfd = -1;
    pid_t ptid = 0;

    memset(&a, 0, sizeof a);
    a.flags = CLONE_PIDFD | CLONE_PARENT_SETTID;
    a.pidfd = (uintptr_t)&pidfd;
    a.parent_tid = (uintptr_t)&ptid;
    a.exit_signal = SIGCHLD;
    r = c3(&a, sizeof a);
    if (r == 0) _exit(7);
    printf("clone3 CLONE_PIDFD: pidfd %d, cloexec %d, parent_tid is the pid %d, status by pidfd %d\n",
           pidfd, (fcntl(pidfd, F_GETFD) & FD_CLOEXEC) != 0, ptid == r, status_by_pidfd(pidfd));
    close(pidfd);

    pidfd = -1;
    r = syscall(SYS_clone, CLONE_PIDFD | SIGCHLD, 0, &pidfd, 0, 0);
    if (r == 0) _exit(9);
    printf("clone CLONE_PIDFD: pidfd %d, status by pidfd %d\n", pidfd, status_by_pidfd(pidfd));
    close(pidfd);

    r = syscall(SYS_clone, CLONE_PIDFD | CLONE_PARENT_SETTID | SIGCHLD, 0, &pidfd, 0, 0);
    if (r == 0) _exit(0);
    say("clone CLONE_PIDFD|CLONE_PARENT_SETTID", r);
    reap(r);

    /* The pidfd's word on a read-only page: EFAULT and no child. */
    int *ro = mmap(0, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memset(&a, 0, sizeof a);
    a.flags = CLONE_PIDFD;
    a.pidfd = (uintptr_t)ro;
    a.exit_signal = SIGCHLD;
    r = c3(&a, sizeof a);
    if (r == 0) _exit(0);
    say("clone3 CLONE_PIDFD into a read-only page", r);
    reap(r);
    no_child("read-only pidfd");

    /* clone3's size: a non-zero tail past what the kernel knows is E2BIG, a zero one is fine. */
    static char big[256];
    memset(big, 0, sizeof big);
    ((struct clone_args *)big)->exit_signal = SIGCHLD;
    big[200] = 1;
    r = c3(big, sizeof big);
    if (r == 0) _exit(0);
    say("clone3 size 256, non-zero tail", r);
    reap(r);
    big[200] = 0;
    r = c3(big, sizeof big);
    if (r == 0) _exit(0);
    say("clone3 size 256, zero tail", r);
    reap(r);
    r = c3(big, 32);
    if (r == 0) _exit(0);
    say("clone3 size 32", r);
    reap(r);
    static char huge[8192];
    memset(huge, 0, sizeof huge);
    ((struct clone_args *)huge)->exit_signal = SIGCHLD;
    r = c3(huge, sizeof huge);
    if (r == 0) _exit(0);
    say("clone3 size 8192", r);
    reap(r);

    /* The struct on a page the program may not read. */
    char *none = mmap(0, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memset(none, 0, 4096);
    ((struct clone_args *)none)->exit_signal = SIGCHLD;
    mprotect(none, 4096, PROT_NONE);
    r = c3(none, sizeof a);
    if (r == 0) _exit(0);
    say("clone3 args on a PROT_NONE page", r);
    reap(r);
    no_child("PROT_NONE args");

    /* clone3's own checks. */
    memset(&a, 0, sizeof a);
    a.flags = CLONE_SIGHAND | CLONE_VM | CLONE_CLEAR_SIGHAND;
    a.exit_signal = SIGCHLD;
    say("clone3 CLONE_SIGHAND|CLONE_CLEAR_SIGHAND", c3(&a, sizeof a));
    memset(&a, 0, sizeof a);
    a.stack_size = 4096;
    a.exit_signal = SIGCHLD;
    say("clone3 stack_size without a stack", c3(&a, sizeof a));
    memset(&a, 0, sizeof a);
    a.flags = CLONE_PARENT;
    a.exit_signal = SIGCHLD;
    say("clone3 CLONE_PARENT with an exit signal", c3(&a, sizeof a));
    memset(&a, 0, sizeof a);
    a.set_tid_size = 1;
    a.exit_signal = SIGCHLD;
    say("clone3 set_tid_size without set_tid", c3(&a, sizeof a));
    memset(&a, 0, sizeof a);
    a.exit_signal = 65;
    say("clone3 exit signal 65", c3(&a, sizeof a));
    no_child("clone3 checks");

    /* CLONE_CLEAR_SIGHAND: handled signals back to SIG_DFL in the child, ignored ones stay. */
    signal(SIGUSR1, SIG_IGN);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = (void (*)(int))_exit;
    sigaction(SIGUSR2, &sa, 0);
    memset(&a, 0, sizeof a);
    a.flags = CLONE_CLEAR_SIGHAND;
    a.exit_signal = SIGCHLD;
    r = c3(&a, sizeof a);
    if (r == 0) {
        struct sigaction o1, o2;
        sigaction(SIGUSR1, 0, &o1);
        sigaction(SIGUSR2, 0, &o2);
        _exit((o2.sa_handler == SIG_DFL ? 1 : 0) | (o1.sa_handler == SIG_IGN ? 2 : 0));
    }
    int st = 0;
    waitpid(r, &st, 0);
    struct sigaction mine;
    sigaction(SIGUSR2, 0, &mine);
    printf("CLONE_CLEAR_SIGHAND: child's handled signal default %d, ignored one ignored %d; "
           "parent's handler kept %d\n",
           WEXITSTATUS(st) & 1, (WEXITSTATUS(st) & 2) != 0, mine.sa_handler == sa.sa_handler);

    /* A pidfd past RLIMIT_NOFILE: EMFILE, and no child (Linux makes the fd first). */
    int lowest = dup(0);
    close(lowest);
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    struct rlimit tight = {lowest, rl.rlim_max};
    setrlimit(RLIMIT_NOFILE, &tight);
    memset(&a, 0, sizeof a);
    a.flags = CLONE_PIDFD;
    a.pidfd = (uintptr_t)&pidfd;
    a.exit_signal = SIGCHLD;
    r = c3(&a, sizeof a);
    if (r == 0) _exit(0);
    say("clone3 CLONE_PIDFD at RLIMIT_NOFILE", r);
    reap(r);
    setrlimit(RLIMIT_NOFILE, &rl);
    no_child("pidfd at the limit");
}

static int thread_fn(void *arg) {
    (void)arg;
    return 0;
}

static void refused(void) {
    struct clone_args a;
    long r;
    static char stack[65536];

    r = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0);
    if (r == 0) _exit(0);
    say("clone CLONE_NEWUSER", r);
    reap(r);
    memset(&a, 0, sizeof a);
    a.flags = CLONE_NEWNET | CLONE_NEWUTS;
    a.exit_signal = SIGCHLD;
    r = c3(&a, sizeof a);
    if (r == 0) _exit(0);
    say("clone3 CLONE_NEWNET|CLONE_NEWUTS", r);
    reap(r);
    memset(&a, 0, sizeof a);
    a.flags = CLONE_INTO_CGROUP;
    a.cgroup = 0;
    a.exit_signal = SIGCHLD;
    r = c3(&a, sizeof a);
    if (r == 0) _exit(0);
    say("clone3 CLONE_INTO_CGROUP", r);
    reap(r);
    pid_t want = 4242;
    memset(&a, 0, sizeof a);
    a.set_tid = (uintptr_t)&want;
    a.set_tid_size = 1;
    a.exit_signal = SIGCHLD;
    r = c3(&a, sizeof a);
    if (r == 0) _exit(0);
    say("clone3 set_tid", r);
    reap(r);
    r = syscall(SYS_clone, CLONE_FILES | SIGCHLD, 0, 0, 0, 0);
    if (r == 0) _exit(0);
    say("clone CLONE_FILES", r);
    reap(r);
    r = syscall(SYS_clone, CLONE_PARENT | SIGCHLD, 0, 0, 0, 0);
    if (r == 0) _exit(0);
    say("clone CLONE_PARENT", r);
    reap(r);
    memset(&a, 0, sizeof a);
    a.exit_signal = 0;
    r = c3(&a, sizeof a);
    if (r == 0) _exit(0);
    say("clone3 exit signal 0", r);
    reap(r);
    r = clone(thread_fn, stack + sizeof stack, CLONE_VM | CLONE_SIGHAND | CLONE_THREAD, 0);
    say("clone of a thread without CLONE_FILES", r);
    r = clone(thread_fn, stack + sizeof stack,
              CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM | CLONE_PIDFD,
              0, &r);
    say("clone of a thread with CLONE_PIDFD", r);
    no_child("refused");
}

int main(int argc, char **argv) {
    setvbuf(stdout, 0, _IONBF, 0);
    if (argc > 1 && strcmp(argv[1], "refused") == 0)
        refused();
    else
        served();
    return 0;
}
