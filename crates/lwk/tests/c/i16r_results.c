// Issue #16: the results of the calls the LWK serves itself are written as Linux writes them
// (copy_to_user/put_user): into a page the program may not write — a PROT_READ private page, a
// PROT_READ MAP_SHARED mapping of a file opened read-only (read-only on the host too: the VMM's
// own store there killed it with SIGSEGV), a PROT_NONE page, a buffer running from a writable
// page into a read-only one, a page mprotected read-only, the page of a MAP_SHARED file mapping
// past the end of its file (SIGBUS for the VMM's own store) — each call fails with EFAULT and the
// page is left as it was; the arguments they read from a PROT_NONE page or past the end of a file
// are EFAULT too. The output is the same natively and in the LWK.
// Usage: i16r_results FILE [nofile]   (FILE: a scratch file to create; "nofile": getrlimit of
// RLIMIT_NOFILE too, which the LWK serves in syscall/fdrange.rs)
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#ifndef ARCH_GET_FS
#define ARCH_GET_FS 0x1003
#endif

static int nofile;

static const char *err(long r) {
    if (r >= 0) return "ok";
    switch (errno) {
    case EFAULT: return "EFAULT";
    case EINVAL: return "EINVAL";
    case EPERM: return "EPERM";
    case EAGAIN: return "EAGAIN";
    default: return "other";
    }
}

static void show(const char *kind, const char *what, long r) {
    if (r >= 0)
        printf("%s %s: %ld\n", kind, what, r);
    else
        printf("%s %s: -1 %s\n", kind, what, err(r));
}

// Every call that writes a result through pointer `p`.
static void writes(const char *kind, void *p) {
    long r;
    errno = 0;
    r = syscall(SYS_prctl, PR_GET_NAME, p, 0, 0, 0);
    show(kind, "prctl(PR_GET_NAME)", r);
    r = syscall(SYS_prctl, PR_GET_TID_ADDRESS, p, 0, 0, 0);
    show(kind, "prctl(PR_GET_TID_ADDRESS)", r);
    r = syscall(SYS_getcpu, p, NULL, NULL);
    show(kind, "getcpu(cpu)", r);
    r = syscall(SYS_getcpu, NULL, p, NULL);
    show(kind, "getcpu(node)", r);
    r = syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, p, 8);
    show(kind, "rt_sigprocmask(oldset)", r);
    r = syscall(SYS_rt_sigaction, SIGUSR1, NULL, p, 8);
    show(kind, "rt_sigaction(oldact)", r);
    r = syscall(SYS_rt_sigpending, p, 8);
    show(kind, "rt_sigpending", r);
    r = syscall(SYS_sigaltstack, NULL, p);
    show(kind, "sigaltstack(old)", r);
    void *head = NULL;
    size_t len = 0;
    r = syscall(SYS_get_robust_list, 0, p, &len);
    show(kind, "get_robust_list(head)", r);
    r = syscall(SYS_get_robust_list, 0, &head, p);
    show(kind, "get_robust_list(len)", r);
    r = syscall(SYS_getrlimit, RLIMIT_STACK, p);
    show(kind, "getrlimit(RLIMIT_STACK)", r);
    r = syscall(SYS_prlimit64, 0, RLIMIT_STACK, NULL, p);
    show(kind, "prlimit64(RLIMIT_STACK, old)", r);
    if (nofile) {
        r = syscall(SYS_getrlimit, RLIMIT_NOFILE, p);
        show(kind, "getrlimit(RLIMIT_NOFILE)", r);
        r = syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, NULL, p);
        show(kind, "prlimit64(RLIMIT_NOFILE, old)", r);
    }
    r = syscall(SYS_arch_prctl, ARCH_GET_FS, p);
    show(kind, "arch_prctl(ARCH_GET_FS)", r);
    r = syscall(SYS_uname, p);
    show(kind, "uname", r);
    r = syscall(SYS_readlink, "/proc/self/exe", p, 16);
    show(kind, "readlink(/proc/self/exe)", r);
    r = syscall(SYS_sysinfo, p);
    show(kind, "sysinfo", r);
    r = syscall(SYS_sched_getaffinity, 0, 128, p);
    show(kind, "sched_getaffinity", r);
    // A pending, blocked SIGUSR2 taken by sigtimedwait, its siginfo unwritable: EFAULT, and the
    // signal is consumed all the same (Linux dequeues it before the copy).
    sigset_t set, pend;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR2);
    sigprocmask(SIG_BLOCK, &set, NULL);
    kill(getpid(), SIGUSR2);
    struct timespec zero = {0, 0};
    r = syscall(SYS_rt_sigtimedwait, &set, p, &zero, 8);
    show(kind, "rt_sigtimedwait(info)", r);
    sigpending(&pend);
    printf("%s SIGUSR2 still pending after it: %d\n", kind, sigismember(&pend, SIGUSR2));
    // Drain it, in case it was not taken.
    syscall(SYS_rt_sigtimedwait, &set, NULL, &zero, 8);
}

// Every call that reads an argument through pointer `p` (a PROT_NONE page: EFAULT).
static void reads(const char *kind, void *p) {
    long r;
    r = syscall(SYS_rt_sigprocmask, SIG_BLOCK, p, NULL, 8);
    show(kind, "rt_sigprocmask(set)", r);
    r = syscall(SYS_rt_sigaction, SIGUSR1, p, NULL, 8);
    show(kind, "rt_sigaction(act)", r);
    r = syscall(SYS_sigaltstack, p, NULL);
    show(kind, "sigaltstack(ss)", r);
    r = syscall(SYS_prctl, PR_SET_NAME, p, 0, 0, 0);
    show(kind, "prctl(PR_SET_NAME)", r);
    r = syscall(SYS_rt_sigsuspend, p, 8);
    show(kind, "rt_sigsuspend", r);
    struct timespec zero = {0, 0};
    r = syscall(SYS_rt_sigtimedwait, p, NULL, &zero, 8);
    show(kind, "rt_sigtimedwait(set)", r);
    sigset_t set;
    sigemptyset(&set);
    r = syscall(SYS_rt_sigtimedwait, &set, NULL, p, 8);
    show(kind, "rt_sigtimedwait(timeout)", r);
    r = syscall(SYS_signalfd4, -1, p, 8, 0);
    show(kind, "signalfd4(mask)", r);
    r = syscall(SYS_sched_setaffinity, 0, 128, p);
    show(kind, "sched_setaffinity", r);
    r = syscall(SYS_setrlimit, RLIMIT_STACK, p);
    show(kind, "setrlimit(RLIMIT_STACK)", r);
    r = syscall(SYS_open, p, O_RDONLY);
    show(kind, "open(path)", r);
}

static void unchanged(const char *kind, const unsigned char *p, unsigned char fill) {
    for (int k = 0; k < 4096; k++)
        if (p[k] != fill) {
            printf("%s page CHANGED at byte %d: %02x\n", kind, k, p[k]);
            return;
        }
    printf("%s page unchanged\n", kind);
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE [nofile]\n", argv[0]);
        return 2;
    }
    nofile = argc > 2 && !strcmp(argv[2], "nofile");

    // (a) a PROT_READ private anonymous page.
    unsigned char *ro = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    // (b) a PROT_READ MAP_SHARED mapping of a file opened read-only.
    int w = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    char z[4096];
    memset(z, 'A', sizeof z);
    if (w < 0 || write(w, z, sizeof z) != sizeof z) {
        perror("writing the scratch file");
        return 2;
    }
    close(w);
    int fd = open(argv[1], O_RDONLY);
    unsigned char *sh = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
    // (c) a PROT_NONE page.
    unsigned char *none = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    // (d) a writable page then a read-only one, the buffer 2 bytes before the boundary.
    unsigned char *two = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    // (e) a page written, then made read-only with mprotect.
    unsigned char *prot = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (ro == MAP_FAILED || sh == MAP_FAILED || none == MAP_FAILED || two == MAP_FAILED ||
        prot == MAP_FAILED) {
        perror("mmap");
        return 2;
    }
    // (f) a read-write MAP_SHARED mapping of a 100-byte file: its second page is past the end.
    char eof_path[4096];
    snprintf(eof_path, sizeof eof_path, "%s.eof", argv[1]);
    int efd = open(eof_path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (efd < 0 || ftruncate(efd, 100)) {
        perror("the past-the-end file");
        return 2;
    }
    unsigned char *eof = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, efd, 0);
    if (eof == MAP_FAILED) {
        perror("mmap");
        return 2;
    }
    memset(prot, 0x5a, 4096);
    if (mprotect(two + 4096, 4096, PROT_READ) || mprotect(prot, 4096, PROT_READ)) {
        perror("mprotect");
        return 2;
    }

    writes("ro-private", ro);
    unchanged("ro-private", ro, 0);
    writes("ro-shared-file", sh);
    unchanged("ro-shared-file", sh, 'A');
    writes("prot-none", none);
    writes("straddling", two + 4096 - 2);
    unchanged("straddling (read-only half)", two + 4096, 0);
    writes("mprotected", prot);
    unchanged("mprotected", prot, 0x5a);
    reads("prot-none", none);
    writes("past-eof", eof + 4096);
    reads("past-eof", eof + 4096);

    // The same calls into a writable buffer still work.
    unsigned char *rw = two;
    long r = syscall(SYS_prctl, PR_GET_NAME, rw, 0, 0, 0);
    printf("rw prctl(PR_GET_NAME): %ld %s\n", r, (char *)rw);
    r = syscall(SYS_rt_sigaction, SIGUSR1, NULL, rw, 8);
    printf("rw rt_sigaction(oldact): %ld handler %lu\n", r, *(unsigned long *)rw);
    unsigned cpu = 99, node = 99;
    r = syscall(SYS_getcpu, &cpu, &node, NULL);
    printf("rw getcpu: %ld node %u\n", r, node);
    r = syscall(SYS_get_robust_list, 0, rw, rw + 8);
    printf("rw get_robust_list: %ld len %lu\n", r, *(unsigned long *)(rw + 8));
    printf("survived\n");
    return 0;
}
