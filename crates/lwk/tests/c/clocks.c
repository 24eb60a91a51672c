/* Issue #13: a program that reads the clocks N times (clock_gettime MONOTONIC, REALTIME and
 * PROCESS_CPUTIME, gettimeofday, time) and reports whether any clock went backwards, what time
 * it is, and how much CPU time it counted against the time that passed. */
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
    int n = argc > 1 ? atoi(argv[1]) : 1000, backwards = 0, cpu_backwards = 0;
    long long prev = ns(CLOCK_MONOTONIC), start = prev, cpu0 = ns(CLOCK_PROCESS_CPUTIME_ID), cpu = cpu0;
    for (int i = 0; i < n; i++) {
        long long t = ns(CLOCK_MONOTONIC), c = ns(CLOCK_PROCESS_CPUTIME_ID);
        backwards += t < prev;
        cpu_backwards += c < cpu;
        prev = t;
        cpu = c;
    }
    struct timeval tv;
    gettimeofday(&tv, NULL);
    printf("calls %d backwards %d cpu_backwards %d cpu_ns %lld elapsed_ns %lld realtime_s %lld gettimeofday_s %ld "
           "time_s %ld\n",
           n, backwards, cpu_backwards, cpu - cpu0, prev - start, ns(CLOCK_REALTIME) / 1000000000LL, (long)tv.tv_sec,
           (long)time(NULL));
    return 0;
}
