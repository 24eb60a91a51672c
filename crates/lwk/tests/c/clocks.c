/* Issue #13: a program that reads the clocks N times (clock_gettime MONOTONIC and REALTIME,
 * gettimeofday, time) and reports whether any clock went backwards and what time it is. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>

static long long ns(clockid_t c) {
    struct timespec t;
    clock_gettime(c, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 1000, backwards = 0;
    long long prev = ns(CLOCK_MONOTONIC), start = prev;
    for (int i = 0; i < n; i++) {
        long long t = ns(CLOCK_MONOTONIC);
        backwards += t < prev;
        prev = t;
    }
    struct timeval tv;
    gettimeofday(&tv, NULL);
    printf("calls %d backwards %d elapsed_ns %lld realtime_s %lld gettimeofday_s %ld time_s %ld\n", n, backwards,
           prev - start, ns(CLOCK_REALTIME) / 1000000000LL, (long)tv.tv_sec, (long)time(NULL));
    return 0;
}
