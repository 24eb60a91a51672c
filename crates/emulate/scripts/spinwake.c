/* spinwake: what a SCHED_IDLE spinner on a CPU does to a task woken there (issue #15).
 *
 * A pipe ping-pong between CPU 0 and CPU 1, 2000 round trips, with on CPU 0 nothing else (mode 0),
 * a SCHED_IDLE spinner that only executes `pause` (mode 1), or one that makes a raw getppid per
 * turn (mode 2). On Linux 6.18 a wake-up marks the spinning task for a lazy reschedule, taken at
 * the next tick or return to user mode: mode 1 pays about a millisecond per round trip.
 *
 *   gcc -O2 -o spinwake crates/emulate/scripts/spinwake.c && for m in 0 1 2; do ./spinwake $m; done
 */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
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

int main(int argc, char **argv) {
    int mode = argc > 1 ? atoi(argv[1]) : 0, n = 2000;
    pid_t spinner = 0;
    if (mode) {
        spinner = fork();
        if (spinner == 0) {
            pin(0);
            struct sched_param p = {0};
            sched_setscheduler(0, SCHED_IDLE, &p);
            for (;;) {
                if (mode == 1)
                    __builtin_ia32_pause();
                else
                    syscall(SYS_getppid);
            }
        }
    }
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
    printf("mode %d (%s): round trip %.1f us\n", mode,
           mode == 0 ? "no spinner" : mode == 1 ? "pause spinner" : "getppid spinner", (now() - t0) / n * 1e6);
    waitpid(echo, 0, 0);
    if (spinner) {
        kill(spinner, SIGKILL);
        waitpid(spinner, 0, 0);
    }
    return 0;
}
