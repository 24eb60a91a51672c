/* TLB-bound: a dependent random walk over a large array (one cache line per step). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
int main(int argc, char **argv) {
    size_t mib = argc > 1 ? (size_t)atol(argv[1]) : 1024;
    long steps = argc > 2 ? atol(argv[2]) : 20000000L;
    size_t n = mib * (1 << 20) / sizeof(uint64_t);
    uint64_t *a = malloc(n * sizeof(uint64_t));
    if (!a) { perror("malloc"); return 1; }
    /* Sattolo's algorithm over cache-line-sized strides: one cycle through every line. */
    size_t lines = n / 8;
    uint64_t x = 88172645463325252ULL;
    for (size_t i = 0; i < lines; i++) a[i * 8] = i;
    for (size_t i = lines - 1; i > 0; i--) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        size_t j = x % i;
        uint64_t t = a[i * 8]; a[i * 8] = a[j * 8]; a[j * 8] = t;
    }
    struct timespec s, e;
    clock_gettime(CLOCK_MONOTONIC, &s);
    uint64_t p = 0;
    for (long k = 0; k < steps; k++) p = a[p * 8];
    clock_gettime(CLOCK_MONOTONIC, &e);
    printf("kernel_ns %lld check %llu\n", (long long)((e.tv_sec - s.tv_sec) * 1000000000LL + e.tv_nsec - s.tv_nsec),
           (unsigned long long)p);
    return 0;
}
