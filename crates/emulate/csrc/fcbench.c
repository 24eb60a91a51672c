/* multios fc microbenchmark (paper Table 3): times single system calls with rdtsc.
 * Usage: multios-fcbench TRIALS OUTFILE SCRATCHFILE [GAP_NS]
 * Writes one line per test: NAME t1 t2 ... (TSC ticks per call), after 100 warm-up calls each.
 * GAP_NS > 0 busy-waits that long (clock_gettime, answered by the vDSO) before each call, as a
 * program computes between its calls: a back-to-back call can meet a delegate that has not gone
 * to sleep yet, a spaced one cannot (issue #15). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
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

int main(int argc, char **argv) {
    if (argc != 4 && argc != 5)
        return 2;
    int trials = atoi(argv[1]);
    unsigned long long gap = argc == 5 ? strtoull(argv[4], NULL, 10) : 0;
    int file = open(argv[3], O_CREAT | O_RDWR | O_TRUNC, 0600);
    int null = open("/dev/null", O_WRONLY);
    if (file < 0 || null < 0 || trials <= 0)
        return 3;
    unsigned long long *t = malloc(sizeof *t * (size_t)trials * 5);
    char buf[64];
    memset(buf, 'x', sizeof buf);
    struct stat st;
    struct utsname u;
    const char *names[5] = {"write_file", "fstat", "uname", "write_devnull", "raw_getppid"};
    for (int k = 0; k < 5; k++) {
        for (int i = -100; i < trials; i++) {
            unsigned long long a, b;
            unsigned aux;
            if (gap) {
                unsigned long long t0 = now_ns();
                while (now_ns() - t0 < gap)
                    ;
            }
            a = __rdtscp(&aux);
            switch (k) {
            case 0: if (pwrite(file, buf, sizeof buf, 0) < 0) return 4; break;
            case 1: if (fstat(file, &st) < 0) return 4; break;
            case 2: if (uname(&u) < 0) return 4; break;
            case 3: if (write(null, buf, sizeof buf) < 0) return 4; break;
            default: raw_getppid(); break;
            }
            b = __rdtscp(&aux);
            if (i >= 0)
                t[k * trials + i] = b - a;
        }
    }
    FILE *out = fopen(argv[2], "w");
    if (!out)
        return 5;
    for (int k = 0; k < 5; k++) {
        fprintf(out, "%s", names[k]);
        for (int i = 0; i < trials; i++)
            fprintf(out, " %llu", t[k * trials + i]);
        fprintf(out, "\n");
    }
    fclose(out);
    unlink(argv[3]);
    return 0;
}
