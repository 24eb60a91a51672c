/* What fwq.c, ftq.c and selfish.c share: the work chain, its calibration against the TSC, and the
 * output file (OUTFILE, or OUTFILE.r for MPI rank r under mpirun). Written beside the program's
 * source by guest.rs before gcc runs. */
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <x86intrin.h>

/* ITERS steps of a dependent multiply-add chain the compiler cannot shorten. */
__attribute__((unused)) static uint64_t spin(uint64_t iters) {
    uint64_t x = 0x2545F4914F6CDD1DULL;
    for (uint64_t i = 0; i < iters; i++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        __asm__ volatile("" : "+r"(x));
    }
    return x;
}

/* Chain steps per TSC tick: the fastest of 15 runs of PROBE steps. */
__attribute__((unused)) static double iters_per_tick(void) {
    uint64_t best = UINT64_MAX, probe = 200000, sink = 0;
    for (int r = 0; r < 15; r++) {
        uint64_t a = __rdtsc();
        sink += spin(probe);
        uint64_t d = __rdtsc() - a;
        if (d > 0 && d < best) best = d;
    }
    __asm__ volatile("" : : "r"(sink));
    return (double)probe / (double)best;
}

/* Opens OUTFILE for writing, or OUTFILE.r for rank r when OMPI_COMM_WORLD_RANK or PMI_RANK is set;
 * prints the error and returns NULL when it cannot. */
static FILE *open_output(const char *base) {
    const char *rank = getenv("OMPI_COMM_WORLD_RANK");
    if (!rank) rank = getenv("PMI_RANK");
    char path[4096];
    if (rank)
        snprintf(path, sizeof path, "%s.%s", base, rank);
    else
        snprintf(path, sizeof path, "%s", base);
    FILE *f = fopen(path, "w");
    if (!f) perror(path);
    return f;
}
