/* What a burst of system calls costs after the LWK's proxy has parked (issue #13, `bench
 * multiverse`'s proxy wake-up term). A runtime's scheduler (Racket's) computes for a while, then
 * makes a few calls back to back (a clock read, a poll, a write): the proxy, idle longer than its
 * `--proxy-idle-us`, has parked, so the first call rings the doorbell and wakes it, and the next
 * ones wait for it to run again. Each of ROUNDS rounds computes (spins on the TSC) for GAP_US,
 * then makes BURST getppid calls, timed with the TSC. Prints the median burst in TSC cycles. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <x86intrin.h>

static int cmp(const void *a, const void *b) {
    unsigned long x = *(const unsigned long *)a, y = *(const unsigned long *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    long rounds = argc > 1 ? atol(argv[1]) : 200, burst = argc > 2 ? atol(argv[2]) : 8;
    double ghz = argc > 3 ? atof(argv[3]) : 2.0;
    long gap_us = argc > 4 ? atol(argv[4]) : 3000;
    if (rounds < 1 || burst < 1 || ghz <= 0) return 2;
    unsigned long *t = malloc(sizeof *t * (size_t)rounds), gap = (unsigned long)(gap_us * ghz * 1e3);
    long bad = 0;
    for (long r = 0; r < rounds; r++) {
        unsigned long s = __rdtsc();
        while (__rdtsc() - s < gap) /* compute: no calls, the proxy parks */;
        unsigned long a = __rdtsc();
        for (long i = 0; i < burst; i++) bad += getppid() <= 0;
        t[r] = __rdtsc() - a;
    }
    qsort(t, (size_t)rounds, sizeof *t, cmp);
    printf("burst_cycles %lu rounds %ld burst %ld failed %ld\n", t[rounds / 2], rounds, burst, bad);
    return 0;
}
