/* Multiverse Fig. 11's microbenchmark (issue #13): N anonymous 4 KiB mmap + touch + munmap
 * pairs; prints the loop's time as `kernel_ns` (the format multios_lwk::bench parses). */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

static long long now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 10000;
    long long t0 = now();
    for (long i = 0; i < n; i++) {
        volatile char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) return 1;
        p[0] = 1;
        if (munmap((void *)p, 4096) != 0) return 2;
    }
    printf("pairs %ld kernel_ns %lld\n", n, now() - t0);
    return 0;
}
