/* FTQ as a stand-alone static program, so that the same code runs on Linux and in the LWK.
 * usage: ftq QUANTUM_TICKS SLOTS OUTFILE
 * Calibrates its work chain against the TSC (fastest of 15 runs), cuts time into SLOTS
 * back-to-back slots of QUANTUM_TICKS on a fixed grid and counts the work units (about 1/500 of a
 * slot, at least 32 chain steps each) completed in each; writes "start_ticks units" per slot to
 * OUTFILE, after '#' header lines giving the unit's length in ticks, the elapsed ticks and the CPU.
 * Under mpirun (OMPI_COMM_WORLD_RANK or PMI_RANK set) rank r writes OUTFILE.r instead. */
#define _GNU_SOURCE
#include "common.h"

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s QUANTUM_TICKS SLOTS OUTFILE\n", argv[0]);
        return 2;
    }
    uint64_t quantum = strtoull(argv[1], NULL, 10);
    long n = atol(argv[2]);
    if (quantum == 0 || n <= 0) {
        fprintf(stderr, "ftq: QUANTUM_TICKS and SLOTS must be positive\n");
        return 2;
    }
    uint64_t sink = 0;
    double per_tick = iters_per_tick();
    uint64_t unit = (uint64_t)((double)quantum * per_tick / 500.0 + 0.5);
    if (unit < 32) unit = 32;
    uint32_t *c = malloc(sizeof(uint32_t) * (size_t)n);
    if (!c) {
        fprintf(stderr, "ftq: out of memory for %ld slots\n", n);
        return 1;
    }
    uint64_t begin = __rdtsc(), slot_end = begin;
    for (long i = 0; i < n; i++) {
        slot_end += quantum;
        uint32_t k = 0;
        while (__rdtsc() < slot_end) {
            sink += spin(unit);
            k++;
        }
        c[i] = k;
    }
    uint64_t elapsed = __rdtsc() - begin;
    FILE *f = open_output(argv[3]);
    if (!f) return 1;
    fprintf(f, "# iters %llu sink %llu\n# unit_ticks %.6f\n# elapsed %llu\n# cpu %d\n", (unsigned long long)unit,
            (unsigned long long)(sink & 1), (double)unit / per_tick, (unsigned long long)elapsed,
            sched_getcpu());
    for (long i = 0; i < n; i++)
        fprintf(f, "%llu %u\n", (unsigned long long)((uint64_t)i * quantum), c[i]);
    return fclose(f) == 0 ? 0 : 1;
}
