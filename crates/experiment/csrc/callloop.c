/* The cost of `lwk run --trace` per event (issue #13, `bench multiverse`): N fcntl(F_GETFD) calls
 * (delegated by the LWK: each a traced event). Prints the loop's time as kernel_ns. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 100000, bad = 0;
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (long i = 0; i < n; i++) bad += fcntl(1, F_GETFD) < 0;
    clock_gettime(CLOCK_MONOTONIC, &b);
    printf("kernel_ns %ld calls %ld failed %ld\n", (b.tv_sec - a.tv_sec) * 1000000000L + b.tv_nsec - a.tv_nsec, n,
           bad);
    return 0;
}
