/* spinwake: what a SCHED_IDLE spinner on a CPU does to a task woken there (issue #15).
 *
 * `pipe`: a pipe ping-pong between CPU 0 and CPU 1, 2000 round trips, with on CPU 0 nothing else
 * (mode 0), a SCHED_IDLE spinner that only executes `pause` (mode 1), or one that makes a raw
 * getppid per turn (mode 2), or that and a `cpuid` every 5 µs (mode 3: an exit to the hypervisor, at
 * which the vCPU takes the IPIs pending for it; `crates/host/src/hvexit.rs`). `migrate`: the thread moves to CPU 1, makes a getppid there and moves
 * back, 2000 times, with such spinners on both CPUs. On Linux 6.18 a wake-up marks the spinning
 * task for a lazy reschedule, taken at the next tick or return to user mode: mode 1 pays about a
 * millisecond per round trip; without spinners (mode 0) each wake-up of a halted vCPU is paid.
 *
 *   gcc -O2 -o spinwake crates/emulate/scripts/spinwake.c
 *   for m in 0 1 2 3; do ./spinwake pipe $m; ./spinwake migrate $m; done
 */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <cpuid.h>
#include <unistd.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void pin(int cpu) {
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    if (sched_setaffinity(0, sizeof s, &s)) {
        perror("sched_setaffinity");
        exit(1);
    }
}

static pid_t spin_on(int cpu, int mode) {
    pid_t pid = fork();
    if (pid == 0) {
        pin(cpu);
        struct sched_param p = {0};
        sched_setscheduler(0, SCHED_IDLE, &p);
        double last = now();
        unsigned a, b, c, d;
        for (;;) {
            if (mode == 1)
                __builtin_ia32_pause();
            else
                syscall(SYS_getppid);
            if (mode == 3 && now() - last >= 5e-6) {
                __cpuid(0, a, b, c, d);
                last = now();
            }
        }
    }
    return pid;
}

static void stop(pid_t pid) {
    if (pid > 0) {
        kill(pid, SIGKILL);
        waitpid(pid, 0, 0);
    }
}

static const char *name(int mode) {
    return mode == 0 ? "no spinner" : mode == 1 ? "pause spinner" : mode == 2 ? "getppid spinner" : "getppid + cpuid spinner";
}

static int pingpong(int mode, int n) {
    pid_t spinner = mode ? spin_on(0, mode) : 0;
    int there[2], back[2];
    if (pipe(there) || pipe(back)) {
        perror("pipe");
        return 1;
    }
    pid_t echo = fork();
    if (echo == 0) {
        pin(1);
        char c;
        for (int i = 0; i < n; i++)
            if (read(there[0], &c, 1) != 1 || write(back[1], &c, 1) != 1)
                _exit(1);
        _exit(0);
    }
    pin(0);
    usleep(10000);
    char c = 0;
    double t0 = now();
    for (int i = 0; i < n; i++)
        if (write(there[1], &c, 1) != 1 || read(back[0], &c, 1) != 1)
            return 1;
    printf("pipe, mode %d (%s): round trip %.1f us\n", mode, name(mode), (now() - t0) / n * 1e6);
    waitpid(echo, 0, 0);
    stop(spinner);
    return 0;
}

static int migrate(int mode, int n) {
    pid_t s0 = mode ? spin_on(0, mode) : 0, s1 = mode ? spin_on(1, mode) : 0;
    pin(0);
    usleep(10000);
    double t0 = now();
    for (int i = 0; i < n; i++) {
        pin(1);
        syscall(SYS_getppid);
        pin(0);
    }
    printf("migrate, mode %d (%s): there and back %.1f us\n", mode, name(mode), (now() - t0) / n * 1e6);
    stop(s0);
    stop(s1);
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 3 || (strcmp(argv[1], "pipe") && strcmp(argv[1], "migrate"))) {
        fprintf(stderr, "usage: %s pipe|migrate 0|1|2|3\n", argv[0]);
        return 2;
    }
    int mode = atoi(argv[2]);
    return argv[1][0] == 'p' ? pingpong(mode, 2000) : migrate(mode, 2000);
}
