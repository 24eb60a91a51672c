/* Thread create+join cost (issue #13, `bench multiverse`): N times pthread_create of a function
 * that returns at once, then pthread_join. Prints the loop time (kernel_ns) and per pair. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static void *nothing(void *arg) { return arg; }

static long now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000L + t.tv_nsec;
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 1000, bad = 0;
    long t0 = now();
    for (long i = 0; i < n; i++) {
        pthread_t t;
        void *r = NULL;
        if (pthread_create(&t, NULL, nothing, (void *)i) || pthread_join(t, &r) || r != (void *)i) bad++;
    }
    long ns = now() - t0;
    printf("kernel_ns %ld pairs %ld failed %ld per_pair_ns %ld\n", ns, n, bad, ns / (n ? n : 1));
    return bad != 0;
}
