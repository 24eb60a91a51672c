/* Preloaded after the overrides object (its dlsym(RTLD_NEXT, "clock_gettime") finds this one):
   CLOCK_REALTIME is stepped by $STEP_S seconds 0.3 s after the first call, as settimeofday or NTP
   would step it. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
static long long t_first;
int clock_gettime(clockid_t c, struct timespec *ts) {
    struct timespec m;
    syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &m);
    long long mono = m.tv_sec * 1000000000LL + m.tv_nsec;
    if (!t_first) t_first = mono;
    int r = syscall(SYS_clock_gettime, c, ts);
    if (c == CLOCK_REALTIME && mono - t_first > 300000000LL) ts->tv_sec += atol(getenv("STEP_S"));
    return r;
}
