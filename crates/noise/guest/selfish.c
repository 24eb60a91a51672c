/* The selfish-detour loop as a stand-alone static program, so that the same code runs on Linux and
 * in the LWK.
 * usage: selfish THRESHOLD DURATION_TICKS OUTFILE
 * Measures the shortest iteration of a tight TSC-reading loop in a 200 000-iteration warm-up, then
 * runs the loop for DURATION_TICKS and records every gap longer than THRESHOLD × that minimum;
 * writes "start_ticks gap_ticks" per gap to OUTFILE, after '#' header lines giving the shortest
 * iteration, the elapsed ticks and the CPU. At most MAX_GAPS gaps are kept.
 * Under mpirun (OMPI_COMM_WORLD_RANK or PMI_RANK set) rank r writes OUTFILE.r instead. */
#define _GNU_SOURCE
#include "common.h"

#define MAX_GAPS (1L << 20)

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s THRESHOLD DURATION_TICKS OUTFILE\n", argv[0]);
        return 2;
    }
    double threshold = atof(argv[1]);
    uint64_t duration = strtoull(argv[2], NULL, 10);
    if (!(threshold > 1.0) || duration == 0) {
        fprintf(stderr, "selfish: THRESHOLD must be above 1 and DURATION_TICKS positive\n");
        return 2;
    }
    uint64_t *g = malloc(sizeof(uint64_t) * 2 * (size_t)MAX_GAPS);
    if (!g) {
        fprintf(stderr, "selfish: out of memory\n");
        return 1;
    }
    uint64_t min_step = UINT64_MAX, prev = __rdtsc();
    for (int i = 0; i < 200000; i++) {
        uint64_t now = __rdtsc(), d = now - prev;
        if (d == 0) d = 1;
        if (d < min_step) min_step = d;
        prev = now;
    }
    double t = (double)min_step * threshold;
    uint64_t thr = (uint64_t)t;
    if ((double)thr < t) thr++;
    long n = 0;
    uint64_t begin = __rdtsc();
    prev = begin;
    for (uint32_t i = 1;; i++) {
        uint64_t now = __rdtsc(), gap = now - prev;
        if (gap > thr && n < MAX_GAPS) {
            g[2 * n] = prev - begin;
            g[2 * n + 1] = gap;
            n++;
        }
        prev = now;
        if ((i & 0xfff) == 0 && now - begin >= duration) break;
    }
    FILE *f = open_output(argv[3]);
    if (!f) return 1;
    fprintf(f, "# min_step %llu\n# elapsed %llu\n# cpu %d\n", (unsigned long long)min_step,
            (unsigned long long)(prev - begin), sched_getcpu());
    for (long i = 0; i < n; i++)
        fprintf(f, "%llu %llu\n", (unsigned long long)g[2 * i], (unsigned long long)g[2 * i + 1]);
    return fclose(f) == 0 ? 0 : 1;
}
