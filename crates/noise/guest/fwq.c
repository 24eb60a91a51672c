/* FWQ as a stand-alone static program, so that the same code runs on Linux and in the LWK.
 * usage: fwq QUANTUM_TICKS SAMPLES OUTFILE
 * Calibrates its work chain against the TSC (fastest of 15 runs), repeats the quantum SAMPLES
 * times and writes "start_ticks duration_ticks" per sample to OUTFILE (header lines start with '#').
 * Under mpirun (OMPI_COMM_WORLD_RANK or PMI_RANK set) rank r writes OUTFILE.r instead. */
#define _GNU_SOURCE
#include "common.h"

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
    uint64_t sink = 0;
    double per_tick = iters_per_tick();
    uint64_t iters = (uint64_t)((double)quantum * per_tick + 0.5);
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
    FILE *f = open_output(argv[3]);
    if (!f) return 1;
    fprintf(f, "# iters %llu sink %llu\n# cpu %d\n", (unsigned long long)iters, (unsigned long long)(sink & 1), cpu);
    for (long i = 0; i < n; i++)
        fprintf(f, "%llu %llu\n", (unsigned long long)t[2 * i], (unsigned long long)t[2 * i + 1]);
    return fclose(f) == 0 ? 0 : 1;
}
