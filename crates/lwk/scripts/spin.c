// Keeps a CPU busy for SECONDS with a loop of `pause` (issue #15): the busy neighbour of
// `fsync.c` and the like. Build: gcc -O2 -o spin crates/lwk/scripts/spin.c
// Run:   taskset -c 1 ./spin 3 & taskset -c 0 ./fsync
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv) {
	double s = argc > 1 ? atof(argv[1]) : 1.0;
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (;;) {
		for (int i = 0; i < 1000; i++) __builtin_ia32_pause();
		clock_gettime(CLOCK_MONOTONIC, &b);
		if ((b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) * 1e-9 > s) return 0;
	}
}
