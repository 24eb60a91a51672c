/* multios synthetic benchmark (paper §4.1): PHASES phases, each Monte Carlo π for ITERS samples
 * followed by a replay of a system-call mix. Every part is timed in-process with rdtsc.
 * Usage: multios-synth ITERS PHASES OUTFILE MIXFILE   (MIXFILE lines: NAME COUNT-PER-PHASE)
 * Output lines: `compute TICKS`, then `NAME COUNT TICKS` per call, then `pi ESTIMATE`, then
 * `phase I COMPUTE_TICKS CALL_TICKS` per phase (the same ticks, phase by phase: a phase the CPU was
 * taken from shows as an outlier). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <x86intrin.h>

enum { READ, WRITE, FSTAT, UNAME, LSEEK, GETPPID, GETPID, OPENAT, CLOSE, MMAP, MUNMAP, NCALLS };
static const char *names[NCALLS] = {"read", "write", "fstat", "uname", "lseek", "getppid",
                                    "getpid", "openat", "close", "mmap", "munmap"};

int main(int argc, char **argv) {
    if (argc != 5)
        return 2;
    long iters = atol(argv[1]), phases = atol(argv[2]);
    long count[NCALLS] = {0};
    unsigned long long ticks[NCALLS] = {0}, compute = 0;
    FILE *mix = fopen(argv[4], "r");
    if (!mix)
        return 3;
    char name[64];
    long n;
    while (fscanf(mix, "%63s %ld", name, &n) == 2)
        for (int i = 0; i < NCALLS; i++)
            if (!strcmp(name, names[i]))
                count[i] = n;
    fclose(mix);
    int zero = open("/dev/zero", O_RDONLY), null = open("/dev/null", O_WRONLY);
    if (zero < 0 || null < 0)
        return 4;
    char buf[64];
    struct stat st;
    struct utsname u;
    unsigned long long x = 88172645463325252ULL, inside = 0, total = 0;
    int fds[4096];
    void *maps[4096];
    unsigned long long *pc = calloc(phases > 0 ? phases : 1, sizeof *pc);
    unsigned long long *pk = calloc(phases > 0 ? phases : 1, sizeof *pk);
    if (!pc || !pk)
        return 7;
    for (long p = 0; p < phases; p++) {
        unsigned long long t0 = __rdtsc();
        for (long i = 0; i < iters; i++) {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            double a = (double)(x >> 11) / 9007199254740992.0;
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            double b = (double)(x >> 11) / 9007199254740992.0;
            inside += a * a + b * b <= 1.0;
        }
        total += (unsigned long long)iters;
        pc[p] = __rdtsc() - t0;
        compute += pc[p];
        for (int k = 0; k < NCALLS; k++) {
            long c = count[k] > 4096 ? 4096 : count[k];
            unsigned long long s = __rdtsc();
            for (long i = 0; i < c; i++) {
                switch (k) {
                case READ: if (read(zero, buf, sizeof buf) < 0) return 5; break;
                case WRITE: if (write(null, buf, sizeof buf) < 0) return 5; break;
                case FSTAT: if (fstat(null, &st) < 0) return 5; break;
                case UNAME: if (uname(&u) < 0) return 5; break;
                case LSEEK: if (lseek(zero, 0, SEEK_SET) < 0) return 5; break;
                case GETPPID: syscall(SYS_getppid); break;
                case GETPID: syscall(SYS_getpid); break;
                case OPENAT: fds[i] = openat(AT_FDCWD, "/dev/null", O_RDONLY); if (fds[i] < 0) return 5; break;
                case CLOSE: close(fds[i]); break;
                case MMAP: maps[i] = mmap(0, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0); if (maps[i] == MAP_FAILED) return 5; break;
                default: munmap(maps[i], 4096); break;
                }
            }
            unsigned long long d = __rdtsc() - s;
            ticks[k] += d;
            pk[p] += d;
        }
    }
    FILE *out = fopen(argv[3], "w");
    if (!out)
        return 6;
    fprintf(out, "compute %llu\n", compute);
    for (int k = 0; k < NCALLS; k++)
        if (count[k])
            fprintf(out, "%s %ld %llu\n", names[k], (count[k] > 4096 ? 4096 : count[k]) * phases, ticks[k]);
    fprintf(out, "pi %.6f\n", total ? 4.0 * (double)inside / (double)total : 0.0);
    for (long p = 0; p < phases; p++)
        fprintf(out, "phase %ld %llu %llu\n", p, pc[p], pk[p]);
    fclose(out);
    return 0;
}
