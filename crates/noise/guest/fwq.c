/* FWQ as a stand-alone static program, so that the same code runs on Linux and in the LWK.
 * usage: fwq QUANTUM_TICKS SAMPLES OUTFILE
 * Calibrates its work chain against the TSC (fastest of 15 runs), repeats the quantum SAMPLES
 * times and writes "start_ticks duration_ticks" per sample to OUTFILE (header lines start with '#').
 * Under mpirun (OMPI_COMM_WORLD_RANK or PMI_RANK set) rank r writes OUTFILE.r instead. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <x86intrin.h>

static uint64_t spin(uint64_t iters) {
    uint64_t x = 0x2545F4914F6CDD1DULL;
    for (uint64_t i = 0; i < iters; i++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        __asm__ volatile("" : "+r"(x));
    }
    return x;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s QUANTUM_TICKS SAMPLES OUTFILE\n", argv[0]);
        return 2;
    }
    uint64_t quantum = strtoull(argv[1], NULL, 10);
    long n = atol(argv[2]);
    if (quantum == 0 || n <= 0) {
        fprintf(stderr, "fwq: QUANTUM_TICKS and SAMPLES must be positive\n");
        return 2;
    }
    uint64_t best = UINT64_MAX, probe = 200000, sink = 0;
    for (int r = 0; r < 15; r++) {
        uint64_t a = __rdtsc();
        sink += spin(probe);
        uint64_t d = __rdtsc() - a;
        if (d > 0 && d < best) best = d;
    }
    uint64_t iters = (uint64_t)((double)quantum * (double)probe / (double)best + 0.5);
    if (iters == 0) iters = 1;
    uint64_t *t = malloc(sizeof(uint64_t) * 2 * (size_t)n);
    if (!t) {
        fprintf(stderr, "fwq: out of memory for %ld samples\n", n);
        return 1;
    }
    uint64_t begin = __rdtsc();
    for (long i = 0; i < n; i++) {
        uint64_t a = __rdtsc();
        sink += spin(iters);
        uint64_t b = __rdtsc();
        t[2 * i] = a - begin;
        t[2 * i + 1] = b - a;
    }
    int cpu = sched_getcpu();
    const char *rank = getenv("OMPI_COMM_WORLD_RANK");
    if (!rank) rank = getenv("PMI_RANK");
    char path[4096];
    if (rank)
        snprintf(path, sizeof path, "%s.%s", argv[3], rank);
    else
        snprintf(path, sizeof path, "%s", argv[3]);
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        return 1;
    }
    fprintf(f, "# iters %llu sink %llu\n# cpu %d\n", (unsigned long long)iters, (unsigned long long)(sink & 1), cpu);
    for (long i = 0; i < n; i++)
        fprintf(f, "%llu %llu\n", (unsigned long long)t[2 * i], (unsigned long long)t[2 * i + 1]);
    return fclose(f) == 0 ? 0 : 1;
}
