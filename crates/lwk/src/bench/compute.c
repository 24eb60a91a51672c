/* Compute-bound: integer and floating-point work on registers and L1, no system calls in the loop. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
int main(int argc, char **argv) {
    long iters = argc > 1 ? atol(argv[1]) : 200000000L;
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    uint64_t x = 88172645463325252ULL;
    double f = 1.0;
    for (long i = 0; i < iters; i++) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        f = f * 0.9999999 + (double)(x & 1023) * 1e-9;
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    printf("kernel_ns %lld check %llu %.6f\n", (long long)((b.tv_sec - a.tv_sec) * 1000000000LL + b.tv_nsec - a.tv_nsec),
           (unsigned long long)(x & 0xffff), f);
    return 0;
}
