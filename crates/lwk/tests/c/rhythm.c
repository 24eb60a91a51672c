/* Issue #13: a runtime's rhythm — compute for a fixed stretch of wall time (timed by rdtsc, no
 * system call), then make one call, round after round, as Racket's scheduler does (a clock read
 * and an epoll_wait every 0.4-2 ms of compute). Usage: rhythm ROUNDS GAP_US. Prints what the
 * calls returned, which does not depend on timing. */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 200;
    long gap_us = argc > 2 ? atol(argv[2]) : 2000;
    /* TSC ticks per microsecond, from a 20 ms sleep (one forwarded call). */
    struct timespec a, b, d = {0, 20 * 1000 * 1000};
    clock_gettime(CLOCK_MONOTONIC, &a);
    uint64_t t0 = __rdtsc();
    nanosleep(&d, NULL);
    uint64_t t1 = __rdtsc();
    clock_gettime(CLOCK_MONOTONIC, &b);
    double ns = (b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec);
    double per_us = (double)(t1 - t0) / (ns / 1000.0);
    uint64_t gap = (uint64_t)(per_us * gap_us);
    pid_t parent = getppid();
    int wrong = 0;
    volatile uint64_t x = 1;
    for (int r = 0; r < rounds; r++) {
        uint64_t until = __rdtsc() + gap;
        while (__rdtsc() < until)
            x = x * 6364136223846793005ULL + 1;
        if (getppid() != parent)
            wrong++;
    }
    printf("%d rounds, wrong results %d\n", rounds, wrong);
    return 0;
}
