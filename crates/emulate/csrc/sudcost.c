/* What does merely *enabling* an interception mechanism cost a system call that it lets through?
 * A getppid loop (raw `syscall`) timed in four configurations, each in its own process (a seccomp
 * filter cannot be removed), alternated for ROUNDS rounds; prints the median and the minimum of the
 * per-round best ns per call, and the difference to "none":
 *   none       nothing enabled;
 *   sud        Syscall User Dispatch on, with the whole address space exempt (no call ever traps:
 *              what a rewritten call site pays while SUD stays on for the thread);
 *   seccomp    an always-allow seccomp filter (1 instruction; the kernel's constant-action cache
 *              allows every call without running it);
 *   seccomp-ip a filter that loads the instruction pointer before allowing (not cacheable: the BPF
 *              program runs on every call, as the proxy filter did before it checked the number first).
 * Usage: cc -O2 -o /tmp/sudcost crates/emulate/csrc/sudcost.c && taskset -c 0 /tmp/sudcost [ROUNDS] */
#define _GNU_SOURCE
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef PR_SET_SYSCALL_USER_DISPATCH
#define PR_SET_SYSCALL_USER_DISPATCH 59
#define PR_SYS_DISPATCH_ON 1
#endif

static const char *names[] = {"none", "sud", "seccomp", "seccomp-ip"};
#define NMODES 4

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

/* Best of 5 loops of 200 000 raw getppid calls, ns per call. */
static double measure(void) {
    double best = 1e18;
    for (int k = 0; k < 5; k++) {
        double t0 = now_ns();
        for (long i = 0; i < 200000; i++) {
            long r;
            __asm__ volatile("syscall" : "=a"(r) : "0"((long)SYS_getppid) : "rcx", "r11", "memory");
        }
        double d = (now_ns() - t0) / 200000;
        if (d < best)
            best = d;
    }
    return best;
}

static int enable(int mode) {
    static char selector = 0; /* SYSCALL_DISPATCH_FILTER_ALLOW */
    if (mode == 1)
        return prctl(PR_SET_SYSCALL_USER_DISPATCH, PR_SYS_DISPATCH_ON, 0UL, (1UL << 47) - 1, &selector);
    if (mode >= 2) {
        struct sock_filter allow[] = {BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
        struct sock_filter ip[] = {
            BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, instruction_pointer)),
            BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 1, 0, 0),
            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        };
        struct sock_fprog p = mode == 2 ? (struct sock_fprog){1, allow} : (struct sock_fprog){3, ip};
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
            return -1;
        return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &p);
    }
    return 0;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 15;
    if (rounds < 1 || rounds > 1000)
        rounds = 15;
    double *v = calloc((size_t)rounds * NMODES, sizeof *v);
    for (int r = 0; r < rounds; r++)
        for (int m = 0; m < NMODES; m++) {
            int fd[2];
            if (pipe(fd))
                return 1;
            pid_t pid = fork();
            if (pid == 0) {
                double d = enable(m) == 0 ? measure() : -1;
                if (write(fd[1], &d, sizeof d) != sizeof d)
                    _exit(1);
                _exit(0);
            }
            close(fd[1]);
            double d = -1;
            if (read(fd[0], &d, sizeof d) != sizeof d || d < 0) {
                fprintf(stderr, "sudcost: enabling %s failed (SUD needs Linux >= 5.11)\n", names[m]);
                return 1;
            }
            close(fd[0]);
            waitpid(pid, NULL, 0);
            v[m * rounds + r] = d;
        }
    double base_med = 0, base_min = 0;
    printf("getppid, ns per call over %d alternated rounds\n%-11s %8s %8s %10s %10s\n", rounds, "enabled",
           "median", "min", "+median", "+min");
    for (int m = 0; m < NMODES; m++) {
        double *x = v + m * rounds;
        qsort(x, (size_t)rounds, sizeof *x, cmp);
        double med = x[rounds / 2], mn = x[0];
        if (m == 0)
            base_med = med, base_min = mn;
        printf("%-11s %8.1f %8.1f %+10.1f %+10.1f\n", names[m], med, mn, med - base_med, mn - base_min);
    }
    free(v);
    return 0;
}
