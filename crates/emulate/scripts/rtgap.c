/* rtgap: the round trip of a raw getppid when calls come GAP_NS apart (issue #15).
 *
 * Each call is timed with rdtscp after a busy wait of GAP_NS (clock_gettime, answered by the vDSO
 * without a system call); prints the percentiles in ns. Run it under a mechanism to see how the
 * round trip depends on the spacing: on this VM the proxy's back-to-back round trip (GAP_NS 0) is
 * bimodal — the supervisor has or has not gone to sleep when the next notification arrives — and
 * its median lands on either mode from one run to the next, while calls 1–3 µs apart always meet
 * a sleeping supervisor. That is why `multios validate --workload` probes f_c with calls 2 µs apart
 * (`crates/experiment/src/validate/real/gaps.rs`, PROBE_GAP_NS).
 *
 *   gcc -O2 -o rtgap crates/emulate/scripts/rtgap.c
 *   for fc in 0ns 10us 50us; do for g in 0 1000 3000 8000; do
 *     multios emulate --mechanism proxy --policy all --fc $fc --allow-below-floor -- ./rtgap 2000 $g
 *   done; done
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <x86intrin.h>

static long raw_getppid(void) {
    long r;
    __asm__ volatile("syscall" : "=a"(r) : "a"(SYS_getppid) : "rcx", "r11", "memory");
    return r;
}

static unsigned long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (unsigned long long)t.tv_sec * 1000000000ull + (unsigned long long)t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: rtgap CALLS GAP_NS\n");
        return 2;
    }
    int n = atoi(argv[1]);
    unsigned long long gap = strtoull(argv[2], NULL, 10);
    if (n < 10) {
        fprintf(stderr, "rtgap: CALLS must be at least 10\n");
        return 2;
    }
    double *t = malloc(sizeof(double) * (size_t)n);
    if (!t)
        return 3;
    unsigned aux;
    unsigned long long tsc0 = __rdtscp(&aux), ns0 = now_ns();
    for (int i = -50; i < n; i++) {
        unsigned long long s = now_ns();
        while (now_ns() - s < gap)
            ;
        unsigned long long a = __rdtscp(&aux);
        raw_getppid();
        unsigned long long b = __rdtscp(&aux);
        if (i >= 0)
            t[i] = (double)(b - a);
    }
    double ticks_per_ns = (double)(__rdtscp(&aux) - tsc0) / (double)(now_ns() - ns0);
    double sum = 0;
    for (int i = 0; i < n; i++)
        sum += t[i];
    qsort(t, (size_t)n, sizeof(double), cmp);
    printf("gap %llu ns: p10 %.0f p25 %.0f p50 %.0f p75 %.0f p90 %.0f mean %.0f ns\n", gap,
           t[n / 10] / ticks_per_ns, t[n / 4] / ticks_per_ns, t[n / 2] / ticks_per_ns,
           t[3 * n / 4] / ticks_per_ns, t[9 * n / 10] / ticks_per_ns, sum / n / ticks_per_ns);
    free(t);
    return 0;
}
