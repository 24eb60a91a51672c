/* wstouch: does a delegated call cost the program its TLB and cache contents? (issue #15)
 *
 * N iterations of [touch one byte in every 4 KiB page of a W KiB buffer; a raw getppid when a third
 * argument is given]; prints the elapsed seconds. Run natively and under a mechanism, with and
 * without the calls: (with − without under the mechanism) − (with − without natively), over N, is
 * what one delegated call costs a program with that working set, its refill included.
 *
 *   gcc -O2 -o wstouch crates/emulate/scripts/wstouch.c
 *   for W in 0 1024 8192 32768; do
 *     taskset -c 0 ./wstouch 2000 $W; taskset -c 0 ./wstouch 2000 $W call
 *     multios emulate --mechanism proxy --policy all --fc 0ns --allow-below-floor -- ./wstouch 2000 $W
 *     multios emulate --mechanism proxy --policy all --fc 0ns --allow-below-floor -- ./wstouch 2000 $W call
 *   done
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>

static long raw_getppid(void) {
    long r;
    __asm__ volatile("syscall" : "=a"(r) : "a"(SYS_getppid) : "rcx", "r11", "memory");
    return r;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: wstouch N W_KIB [call]\n");
        return 2;
    }
    long n = atol(argv[1]);
    size_t w = (size_t)atol(argv[2]) * 1024;
    int call = argc > 3;
    volatile char *b = malloc(w + 4096);
    if (!b)
        return 3;
    memset((char *)b, 1, w + 4096);
    unsigned long s = 0;
    double t0 = now();
    for (long i = 0; i < n; i++) {
        for (size_t o = 0; o < w; o += 4096)
            s += (unsigned long)b[o + (size_t)(i & 63)];
        if (call)
            raw_getppid();
    }
    printf("%.6f %lu\n", now() - t0, s & 1);
    return 0;
}
