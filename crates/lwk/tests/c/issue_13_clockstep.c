/* Under the tsc clock override with issue_13_fakeclock.so after it: CLOCK_REALTIME must follow a
   step of the real clock (forward or back) within the resync interval, and CLOCK_MONOTONIC must
   never go backwards. Prints the last difference and the checks. argv[1]: the fake object. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
static double ns(struct timespec t) { return t.tv_sec + t.tv_nsec * 1e-9; }
int main(int argc, char **argv) {
    if (argc < 2) return 2;
    void *fake = dlopen(argv[1], RTLD_NOW | RTLD_NOLOAD);
    int (*truth)(clockid_t, struct timespec *) = fake ? dlsym(fake, "clock_gettime") : NULL;
    if (!truth) { printf("not ok - the fake clock is not loaded\n"); return 1; }
    double worst_late = 0, prev_mono = 0;
    int backwards = 0;
    for (int i = 0; i < 40; i++) {
        struct timespec a, b, m;
        clock_gettime(CLOCK_REALTIME, &a);
        truth(CLOCK_REALTIME, &b);
        clock_gettime(CLOCK_MONOTONIC, &m);
        if (ns(m) < prev_mono) backwards++;
        prev_mono = ns(m);
        double d = ns(a) - ns(b);
        if (d < 0) d = -d;
        if (i > 0 && d > worst_late) worst_late = d;
        usleep(25000);
    }
    /* the last readings, well after the step: within a few ms */
    struct timespec a, b;
    clock_gettime(CLOCK_REALTIME, &a);
    truth(CLOCK_REALTIME, &b);
    double last = ns(a) - ns(b);
    printf("%s - the override's CLOCK_REALTIME follows the stepped real clock: off by %.6f s at the end (worst %.3f s)\n",
           last < 0.005 && last > -0.005 ? "ok" : "not ok", last, worst_late);
    printf("%s - CLOCK_MONOTONIC never went backwards (%d times)\n", backwards ? "not ok" : "ok", backwards);
    return 0;
}
